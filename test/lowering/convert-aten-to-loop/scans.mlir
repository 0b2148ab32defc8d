// RUN: fx-opt %s -p convert-aten-to-loop{fallback=error} --split-input-file | filecheck %s

// Scans are one loop.scan along the op's dimension (negative dims wrap).
// Reduced floats accumulate in f32 and the result holds the op's dtype (each
// output rounded once); integers and bools promote to int64; dtype= casts the
// input first; cummax/cummin give the values and i64 positions; a 0-d input
// is its own scan.

// CHECK-LABEL: func.func @cumsum_bf16
// CHECK:      %[[S:.*]] = loop.scan sum dim 1 [4, s0] : !loop.tensor<[4, s0], bf16> {
// CHECK-NEXT: ^bb0(%i0: index, %i1: index):
// CHECK-NEXT:   %[[L:.*]] = loop.load %x[i0, i1] : !buffer.buffer<[4, s0], bf16>
// CHECK-NEXT:   %[[W:.*]] = arith.extf %[[L]] : bf16 to f32
// CHECK-NEXT:   loop.yield %[[W]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[S]] : !loop.tensor<[4, s0], bf16>
func.func @cumsum_bf16(%x: !aten.tensor<[4, s0], bf16>) -> !aten.tensor<[4, s0], bf16> {
  %0 = aten.cumsum.default(%x, dim = -1) : !aten.tensor<[4, s0], bf16>
  func.return %0 : !aten.tensor<[4, s0], bf16>
}

// -----

// CHECK-LABEL: func.func @cumsum_bool
// CHECK:      loop.scan sum dim 0 [4, 6] : !loop.tensor<[4, 6], i64> {
// CHECK:        arith.extui %{{.*}} : i1 to i64
// CHECK-NEXT:   loop.yield %{{.*}} : i64
func.func @cumsum_bool(%x: !aten.tensor<[4, 6], i1>) -> !aten.tensor<[4, 6], i64> {
  %0 = aten.cumsum.default(%x, dim = 0) : !aten.tensor<[4, 6], i64>
  func.return %0 : !aten.tensor<[4, 6], i64>
}

// -----

// CHECK-LABEL: func.func @cumprod_dtype
// CHECK:      loop.scan prod dim 1 [4, 6] : !loop.tensor<[4, 6], f64> {
// CHECK:        arith.extf %{{.*}} : f32 to f64
func.func @cumprod_dtype(%x: !aten.tensor<[4, 6], f32>) -> !aten.tensor<[4, 6], f64> {
  %0 = aten.cumprod.default(%x, dim = 1, dtype = f64) : !aten.tensor<[4, 6], f64>
  func.return %0 : !aten.tensor<[4, 6], f64>
}

// -----

// CHECK-LABEL: func.func @logcumsumexp
// CHECK: loop.scan logsumexp dim 0 [4, 6] : !loop.tensor<[4, 6], f16> {
func.func @logcumsumexp(%x: !aten.tensor<[4, 6], f16>) -> !aten.tensor<[4, 6], f16> {
  %0 = aten.logcumsumexp.default(%x, dim = 0) : !aten.tensor<[4, 6], f16>
  func.return %0 : !aten.tensor<[4, 6], f16>
}

// -----

// CHECK-LABEL: func.func @cummax
// CHECK:      %v, %i = loop.scan argmax dim 0 [4, 6] : !loop.tensor<[4, 6], f32>, !loop.tensor<[4, 6], i64> {
// CHECK-NEXT: ^bb0(%i0: index, %i1: index):
// CHECK-NEXT:   %[[L:.*]] = loop.load %x[i0, i1] : !buffer.buffer<[4, 6], f32>
// CHECK-NEXT:   loop.yield %[[L]] : f32
func.func @cummax(%x: !aten.tensor<[4, 6], f32>) -> (!aten.tensor<[4, 6], f32>, !aten.tensor<[4, 6], i64>) {
  %v, %i = aten.cummax.default(%x, dim = 0) : (!aten.tensor<[4, 6], f32>, !aten.tensor<[4, 6], i64>)
  func.return %v, %i : !aten.tensor<[4, 6], f32>, !aten.tensor<[4, 6], i64>
}

// -----

// Bools scan as i32 (arith's i1 is signed) and are cast back.
// CHECK-LABEL: func.func @cummin_bool
// CHECK:      %[[V:.*]], %[[I:.*]] = loop.scan argmin dim 1 [4, 6] : !loop.tensor<[4, 6], i32>, !loop.tensor<[4, 6], i64> {
// CHECK:        arith.extui %{{.*}} : i1 to i32
// CHECK:      %[[B:.*]] = loop.pointwise [4, 6] : !loop.tensor<[4, 6], i1> {
// CHECK:        loop.load %[[V]][i0, i1] : !loop.tensor<[4, 6], i32>
// CHECK:      func.return %[[B]], %[[I]]
func.func @cummin_bool(%x: !aten.tensor<[4, 6], i1>) -> (!aten.tensor<[4, 6], i1>, !aten.tensor<[4, 6], i64>) {
  %v, %i = aten.cummin.default(%x, dim = -1) : (!aten.tensor<[4, 6], i1>, !aten.tensor<[4, 6], i64>)
  func.return %v, %i : !aten.tensor<[4, 6], i1>, !aten.tensor<[4, 6], i64>
}

// -----

// CHECK-LABEL: func.func @cumsum_0d
// CHECK-NOT:  loop.scan
// CHECK:      loop.pointwise [] : !loop.tensor<[], i64> {
func.func @cumsum_0d(%x: !aten.tensor<[], i32>) -> !aten.tensor<[], i64> {
  %0 = aten.cumsum.default(%x, dim = 0) : !aten.tensor<[], i64>
  func.return %0 : !aten.tensor<[], i64>
}
