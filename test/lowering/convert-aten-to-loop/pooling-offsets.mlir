// RUN: fx-opt %s -p convert-aten-to-loop --split-input-file | filecheck %s
// RUN: fx-opt %s -p convert-aten-to-loop,loop-inline,cse --split-input-file | filecheck %s --check-prefix=INLINE

// A training graph's max pooling (frontend/decompositions.py, as Inductor's):
// prims._low_memory_max_pool_with_offsets is the window max and the window
// position of ATen's index as int8 (the position of a padding point that won
// over a window of -inf moved to the window's first in-bounds point), which
// the forward saves for the backward in place of int64 indices.

// CHECK-LABEL: func.func @offsets
// CHECK:       %v = loop.reduction max [2, 3, 5, 6] [3, 3] : !loop.tensor<[2, 3, 5, 6], f32> {
// CHECK:       loop.reduction argmax [2, 3, 5, 6] [3, 3] : !loop.tensor<[2, 3, 5, 6], i64> {
// CHECK:       %o = loop.pointwise [2, 3, 5, 6] : !loop.tensor<[2, 3, 5, 6], i8> {
// CHECK:         arith.floordivsi
// CHECK:         arith.remsi
// CHECK:         arith.trunci %{{.*}} : i64 to i8
// CHECK:       func.return %v, %o

func.func @offsets(%x: !aten.tensor<[2, 3, 9, 11], f32>) -> (!aten.tensor<[2, 3, 5, 6], f32>, !aten.tensor<[2, 3, 5, 6], i8>) {
  %v, %o = prims._low_memory_max_pool_with_offsets.default(%x, kernel_size = [3, 3], stride = [2, 2], padding = [1, 1], dilation = [1, 1], ceil_mode = false) : (!aten.tensor<[2, 3, 5, 6], f32>, !aten.tensor<[2, 3, 5, 6], i8>)
  func.return %v, %o : !aten.tensor<[2, 3, 5, 6], f32>, !aten.tensor<[2, 3, 5, 6], i8>
}

// -----

// The backward recomputes the indices from the offsets (a pointwise nest:
// window row o // 3 and column o % 3 from 2*i - 1, flattened over the 9 x 11
// input); loop-inline puts that index math into the gradient's gather, which
// loads the int8 offsets under its window mask (the divisors are constants: no
// masked-off lane divides by zero), and no int64 tensor is left.

// CHECK-LABEL: func.func @backward
// CHECK:       %i = loop.pointwise [2, 3, 5, 6] : !loop.tensor<[2, 3, 5, 6], i64> {
// CHECK:         %[[O:.*]] = loop.load %o[i0, i1, i2, i3] : !buffer.buffer<[2, 3, 5, 6], i8>
// CHECK-NEXT:    %[[R:.*]] = arith.extsi %[[O]] : i8 to i64
// CHECK:         arith.floordivsi %[[R]]
// CHECK:         loop.index 2*i2 - 1 : i64
// CHECK:         arith.remsi %[[R]]
// CHECK:         loop.index 2*i3 - 1 : i64
// CHECK:         loop.index 11 : i64
// CHECK:       loop.reduction sum [2, 3, 9, 11] [2, 2]

// INLINE-LABEL: func.func @backward
// INLINE-NOT:   i64>
// INLINE:       %y = loop.reduction sum [2, 3, 9, 11] [2, 2] : !loop.tensor<[2, 3, 9, 11], f32> {
// INLINE:         %[[M:.*]] = arith.andi
// INLINE:         loop.load %g[i0, i1, r0 + i2 floordiv 2, r1 + i3 floordiv 2] mask(%[[M]])
// INLINE:         %[[O:.*]] = loop.load %o[i0, i1, r0 + i2 floordiv 2, r1 + i3 floordiv 2] mask(%[[M]]) : !buffer.buffer<[2, 3, 5, 6], i8>
// INLINE:         arith.extsi %[[O]] : i8 to i64
// INLINE:         arith.floordivsi
// INLINE:         %[[ME:.*]] = loop.index 11*i2 + i3 : i64
// INLINE:         arith.cmpi eq, %{{.*}}, %[[ME]] : i64
// INLINE:       func.return %y

func.func @backward(%g: !aten.tensor<[2, 3, 5, 6], f32>, %x: !aten.tensor<[2, 3, 9, 11], f32>, %o: !aten.tensor<[2, 3, 5, 6], i8>) -> !aten.tensor<[2, 3, 9, 11], f32> {
  %i = prims._low_memory_max_pool_offsets_to_indices.default(%o, kernel_size = [3, 3], input_size = [9, 11], stride = [2, 2], padding = [1, 1], dilation = [1, 1]) : !aten.tensor<[2, 3, 5, 6], i64>
  %y = aten.max_pool2d_with_indices_backward.default(%g, %x, %i, kernel_size = [3, 3], stride = [2, 2], padding = [1, 1], dilation = [1, 1], ceil_mode = false) : !aten.tensor<[2, 3, 9, 11], f32>
  func.return %y : !aten.tensor<[2, 3, 9, 11], f32>
}

// -----

// A divisor that is not a constant may be zero on a masked-off lane (the
// padding of a pad here): a producer dividing by a loaded value stays a nest
// of its own, loaded under the mask.

// INLINE-LABEL: func.func @loaded_divisor
// INLINE:       %q = loop.pointwise [4] : !loop.tensor<[4], i64>
// INLINE:         arith.remsi
// INLINE:       loop.load %q[i0 - 1] mask(

func.func @loaded_divisor(%a: !aten.tensor<[4], i64>, %d: !aten.tensor<[4], i64>) -> !aten.tensor<[6], i64> {
  %q = aten.remainder.Tensor(%a, %d) : !aten.tensor<[4], i64>
  %y = aten.constant_pad_nd.default(%q, pad = [1, 1]) : !aten.tensor<[6], i64>
  func.return %y : !aten.tensor<[6], i64>
}
