// RUN: fx-opt %s -p loop-fuse --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'loop-fuse{allow-reduction-epilogue=false allow-horizontal=false}' --split-input-file | filecheck %s --check-prefix=NOEPI
// RUN: fx-opt %s -p 'loop-fuse{max-body-ops=10}' --split-input-file | filecheck %s --check-prefix=SMALL

// Row softmax (after loop-inline): max, sum(exp(x - max)), the division; the
// keepdim [8, 1] ranges are squeezed to the group's [8].
// CHECK-LABEL: func.func @softmax
// CHECK-NEXT: %[[G:.*]] = loop.fused [8] [s0] : !loop.tensor<[8, s0], f32> {
// CHECK-NEXT: %[[MAX:.*]] = loop.reduction max [8] [s0] : !loop.tensor<[8], f32>
// CHECK: %[[SUM:.*]] = loop.reduction sum [8] [s0] : !loop.tensor<[8], f32>
// CHECK: loop.load %[[MAX]][i0]
// CHECK: %[[DIV:.*]] = loop.pointwise [8, s0]
// CHECK: loop.load %[[SUM]][i0]
// CHECK: loop.yield %[[DIV]] : !loop.tensor<[8, s0], f32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[G]]
// NOEPI-LABEL: func.func @softmax
// NOEPI: loop.fused [8] [s0] : !loop.tensor<[8], f32>, !loop.tensor<[8], f32>
// NOEPI-COUNT-2: loop.reduction
// NOEPI: loop.pointwise [8, s0]
// The size cap: max and sum (8 ops) fit in 10, the division (7 more) does not
// and reads the group's results instead.
// SMALL-LABEL: func.func @softmax
// SMALL: %max, %sum = loop.fused [8] [s0] : !loop.tensor<[8], f32>, !loop.tensor<[8], f32>
// SMALL: %div = loop.pointwise [8, s0]
// SMALL: loop.load %sum[i0]
func.func @softmax(%x: !buffer.buffer<[8, s0], f32>) -> !loop.tensor<[8, s0], f32> {
  %max = loop.reduction max [8, 1] [s0] : !loop.tensor<[8, 1], f32> {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[8, s0], f32>
    loop.yield %0 : f32
  }
  %sum = loop.reduction sum [8, 1] [s0] : !loop.tensor<[8, 1], f32> {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[8, s0], f32>
    %1 = loop.load %max[i0, i1] : !loop.tensor<[8, 1], f32>
    %2 = arith.subf %0, %1 : f32
    %3 = math.exp %2 : f32
    loop.yield %3 : f32
  }
  %div = loop.pointwise [8, s0] : !loop.tensor<[8, s0], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[8, s0], f32>
    %1 = loop.load %max[i0, 0] : !loop.tensor<[8, 1], f32>
    %2 = arith.subf %0, %1 : f32
    %3 = math.exp %2 : f32
    %4 = loop.load %sum[i0, 0] : !loop.tensor<[8, 1], f32>
    %5 = arith.divf %3, %4 : f32
    loop.yield %5 : f32
  }
  func.return %div : !loop.tensor<[8, s0], f32>
}

// -----

// A member used outside the group is a group result; the returned keepdim
// tensor reads it through a view. An independent pointwise nest in between
// that the epilogue needs moves above the group; one that reads the group
// after an extern call does not join.
// CHECK-LABEL: func.func @outside_use
// CHECK: %[[W:.*]] = loop.pointwise [4] : !loop.tensor<[4], f32>
// CHECK: %[[S:.*]], %[[Y:.*]] = loop.fused [4] [16]
// CHECK: loop.load %[[W]]
// CHECK: loop.yield %{{.*}}, %{{.*}} : !loop.tensor<[4], f32>, !loop.tensor<[4, 16], f32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[V:.*]] = loop.view %[[S]][i0] : !loop.tensor<[4], f32> -> !loop.tensor<[4, 1], f32>
// CHECK-NEXT: buffer.extern "aten.neg.default" (%[[Y]])
// CHECK: loop.pointwise [4, 16]
// CHECK: func.return %{{.*}}, %[[V]]
func.func @outside_use(%x: !buffer.buffer<[4, 16], f32>, %b: !buffer.buffer<[4], f32>) -> (!loop.tensor<[4, 16], f32>, !loop.tensor<[4, 1], f32>) {
  %s = loop.reduction sum [4, 1] [16] : !loop.tensor<[4, 1], f32> {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, 16], f32>
    loop.yield %0 : f32
  }
  %w = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %b[i0] : !buffer.buffer<[4], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %y = loop.pointwise [4, 16] : !loop.tensor<[4, 16], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[4, 16], f32>
    %1 = loop.load %s[i0, 0] : !loop.tensor<[4, 1], f32>
    %2 = loop.load %w[i0] : !loop.tensor<[4], f32>
    %3 = arith.mulf %0, %1 : f32
    %4 = arith.addf %3, %2 : f32
    loop.yield %4 : f32
  }
  %e = buffer.extern "aten.neg.default" (%y) : (!loop.tensor<[4, 16], f32>) -> (!loop.tensor<[4, 16], f32>) {
  ^bb0(%a: !aten.tensor<[4, 16], f32>):
    %n = aten.neg.default(%a) : !aten.tensor<[4, 16], f32>
    buffer.yield %n : !aten.tensor<[4, 16], f32>
  }
  %z = loop.pointwise [4, 16] : !loop.tensor<[4, 16], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %e[i0, i1] : !loop.tensor<[4, 16], f32>
    %1 = loop.load %s[i0, 0] : !loop.tensor<[4, 1], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %z, %s : !loop.tensor<[4, 16], f32>, !loop.tensor<[4, 1], f32>
}

// -----

// Horizontal: two sibling reductions over the same ranges share one group
// (with allow-horizontal=false they stay apart).
// CHECK-LABEL: func.func @horizontal
// CHECK: %[[S:.*]], %[[M:.*]] = loop.fused [4] [16] : !loop.tensor<[4], f32>, !loop.tensor<[4], f32>
// CHECK: func.return %[[S]], %[[M]]
// NOEPI-LABEL: func.func @horizontal
// NOEPI-NOT: loop.fused
func.func @horizontal(%x: !buffer.buffer<[4, 16], f32>) -> (!loop.tensor<[4], f32>, !loop.tensor<[4], f32>) {
  %s = loop.reduction sum [4] [16] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, 16], f32>
    loop.yield %0 : f32
  }
  %m = loop.reduction max [4] [16] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, 16], f32>
    loop.yield %0 : f32
  }
  func.return %s, %m : !loop.tensor<[4], f32>, !loop.tensor<[4], f32>
}

// -----

// Pointwise-only code and reductions over other ranges are left alone; a
// loop.copy is never crossed.
// CHECK-LABEL: func.func @negative
// CHECK-NOT: loop.fused
func.func @negative(%x: !buffer.buffer<[4, 16], f32>, %d: !buffer.buffer<[4, 16], f32>) -> (!loop.tensor<[4], f32>, !loop.tensor<[16], f32>, !loop.tensor<[4, 16], f32>) {
  %s = loop.reduction sum [4] [16] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, 16], f32>
    loop.yield %0 : f32
  }
  %t = loop.reduction sum [16] [4] : !loop.tensor<[16], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[4, 16], f32>
    %1 = loop.load %s[r0] : !loop.tensor<[4], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  %e = loop.pointwise [4, 16] : !loop.tensor<[4, 16], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[4, 16], f32>
    loop.yield %0 : f32
  }
  loop.copy %e, %d : !loop.tensor<[4, 16], f32>, !buffer.buffer<[4, 16], f32>
  %y = loop.pointwise [4, 16] : !loop.tensor<[4, 16], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %d[i0, i1] : !buffer.buffer<[4, 16], f32>
    %1 = loop.load %s[i0] : !loop.tensor<[4], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %s, %t, %y : !loop.tensor<[4], f32>, !loop.tensor<[16], f32>, !loop.tensor<[4, 16], f32>
}

// -----

// A member's row i exists only in the kernel instance for row i: consumers that
// read it at another row (s + s.flip(0); a [4, 4] nest reading s[i1]) or read a
// [4, 4] member from a [4] nest stay out of the group. The aligned reduction
// chain (sum of x - s[i0]) joins.
// CHECK-LABEL: func.func @misaligned
// CHECK: loop.fused [4] [4] : !loop.tensor<[4], f32>, !loop.tensor<[4], f32> {
// CHECK-COUNT-2: loop.reduction sum [4] [4]
// CHECK: loop.yield %{{.*}}, %{{.*}} : !loop.tensor<[4], f32>, !loop.tensor<[4], f32>
// CHECK-NEXT: }
// CHECK-NOT: loop.fused
// NOEPI-LABEL: func.func @misaligned
func.func @misaligned(%x: !buffer.buffer<[4, 4], f32>) -> (!loop.tensor<[4], f32>, !loop.tensor<[4, 4], f32>, !loop.tensor<[4], f32>) {
  %s = loop.reduction sum [4] [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, 4], f32>
    loop.yield %0 : f32
  }
  %c = loop.reduction sum [4] [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, 4], f32>
    %1 = loop.load %s[i0] : !loop.tensor<[4], f32>
    %2 = arith.subf %0, %1 : f32
    loop.yield %2 : f32
  }
  %f = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %s[i0] : !loop.tensor<[4], f32>
    %1 = loop.load %c[3 - i0] : !loop.tensor<[4], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  %t = loop.pointwise [4, 4] : !loop.tensor<[4, 4], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i1, i0] : !buffer.buffer<[4, 4], f32>
    %1 = loop.load %s[i1] : !loop.tensor<[4], f32>
    %2 = arith.subf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %f, %t, %c : !loop.tensor<[4], f32>, !loop.tensor<[4, 4], f32>, !loop.tensor<[4], f32>
}

// -----

// A pointwise producer the reduction reads, stored for a later reader too (a
// squeeze-excite block: x = act(..); x * f(x.mean)): it moves down into the
// reduction's group, so one kernel writes x and reduces it.
// CHECK-LABEL: func.func @prologue
// CHECK:      %act, %gate = loop.fused [4] [16] : !loop.tensor<[4, 16], f32>, !loop.tensor<[4, 16], f32> {
// CHECK-NEXT:   %act_1 = loop.pointwise [4, 16]
// CHECK:        %mean = loop.reduction sum [4] [16]
// CHECK-NEXT:   ^
// CHECK-NEXT:     loop.load %act_1[i0, r0]
// CHECK:        %gate_1 = loop.pointwise [4, 16]
// CHECK:        loop.yield %act_1, %gate_1
// CHECK:      func.return %gate, %act
func.func @prologue(%x: !buffer.buffer<[4, 16], f32>, %b: !buffer.buffer<[4], f32>) -> (!loop.tensor<[4, 16], f32>, !loop.tensor<[4, 16], f32>) {
  %act = loop.pointwise [4, 16] : !loop.tensor<[4, 16], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[4, 16], f32>
    %1 = math.tanh %0 : f32
    loop.yield %1 : f32
  }
  %other = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %b[i0] : !buffer.buffer<[4], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %mean = loop.reduction sum [4, 1] [16] : !loop.tensor<[4, 1], f32> {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %0 = loop.load %act[i0, r0] : !loop.tensor<[4, 16], f32>
    loop.yield %0 : f32
  }
  %gate = loop.pointwise [4, 16] : !loop.tensor<[4, 16], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %act[i0, i1] : !loop.tensor<[4, 16], f32>
    %1 = loop.load %mean[i0, 0] : !loop.tensor<[4, 1], f32>
    %2 = loop.load %other[i0] : !loop.tensor<[4], f32>
    %3 = arith.mulf %0, %1 : f32
    %4 = arith.mulf %3, %2 : f32
    loop.yield %4 : f32
  }
  func.return %gate, %act : !loop.tensor<[4, 16], f32>, !loop.tensor<[4, 16], f32>
}

// -----

// A reader of the producer between it and the reduction keeps the producer
// out (it would have to move below that reader).
// CHECK-LABEL: func.func @read_between
// CHECK-NOT:  loop.fused
func.func @read_between(%x: !buffer.buffer<[4, 16], f32>) -> (!loop.tensor<[4, 1], f32>, !loop.tensor<[4, 16], f32>) {
  %act = loop.pointwise [4, 16] : !loop.tensor<[4, 16], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[4, 16], f32>
    %1 = math.tanh %0 : f32
    loop.yield %1 : f32
  }
  %dbl = loop.pointwise [4, 16] : !loop.tensor<[4, 16], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %act[i1 floordiv 4, i1] : !loop.tensor<[4, 16], f32>
    %1 = arith.addf %0, %0 : f32
    loop.yield %1 : f32
  }
  %sum = loop.reduction sum [4, 1] [16] : !loop.tensor<[4, 1], f32> {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %0 = loop.load %act[i0, r0] : !loop.tensor<[4, 16], f32>
    loop.yield %0 : f32
  }
  func.return %sum, %dbl : !loop.tensor<[4, 1], f32>, !loop.tensor<[4, 16], f32>
}
