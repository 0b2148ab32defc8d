// RUN: fx-opt %s --device h100 -p 'loop-split-reduction{print-plans=true}' 2>&1 | filecheck %s --check-prefix=H100
// RUN: fx-opt %s --device a100 -p 'loop-split-reduction{print-plans=true}' 2>&1 | filecheck %s --check-prefix=A100

// The split decision is the strategy's estimate for the device named
// (strategy/plan.py): 32 rows of 65536 f32 run one looped row a program,
// 32 programs for 132 SMs (H100) or 108 (A100), latency-bound. Both split
// into 16 chunks of 4096: stage 1's 512 rows are streamed (plan.stream_tile:
// several rows a program in unmasked steps, one round of programs), which
// the A100's fewer SMs also run in one round (before the streamed tiles,
// one persistent row a program, it took 8 chunks of 8192); each device's
// estimate is its own.
// H100: loop-split-reduction: %s [32] x [65536], inner: split into 16 chunks of 4096: {{.*}} us in two stages against {{.*}} us unsplit
// H100: loop.reduction sum [16, 32] [4096]
// H100: loop.reduction sum [32] [16]
// A100: loop-split-reduction: %s [32] x [65536], inner: split into 16 chunks of 4096: {{.*}} us in two stages against {{.*}} us unsplit
// A100: loop.reduction sum [16, 32] [4096]
// A100: loop.reduction sum [32] [16]
func.func @rows(%x: !buffer.buffer<[32, 65536], f32, device "cuda:0">) -> !loop.tensor<[32], f32> {
  %s = loop.reduction sum [32] [65536] : !loop.tensor<[32], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[32, 65536], f32, device "cuda:0">
    loop.yield %0 : f32
  }
  func.return %s : !loop.tensor<[32], f32>
}
