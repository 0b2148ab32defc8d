// RUN: fx-opt %s -p convert-aten-to-loop --split-input-file | filecheck %s

// Ops with no loop lowering are called through ATen: a buffer.extern whose
// region is the aten op itself, over block arguments with the layouts eager
// saw. Scalar constants are cloned into the region.

// CHECK-LABEL: func.func @mm
// CHECK-SAME: (%a: !buffer.buffer<[4, 8], f32>, %b: !buffer.buffer<[8, 2], f32, strides [1, 8]>) -> !loop.tensor<[4, 2], f32>
// CHECK-SAME: attributes {coil.result_types = [!aten.tensor<[4, 2], f32>]}
// CHECK-NEXT: %[[MM:.*]] = buffer.extern "aten.mm.default" (%a, %b) : (!buffer.buffer<[4, 8], f32>, !buffer.buffer<[8, 2], f32, strides [1, 8]>) -> (!loop.tensor<[4, 2], f32>) {
// CHECK-NEXT: ^bb0(%[[A:.*]]: !aten.tensor<[4, 8], f32>, %[[B:.*]]: !aten.tensor<[8, 2], f32, strides [1, 8]>):
// CHECK-NEXT:   %[[R:.*]] = aten.mm.default(%[[A]], %[[B]]) : !aten.tensor<[4, 2], f32>
// CHECK-NEXT:   buffer.yield %[[R]] : !aten.tensor<[4, 2], f32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[MM]] : !loop.tensor<[4, 2], f32>
func.func @mm(%a: !aten.tensor<[4, 8], f32>, %b: !aten.tensor<[8, 2], f32, strides [1, 8]>) -> !aten.tensor<[4, 2], f32> {
  %0 = aten.mm.default(%a, %b) : !aten.tensor<[4, 2], f32>
  func.return %0 : !aten.tensor<[4, 2], f32>
}

// -----

// A custom op (aten.operator) and a multi-result op; the extern's results feed
// loop nests like any tensor.

// CHECK-LABEL: func.func @custom
// CHECK: %[[C:.*]] = buffer.extern "mylib.scale" (%x) : (!buffer.buffer<[3, s0], f32>) -> (!loop.tensor<[3, s0], f32>) {
// CHECK-NEXT: ^bb0(%[[X:.*]]: !aten.tensor<[3, s0], f32>):
// CHECK-NEXT:   %[[K:.*]] = aten.constant 2.0 : f64
// CHECK-NEXT:   %{{.*}} = aten.operator "mylib::scale"(%[[X]], %[[K]]) : !aten.tensor<[3, s0], f32>
// CHECK: buffer.extern "aten.linalg_svd" (%{{.*}}) : (!loop.tensor<[3, s0], f32>) -> (!loop.tensor<[3, 3], f32>, !loop.tensor<[3], f32>, !loop.tensor<[3, s0], f32>)
// CHECK-NOT: aten.constant
// CHECK: func.return
func.func @custom(%x: !aten.tensor<[3, s0], f32>) -> !aten.tensor<[3], f32> {
  %k = aten.constant 2.0 : f64
  %0 = aten.operator "mylib::scale"(%x, %k) : !aten.tensor<[3, s0], f32>
  %u, %s, %v = aten.operator "aten::linalg_svd"(%0, false, driver = none) : (!aten.tensor<[3, 3], f32>, !aten.tensor<[3], f32>, !aten.tensor<[3, s0], f32>)
  func.return %s : !aten.tensor<[3], f32>
}
