// RUN: fx-opt %s -p convert-aten-to-loop --split-input-file | filecheck %s

// keepdim: reduced dims stay as size-1 ranges; reduction ranges are the reduced dims in order.

// CHECK-LABEL: func.func @sum_keepdim
// CHECK: %[[V0:[^ ,]*]] = loop.reduction sum [4, 1, 1] [s0, 8] : !loop.tensor<[4, 1, 1], f32> {
// CHECK-NEXT: ^bb0(%i0: index, %i1: index, %i2: index, %r0: index, %r1: index):
// CHECK-NEXT: %[[V1:[^ ,]*]] = loop.load %x[i0, r0, r1] : !buffer.buffer<[4, s0, 8], f32>
// CHECK-NEXT: loop.yield %[[V1]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]] : !loop.tensor<[4, 1, 1], f32>
func.func @sum_keepdim(%x: !aten.tensor<[4, s0, 8], f32>) -> !aten.tensor<[4, 1, 1], f32> {
  %0 = aten.sum.dim_IntList(%x, dim = [-1, 1], keepdim = true) : !aten.tensor<[4, 1, 1], f32>
  func.return %0 : !aten.tensor<[4, 1, 1], f32>
}

// -----

// sum of bool promotes to int64 inside the body; no dims means every dim.

// CHECK-LABEL: func.func @sum_bool
// CHECK: %[[V0:[^ ,]*]] = loop.reduction sum [] [4, 8] : !loop.tensor<[], i64> {
// CHECK-NEXT: ^bb0(%r0: index, %r1: index):
// CHECK-NEXT: %[[V1:[^ ,]*]] = loop.load %x[r0, r1] : !buffer.buffer<[4, 8], i1>
// CHECK-NEXT: %[[V2:[^ ,]*]] = arith.extui %[[V1]] : i1 to i64
// CHECK-NEXT: loop.yield %[[V2]] : i64
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]] : !loop.tensor<[], i64>
func.func @sum_bool(%x: !aten.tensor<[4, 8], i1>) -> !aten.tensor<[], i64> {
  %0 = aten.sum.default(%x) : !aten.tensor<[], i64>
  func.return %0 : !aten.tensor<[], i64>
}

// -----

// f16 sums accumulate in f32; a pointwise epilogue rounds to f16.

// CHECK-LABEL: func.func @sum_f16
// CHECK: %[[V0:[^ ,]*]] = loop.reduction sum [4] [8] : !loop.tensor<[4], f32> {
// CHECK-NEXT: ^bb0(%i0: index, %r0: index):
// CHECK-NEXT: %[[V1:[^ ,]*]] = loop.load %x[i0, r0] : !buffer.buffer<[4, 8], f16>
// CHECK-NEXT: %[[V2:[^ ,]*]] = arith.extf %[[V1]] : f16 to f32
// CHECK-NEXT: loop.yield %[[V2]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: %[[V3:[^ ,]*]] = loop.pointwise [4] : !loop.tensor<[4], f16> {
// CHECK-NEXT: ^bb0(%i0_1: index):
// CHECK-NEXT: %[[V4:[^ ,]*]] = loop.load %[[V0]][i0] : !loop.tensor<[4], f32>
// CHECK-NEXT: %[[V5:[^ ,]*]] = arith.truncf %[[V4]] : f32 to f16
// CHECK-NEXT: loop.yield %[[V5]] : f16
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V3]] : !loop.tensor<[4], f16>
func.func @sum_f16(%x: !aten.tensor<[4, 8], f16>) -> !aten.tensor<[4], f16> {
  %0 = aten.sum.dim_IntList(%x, dim = [1]) : !aten.tensor<[4], f16>
  func.return %0 : !aten.tensor<[4], f16>
}

// -----

// mean = sum, then a divide by the element count (symbolic: loop.index).

// CHECK-LABEL: func.func @mean
// CHECK: %[[V0:[^ ,]*]] = loop.reduction sum [4] [s0] : !loop.tensor<[4], f32> {
// CHECK-NEXT: ^bb0(%i0: index, %r0: index):
// CHECK-NEXT: %[[V1:[^ ,]*]] = loop.load %x[i0, r0] : !buffer.buffer<[4, s0], f32>
// CHECK-NEXT: loop.yield %[[V1]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: %[[V2:[^ ,]*]] = loop.pointwise [4] : !loop.tensor<[4], f32> {
// CHECK-NEXT: ^bb0(%i0_1: index):
// CHECK-NEXT: %[[V3:[^ ,]*]] = loop.load %[[V0]][i0] : !loop.tensor<[4], f32>
// CHECK-NEXT: %[[V4:[^ ,]*]] = loop.index s0 : i64
// CHECK-NEXT: %[[V5:[^ ,]*]] = arith.sitofp %[[V4]] : i64 to f32
// CHECK-NEXT: %[[V6:[^ ,]*]] = arith.divf %[[V3]], %[[V5]] : f32
// CHECK-NEXT: loop.yield %[[V6]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V2]] : !loop.tensor<[4], f32>
func.func @mean(%x: !aten.tensor<[4, s0], f32>) -> !aten.tensor<[4], f32> {
  %0 = aten.mean.dim(%x, dim = [1]) : !aten.tensor<[4], f32>
  func.return %0 : !aten.tensor<[4], f32>
}

// -----

// max.dim: a max and an argmax reduction over the same domain.

// CHECK-LABEL: func.func @max_dim
// CHECK: %[[V0:[^ ,]*]] = loop.reduction max [4] [8] : !loop.tensor<[4], f32> {
// CHECK-NEXT: ^bb0(%i0: index, %r0: index):
// CHECK-NEXT: %[[V1:[^ ,]*]] = loop.load %x[i0, r0] : !buffer.buffer<[4, 8], f32>
// CHECK-NEXT: loop.yield %[[V1]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: %[[V2:[^ ,]*]] = loop.reduction argmax [4] [8] : !loop.tensor<[4], i64> {
// CHECK-NEXT: ^bb0(%i0_1: index, %r0_1: index):
// CHECK-NEXT: %[[V3:[^ ,]*]] = loop.load %x[i0, r0] : !buffer.buffer<[4, 8], f32>
// CHECK-NEXT: loop.yield %[[V3]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]], %[[V2]] : !loop.tensor<[4], f32>, !loop.tensor<[4], i64>
func.func @max_dim(%x: !aten.tensor<[4, 8], f32>) -> (!aten.tensor<[4], f32>, !aten.tensor<[4], i64>) {
  %v, %i = aten.max.dim(%x, dim = 1) : (!aten.tensor<[4], f32>, !aten.tensor<[4], i64>)
  func.return %v, %i : !aten.tensor<[4], f32>, !aten.tensor<[4], i64>
}

// -----

// argmax without dim: the flattened (row-major) position over every dim.

// CHECK-LABEL: func.func @argmax_flat
// CHECK: %[[V0:[^ ,]*]] = loop.reduction argmax [] [4, 8] : !loop.tensor<[], i64> {
// CHECK-NEXT: ^bb0(%r0: index, %r1: index):
// CHECK-NEXT: %[[V1:[^ ,]*]] = loop.load %x[r0, r1] : !buffer.buffer<[4, 8], f32>
// CHECK-NEXT: loop.yield %[[V1]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]] : !loop.tensor<[], i64>
func.func @argmax_flat(%x: !aten.tensor<[4, 8], f32>) -> !aten.tensor<[], i64> {
  %0 = aten.argmax.default(%x) : !aten.tensor<[], i64>
  func.return %0 : !aten.tensor<[], i64>
}

// -----

// var_mean: one Welford reduction; var = m2 / max(count - correction, 0).

// CHECK-LABEL: func.func @var_mean
// CHECK: %[[V0:[^ ,]*]], %[[V1:[^ ,]*]], %[[V2:[^ ,]*]] = loop.reduction welford [4] [8] : !loop.tensor<[4], f32>, !loop.tensor<[4], f32>, !loop.tensor<[4], f32> {
// CHECK-NEXT: ^bb0(%i0: index, %r0: index):
// CHECK-NEXT: %[[V3:[^ ,]*]] = loop.load %x[i0, r0] : !buffer.buffer<[4, 8], f32>
// CHECK-NEXT: loop.yield %[[V3]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: %[[V4:[^ ,]*]] = loop.pointwise [4] : !loop.tensor<[4], f32> {
// CHECK-NEXT: ^bb0(%i0_1: index):
// CHECK-NEXT: %[[V5:[^ ,]*]] = loop.load %[[V1]][i0] : !loop.tensor<[4], f32>
// CHECK-NEXT: %[[V6:[^ ,]*]] = loop.load %[[V2]][i0] : !loop.tensor<[4], f32>
// CHECK-NEXT: %[[V7:[^ ,]*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[V8:[^ ,]*]] = arith.subf %[[V6]], %[[V7]] : f32
// CHECK-NEXT: %[[V9:[^ ,]*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[V10:[^ ,]*]] = arith.maximumf %[[V8]], %[[V9]] : f32
// CHECK-NEXT: %[[V11:[^ ,]*]] = arith.divf %[[V5]], %[[V10]] : f32
// CHECK-NEXT: loop.yield %[[V11]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V4]], %[[V0]] : !loop.tensor<[4], f32>, !loop.tensor<[4], f32>
func.func @var_mean(%x: !aten.tensor<[4, 8], f32>) -> (!aten.tensor<[4], f32>, !aten.tensor<[4], f32>) {
  %v, %m = aten.var_mean.correction(%x, dim = [1], correction = 1) : (!aten.tensor<[4], f32>, !aten.tensor<[4], f32>)
  func.return %v, %m : !aten.tensor<[4], f32>, !aten.tensor<[4], f32>
}

// -----

// any.dims with an empty list reduces nothing: x != 0.

// CHECK-LABEL: func.func @any_dims_empty
// CHECK: %[[V0:[^ ,]*]] = loop.pointwise [4, 8] : !loop.tensor<[4, 8], i1> {
// CHECK-NEXT: ^bb0(%i0: index, %i1: index):
// CHECK-NEXT: %[[V1:[^ ,]*]] = loop.load %x[i0, i1] : !buffer.buffer<[4, 8], f32>
// CHECK-NEXT: %[[V2:[^ ,]*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[V3:[^ ,]*]] = arith.cmpf une, %[[V1]], %[[V2]] : f32
// CHECK-NEXT: loop.yield %[[V3]] : i1
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]] : !loop.tensor<[4, 8], i1>
func.func @any_dims_empty(%x: !aten.tensor<[4, 8], f32>) -> !aten.tensor<[4, 8], i1> {
  %0 = aten.any.dims(%x, dim = []) : !aten.tensor<[4, 8], i1>
  func.return %0 : !aten.tensor<[4, 8], i1>
}

// -----

// Unsupported dtypes fall back to ATen.

// CHECK-LABEL: func.func @sum_uint8
// CHECK: %[[V0:[^ ,]*]] = buffer.extern "aten.sum.dim_IntList" (%x) : (!buffer.buffer<[4, 8], ui8>) -> (!loop.tensor<[4], i64>) {
// CHECK-NEXT: ^bb0(%x_1: !aten.tensor<[4, 8], ui8>):
// CHECK-NEXT: %[[V1:[^ ,]*]] = aten.sum.dim_IntList(%x_1, dim = [1]) : !aten.tensor<[4], i64>
// CHECK-NEXT: buffer.yield %[[V1]] : !aten.tensor<[4], i64>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]] : !loop.tensor<[4], i64>
func.func @sum_uint8(%x: !aten.tensor<[4, 8], ui8>) -> !aten.tensor<[4], i64> {
  %0 = aten.sum.dim_IntList(%x, dim = [1]) : !aten.tensor<[4], i64>
  func.return %0 : !aten.tensor<[4], i64>
}
