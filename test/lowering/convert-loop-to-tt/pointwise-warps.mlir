// RUN: fx-opt %s --device h200 --print-kernel-plans -p convert-loop-to-tt 2>&1 >/dev/null | filecheck %s

// A 1-D pointwise tile takes 8 elements a thread (XBLOCK 1024, 4 warps) where
// its element count is a whole number of 16-byte vectors of its narrowest
// access, and 4 (8 warps) where it is not: the mask then cannot be proven
// constant over a vector, every access goes element by element, and the shape
// sweep measured 4 a thread faster on every such shape (benchmarks/RESULTS.md,
// seventeenth session). 3001 x 4097 f16 (odd), 777 x 1001 f32 (odd),
// 999 x 1002 f16 (1000998: even, not a multiple of 8 halves), 1000 x 1000 f16
// (aligned: 4 warps).

// CHECK:      @coil_odd_0: pointwise 1-D [XBLOCK 1024], 8 warps
// CHECK-NEXT: @coil_odd32_1: pointwise 1-D [XBLOCK 1024], 8 warps
// CHECK-NEXT: @coil_short_2: pointwise 1-D [XBLOCK 1024], 8 warps
// CHECK-NEXT: @coil_even_3: pointwise 1-D [XBLOCK 1024], 4 warps

func.func @warps(%x: !buffer.buffer<[3001, 4097], f16, device "cuda:0">, %b: !buffer.buffer<[3001], f16, device "cuda:0">, %y: !buffer.buffer<[777, 1001], f32, device "cuda:0">, %z: !buffer.buffer<[999, 1002], f16, device "cuda:0">, %w: !buffer.buffer<[1000, 1000], f16, device "cuda:0">) -> (!buffer.buffer<[3001, 4097], f16, device "cuda:0">, !buffer.buffer<[777, 1001], f32, device "cuda:0">, !buffer.buffer<[999, 1002], f16, device "cuda:0">, !buffer.buffer<[1000, 1000], f16, device "cuda:0">) {
  %odd = buffer.alloc : !buffer.buffer<[3001, 4097], f16, device "cuda:0">
  loop.pointwise [3001, 4097] outs(%odd : !buffer.buffer<[3001, 4097], f16, device "cuda:0">) {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[3001, 4097], f16, device "cuda:0">
    %1 = loop.load %b[i0] : !buffer.buffer<[3001], f16, device "cuda:0">
    %2 = arith.addf %0, %1 : f16
    loop.yield %2 : f16
  }
  %odd32 = buffer.alloc : !buffer.buffer<[777, 1001], f32, device "cuda:0">
  loop.pointwise [777, 1001] outs(%odd32 : !buffer.buffer<[777, 1001], f32, device "cuda:0">) {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %y[i0, i1] : !buffer.buffer<[777, 1001], f32, device "cuda:0">
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %short = buffer.alloc : !buffer.buffer<[999, 1002], f16, device "cuda:0">
  loop.pointwise [999, 1002] outs(%short : !buffer.buffer<[999, 1002], f16, device "cuda:0">) {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %z[i0, i1] : !buffer.buffer<[999, 1002], f16, device "cuda:0">
    %1 = math.exp %0 : f16
    loop.yield %1 : f16
  }
  %even = buffer.alloc : !buffer.buffer<[1000, 1000], f16, device "cuda:0">
  loop.pointwise [1000, 1000] outs(%even : !buffer.buffer<[1000, 1000], f16, device "cuda:0">) {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %w[i0, i1] : !buffer.buffer<[1000, 1000], f16, device "cuda:0">
    %1 = math.exp %0 : f16
    loop.yield %1 : f16
  }
  func.return %odd, %odd32, %short, %even : !buffer.buffer<[3001, 4097], f16, device "cuda:0">, !buffer.buffer<[777, 1001], f32, device "cuda:0">, !buffer.buffer<[999, 1002], f16, device "cuda:0">, !buffer.buffer<[1000, 1000], f16, device "cuda:0">
}
