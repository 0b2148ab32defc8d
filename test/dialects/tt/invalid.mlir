// RUN: fx-opt %s --parsing-diagnostics --verify-diagnostics --split-input-file | filecheck %s

// Every user-facing parse and verification error of the tt dialect: Triton's
// shape and element-type rules, as sentences.

tt.func public @program_id_axis() {
  %pid = tt.get_program_id w : i32
  tt.return
}
// CHECK: tt.get_program_id: expected axis x, y or z, got 'w'

// -----

tt.func public @program_id_axis_generic() {
  %pid = "tt.get_num_programs"() <{axis = 3 : i32}> : () -> i32
  tt.return
}
// CHECK: tt.get_num_programs: axis must be x, y or z

// -----

tt.func public @range_power_of_two() {
  %r = tt.make_range {end = 100 : i32, start = 0 : i32} : tensor<100xi32>
  tt.return
}
// CHECK: tt.make_range: range size 100 must be a power of two

// -----

tt.func public @range_result_type() {
  %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<64xi32>
  tt.return
}
// CHECK: tt.make_range: result must be tensor<128xi32>

// -----

tt.func public @splat_a_tensor(%x: tensor<4xf32>) {
  %s = tt.splat %x : tensor<4xf32> -> tensor<4xf32>
  tt.return
}
// CHECK: tt.splat: splats a scalar, not a tensor

// -----

tt.func public @splat_elements(%x: f32) {
  %s = tt.splat %x : f32 -> tensor<4xf16>
  tt.return
}
// CHECK: tt.splat: result elements f16 must be f32

// -----

tt.func public @broadcast_elements(%x: tensor<4x1xf32>) {
  %b = tt.broadcast %x : tensor<4x1xf32> -> tensor<4x8xf16>
  tt.return
}
// CHECK: tt.broadcast: element types differ

// -----

tt.func public @broadcast_size_one(%x: tensor<4x2xf32>) {
  %b = tt.broadcast %x : tensor<4x2xf32> -> tensor<4x8xf32>
  tt.return
}
// CHECK: tt.broadcast: cannot broadcast [4, 2] to [4, 8]: only size-1 dimensions stretch

// -----

tt.func public @expand_dims_axis(%x: tensor<4xf32>) {
  %e = tt.expand_dims %x {axis = 2 : i32} : tensor<4xf32> -> tensor<4x1xf32>
  tt.return
}
// CHECK: tt.expand_dims: axis 2 out of range

// -----

tt.func public @expand_dims_result(%x: tensor<4xf32>) {
  %e = tt.expand_dims %x {axis = 0 : i32} : tensor<4xf32> -> tensor<4x1xf32>
  tt.return
}
// CHECK: tt.expand_dims: result must have shape [1, 4]

// -----

tt.func public @reshape_count(%x: tensor<4x8xf32>) {
  %r = tt.reshape %x : tensor<4x8xf32> -> tensor<16xf32>
  tt.return
}
// CHECK: tt.reshape: element counts differ

// -----

tt.func public @addptr_pointers(%x: tensor<4xi32>) {
  %a = tt.addptr %x, %x : tensor<4xi32>, tensor<4xi32>
  tt.return
}
// CHECK: tt.addptr: first operand must be pointers

// -----

tt.func public @addptr_integer_offsets(%p: !tt.ptr<f32>, %o: f32) {
  %a = tt.addptr %p, %o : !tt.ptr<f32>, f32
  tt.return
}
// CHECK: tt.addptr: offsets are integers

// -----

tt.func public @addptr_shapes(%p: tensor<4x!tt.ptr<f32>>, %o: tensor<8xi32>) {
  %a = tt.addptr %p, %o : tensor<4x!tt.ptr<f32>>, tensor<8xi32>
  tt.return
}
// CHECK: tt.addptr: pointer and offset blocks must have the same shape

// -----

tt.func public @load_needs_pointer(%p: tensor<4xf32>) {
  %v = tt.load %p : tensor<4xf32>
  tt.return
}
// CHECK: tt.load: tensor<4xf32> is not a pointer type

// -----

tt.func public @load_arity(%p: !tt.ptr<f32>, %m: i1, %z: f32) {
  %v = tt.load %p, %m, %z, %z : !tt.ptr<f32>
  tt.return
}
// CHECK: tt.load takes %ptr, optional %mask and %other

// -----

tt.func public @load_props(%p: !tt.ptr<f32>) {
  %v = tt.load %p {volatile = true} : !tt.ptr<f32>
  tt.return
}
// CHECK: expected 'cache' or 'evict', got 'volatile'

// -----

tt.func public @load_cache(%p: !tt.ptr<f32>) {
  %v = tt.load %p {cache = hot} : !tt.ptr<f32>
  tt.return
}
// CHECK: tt.load: unknown cache modifier 'hot'

// -----

tt.func public @load_evict(%p: !tt.ptr<f32>) {
  %v = tt.load %p {evict = never} : !tt.ptr<f32>
  tt.return
}
// CHECK: tt.load: unknown eviction policy 'never'

// -----

tt.func public @load_through_pointers(%p: tensor<4xf32>) {
  %v = "tt.load"(%p) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<4xf32>) -> tensor<4xf32>
  tt.return
}
// CHECK: tt.load: loads through pointers

// -----

tt.func public @load_result(%p: tensor<4x!tt.ptr<f32>>) {
  %v = "tt.load"(%p) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<4x!tt.ptr<f32>>) -> tensor<4xf16>
  tt.return
}
// CHECK: tt.load: result must be tensor<4xf32>

// -----

tt.func public @load_mask(%p: tensor<4x!tt.ptr<f32>>, %m: tensor<8xi1>) {
  %v = "tt.load"(%p, %m) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<4x!tt.ptr<f32>>, tensor<8xi1>) -> tensor<4xf32>
  tt.return
}
// CHECK: tt.load: mask must be i1 shaped like the pointers, got tensor<8xi1>

// -----

tt.func public @load_other_needs_mask(%p: tensor<4x!tt.ptr<f32>>, %z: tensor<4xf32>) {
  %v = "tt.load"(%p, %z) <{operandSegmentSizes = array<i32: 1, 0, 1>}> : (tensor<4x!tt.ptr<f32>>, tensor<4xf32>) -> tensor<4xf32>
  tt.return
}
// CHECK: tt.load: 'other' needs a mask

// -----

tt.func public @load_other_type(%p: tensor<4x!tt.ptr<f32>>, %m: tensor<4xi1>, %z: tensor<4xf16>) {
  %v = "tt.load"(%p, %m, %z) <{operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<4x!tt.ptr<f32>>, tensor<4xi1>, tensor<4xf16>) -> tensor<4xf32>
  tt.return
}
// CHECK: tt.load: 'other' must have the result type

// -----

tt.func public @store_arity(%p: !tt.ptr<f32>) {
  tt.store %p : !tt.ptr<f32>
  tt.return
}
// CHECK: tt.store takes %ptr, %value and an optional %mask

// -----

tt.func public @store_needs_pointer(%p: f32) {
  tt.store %p, %p : f32
  tt.return
}
// CHECK: tt.store: f32 is not a pointer type

// -----

tt.func public @store_through_pointers(%p: f32) {
  "tt.store"(%p, %p) : (f32, f32) -> ()
  tt.return
}
// CHECK: tt.store: stores through pointers

// -----

tt.func public @store_value(%p: tensor<4x!tt.ptr<f32>>, %v: tensor<4xf16>) {
  "tt.store"(%p, %v) : (tensor<4x!tt.ptr<f32>>, tensor<4xf16>) -> ()
  tt.return
}
// CHECK: tt.store: value must be tensor<4xf32>, got tensor<4xf16>

// -----

tt.func public @atomic_op(%p: !tt.ptr<f32>, %v: f32) {
  %o = tt.atomic_rmw fmul, relaxed, gpu, %p, %v : (!tt.ptr<f32>, f32) -> f32
  tt.return
}
// CHECK: tt.atomic_rmw: unknown op 'fmul'

// -----

tt.func public @atomic_sem(%p: !tt.ptr<f32>, %v: f32) {
  %o = tt.atomic_rmw fadd, seq_cst, gpu, %p, %v : (!tt.ptr<f32>, f32) -> f32
  tt.return
}
// CHECK: tt.atomic_rmw: unknown memory semantics 'seq_cst'

// -----

tt.func public @atomic_scope(%p: !tt.ptr<f32>, %v: f32) {
  %o = tt.atomic_rmw fadd, relaxed, node, %p, %v : (!tt.ptr<f32>, f32) -> f32
  tt.return
}
// CHECK: tt.atomic_rmw: unknown scope 'node'

// -----

tt.func public @atomic_pointers(%p: f32, %v: f32) {
  %o = tt.atomic_rmw fadd, relaxed, gpu, %p, %v : (f32, f32) -> f32
  tt.return
}
// CHECK: tt.atomic_rmw: updates through pointers

// -----

tt.func public @atomic_value(%p: !tt.ptr<f32>, %v: f16) {
  %o = tt.atomic_rmw fadd, relaxed, gpu, %p, %v : (!tt.ptr<f32>, f16) -> f16
  tt.return
}
// CHECK: tt.atomic_rmw: value type must match the pointers

// -----

tt.func public @reduce_one_result(%x: tensor<4x8xf32>) {
  %a, %b = "tt.reduce"(%x) <{axis = 1 : i32}> ({
  ^bb0(%l: f32, %r: f32):
    tt.reduce.return %l : f32
  }) : (tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  tt.return
}
// CHECK: tt.reduce: one result per operand

// -----

tt.func public @reduce_axis(%x: tensor<4x8xf32>) {
  %s = "tt.reduce"(%x) <{axis = 2 : i32}> ({
  ^bb0(%l: f32, %r: f32):
    tt.reduce.return %l : f32
  }) : (tensor<4x8xf32>) -> tensor<4xf32>
  tt.return
}
// CHECK: tt.reduce: axis 2 out of range for [4, 8]

// -----

tt.func public @reduce_same_shape(%x: tensor<4x8xf32>, %y: tensor<4x4xf32>) {
  %a, %b = "tt.reduce"(%x, %y) <{axis = 1 : i32}> ({
  ^bb0(%l: f32, %l2: f32, %r: f32, %r2: f32):
    tt.reduce.return %l, %l2 : f32, f32
  }) : (tensor<4x8xf32>, tensor<4x4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  tt.return
}
// CHECK: tt.reduce: operands must have the same shape

// -----

tt.func public @reduce_result(%x: tensor<4x8xf32>) {
  %s = "tt.reduce"(%x) <{axis = 1 : i32}> ({
  ^bb0(%l: f32, %r: f32):
    tt.reduce.return %l : f32
  }) : (tensor<4x8xf32>) -> tensor<8xf32>
  tt.return
}
// CHECK: tt.reduce: result tensor<8xf32> must be tensor<4xf32>

// -----

tt.func public @reduce_combiner_args(%x: tensor<4x8xf32>) {
  %s = "tt.reduce"(%x) <{axis = 1 : i32}> ({
  ^bb0(%l: f32):
    tt.reduce.return %l : f32
  }) : (tensor<4x8xf32>) -> tensor<4xf32>
  tt.return
}
// CHECK: tt.reduce: combiner takes 2 scalars (f32, f32)

// -----

tt.func public @reduce_combiner_return(%x: tensor<4x8xf32>) {
  %s = "tt.reduce"(%x) <{axis = 1 : i32}> ({
  ^bb0(%l: f32, %r: f32):
    %i = arith.constant 0 : i32
    tt.reduce.return %i : i32
  }) : (tensor<4x8xf32>) -> tensor<4xf32>
  tt.return
}
// CHECK: tt.reduce: combiner must end with tt.reduce.return of the element types

// -----

tt.func public @dot_rank(%a: tensor<4xf32>, %c: tensor<4xf32>) {
  %d = tt.dot %a, %a, %c : tensor<4xf32> * tensor<4xf32> -> tensor<4xf32>
  tt.return
}
// CHECK: tt.dot: operands are 2-D or 3-D

// -----

tt.func public @dot_chain(%a: tensor<16x32xf16>, %b: tensor<16x64xf16>, %c: tensor<16x64xf32>) {
  %d = tt.dot %a, %b, %c : tensor<16x32xf16> * tensor<16x64xf16> -> tensor<16x64xf32>
  tt.return
}
// CHECK: tt.dot: shapes [16, 32] * [16, 64] -> [16, 64] do not chain

// -----

tt.func public @dot_precision(%a: tensor<16x32xf16>, %b: tensor<32x64xf16>, %c: tensor<16x64xf32>) {
  %d = tt.dot %a, %b, %c, inputPrecision = "bf16" : tensor<16x32xf16> * tensor<32x64xf16> -> tensor<16x64xf32>
  tt.return
}
// CHECK: tt.dot: unknown input precision

// -----

tt.func public @bitcast_shapes(%x: tensor<4xf32>) {
  %b = tt.bitcast %x : tensor<4xf32> -> tensor<8xi32>
  tt.return
}
// CHECK: tt.bitcast: shapes differ

// -----

tt.func public @bitcast_width(%x: tensor<4xf32>) {
  %b = tt.bitcast %x : tensor<4xf32> -> tensor<4xi16>
  tt.return
}
// CHECK: tt.bitcast: f32 and i16 differ in width

// -----

tt.func public @fp_to_fp_shapes(%x: tensor<4xf32>) {
  %h = tt.fp_to_fp %x : tensor<4xf32> -> tensor<8xf16>
  tt.return
}
// CHECK: tt.fp_to_fp: shapes differ

// -----

tt.func public @fp_to_fp_floats(%x: tensor<4xf32>) {
  %h = tt.fp_to_fp %x : tensor<4xf32> -> tensor<4xi16>
  tt.return
}
// CHECK: tt.fp_to_fp: converts floats

// -----

tt.func public @fp_to_fp_rounding(%x: tensor<4xf32>) {
  %h = tt.fp_to_fp %x, rounding = "up" : tensor<4xf32> -> tensor<4xf16>
  tt.return
}
// CHECK: tt.fp_to_fp: rounding is rtz or rtne

// -----

tt.func public @extern_shapes(%x: tensor<4xf32>) {
  %t = tt.extern_elementwise %x {libname = "libdevice", symbol = "tanh"} : (tensor<4xf32>) -> tensor<8xf32>
  tt.return
}
// CHECK: tt.extern_elementwise: operands and result must have one shape

// -----

tt.func public @assert_i1(%c: tensor<4xi32>) {
  tt.assert %c, "nonzero" : tensor<4xi32>
  tt.return
}
// CHECK: tt.assert: condition must be i1

// -----

"tt.func"() <{sym_name = "entry_block", function_type = (i64) -> ()}> ({
^bb0(%x: i32):
  tt.return
}) : () -> ()
// CHECK: tt.func @entry_block: entry block arguments must have the function's input types

// -----

tt.func private @declaration(%x: i32)
// CHECK: tt.func @declaration: needs a body

// -----

tt.func public @scan_result(%x: tensor<4x8xf32>) {
  %s = "tt.scan"(%x) <{axis = 1 : i32, reverse = false}> ({
  ^bb0(%l: f32, %r: f32):
    tt.scan.return %l : f32
  }) : (tensor<4x8xf32>) -> tensor<4xf32>
  tt.return
}
// CHECK: tt.scan: result tensor<4xf32> must be tensor<4x8xf32>

// -----

tt.func public @scan_axis(%x: tensor<4x8xf32>) {
  %s = "tt.scan"(%x) <{axis = 2 : i32, reverse = false}> ({
  ^bb0(%l: f32, %r: f32):
    tt.scan.return %l : f32
  }) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  tt.return
}
// CHECK: tt.scan: axis 2 out of range for [4, 8]

// -----

tt.func public @scan_combiner_return(%x: tensor<4x8xf32>) {
  %s = "tt.scan"(%x) <{axis = 1 : i32, reverse = false}> ({
  ^bb0(%l: f32, %r: f32):
    %c = arith.constant 0 : i32
    tt.scan.return %c : i32
  }) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  tt.return
}
// CHECK: tt.scan: combiner must end with tt.scan.return of the element types

// -----

tt.func public @hint_rank(%x: tensor<128x1xi32>) {
  %m = tt.multiple_of %x {values = array<i32: 16>} : tensor<128x1xi32>
  tt.return
}
// CHECK: tt.multiple_of: needs one value per dimension (2), got 1

// -----

tt.func public @hint_power(%x: tensor<128xi32>) {
  %m = tt.max_contiguous %x {values = array<i32: 24>} : tensor<128xi32>
  tt.return
}
// CHECK: tt.max_contiguous: value 24 must be a power of two

// -----

tt.func public @hint_float(%x: tensor<128xf32>) {
  %m = tt.multiple_of %x {values = array<i32: 16>} : tensor<128xf32>
  tt.return
}
// CHECK: tt.multiple_of: hints an integer block
