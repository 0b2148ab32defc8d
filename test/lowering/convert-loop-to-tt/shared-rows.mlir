// RUN: fx-opt %s --device h100 --print-kernel-plans -p convert-loop-to-tt 2>&1 >/dev/null | filecheck %s --check-prefix=PLAN
// RUN: fx-opt %s --device h100 -p convert-loop-to-tt,convert-buffer-to-host -t triton > %t
// RUN: filecheck %s < %t
// RUN: filecheck %s --check-prefix=WINDOW < %t

// A product of a few rows ([M, K] @ [K, N], M = 4: lowering/aten_to_loop/
// matvec.py) with a ReLU epilogue: each program computes all 4 rows of its
// tile of N (kernel_group._shared_rows), the reduction and the epilogue
// emitted once a row, so the weight's rows -- the same for every row -- are
// one load and each row of x one load of its own; the tile is planned over N
// with 4 accumulators a lane.

// PLAN: @coil_s_r_out_0: reduction rows, {{.*}}; 4 rows a program, unrolled (loads shared by the rows once)

// CHECK-LABEL: def coil_s_r_out_0(
// CHECK-COUNT-1: tl.load({{.*}}evict_first
// CHECK-NOT:     evict_first
// CHECK:         tl.sum(
// CHECK:         tl.sum(
// CHECK:         tl.sum(
// CHECK:         tl.sum(
// CHECK-NOT:     tl.sum(
// CHECK:         tl.store(
// CHECK:         tl.store(
// CHECK:         tl.store(
// CHECK:         tl.store(
// CHECK-NOT:     tl.store(

func.func @rows(%x: !buffer.buffer<[4, 128], bf16, device "cuda:0">, %w: !buffer.buffer<[64, 128], bf16, device "cuda:0">) -> !buffer.buffer<[4, 64], bf16, device "cuda:0"> {
  %out = buffer.alloc : !buffer.buffer<[4, 64], bf16, device "cuda:0">
  loop.fused [4, 64] [128] outs(%out : !buffer.buffer<[4, 64], bf16, device "cuda:0">) {
    %s = loop.reduction sum [4, 64] [128] : !loop.tensor<[4, 64], f32> {
    ^bb0(%i0: index, %i1: index, %r0: index):
      %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, 128], bf16, device "cuda:0">
      %1 = arith.extf %0 : bf16 to f32
      %2 = loop.load %w[i1, r0] : !buffer.buffer<[64, 128], bf16, device "cuda:0">
      %3 = arith.extf %2 : bf16 to f32
      %4 = arith.mulf %1, %3 : f32
      loop.yield %4 : f32
    }
    %r = loop.pointwise [4, 64] : !loop.tensor<[4, 64], bf16> {
    ^bb0(%i0: index, %i1: index):
      %0 = loop.load %s[i0, i1] : !loop.tensor<[4, 64], f32>
      %1 = arith.constant 0.0 : f32
      %2 = arith.maximumf %0, %1 : f32
      %3 = arith.truncf %2 : f32 to bf16
      loop.yield %3 : bf16
    }
    loop.yield %r : !loop.tensor<[4, 64], bf16>
  }
  func.return %out : !buffer.buffer<[4, 64], bf16, device "cuda:0">
}

// A small window reduced in registers (a 1-D depthwise convolution: the
// weight's 3 taps per channel, the input's window per row) with its rows
// shared: each program unrolls the window of both rows of the leading
// dimension, each row under its own index (kernel_group._unrolled keeps the
// row's renaming; without it i0 had no value: "index symbol i0 has no value
// here").

// PLAN: @coil_s_out_1: window of 3 unrolled, {{.*}}; 2 rows a program, unrolled (loads shared by the rows once)

// CHECK-LABEL: def coil_s_out_1(
// CHECK-COUNT-2: tl.store(
// CHECK-NOT:     tl.store(

// The weight's three taps are loaded once for both rows: the first row's
// store into %out cannot have changed %w (body.load keeps a load until a
// store to storage it may share: a common holder, or two arguments).
// WINDOW-LABEL: def coil_s_out_1(
// WINDOW-COUNT-3: tl.load({{.*}}evict_last
// WINDOW-NOT:     evict_last

func.func @window_rows(%x: !buffer.buffer<[2, 10, 64], f32, device "cuda:0">, %w: !buffer.buffer<[3, 64], f32, device "cuda:0">) -> !buffer.buffer<[2, 8, 64], f32, device "cuda:0"> {
  %out = buffer.alloc : !buffer.buffer<[2, 8, 64], f32, device "cuda:0">
  loop.fused [2, 8, 64] [3] outs(%out : !buffer.buffer<[2, 8, 64], f32, device "cuda:0">) {
    %s = loop.reduction sum [2, 8, 64] [3] : !loop.tensor<[2, 8, 64], f32> {
    ^bb0(%i0: index, %i1: index, %i2: index, %r0: index):
      %0 = loop.load %x[i0, i1 + r0, i2] : !buffer.buffer<[2, 10, 64], f32, device "cuda:0">
      %1 = loop.load %w[r0, i2] : !buffer.buffer<[3, 64], f32, device "cuda:0">
      %2 = arith.mulf %0, %1 : f32
      loop.yield %2 : f32
    }
    loop.yield %s : !loop.tensor<[2, 8, 64], f32>
  }
  func.return %out : !buffer.buffer<[2, 8, 64], f32, device "cuda:0">
}
