// RUN: fx-opt %s --device h100 -p loop-matvec-prologue | filecheck %s --check-prefix=H100
// RUN: fx-opt %s --device a100 -p loop-matvec-prologue | filecheck %s --check-prefix=A100

// A norm prologue pays where the product's matrix streams in at most one
// launch's time on the target (prologue_read_bytes: launch_s at the bandwidth
// a streaming kernel reaches, 6.0 MB on an H100, 3.6 MB on an A100): this
// 1100 x 1024 f32 matrix (4.5 MB) takes the RMSNorm on an H100, and keeps
// the norm's own nests on an A100.
// H100-LABEL: func.func @rmsnorm_matvec
// H100:         loop.reduction sum [1100] [1024]
// H100:         %y = loop.reduction sum [1100] [1024]
// H100:           math.rsqrt
// H100-NOT:     loop.pointwise
// A100-LABEL: func.func @rmsnorm_matvec
// A100:         %ss = loop.reduction sum [1] [1024]
// A100:         %n = loop.pointwise [1024]
// A100:         %y = loop.reduction sum [1100] [1024]
// A100-NOT:       math.rsqrt
func.func @rmsnorm_matvec(%h: !buffer.buffer<[1024], f32>, %g: !buffer.buffer<[1024], f32>, %w: !buffer.buffer<[1100, 1024], f32>) -> !loop.tensor<[1100], f32> {
  %ss = loop.reduction sum [1] [1024] : !loop.tensor<[1], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %h[r0] : !buffer.buffer<[1024], f32>
    %1 = arith.mulf %0, %0 : f32
    loop.yield %1 : f32
  }
  %n = loop.pointwise [1024] : !loop.tensor<[1024], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %h[i0] : !buffer.buffer<[1024], f32>
    %1 = loop.load %ss[0] : !loop.tensor<[1], f32>
    %2 = math.rsqrt %1 : f32
    %3 = arith.mulf %0, %2 : f32
    %4 = loop.load %g[i0] : !buffer.buffer<[1024], f32>
    %5 = arith.mulf %3, %4 : f32
    loop.yield %5 : f32
  }
  %y = loop.reduction sum [1100] [1024] : !loop.tensor<[1100], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %n[r0] : !loop.tensor<[1024], f32>
    %1 = loop.load %w[i0, r0] : !buffer.buffer<[1100, 1024], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %y : !loop.tensor<[1100], f32>
}
