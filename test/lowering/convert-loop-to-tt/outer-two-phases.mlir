// RUN: fx-opt %s --device h100 --print-kernel-plans -p convert-loop-to-tt 2>&1 >/dev/null | filecheck %s
// RUN: fx-opt %s --device h100 -p convert-loop-to-tt,convert-buffer-to-host -t triton | filecheck %s --check-prefix=PY

// A layer norm over a transposed input (ViT's first norm: the patch
// convolution's [B, C, 14, 14] output read as [B, 196, C], each token's
// channels 196 elements apart): the loads run along the outputs, so the
// reduction is outer; it has two phases (the statistics, then the normalized
// outputs). Looped, each phase reads the row ([XBLOCK 8, RBLOCK 64]: 29 MB
// estimated for the 19 MB of data); held whole it is read once, and the model
// takes that (strategy/plan.py, outer_persistent_tiles).

// CHECK: @coil_var_mean_add_0: reduction outer, persistent [XBLOCK 8, RBLOCK 512], 8 warps: 19.3 MB

// The row is loaded once (then the weight and the bias), and nothing loops.
// PY-LABEL: def coil_var_mean_add_0(
// PY-NOT:       for
// PY-COUNT-3:   tl.load(
// PY-NOT:       tl.load(
// PY-NOT:       for

func.func @forward(%arg0: !buffer.buffer<[32, 384, 14, 14], f32, device "cuda:0">, %arg1: !buffer.buffer<[384], f32, device "cuda:0">, %arg2: !buffer.buffer<[384], f32, device "cuda:0">) -> !buffer.buffer<[32, 196, 384], f32, device "cuda:0"> attributes {coil.peak_bytes = #coil.expr<9633792>} {
  %add = buffer.alloc : !buffer.buffer<[32, 196, 384], f32, device "cuda:0">
  loop.fused [32, 196] [384] outs(%add : !buffer.buffer<[32, 196, 384], f32, device "cuda:0">) {
    %var_mean, %0, %1 = loop.reduction welford [32, 196] [384] : !loop.tensor<[32, 196], f32>, !loop.tensor<[32, 196], f32>, !loop.tensor<[32, 196], f32> {
    ^bb0(%i0: index, %i1: index, %r0: index):
      %2 = loop.load %arg0[i0, r0, i1 floordiv 14, i1 mod 14] : !buffer.buffer<[32, 384, 14, 14], f32, device "cuda:0">
      loop.yield %2 : f32
    }
    %add_1 = loop.pointwise [32, 196, 384] : !loop.tensor<[32, 196, 384], f32> {
    ^bb0(%i0_1: index, %i1_1: index, %i2: index):
      %3 = loop.load %arg0[i0, i2, i1 floordiv 14, i1 mod 14] : !buffer.buffer<[32, 384, 14, 14], f32, device "cuda:0">
      %4 = loop.load %var_mean[i0, i1] : !loop.tensor<[32, 196], f32>
      %5 = arith.subf %3, %4 : f32
      %6 = loop.load %0[i0, i1] : !loop.tensor<[32, 196], f32>
      %7 = loop.load %1[i0, i1] : !loop.tensor<[32, 196], f32>
      %8 = arith.constant 0.000000e+00 : f32
      %9 = arith.subf %7, %8 : f32
      %10 = arith.maximumf %9, %8 : f32
      %11 = arith.divf %6, %10 : f32
      %12 = arith.constant 1.000000e-05 : f32
      %13 = arith.addf %11, %12 : f32
      %14 = math.rsqrt %13 : f32
      %15 = arith.mulf %5, %14 : f32
      %16 = loop.load %arg1[i2] : !buffer.buffer<[384], f32, device "cuda:0">
      %17 = arith.mulf %15, %16 : f32
      %18 = loop.load %arg2[i2] : !buffer.buffer<[384], f32, device "cuda:0">
      %19 = arith.addf %17, %18 : f32
      loop.yield %19 : f32
    }
    loop.yield %add_1 : !loop.tensor<[32, 196, 384], f32>
  }
  func.return %add : !buffer.buffer<[32, 196, 384], f32, device "cuda:0">
}
