// RUN: fx-opt %s -p convert-aten-to-loop --split-input-file | filecheck %s
// RUN: fx-opt %s -p convert-aten-to-loop --split-input-file | filecheck %s --check-prefix=DCE

// max_pool2d_with_indices: a max over the [3, 3] window read at
// 2*o - 1 + k, the padding masked to -inf; the indices are an argmax over
// the same window mapped back to the input plane (ih * 11 + iw).

// CHECK-LABEL: func.func @pool
// CHECK:       %v = loop.reduction max [2, 3, 5, 6] [3, 3] : !loop.tensor<[2, 3, 5, 6], f32> {
// CHECK:         loop.load %x[i0, i1, 2*i2 + r0 - 1, 2*i3 + r1 - 1] mask(
// CHECK-NEXT:    arith.constant 0xff800000 : f32
// CHECK-NEXT:    arith.select
// CHECK:       %[[ARG:.*]] = loop.reduction argmax [2, 3, 5, 6] [3, 3] : !loop.tensor<[2, 3, 5, 6], i64> {
// CHECK:       %i = loop.pointwise [2, 3, 5, 6] : !loop.tensor<[2, 3, 5, 6], i64> {
// CHECK-NEXT:  ^
// CHECK-NEXT:    loop.load %[[ARG]][i0, i1, i2, i3]
// CHECK:         arith.floordivsi
// CHECK:         arith.remsi
// CHECK:         loop.index 11 : i64
// CHECK:       func.return %v, %i

func.func @pool(%x: !aten.tensor<[2, 3, 9, 11], f32>) -> (!aten.tensor<[2, 3, 5, 6], f32>, !aten.tensor<[2, 3, 5, 6], i64>) {
  %v, %i = aten.max_pool2d_with_indices.default(%x, kernel_size = [3, 3], stride = [2, 2], padding = [1, 1]) : (!aten.tensor<[2, 3, 5, 6], f32>, !aten.tensor<[2, 3, 5, 6], i64>)
  func.return %v, %i : !aten.tensor<[2, 3, 5, 6], f32>, !aten.tensor<[2, 3, 5, 6], i64>
}

// -----

// An inference graph that drops the indices never computes them.

// DCE-LABEL: func.func @values_only
// DCE:         loop.reduction max
// DCE-NOT:     argmax
// DCE:         func.return

func.func @values_only(%x: !aten.tensor<[2, 3, 9, 11], bf16>) -> !aten.tensor<[2, 3, 5, 6], bf16> {
  %v, %i = aten.max_pool2d_with_indices.default(%x, kernel_size = [3, 3], stride = [2, 2], padding = [1, 1]) : (!aten.tensor<[2, 3, 5, 6], bf16>, !aten.tensor<[2, 3, 5, 6], i64>)
  func.return %v : !aten.tensor<[2, 3, 5, 6], bf16>
}
