// RUN: fx-opt %s --device h200 --print-kernel-plans -p convert-loop-to-tt 2>&1 >/dev/null | filecheck %s

// Rows a program against the body's weight (strategy/plan.py,
// BODY_OPS_PER_THREAD): a thread's points times the ops each point runs stay
// under 512. A plain row sum of 6144 rows of 512 keeps 8 rows a program (16
// points a thread at 8 warps). The same rows through 40 ops a point: the
// streaming tiles (strategy/plan.py, stream_candidates) obey the same bound,
// and the best that fits is [2, 256] looped at 2 warps (8 points a thread,
// 320 op-points; its persistent [2, 512] at 2 warps would be 640). DeBERTa's
// disentangled attention (82 ops a point) ran 0.365 ms at 8 rows a program
// and 0.223 at one on an H200 (benchmarks/tile_sweep.py rel_pos_softmax).

// CHECK:      convert-loop-to-tt: plans for h200
// CHECK-NEXT:   @coil_light_0: reduction rows, persistent [XBLOCK 8, RBLOCK 512], 8 warps
// CHECK-NEXT:   @coil_heavy_1: reduction rows, looped [XBLOCK 2, RBLOCK 256], 2 warps

func.func @rows(%x: !buffer.buffer<[6144, 512], f32, device "cuda:0">) -> (!buffer.buffer<[6144], f32, device "cuda:0">, !buffer.buffer<[6144], f32, device "cuda:0">) {
  %light = buffer.alloc : !buffer.buffer<[6144], f32, device "cuda:0">
  loop.reduction sum [6144] [512] outs(%light : !buffer.buffer<[6144], f32, device "cuda:0">) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[6144, 512], f32, device "cuda:0">
    loop.yield %0 : f32
  }
  %heavy = buffer.alloc : !buffer.buffer<[6144], f32, device "cuda:0">
  loop.reduction sum [6144] [512] outs(%heavy : !buffer.buffer<[6144], f32, device "cuda:0">) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[6144, 512], f32, device "cuda:0">
    %1 = arith.mulf %0, %0 : f32
    %2 = arith.addf %1, %0 : f32
    %3 = arith.mulf %2, %2 : f32
    %4 = arith.addf %3, %0 : f32
    %5 = arith.mulf %4, %4 : f32
    %6 = arith.addf %5, %0 : f32
    %7 = arith.mulf %6, %6 : f32
    %8 = arith.addf %7, %0 : f32
    %9 = arith.mulf %8, %8 : f32
    %10 = arith.addf %9, %0 : f32
    %11 = arith.mulf %10, %10 : f32
    %12 = arith.addf %11, %0 : f32
    %13 = arith.mulf %12, %12 : f32
    %14 = arith.addf %13, %0 : f32
    %15 = arith.mulf %14, %14 : f32
    %16 = arith.addf %15, %0 : f32
    %17 = arith.mulf %16, %16 : f32
    %18 = arith.addf %17, %0 : f32
    %19 = arith.mulf %18, %18 : f32
    %20 = arith.addf %19, %0 : f32
    %21 = arith.mulf %20, %20 : f32
    %22 = arith.addf %21, %0 : f32
    %23 = arith.mulf %22, %22 : f32
    %24 = arith.addf %23, %0 : f32
    %25 = arith.mulf %24, %24 : f32
    %26 = arith.addf %25, %0 : f32
    %27 = arith.mulf %26, %26 : f32
    %28 = arith.addf %27, %0 : f32
    %29 = arith.mulf %28, %28 : f32
    %30 = arith.addf %29, %0 : f32
    %31 = arith.mulf %30, %30 : f32
    %32 = arith.addf %31, %0 : f32
    %33 = arith.mulf %32, %32 : f32
    %34 = arith.addf %33, %0 : f32
    %35 = arith.mulf %34, %34 : f32
    %36 = arith.addf %35, %0 : f32
    %37 = arith.mulf %36, %36 : f32
    %38 = arith.addf %37, %0 : f32
    %39 = arith.mulf %38, %38 : f32
    %40 = arith.addf %39, %0 : f32
    loop.yield %40 : f32
  }
  func.return %light, %heavy : !buffer.buffer<[6144], f32, device "cuda:0">, !buffer.buffer<[6144], f32, device "cuda:0">
}
