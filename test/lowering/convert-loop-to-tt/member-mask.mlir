// RUN: fx-opt %s -p convert-loop-to-tt -t triton | filecheck %s

// A group member read under a mask (stack reads the 0-d argmax it is fused
// with, each half under its own mask; the two fuse as the stack has as many
// elements as the argmax reduces): its value where the mask holds, 0
// elsewhere, as a buffer load's `other`. It failed to lower before.

// CHECK:      def coil_argmax_cat_0(
// CHECK:      tl.reduce(
// CHECK:      tl.where(
// CHECK:      tl.where(
// CHECK:      tl.store(
func.func @stack_of_argmax(%x: !buffer.buffer<[2], f32>) -> !buffer.buffer<[2], i64> {
  %cat = buffer.alloc : !buffer.buffer<[2], i64>
  loop.fused [] [2] outs(%cat : !buffer.buffer<[2], i64>) {
    %argmax = loop.reduction argmax [] [2] : !loop.tensor<[], i64> {
    ^bb0(%r0: index):
      %0 = loop.load %x[r0] : !buffer.buffer<[2], f32>
      loop.yield %0 : f32
    }
    %cat_1 = loop.pointwise [2] : !loop.tensor<[2], i64> {
    ^bb0(%i0: index):
      %1 = loop.index i0 - 1 : i64
      %2 = arith.constant 0 : i64
      %3 = arith.cmpi slt, %1, %2 : i64
      %4 = loop.load %argmax[] mask(%3) : !loop.tensor<[], i64>
      %5 = arith.constant true
      %6 = arith.xori %3, %5 : i1
      %7 = loop.load %argmax[] mask(%6) : !loop.tensor<[], i64>
      %8 = arith.subi %2, %7 : i64
      %9 = arith.select %6, %8, %2 : i64
      %10 = arith.select %3, %4, %9 : i64
      loop.yield %10 : i64
    }
    loop.yield %cat_1 : !loop.tensor<[2], i64>
  }
  func.return %cat : !buffer.buffer<[2], i64>
}
