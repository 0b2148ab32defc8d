// RUN: fx-opt %s --device h200 -p 'loop-split-reduction{print-plans=true}' 2>&1 | filecheck %s

// An outer split that cuts the outermost reduced dimension in whole slices
// of the rest (a channels-last mean over 65 x 65 planes, cut along H: 65
// points a slice) considers every whole number of slices, not only the
// power-of-two point targets, which round to 65, 33, 13, 9, 5 or 3 chunks
// there (plan._chunk_points). On the H200 the model takes 22 chunks of 3
// slices: the shape sweep (devlogs/30) ran this mean in 21.9 us so, 27.6 in
// the 5 chunks the targets alone gave.
// CHECK: loop-split-reduction: %m [32, 96] x [65, 65], outer: split into 22 chunks of 3 x 65: {{.*}} us in two stages against {{.*}} us unsplit
// CHECK: loop.reduction sum [22, 32, 96] [3, 65]
func.func @nhwc_mean(%x: !buffer.buffer<[32, 65, 65, 96], f32, device "cuda:0">) -> !loop.tensor<[32, 96], f32> {
  %m = loop.reduction sum [32, 96] [65, 65] : !loop.tensor<[32, 96], f32> {
  ^bb0(%i0: index, %i1: index, %r0: index, %r1: index):
    %0 = loop.load %x[i0, r0, r1, i1] : !buffer.buffer<[32, 65, 65, 96], f32, device "cuda:0">
    loop.yield %0 : f32
  }
  func.return %m : !loop.tensor<[32, 96], f32>
}
