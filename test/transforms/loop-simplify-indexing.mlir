// RUN: fx-opt %s -p loop-simplify-indexing --split-input-file | filecheck %s

// A flatten followed by the inverse reshape reads plain indices again.
// CHECK-LABEL: func.func @reshape_roundtrip
// CHECK: loop.load %x[i0, i1] : !buffer.buffer<[4, s0], f32>
// Not provably in range (s0 may exceed 8): kept.
// CHECK: loop.load %x[i0 + i1 floordiv 8, (i1 + 3) mod s0]
func.func @reshape_roundtrip(%x: !buffer.buffer<[4, s0], f32>) -> !loop.tensor<[4, s0], f32> {
  %c = loop.pointwise [4, s0] : !loop.tensor<[4, s0], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[(s0*i0 + i1) floordiv s0, (s0*i0 + i1) mod s0] : !buffer.buffer<[4, s0], f32>
    %1 = loop.load %x[(8*i0 + i1) floordiv 8, (i1 + 3) mod s0] : !buffer.buffer<[4, s0], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %c : !loop.tensor<[4, s0], f32>
}

// -----

// Reduction indices, loop.index and views use their own ranges.
// CHECK-LABEL: func.func @ranges
// CHECK: loop.view %x[i0, i1] : !buffer.buffer<[4, 6], f32>
// CHECK: loop.load %x[i0, r0]
// CHECK: loop.index r0 : i64
func.func @ranges(%x: !buffer.buffer<[4, 6], f32>) -> (!loop.tensor<[4], f32>, !loop.tensor<[4, 6], f32>) {
  %v = loop.view %x[(6*i0 + i1) floordiv 6, (6*i0 + i1) mod 6] : !buffer.buffer<[4, 6], f32> -> !loop.tensor<[4, 6], f32>
  %s = loop.reduction sum [4] [6] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0 + r0 floordiv 6, r0 mod 6] : !buffer.buffer<[4, 6], f32>
    %1 = loop.index (r0 + 12) mod 6 : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.addf %0, %2 : f32
    loop.yield %3 : f32
  }
  func.return %s, %v : !loop.tensor<[4], f32>, !loop.tensor<[4, 6], f32>
}
