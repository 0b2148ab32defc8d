// RUN: fx-opt %s --split-input-file | filecheck %s
// RUN: fx-opt %s --split-input-file --print-op-generic | fx-opt --split-input-file | filecheck %s

// A reduction's template (`template gemm`: convert-loop-to-tt emits it as a
// tt.dot kernel) prints after the ranges and round-trips.
// CHECK-LABEL: func.func @gemm
// CHECK: loop.reduction sum [4, 5] [8] template gemm : !loop.tensor<[4, 5], f32> {
func.func @gemm(%a: !loop.tensor<[4, 8], f32>, %b: !loop.tensor<[8, 5], f32>) -> !loop.tensor<[4, 5], f32> {
  %r = loop.reduction sum [4, 5] [8] template gemm : !loop.tensor<[4, 5], f32> {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %x = loop.load %a[i0, r0] : !loop.tensor<[4, 8], f32>
    %y = loop.load %b[r0, i1] : !loop.tensor<[8, 5], f32>
    %p = arith.mulf %x, %y : f32
    loop.yield %p : f32
  }
  func.return %r : !loop.tensor<[4, 5], f32>
}
