// RUN: fx-opt %s --parsing-diagnostics --verify-diagnostics --split-input-file | filecheck %s

// A reduction's template must name one coil lowers (loop.REDUCTION_TEMPLATES),
// and gemm's is a sum over one reduction range.

// CHECK: loop.reduction template gemm: a sum over one reduction range (K)
func.func @gemm_max(%a: !loop.tensor<[4, 8], f32>) -> !loop.tensor<[4], f32> {
  %r = loop.reduction max [4] [8] template gemm : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %x = loop.load %a[i0, r0] : !loop.tensor<[4, 8], f32>
    loop.yield %x : f32
  }
  func.return %r : !loop.tensor<[4], f32>
}

// -----

// CHECK: loop.reduction: unknown template 'conv' (one of gemm)
func.func @unknown(%a: !loop.tensor<[4, 8], f32>) -> !loop.tensor<[4], f32> {
  %r = loop.reduction sum [4] [8] template conv : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %x = loop.load %a[i0, r0] : !loop.tensor<[4, 8], f32>
    loop.yield %x : f32
  }
  func.return %r : !loop.tensor<[4], f32>
}
