// RUN: fx-opt %s -p convert-loop-to-tt --split-input-file | filecheck %s

// Kernel names come from the name hints of what a kernel writes
// (loop_to_tt/kernel.py: kernel_name). AOTAutograd's placeholder names say
// which input of one graph a value is, not what the kernel does: a copy of
// weight `arg16_1` into NHWC (bufferize names it `arg16_to_nhwc`) is
// `coil_to_nhwc_0`, and every layer's weight copy has that stem (identical
// bodies are one kernel after deduplication); a nest writing only
// `primals_3` falls back to what it is. Names that only start like a
// placeholder (`argmax`, `arg2d_view`) are kept.

// CHECK: tt.func public @coil_to_nhwc_0(
// CHECK: tt.func public @coil_pointwise_1(
// CHECK: tt.func public @coil_relu_2(
// CHECK: tt.func public @coil_argmax_3(
// CHECK: tt.func public @coil_arg2d_view_4(

func.func @names(%arg16_1: !buffer.buffer<[8, 4, 3, 3], f32>, %primals_3: !buffer.buffer<[16], f32>) -> (!buffer.buffer<[8, 4, 3, 3], f32, strides [36, 1, 12, 4]>, !buffer.buffer<[16], f32>, !buffer.buffer<[16], f32>, !buffer.buffer<[16], f32>, !buffer.buffer<[16], f32>) {
  %arg16_to_nhwc = buffer.alloc : !buffer.buffer<[8, 4, 3, 3], f32, strides [36, 1, 12, 4]>
  loop.pointwise [8, 4, 3, 3] outs(%arg16_to_nhwc : !buffer.buffer<[8, 4, 3, 3], f32, strides [36, 1, 12, 4]>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %a = loop.load %arg16_1[i0, i1, i2, i3] : !buffer.buffer<[8, 4, 3, 3], f32>
    loop.yield %a : f32
  }
  %primals_3_1 = buffer.alloc : !buffer.buffer<[16], f32>
  loop.pointwise [16] outs(%primals_3_1 : !buffer.buffer<[16], f32>) {
  ^bb0(%i0: index):
    %b = loop.load %primals_3[i0] : !buffer.buffer<[16], f32>
    %c = arith.addf %b, %b : f32
    loop.yield %c : f32
  }
  %relu_4 = buffer.alloc : !buffer.buffer<[16], f32>
  loop.pointwise [16] outs(%relu_4 : !buffer.buffer<[16], f32>) {
  ^bb0(%i0: index):
    %d = loop.load %primals_3[i0] : !buffer.buffer<[16], f32>
    %e = arith.mulf %d, %d : f32
    loop.yield %e : f32
  }
  %argmax_1 = buffer.alloc : !buffer.buffer<[16], f32>
  loop.pointwise [16] outs(%argmax_1 : !buffer.buffer<[16], f32>) {
  ^bb0(%i0: index):
    %f = loop.load %primals_3[i0] : !buffer.buffer<[16], f32>
    %g = arith.subf %f, %f : f32
    loop.yield %g : f32
  }
  %arg2d_view_2 = buffer.alloc : !buffer.buffer<[16], f32>
  loop.pointwise [16] outs(%arg2d_view_2 : !buffer.buffer<[16], f32>) {
  ^bb0(%i0: index):
    %h = loop.load %primals_3[i0] : !buffer.buffer<[16], f32>
    %k = arith.divf %h, %h : f32
    loop.yield %k : f32
  }
  func.return %arg16_to_nhwc, %primals_3_1, %relu_4, %argmax_1, %arg2d_view_2 : !buffer.buffer<[8, 4, 3, 3], f32, strides [36, 1, 12, 4]>, !buffer.buffer<[16], f32>, !buffer.buffer<[16], f32>, !buffer.buffer<[16], f32>, !buffer.buffer<[16], f32>
}
