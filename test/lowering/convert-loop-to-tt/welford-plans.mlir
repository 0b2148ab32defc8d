// RUN: fx-opt %s --device h200 --print-kernel-plans -p convert-loop-to-tt 2>&1 >/dev/null | filecheck %s

// A looped Welford row pays a division and six more ops at every point; a
// persistent row holds the row and reduces it in two passes at a plain sum's
// cost (strategy/plan.py _streams_rows). Over the same 32768 rows of 2048
// bf16, the row sum streams its rows in a loop of short steps, and the
// variance keeps each row whole (streamed, it ran 81.7 us on an H200, 0.83x
// Inductor).

// CHECK:      convert-loop-to-tt: plans for h200
// CHECK-NEXT:   @coil_sum_0: reduction rows, looped
// CHECK-NEXT:   @coil_var_1: reduction rows, persistent [XBLOCK {{[0-9]+}}, RBLOCK 2048]

func.func @forward(%x: !buffer.buffer<[32768, 2048], bf16>) -> (!buffer.buffer<[32768], f32>, !buffer.buffer<[32768], bf16>) {
  %sum = buffer.alloc : !buffer.buffer<[32768], f32>
  loop.reduction sum [32768] [2048] outs(%sum : !buffer.buffer<[32768], f32>) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[32768, 2048], bf16>
    %1 = arith.extf %0 : bf16 to f32
    loop.yield %1 : f32
  }
  %var = buffer.alloc : !buffer.buffer<[32768], bf16>
  loop.fused [32768] [2048] outs(%var : !buffer.buffer<[32768], bf16>) {
    %0, %1, %2 = loop.reduction welford [32768] [2048] : !loop.tensor<[32768], f32>, !loop.tensor<[32768], f32>, !loop.tensor<[32768], f32> {
    ^bb0(%i0: index, %r0: index):
      %3 = loop.load %x[i0, r0] : !buffer.buffer<[32768, 2048], bf16>
      %4 = arith.extf %3 : bf16 to f32
      loop.yield %4 : f32
    }
    %var_1 = loop.pointwise [32768] : !loop.tensor<[32768], bf16> {
    ^bb0(%i0_1: index):
      %5 = loop.load %1[i0] : !loop.tensor<[32768], f32>
      %6 = loop.load %2[i0] : !loop.tensor<[32768], f32>
      %7 = arith.constant 1.000000e+00 : f32
      %8 = arith.subf %6, %7 : f32
      %9 = arith.constant 0.000000e+00 : f32
      %10 = arith.maximumf %8, %9 : f32
      %11 = arith.divf %5, %10 : f32
      %12 = arith.truncf %11 : f32 to bf16
      loop.yield %12 : bf16
    }
    loop.yield %var_1 : !loop.tensor<[32768], bf16>
  }
  func.return %sum, %var : !buffer.buffer<[32768], f32>, !buffer.buffer<[32768], bf16>
}
