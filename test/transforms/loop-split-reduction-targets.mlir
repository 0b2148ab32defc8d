// RUN: fx-opt %s --device h100 -p 'loop-split-reduction{print-plans=true}' 2>&1 | filecheck %s --check-prefix=H100
// RUN: fx-opt %s --device a100 -p 'loop-split-reduction{print-plans=true}' 2>&1 | filecheck %s --check-prefix=A100

// The split decision is the strategy's estimate for the device named
// (strategy/plan.py): 256 rows of 65536 f32 run one looped row a program.
// An H100 needs about 3.35 TB/s x 600 ns = 2 MB in flight to reach its
// bandwidth and 256 programs hold too little: split in 4 chunks (1024
// programs). An A100 needs about half that (2 TB/s x 550 ns): left alone.
// H100: loop-split-reduction: %s [256] x [65536], inner: split into 4 chunks of 16384: {{.*}} us in two stages against {{.*}} us unsplit
// H100: loop.reduction sum [4, 256] [16384]
// H100: loop.reduction sum [256] [4]
// A100: loop-split-reduction: %s [256] x [65536], inner: not split: {{.*}} us unsplit, {{.*}} us in {{[0-9]+}} chunks (a split must gain 10%)
// A100: loop.reduction sum [256] [65536]
func.func @rows(%x: !buffer.buffer<[256, 65536], f32, device "cuda:0">) -> !loop.tensor<[256], f32> {
  %s = loop.reduction sum [256] [65536] : !loop.tensor<[256], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[256, 65536], f32, device "cuda:0">
    loop.yield %0 : f32
  }
  func.return %s : !loop.tensor<[256], f32>
}
