// RUN: fx-opt %s --device h100 -p 'loop-split-reduction{print-plans=true}' 2>&1 | filecheck %s

// A softmax denominator of a split max takes the max's plan, not one of its
// own: split alike, its stage 1 sums exp(x - m_s) against each chunk's max in
// the max's stage-1 kernel (online). Planned apart, the column softmax of
// 3001 x 7 f32 below gets 24 chunks for the max and 47 for the sum (the sum's
// finish a launch of its own, no counter atomics), and the sum would read x
// again after the max's finish.
// CHECK: loop-split-reduction: %m [7] x [3001], outer: split into 24 chunks of 126
// CHECK: loop-split-reduction: %s: the denominator of a split max, split as it is: 24 chunks of 126
// CHECK:      %[[MP:.*]] = loop.reduction max [24, 7] [126]
// CHECK:      %[[M:.*]] = loop.reduction max [7] [24]
// CHECK:      loop.reduction sum [24, 7] [126]
// CHECK:        loop.load %[[MP]][i0, i1]
// CHECK:      loop.reduction sum [7] [24]
func.func @column_softmax(%x: !buffer.buffer<[3001, 7], f32, device "cuda:0">) -> (!loop.tensor<[7], f32>, !loop.tensor<[7], f32>) {
  %m = loop.reduction max [7] [3001] : !loop.tensor<[7], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[3001, 7], f32, device "cuda:0">
    loop.yield %0 : f32
  }
  %s = loop.reduction sum [7] [3001] : !loop.tensor<[7], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[3001, 7], f32, device "cuda:0">
    %1 = loop.load %m[i0] : !loop.tensor<[7], f32>
    %2 = arith.subf %0, %1 : f32
    %3 = math.exp %2 : f32
    loop.yield %3 : f32
  }
  func.return %m, %s : !loop.tensor<[7], f32>, !loop.tensor<[7], f32>
}
