// RUN: fx-opt %s --device h100 -p 'loop-split-reduction{print-plans=true}' 2>&1 | filecheck %s

// A split's estimate prices the finish the back end builds (plan.finish_tiles,
// split_finish.merge's rule): in stage 1's kernel, counter atomics and all,
// only where stage 1's output tiles line up. A column sum of 100003 x 17 f32
// is stage 1 in [8, 64] tiles, three over the 17 columns: the finish is a
// launch of its own, and without the atomics more chunks pay (391 of 256
// rows; priced as one launch it took 98 of 1021, measured 15.4 us on an
// H200 against Inductor's 9.5). The 391 x 17 partials are a column sum the
// model splits again (its one kernel would be three programs walking 391 rows).
// CHECK: loop-split-reduction: %s [17] x [100003], outer: split into 391 chunks of 256
// CHECK: loop-split-reduction: %s [17] x [391], outer: split into 7 chunks of 56
// (The plans print before the module: the 2048-column sum below.)
// CHECK: loop-split-reduction: %s [2048] x [32768], outer: split into 32 chunks of 1024: {{.*}} us in two stages against {{.*}} us unsplit
// CHECK: loop.reduction sum [391, 17] [256]
// CHECK: loop.reduction sum [7, 17] [56]
// CHECK: loop.reduction sum [17] [7]
func.func @skinny(%x: !buffer.buffer<[100003, 17], f32, device "cuda:0">) -> !loop.tensor<[17], f32> {
  %s = loop.reduction sum [17] [100003] : !loop.tensor<[17], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[100003, 17], f32, device "cuda:0">
    loop.yield %0 : f32
  }
  func.return %s : !loop.tensor<[17], f32>
}

// 2048 columns of 32768 rows: stage 1's tiles of 64 columns divide them, the
// finish stays in stage 1's kernel (one launch), and the atomics keep it at
// fewer chunks.
// CHECK: loop.reduction sum [32, 2048] [1024]
// CHECK: loop.reduction sum [2048] [32]
func.func @wide(%x: !buffer.buffer<[32768, 2048], f32, device "cuda:0">) -> !loop.tensor<[2048], f32> {
  %s = loop.reduction sum [2048] [32768] : !loop.tensor<[2048], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[32768, 2048], f32, device "cuda:0">
    loop.yield %0 : f32
  }
  func.return %s : !loop.tensor<[2048], f32>
}
