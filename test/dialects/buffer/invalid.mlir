// RUN: fx-opt %s --parsing-diagnostics --verify-diagnostics --split-input-file | filecheck %s

// Every user-facing parse and verification error of the buffer dialect.

// A buffer type has one stride per size.
func.func @a_buffer_type_has_one_stride(%x: !buffer.buffer<[4, 8], f32, strides [1]>) {
  func.return
}
// CHECK: expected 2 strides, got 1

// -----

// Buffers hold torch element types.
func.func @buffers_hold_torch_element_types(%x: !buffer.buffer<[4, 8], index>) {
  func.return
}
// CHECK: index is not a torch element type

// -----

// Unknown layout keyword.
func.func @unknown_layout_keyword(%x: !buffer.buffer<[4, 8], f32, stride [8, 1]>) {
  func.return
}
// CHECK: Expected one of 'device', 'offset', 'strides'

// -----

// The device is a quoted string.
func.func @the_device_is_a_quoted_string(%x: !buffer.buffer<[4, 8], f32, device cuda>) {
  func.return
}
// CHECK: expected a quoted device name, e.g. device "cuda:0"

// -----

// Malformed offset expression.
func.func @malformed_offset_expression(%x: !buffer.buffer<[4, 8], f32, offset +>) {
  func.return
}
// CHECK: expected a symbolic integer expression (int, symbol, '(' or '-')

// -----

// Buffer.view reinterprets storage: it keeps the element type.
func.func @buffer_view_reinterprets_storage_it_keeps(%x: !buffer.buffer<[4, 8], f32>) {
  %v = buffer.view %x : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[8, 4], i32>
  func.return
}
// CHECK: buffer.view: the storage keeps its element type (f32 -> i32)

// -----

// Buffer.view cannot move a buffer to another device.
func.func @buffer_view_cannot_move_a_buffer(%x: !buffer.buffer<[4, 8], f32>) {
  %v = buffer.view %x : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[8, 4], f32, device "cuda:0">
  func.return
}
// CHECK: buffer.view: a buffer cannot change device (cpu -> cuda:0)

// -----

// Buffer.reuse keeps the element type.
func.func @buffer_reuse_keeps_the_element_type(%x: !buffer.buffer<[4, 8], f32>) {
  %v = buffer.reuse %x : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[32], f16>
  func.return
}
// CHECK: buffer.reuse: the storage keeps its element type (f32 -> f16)

// -----

// Buffer.reuse keeps the device.
func.func @buffer_reuse_keeps_the_device(%x: !buffer.buffer<[4, 8], f32, device "cuda:0">) {
  %v = buffer.reuse %x : !buffer.buffer<[4, 8], f32, device "cuda:0"> -> !buffer.buffer<[32], f32, device "cuda:1">
  func.return
}
// CHECK: buffer.reuse: a buffer cannot change device (cuda:0 -> cuda:1)

// -----

// Buffer.reuse cannot grow the storage it takes over.
func.func @buffer_reuse_cannot_grow_the_storage(%x: !buffer.buffer<[4, 8], f32>) {
  %v = buffer.reuse %x : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[64], f32>
  func.return
}
// CHECK: buffer.reuse: the result spans 64 elements of storage, the reused buffer only 32

// -----

// Buffer.view takes a buffer.
func.func @buffer_view_takes_a_buffer(%x: !loop.tensor<[4, 8], f32>) {
  %v = buffer.view %x : !loop.tensor<[4, 8], f32> -> !buffer.buffer<[8, 4], f32>
  func.return
}
// CHECK: buffer.view: the source must be a !buffer.buffer, not !loop.tensor<[4, 8], f32>

// -----

// Buffer.alloc gives a buffer.
func.func @buffer_alloc_gives_a_buffer() {
  %v = buffer.alloc : !loop.tensor<[4, 8], f32>
  func.return
}
// CHECK: buffer.alloc: the result must be a !buffer.buffer, not !loop.tensor<[4, 8], f32>

// -----

// Buffer.dealloc takes a buffer.
func.func @buffer_dealloc_takes_a_buffer(%x: !loop.tensor<[4, 8], f32>) {
  buffer.dealloc %x : !loop.tensor<[4, 8], f32>
  func.return
}
// CHECK: buffer.dealloc: the operand must be a !buffer.buffer, not !loop.tensor<[4, 8], f32>

// -----

// The extern's result must match what the aten op yields (shape).
func.func @the_extern_s_result_must_match(%a: !buffer.buffer<[4, 8], f32>, %b: !buffer.buffer<[8, 2], f32>) {
  %mm = buffer.extern "aten.mm.default" (%a, %b) : (!buffer.buffer<[4, 8], f32>, !buffer.buffer<[8, 2], f32>) -> (!buffer.buffer<[4, 8], f32>) {
  ^bb0(%x: !aten.tensor<[4, 8], f32>, %y: !aten.tensor<[8, 2], f32>):
    %r = aten.mm.default(%x, %y) : !aten.tensor<[4, 2], f32>
    buffer.yield %r : !aten.tensor<[4, 2], f32>
  }
  func.return
}
// CHECK: buffer.extern: result !buffer.buffer<[4, 8], f32> does not match what the call yields (!aten.tensor<[4, 2], f32>)

// -----

// One yielded value per result.
func.func @one_yielded_value_per_result(%a: !buffer.buffer<[4, 8], f32>, %b: !buffer.buffer<[8, 2], f32>) {
  %mm, %mm2 = buffer.extern "aten.mm.default" (%a, %b) : (!buffer.buffer<[4, 8], f32>, !buffer.buffer<[8, 2], f32>) -> (!buffer.buffer<[4, 2], f32>, !buffer.buffer<[4, 2], f32>) {
  ^bb0(%x: !aten.tensor<[4, 8], f32>, %y: !aten.tensor<[8, 2], f32>):
    %r = aten.mm.default(%x, %y) : !aten.tensor<[4, 2], f32>
    buffer.yield %r : !aten.tensor<[4, 2], f32>
  }
  func.return
}
// CHECK: buffer.extern: the region must yield one value per result: 2 result(s), 1 yielded

// -----

// The extern's result must match what the aten op yields (element type).
func.func @the_extern_s_result_must_match(%a: !buffer.buffer<[4, 8], f32>, %b: !buffer.buffer<[8, 2], f32>) {
  %mm = buffer.extern "aten.mm.default" (%a, %b) : (!buffer.buffer<[4, 8], f32>, !buffer.buffer<[8, 2], f32>) -> (!buffer.buffer<[4, 2], f16>) {
  ^bb0(%x: !aten.tensor<[4, 8], f32>, %y: !aten.tensor<[8, 2], f32>):
    %r = aten.mm.default(%x, %y) : !aten.tensor<[4, 2], f32>
    buffer.yield %r : !aten.tensor<[4, 2], f32>
  }
  func.return
}
// CHECK: buffer.extern: result !buffer.buffer<[4, 2], f16> does not match what the call yields (!aten.tensor<[4, 2], f32>)

// -----

// One block argument per operand.
func.func @one_block_argument_per_operand(%a: !buffer.buffer<[4, 8], f32>, %b: !buffer.buffer<[8, 2], f32>) {
  %mm = buffer.extern "aten.slice.Tensor" (%a, %b) : (!buffer.buffer<[4, 8], f32>, !buffer.buffer<[8, 2], f32>) -> (!buffer.buffer<[4, 2], f32>) {
  ^bb0(%x: !aten.tensor<[4, 8], f32>):
    %r = aten.slice.Tensor(%x, dim = 1, end = 2) : !aten.tensor<[4, 2], f32>
    buffer.yield %r : !aten.tensor<[4, 2], f32>
  }
  func.return
}
// CHECK: buffer.extern: one block argument per operand: 2 operand(s), 1 block argument(s)

// -----

// Block arguments see the operands' shapes and element types.
func.func @block_arguments_see_the_operands_shapes(%a: !buffer.buffer<[4, 8], f32>, %b: !buffer.buffer<[8, 2], f32>) {
  %mm = buffer.extern "aten.mm.default" (%a, %b) : (!buffer.buffer<[4, 8], f32>, !buffer.buffer<[8, 2], f32>) -> (!buffer.buffer<[4, 2], f32>) {
  ^bb0(%x: !aten.tensor<[4, 8], f32>, %y: !aten.tensor<[8, 3], f32>):
    %r = aten.mm.default(%x, %y) : !aten.tensor<[4, 3], f32>
    buffer.yield %r : !aten.tensor<[4, 3], f32>
  }
  func.return
}
// CHECK: buffer.extern: block argument #1 !aten.tensor<[8, 3], f32> does not match operand !buffer.buffer<[8, 2], f32> (shape and element type)

// -----

// The extern region ends with buffer.yield.
func.func @the_extern_region_ends_with_buffer(%a: !buffer.buffer<[4, 8], f32>, %b: !buffer.buffer<[8, 2], f32>) {
  %mm = buffer.extern "aten.mm.default" (%a, %b) : (!buffer.buffer<[4, 8], f32>, !buffer.buffer<[8, 2], f32>) -> (!buffer.buffer<[4, 2], f32>) {
  ^bb0(%x: !aten.tensor<[4, 8], f32>, %y: !aten.tensor<[8, 2], f32>):
    %r = aten.mm.default(%x, %y) : !aten.tensor<[4, 2], f32>
  }
  func.return
}
// CHECK: buffer.extern: the region must end with buffer.yield

// -----

// The extern names the called op.
func.func @the_extern_names_the_called_op(%a: !buffer.buffer<[4, 8], f32>, %b: !buffer.buffer<[8, 2], f32>) {
  %mm = buffer.extern (%a, %b) : (!buffer.buffer<[4, 8], f32>, !buffer.buffer<[8, 2], f32>) -> (!buffer.buffer<[4, 2], f32>) {
  ^bb0(%x: !aten.tensor<[4, 8], f32>, %y: !aten.tensor<[8, 2], f32>):
    %r = aten.mm.default(%x, %y) : !aten.tensor<[4, 2], f32>
    buffer.yield %r : !aten.tensor<[4, 2], f32>
  }
  func.return
}
// CHECK: buffer.extern: expected the called op's name, e.g. "aten.mm.default"

// -----

// Missing '->' before the result types.
func.func @missing_before_the_result_types(%a: !buffer.buffer<[4, 8], f32>, %b: !buffer.buffer<[8, 2], f32>) {
  %mm = buffer.extern "aten.mm.default" (%a, %b) : (!buffer.buffer<[4, 8], f32>, !buffer.buffer<[8, 2], f32>) (!buffer.buffer<[4, 2], f32>) {
  ^bb0(%x: !aten.tensor<[4, 8], f32>, %y: !aten.tensor<[8, 2], f32>):
    %r = aten.mm.default(%x, %y) : !aten.tensor<[4, 2], f32>
    buffer.yield %r : !aten.tensor<[4, 2], f32>
  }
  func.return
}
// CHECK: Expected '->'

// -----

// One type per operand.
func.func @one_type_per_operand(%a: !buffer.buffer<[4, 8], f32>, %b: !buffer.buffer<[8, 2], f32>) {
  %mm = buffer.extern "aten.mm.default" (%a, %b) : (!buffer.buffer<[4, 8], f32>) -> (!buffer.buffer<[4, 2], f32>) {
  ^bb0(%x: !aten.tensor<[4, 8], f32>, %y: !aten.tensor<[8, 2], f32>):
    %r = aten.mm.default(%x, %y) : !aten.tensor<[4, 2], f32>
    buffer.yield %r : !aten.tensor<[4, 2], f32>
  }
  func.return
}
// CHECK: buffer.extern: 2 operand(s) but 1 operand type(s)

// -----

// The SSA results match the result types.
func.func @the_ssa_results_match_the_result(%a: !buffer.buffer<[4, 8], f32>, %b: !buffer.buffer<[8, 2], f32>) {
  %mm, %z = buffer.extern "aten.mm.default" (%a, %b) : (!buffer.buffer<[4, 8], f32>, !buffer.buffer<[8, 2], f32>) -> (!buffer.buffer<[4, 2], f32>) {
  ^bb0(%x: !aten.tensor<[4, 8], f32>, %y: !aten.tensor<[8, 2], f32>):
    %r = aten.mm.default(%x, %y) : !aten.tensor<[4, 2], f32>
    buffer.yield %r : !aten.tensor<[4, 2], f32>
  }
  func.return
}
// CHECK: Operation has 1 results, but was given 2 to bind.

// -----

func.func @extern_name_must_match(%a: !buffer.buffer<[4, 4], f32>) {
  %r = buffer.extern "aten.sort.default" (%a) : (!buffer.buffer<[4, 4], f32>) -> (!buffer.buffer<[4, 4], f32>) {
  ^bb0(%x: !aten.tensor<[4, 4], f32>):
    %y = aten.neg.default(%x) : !aten.tensor<[4, 4], f32>
    buffer.yield %y : !aten.tensor<[4, 4], f32>
  }
  func.return
}
// CHECK: buffer.extern: the region calls "aten.neg.default", not "aten.sort.default"
