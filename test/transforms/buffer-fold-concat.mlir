// RUN: fx-opt %s -p buffer-fold-concat --split-input-file | filecheck %s

// cat([up(x), y, z2], dim 1) into an NHWC buffer: %up and %z2 are stored by
// their own nests and read only by the concatenation, so their producers write
// their slices of %cat (channels 0..2 and 6..9: views with %cat's strides, at
// offsets 0 and 6); %y, a graph input, is copied into channels 2..6 by the
// concatenation nest restricted to that range (i1 shifted by 2, its masks and
// selects decided). Nothing else allocates.
// CHECK-LABEL: func.func @fold
// CHECK-NEXT:  %[[CAT:.*]] = buffer.alloc : !buffer.buffer<[2, 9, 5, 5], f32, strides [225, 1, 45, 9]>
// CHECK-NEXT:  %[[UP:.*]] = buffer.view %[[CAT]] : {{.*}} -> !buffer.buffer<[2, 2, 5, 5], f32, strides [225, 1, 45, 9]>
// CHECK-NEXT:  loop.pointwise [2, 2, 5, 5] outs(%[[UP]] :
// CHECK:       %[[Z2:.*]] = buffer.view %[[CAT]] : {{.*}} -> !buffer.buffer<[2, 3, 5, 5], f32, strides [225, 1, 45, 9], offset 6>
// CHECK-NEXT:  loop.pointwise [2, 3, 5, 5] outs(%[[Z2]] :
// CHECK:       %[[Y:.*]] = buffer.view %[[CAT]] : {{.*}} -> !buffer.buffer<[2, 4, 5, 5], f32, strides [225, 1, 45, 9], offset 2>
// CHECK-NEXT:  loop.pointwise [2, 4, 5, 5] outs(%[[Y]] :
// CHECK-NEXT:  ^bb0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK-NEXT:    %[[V:.*]] = loop.load %y[i0, i1, i2, i3] : !buffer.buffer<[2, 4, 5, 5], f32>
// CHECK-NEXT:    loop.yield %[[V]] : f32
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[OUT:.*]] = buffer.extern "aten.convolution.default" (%[[CAT]], %w)
// CHECK-NOT:   buffer.alloc
func.func @fold(%x: !buffer.buffer<[2, 2, 3, 3], f32>, %y: !buffer.buffer<[2, 4, 5, 5], f32>, %z: !buffer.buffer<[2, 3, 5, 5], f32>, %w: !buffer.buffer<[4, 9, 1, 1], f32>) -> !buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]> {
  %up = buffer.alloc : !buffer.buffer<[2, 2, 5, 5], f32>
  loop.pointwise [2, 2, 5, 5] outs(%up : !buffer.buffer<[2, 2, 5, 5], f32>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %h = loop.index (3*i2) floordiv 5 : i64
    %w_ = loop.index (3*i3) floordiv 5 : i64
    %v = loop.load %x[i0, i1, t0, t1] indirect(%h, %w_ : i64, i64) : !buffer.buffer<[2, 2, 3, 3], f32>
    loop.yield %v : f32
  }
  %z2 = buffer.alloc : !buffer.buffer<[2, 3, 5, 5], f32>
  loop.pointwise [2, 3, 5, 5] outs(%z2 : !buffer.buffer<[2, 3, 5, 5], f32>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %v = loop.load %z[i0, i1, i2, i3] : !buffer.buffer<[2, 3, 5, 5], f32>
    %two = arith.constant 2.000000e+00 : f32
    %m = arith.mulf %v, %two : f32
    loop.yield %m : f32
  }
  %cat = buffer.alloc : !buffer.buffer<[2, 9, 5, 5], f32, strides [225, 1, 45, 9]>
  loop.pointwise [2, 9, 5, 5] outs(%cat : !buffer.buffer<[2, 9, 5, 5], f32, strides [225, 1, 45, 9]>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %a = loop.index i1 - 2 : i64
    %zero = arith.constant 0 : i64
    %lt2 = arith.cmpi slt, %a, %zero : i64
    %b = loop.index i1 - 6 : i64
    %lt6 = arith.cmpi slt, %b, %zero : i64
    %0 = loop.load %up[i0, i1, i2, i3] mask(%lt2) : !buffer.buffer<[2, 2, 5, 5], f32>
    %true = arith.constant true
    %ge2 = arith.xori %lt2, %true : i1
    %in1 = arith.andi %ge2, %lt6 : i1
    %1 = loop.load %y[i0, i1 - 2, i2, i3] mask(%in1) : !buffer.buffer<[2, 4, 5, 5], f32>
    %ge6 = arith.xori %lt6, %true : i1
    %2 = loop.load %z2[i0, i1 - 6, i2, i3] mask(%ge6) : !buffer.buffer<[2, 3, 5, 5], f32>
    %s1 = arith.select %lt6, %1, %2 : f32
    %s0 = arith.select %lt2, %0, %s1 : f32
    loop.yield %s0 : f32
  }
  %out = buffer.extern "aten.convolution.default" (%cat, %w) : (!buffer.buffer<[2, 9, 5, 5], f32, strides [225, 1, 45, 9]>, !buffer.buffer<[4, 9, 1, 1], f32>) -> (!buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>) {
  ^bb0(%c: !aten.tensor<[2, 9, 5, 5], f32, strides [225, 1, 45, 9]>, %k: !aten.tensor<[4, 9, 1, 1], f32>):
    %r = aten.convolution.default(%c, %k, none, stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>
    buffer.yield %r : !aten.tensor<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>
  }
  func.return %out : !buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>
}

// -----

// The stored input %s is also an extern call's operand, which reads it with
// its own strides [3, 1]; its slice of %cat has strides [5, 1] (ATen would
// make a dense copy of it for many ops). So %s stays, and its producer becomes
// a group storing the one value twice: into %s and into its slice of %cat
// (Inductor's copy into a ConcatKernel input's slice, fused into the input's
// kernel). %y, a graph input, is copied by the restricted nest.
// CHECK-LABEL: func.func @beside
// CHECK-NEXT:  %[[CAT:.*]] = buffer.alloc : !buffer.buffer<[4, 5], f32>
// CHECK-NEXT:  %[[S:.*]] = buffer.alloc : !buffer.buffer<[4, 3], f32>
// CHECK-NEXT:  %[[SL:.*]] = buffer.view %[[CAT]] : {{.*}} -> !buffer.buffer<[4, 3], f32, strides [5, 1]>
// CHECK-NEXT:  loop.fused [4, 3] [] outs(%[[S]], %[[SL]] :
// CHECK-NEXT:    %[[E:.*]] = loop.pointwise [4, 3] : !loop.tensor<[4, 3], f32> {
// CHECK:           math.exp
// CHECK:         loop.yield %[[E]], %[[E]] :
// CHECK:       buffer.extern "aten.neg.default" (%[[S]])
// CHECK:       %[[Y:.*]] = buffer.view %[[CAT]] : {{.*}} -> !buffer.buffer<[4, 2], f32, strides [5, 1], offset 3>
// CHECK-NEXT:  loop.pointwise [4, 2] outs(%[[Y]] :
// CHECK-NOT:     arith.select
// CHECK:       func.return %[[CAT]], %{{.*}} :
func.func @beside(%x: !buffer.buffer<[4, 3], f32>, %y: !buffer.buffer<[4, 2], f32>) -> (!buffer.buffer<[4, 5], f32>, !buffer.buffer<[4, 3], f32>) {
  %s = buffer.alloc : !buffer.buffer<[4, 3], f32>
  loop.pointwise [4, 3] outs(%s : !buffer.buffer<[4, 3], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %x[i0, i1] : !buffer.buffer<[4, 3], f32>
    %e = math.exp %v : f32
    loop.yield %e : f32
  }
  %n = buffer.extern "aten.neg.default" (%s) : (!buffer.buffer<[4, 3], f32>) -> (!buffer.buffer<[4, 3], f32>) {
  ^bb0(%a: !aten.tensor<[4, 3], f32>):
    %r = aten.neg.default(%a) : !aten.tensor<[4, 3], f32>
    buffer.yield %r : !aten.tensor<[4, 3], f32>
  }
  %cat = buffer.alloc : !buffer.buffer<[4, 5], f32>
  loop.pointwise [4, 5] outs(%cat : !buffer.buffer<[4, 5], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.index i1 - 3 : i64
    %zero = arith.constant 0 : i64
    %lt = arith.cmpi slt, %a, %zero : i64
    %0 = loop.load %s[i0, i1] mask(%lt) : !buffer.buffer<[4, 3], f32>
    %true = arith.constant true
    %ge = arith.xori %lt, %true : i1
    %1 = loop.load %y[i0, i1 - 3] mask(%ge) : !buffer.buffer<[4, 2], f32>
    %s0 = arith.select %lt, %0, %1 : f32
    loop.yield %s0 : f32
  }
  func.return %cat, %n : !buffer.buffer<[4, 5], f32>, !buffer.buffer<[4, 3], f32>
}

// -----

// A concatenation along dim 0: %s's slice of %cat has %s's own strides (row-major [3, 1])
// (offset aside), so the extern call reads the slice as it read %s, and %s's
// producer writes there; %s's allocation is gone.
// CHECK-LABEL: func.func @extern_reads_slice
// CHECK-NEXT:  %[[CAT:.*]] = buffer.alloc : !buffer.buffer<[6, 3], f32>
// CHECK-NEXT:  %[[S:.*]] = buffer.view %[[CAT]] : {{.*}} -> !buffer.buffer<[4, 3], f32>
// CHECK-NEXT:  loop.pointwise [4, 3] outs(%[[S]] :
// CHECK:       buffer.extern "aten.neg.default" (%[[S]])
// CHECK-NOT:   loop.fused
// CHECK:       buffer.view %[[CAT]] : {{.*}} -> !buffer.buffer<[2, 3], f32, offset 12>
func.func @extern_reads_slice(%x: !buffer.buffer<[4, 3], f32>, %y: !buffer.buffer<[2, 3], f32>) -> (!buffer.buffer<[6, 3], f32>, !buffer.buffer<[4, 3], f32>) {
  %s = buffer.alloc : !buffer.buffer<[4, 3], f32>
  loop.pointwise [4, 3] outs(%s : !buffer.buffer<[4, 3], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %x[i0, i1] : !buffer.buffer<[4, 3], f32>
    %e = math.exp %v : f32
    loop.yield %e : f32
  }
  %n = buffer.extern "aten.neg.default" (%s) : (!buffer.buffer<[4, 3], f32>) -> (!buffer.buffer<[4, 3], f32>) {
  ^bb0(%a: !aten.tensor<[4, 3], f32>):
    %r = aten.neg.default(%a) : !aten.tensor<[4, 3], f32>
    buffer.yield %r : !aten.tensor<[4, 3], f32>
  }
  %cat = buffer.alloc : !buffer.buffer<[6, 3], f32>
  loop.pointwise [6, 3] outs(%cat : !buffer.buffer<[6, 3], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.index i0 - 4 : i64
    %zero = arith.constant 0 : i64
    %lt = arith.cmpi slt, %a, %zero : i64
    %0 = loop.load %s[i0, i1] mask(%lt) : !buffer.buffer<[4, 3], f32>
    %true = arith.constant true
    %ge = arith.xori %lt, %true : i1
    %1 = loop.load %y[i0 - 4, i1] mask(%ge) : !buffer.buffer<[2, 3], f32>
    %s0 = arith.select %lt, %0, %1 : f32
    loop.yield %s0 : f32
  }
  func.return %cat, %n : !buffer.buffer<[6, 3], f32>, !buffer.buffer<[4, 3], f32>
}

// -----

// An extern call that writes %s in place (add_) is a second writer: %s is not
// folded, and the concatenation stays one nest. The extern result %c, a
// branch of its own, is never folded (ATen allocates it).
// CHECK-LABEL: func.func @not_folded
// CHECK:       %[[S:.*]] = buffer.alloc : !buffer.buffer<[4, 3], f32>
// CHECK:       %[[CAT:.*]] = buffer.alloc : !buffer.buffer<[4, 6], f32>
// CHECK-NEXT:  loop.pointwise [4, 6] outs(%[[CAT]] :
// CHECK-NOT:   buffer.view
func.func @not_folded(%x: !buffer.buffer<[4, 3], f32>, %y: !buffer.buffer<[4, 3], f32>) -> !buffer.buffer<[4, 6], f32> {
  %s = buffer.alloc : !buffer.buffer<[4, 3], f32>
  loop.pointwise [4, 3] outs(%s : !buffer.buffer<[4, 3], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %x[i0, i1] : !buffer.buffer<[4, 3], f32>
    %e = math.exp %v : f32
    loop.yield %e : f32
  }
  %n = buffer.extern "aten.add_.Tensor" (%s, %y) : (!buffer.buffer<[4, 3], f32>, !buffer.buffer<[4, 3], f32>) -> (!buffer.buffer<[4, 3], f32>) {
  ^bb0(%a: !aten.tensor<[4, 3], f32>, %b: !aten.tensor<[4, 3], f32>):
    %r = aten.add_.Tensor(%a, %b) : !aten.tensor<[4, 3], f32>
    buffer.yield %r : !aten.tensor<[4, 3], f32>
  }
  %c = buffer.extern "aten.neg.default" (%y) : (!buffer.buffer<[4, 3], f32>) -> (!buffer.buffer<[4, 3], f32>) {
  ^bb0(%a: !aten.tensor<[4, 3], f32>):
    %r = aten.neg.default(%a) : !aten.tensor<[4, 3], f32>
    buffer.yield %r : !aten.tensor<[4, 3], f32>
  }
  %cat = buffer.alloc : !buffer.buffer<[4, 6], f32>
  loop.pointwise [4, 6] outs(%cat : !buffer.buffer<[4, 6], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.index i1 - 3 : i64
    %zero = arith.constant 0 : i64
    %lt = arith.cmpi slt, %a, %zero : i64
    %0 = loop.load %s[i0, i1] mask(%lt) : !buffer.buffer<[4, 3], f32>
    %true = arith.constant true
    %ge = arith.xori %lt, %true : i1
    %1 = loop.load %c[i0, i1 - 3] mask(%ge) : !buffer.buffer<[4, 3], f32>
    %s0 = arith.select %lt, %0, %1 : f32
    loop.yield %s0 : f32
  }
  func.return %cat : !buffer.buffer<[4, 6], f32>
}
