// RUN: fx-opt %s -p dce | filecheck %s

// A loop nest's effects are its body's (loads read) and, at the buffer
// level, a write of each of its outs (loop.NestEffects): dce drops a
// tensor-level nest nobody reads, and a fusion group that yields nothing --
// what was left of a backward whose only reader of a value was
// aten.full_like (it reads no element), which convert-loop-to-tt refused
// ("loop.fused is left ... run bufferize first"). A nest that writes a
// buffer stays.

// CHECK-LABEL: func.func @dead_nests
// CHECK-NOT:     loop.fused
// CHECK-NOT:     loop.reduction
// CHECK:         loop.pointwise [2] outs(%out
// CHECK-NOT:     loop.pointwise
// CHECK:         func.return
func.func @dead_nests(%x: !buffer.buffer<[2, 3], f32>, %out: !buffer.buffer<[2], f32>) {
  loop.fused [2] [3] {
    %0 = loop.reduction sum [2] [3] : !loop.tensor<[2], f32> {
    ^bb0(%i0: index, %r0: index):
      %1 = loop.load %x[i0, r0] : !buffer.buffer<[2, 3], f32>
      loop.yield %1 : f32
    }
    %2 = loop.pointwise [2] : !loop.tensor<[2], f32> {
    ^bb0(%i0: index):
      %3 = loop.load %0[i0] : !loop.tensor<[2], f32>
      %4 = math.exp %3 : f32
      loop.yield %4 : f32
    }
    loop.yield
  }
  %5 = loop.pointwise [2] : !loop.tensor<[2], f32> {
  ^bb0(%i0: index):
    %6 = loop.load %x[i0, 0] : !buffer.buffer<[2, 3], f32>
    loop.yield %6 : f32
  }
  loop.pointwise [2] outs(%out : !buffer.buffer<[2], f32>) {
  ^bb0(%i0: index):
    %7 = loop.load %x[i0, 1] : !buffer.buffer<[2, 3], f32>
    loop.yield %7 : f32
  }
  func.return
}
