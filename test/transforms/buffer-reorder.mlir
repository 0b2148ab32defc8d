// RUN: fx-opt %s -p buffer-reorder,memory-plan --split-input-file | filecheck %s

// A residual block: %x (a kernel's result, 400 B) is read by the main path
// (%a = exp(x), %b = neg(a), 400 B each) and by the shortcut (%s, 40 B), both
// added at the end. In the given order %x is alive through the main path
// (x, a and b: 1200 B at neg); the shortcut first lets %x die at exp
// (x, s, a: 840 B). Allocations follow their first user.
// CHECK-LABEL: func.func @shortcut_first
// CHECK-SAME:  coil.peak_bytes = #coil.expr<840>
// CHECK:       %[[X:.*]] = buffer.alloc : !buffer.buffer<[100], f32>
// CHECK-NEXT:  loop.pointwise [100] outs(%[[X]] :
// CHECK:       %[[S:.*]] = buffer.alloc : !buffer.buffer<[10], f32>
// CHECK-NEXT:  loop.pointwise [10] outs(%[[S]] :
// CHECK:       buffer.extern "aten.exp.default" (%[[X]])
// CHECK:       buffer.extern "aten.neg.default"
// CHECK:       loop.pointwise [100] outs(
func.func @shortcut_first(%in: !buffer.buffer<[100], f32>) -> !buffer.buffer<[100], f32> {
  %x = buffer.alloc : !buffer.buffer<[100], f32>
  loop.pointwise [100] outs(%x : !buffer.buffer<[100], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %in[i0] : !buffer.buffer<[100], f32>
    %e = math.sqrt %v : f32
    loop.yield %e : f32
  }
  %a = buffer.extern "aten.exp.default" (%x) : (!buffer.buffer<[100], f32>) -> (!buffer.buffer<[100], f32>) {
  ^bb0(%t: !aten.tensor<[100], f32>):
    %r = aten.exp.default(%t) : !aten.tensor<[100], f32>
    buffer.yield %r : !aten.tensor<[100], f32>
  }
  %b = buffer.extern "aten.neg.default" (%a) : (!buffer.buffer<[100], f32>) -> (!buffer.buffer<[100], f32>) {
  ^bb0(%t: !aten.tensor<[100], f32>):
    %r = aten.neg.default(%t) : !aten.tensor<[100], f32>
    buffer.yield %r : !aten.tensor<[100], f32>
  }
  %s = buffer.alloc : !buffer.buffer<[10], f32>
  loop.pointwise [10] outs(%s : !buffer.buffer<[10], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %x[10 * i0] : !buffer.buffer<[100], f32>
    loop.yield %v : f32
  }
  %out = buffer.alloc : !buffer.buffer<[100], f32>
  loop.pointwise [100] outs(%out : !buffer.buffer<[100], f32>) {
  ^bb0(%i0: index):
    %p = loop.load %b[i0] : !buffer.buffer<[100], f32>
    %q = loop.load %s[i0 floordiv 10] : !buffer.buffer<[10], f32>
    %y = arith.addf %p, %q : f32
    loop.yield %y : f32
  }
  func.return %out : !buffer.buffer<[100], f32>
}

// -----

// The same block with a random draw (aten.rand_like, nondeterministic_seeded)
// between the main path and the shortcut: it keeps its place among the other
// ops, so the shortcut cannot move before the main path, and the order stays.
// CHECK-LABEL: func.func @fixed_extern
// CHECK-SAME:  coil.peak_bytes = #coil.expr<1240>
// CHECK:       buffer.extern "aten.exp.default"
// CHECK:       buffer.extern "aten.neg.default"
// CHECK:       buffer.extern "aten.rand_like.default"
// CHECK:       loop.pointwise [10] outs(
func.func @fixed_extern(%in: !buffer.buffer<[100], f32>) -> (!buffer.buffer<[100], f32>, !buffer.buffer<[100], f32>) {
  %x = buffer.alloc : !buffer.buffer<[100], f32>
  loop.pointwise [100] outs(%x : !buffer.buffer<[100], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %in[i0] : !buffer.buffer<[100], f32>
    %e = math.sqrt %v : f32
    loop.yield %e : f32
  }
  %a = buffer.extern "aten.exp.default" (%x) : (!buffer.buffer<[100], f32>) -> (!buffer.buffer<[100], f32>) {
  ^bb0(%t: !aten.tensor<[100], f32>):
    %r = aten.exp.default(%t) : !aten.tensor<[100], f32>
    buffer.yield %r : !aten.tensor<[100], f32>
  }
  %b = buffer.extern "aten.neg.default" (%a) : (!buffer.buffer<[100], f32>) -> (!buffer.buffer<[100], f32>) {
  ^bb0(%t: !aten.tensor<[100], f32>):
    %r = aten.neg.default(%t) : !aten.tensor<[100], f32>
    buffer.yield %r : !aten.tensor<[100], f32>
  }
  %n = buffer.extern "aten.rand_like.default" (%in) : (!buffer.buffer<[100], f32>) -> (!buffer.buffer<[100], f32>) {
  ^bb0(%t: !aten.tensor<[100], f32>):
    %r = aten.rand_like.default(%t) : !aten.tensor<[100], f32>
    buffer.yield %r : !aten.tensor<[100], f32>
  }
  %s = buffer.alloc : !buffer.buffer<[10], f32>
  loop.pointwise [10] outs(%s : !buffer.buffer<[10], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %x[10 * i0] : !buffer.buffer<[100], f32>
    loop.yield %v : f32
  }
  %out = buffer.alloc : !buffer.buffer<[100], f32>
  loop.pointwise [100] outs(%out : !buffer.buffer<[100], f32>) {
  ^bb0(%i0: index):
    %p = loop.load %b[i0] : !buffer.buffer<[100], f32>
    %q = loop.load %s[i0 floordiv 10] : !buffer.buffer<[10], f32>
    %y = arith.addf %p, %q : f32
    loop.yield %y : f32
  }
  func.return %out, %n : !buffer.buffer<[100], f32>, !buffer.buffer<[100], f32>
}
