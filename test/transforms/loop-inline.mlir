// RUN: fx-opt %s -p loop-inline --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'loop-inline{max-cost=0 max-uses=1}' --split-input-file | filecheck %s --check-prefix=CHEAP
// RUN: fx-opt %s -p 'loop-inline{max-cost=1}' --split-input-file | filecheck %s --check-prefix=WIDEN

// A chain of pointwise ops through a transposing view becomes one nest; the
// producer's index symbols are substituted everywhere (loads and loop.index).
// CHECK-LABEL: func.func @chain
// CHECK-COUNT-1: loop.pointwise
// CHECK-NOT: loop.pointwise
// CHECK-NOT: loop.view
// CHECK: %[[X:.*]] = loop.load %x[i0, i1] : !buffer.buffer<[4, s0], f32>
// CHECK-NEXT: %[[E:.*]] = math.exp %[[X]] : f32
// CHECK-NEXT: loop.index i0 + i1 : i64
// CHECK: %[[A:.*]] = arith.addf %[[E]]
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[A]], %[[A]] : f32
// CHECK-NEXT: loop.yield %[[M]] : f32
func.func @chain(%x: !buffer.buffer<[4, s0], f32>) -> !loop.tensor<[4, s0], f32> {
  %a = loop.pointwise [4, s0] : !loop.tensor<[4, s0], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[4, s0], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %v = loop.view %a[i1, i0] : !loop.tensor<[4, s0], f32> -> !loop.tensor<[s0, 4], f32>
  %b = loop.pointwise [s0, 4] : !loop.tensor<[s0, 4], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %v[i0, i1] : !loop.tensor<[s0, 4], f32>
    %1 = loop.index i0 + i1 : i64
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.addf %0, %2 : f32
    loop.yield %3 : f32
  }
  %c = loop.pointwise [4, s0] : !loop.tensor<[4, s0], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %b[i1, i0] : !loop.tensor<[s0, 4], f32>
    %1 = loop.load %b[i1, i0] : !loop.tensor<[s0, 4], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %c : !loop.tensor<[4, s0], f32>
}

// -----

// A masked consumer load: the inlined loads carry the mask (and-ed with their
// own), and the value is selected to the 0 a masked load reads.
// CHECK-LABEL: func.func @masked
// CHECK-COUNT-1: loop.pointwise
// CHECK: %[[M:.*]] = arith.andi %lo, %hi : i1
// CHECK-NEXT: loop.load %x[i0, i1 - 1] mask(%[[M]])
// CHECK-NEXT: loop.index i1 - 1 : i64
// CHECK: %[[BOTH:.*]] = arith.andi %[[M]], %{{.*}} : i1
// CHECK-NEXT: loop.load %y[i0, i1 - 1] mask(%[[BOTH]])
// CHECK: %[[V:.*]] = arith.addf
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[S:.*]] = arith.select %[[M]], %[[V]], %[[Z]] : f32
// CHECK-NEXT: loop.yield %[[S]] : f32
func.func @masked(%x: !buffer.buffer<[4, 6], f32>, %y: !buffer.buffer<[4, 6], f32>) -> !loop.tensor<[4, 8], f32> {
  %a = loop.pointwise [4, 6] : !loop.tensor<[4, 6], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[4, 6], f32>
    %c = loop.index i1 : i64
    %z = arith.constant 2 : i64
    %m = arith.cmpi sge, %c, %z : i64
    %1 = loop.load %y[i0, i1] mask(%m) : !buffer.buffer<[4, 6], f32>
    %2 = math.exp %0 : f32
    %3 = arith.addf %2, %1 : f32
    loop.yield %3 : f32
  }
  %p = loop.pointwise [4, 8] : !loop.tensor<[4, 8], f32> {
  ^bb0(%i0: index, %i1: index):
    %c = loop.index i1 : i64
    %one = arith.constant 1 : i64
    %seven = arith.constant 7 : i64
    %lo = arith.cmpi sge, %c, %one : i64
    %hi = arith.cmpi slt, %c, %seven : i64
    %m = arith.andi %lo, %hi : i1
    %0 = loop.load %a[i0, i1 - 1] mask(%m) : !loop.tensor<[4, 6], f32>
    loop.yield %0 : f32
  }
  func.return %p : !loop.tensor<[4, 8], f32>
}

// -----

// Indirect consumer load into an indirect producer load: the producer's own
// operand stays t0, the consumer's becomes t1 (and is dropped where unused).
// CHECK-LABEL: func.func @indirect
// CHECK-NOT: loop.pointwise [5, 6]
// CHECK: loop.pointwise [3, 6]
// CHECK: %[[T:.*]] = loop.load %ids[i0]
// CHECK-NEXT: %[[U:.*]] = loop.load %perm[t0] indirect(%[[T]] : i64)
// CHECK-NEXT: loop.load %x[t0, t1 + 1] indirect(%[[U]], %[[T]] : i64, i64)
// CHECK-NEXT: loop.load %x[4 - t0, i1] indirect(%[[T]] : i64)
func.func @indirect(%x: !buffer.buffer<[5, 6], f32>, %perm: !buffer.buffer<[5], i64>, %ids: !buffer.buffer<[3], i64>) -> !loop.tensor<[3, 6], f32> {
  %a = loop.pointwise [5, 6] : !loop.tensor<[5, 6], f32> {
  ^bb0(%i0: index, %i1: index):
    %p = loop.load %perm[i0] : !buffer.buffer<[5], i64>
    %0 = loop.load %x[t0, i0 + 1] indirect(%p : i64) : !buffer.buffer<[5, 6], f32>
    %1 = loop.load %x[4 - i0, i1] : !buffer.buffer<[5, 6], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  %g = loop.pointwise [3, 6] : !loop.tensor<[3, 6], f32> {
  ^bb0(%i0: index, %i1: index):
    %t = loop.load %ids[i0] : !buffer.buffer<[3], i64>
    %0 = loop.load %a[t0, i1] indirect(%t : i64) : !loop.tensor<[5, 6], f32>
    loop.yield %0 : f32
  }
  func.return %g : !loop.tensor<[3, 6], f32>
}

// -----

// Pointwise producers are inlined into reduction bodies; reductions themselves
// are never inlined.
// CHECK-LABEL: func.func @into_reduction
// CHECK-NOT: loop.pointwise [8, 16]
// CHECK: %[[S:.*]] = loop.reduction sum [8] [16]
// CHECK: math.exp
// CHECK: loop.pointwise [8]
// CHECK: loop.load %[[S]][i0]
func.func @into_reduction(%x: !buffer.buffer<[8, 16], f32>) -> !loop.tensor<[8], f32> {
  %e = loop.pointwise [8, 16] : !loop.tensor<[8, 16], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[8, 16], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %s = loop.reduction sum [8] [16] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %e[i0, r0] : !loop.tensor<[8, 16], f32>
    loop.yield %0 : f32
  }
  %l = loop.pointwise [8] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %s[i0] : !loop.tensor<[8], f32>
    %1 = math.log %0 : f32
    loop.yield %1 : f32
  }
  func.return %l : !loop.tensor<[8], f32>
}

// -----

// An expensive producer read by two loads stays materialized (with max-cost=0
// compute op is expensive); one read once is inlined either way.
// CHECK-LABEL: func.func @expensive
// CHECK-COUNT-1: loop.pointwise
// CHECK-NOT: loop.pointwise
// CHEAP-LABEL: func.func @expensive
// CHEAP: %[[E:.*]] = loop.pointwise [8]
// CHEAP: loop.pointwise [8]
// CHEAP: loop.load %[[E]][i0]
// CHEAP: loop.load %[[E]][7 - i0]
func.func @expensive(%x: !buffer.buffer<[8], f32>) -> !loop.tensor<[8], f32> {
  %e = loop.pointwise [8] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[8], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %f = loop.pointwise [8] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %e[i0] : !loop.tensor<[8], f32>
    %1 = loop.load %e[7 - i0] : !loop.tensor<[8], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %f : !loop.tensor<[8], f32>
}

// -----

// Recomputing after a loop.copy overwrote the producer's input would read the
// new data: the producer stays.
// CHECK-LABEL: func.func @copy_between
// CHECK: %[[A:.*]] = loop.pointwise
// CHECK: loop.copy
// CHECK: loop.load %[[A]][i0]
func.func @copy_between(%x: !buffer.buffer<[8], f32>, %y: !loop.tensor<[8], f32>) -> !loop.tensor<[8], f32> {
  %a = loop.pointwise [8] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[8], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  loop.copy %y, %x : !loop.tensor<[8], f32>, !buffer.buffer<[8], f32>
  %b = loop.pointwise [8] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %a[i0] : !loop.tensor<[8], f32>
    %1 = math.log %0 : f32
    loop.yield %1 : f32
  }
  func.return %b : !loop.tensor<[8], f32>
}

// -----

// A view read after a loop.copy overwrote its source holds the old data: neither
// the view nor a producer that reads it is recomputed past the copy.
// CHECK-LABEL: func.func @view_copy_between
// CHECK: %[[V:.*]] = loop.view %x[7 - i0]
// CHECK: %[[A:.*]] = loop.pointwise
// CHECK: loop.load %x[7 - i0]
// CHECK: loop.copy
// CHECK: loop.load %[[A]][i0]
// CHECK: loop.load %[[V]][i0]
func.func @view_copy_between(%x: !buffer.buffer<[8], f32>, %y: !loop.tensor<[8], f32>) -> !loop.tensor<[8], f32> {
  %v = loop.view %x[7 - i0] : !buffer.buffer<[8], f32> -> !loop.tensor<[8], f32>
  %a = loop.pointwise [8] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %v[i0] : !loop.tensor<[8], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  loop.copy %y, %x : !loop.tensor<[8], f32>, !buffer.buffer<[8], f32>
  %b = loop.pointwise [8] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %a[i0] : !loop.tensor<[8], f32>
    %1 = loop.load %v[i0] : !loop.tensor<[8], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %b : !loop.tensor<[8], f32>
}

// -----

// Random offsets are index expressions too: they follow the substitution, so
// the recomputed numbers are the ones the producer drew.
// CHECK-LABEL: func.func @rand
// CHECK: %[[SEED:.*]] = loop.seed : i64
// CHECK-COUNT-1: loop.pointwise
// CHECK: loop.rand %[[SEED]][i0 + 4*i1] : f32
func.func @rand(%x: !buffer.buffer<[4, 4], f32>) -> !loop.tensor<[4, 4], f32> {
  %seed = loop.seed : i64
  %d = loop.pointwise [4, 4] : !loop.tensor<[4, 4], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.rand %seed[4*i0 + i1] : f32
    loop.yield %0 : f32
  }
  %y = loop.pointwise [4, 4] : !loop.tensor<[4, 4], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %d[i1, i0] : !loop.tensor<[4, 4], f32>
    %1 = loop.load %x[i0, i1] : !buffer.buffer<[4, 4], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %y : !loop.tensor<[4, 4], f32>
}

// -----

// An ATen call that writes %x in place sits between the producer and its
// reader: recomputing exp(x) after it would read the new %x, so the producer
// stays.
// CHECK-LABEL: func.func @inplace_extern_between
// CHECK: %[[E:.*]] = loop.pointwise [4]
// CHECK: math.exp
// CHECK: buffer.extern "aten.add_.Tensor"
// CHECK: loop.pointwise [4]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: loop.load %[[E]][i0]
func.func @inplace_extern_between(%x: !buffer.buffer<[4], f32>) -> !loop.tensor<[4], f32> {
  %e = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !buffer.buffer<[4], f32>
    %b = math.exp %a : f32
    loop.yield %b : f32
  }
  %r = buffer.extern "aten.add_.Tensor" (%x) : (!buffer.buffer<[4], f32>) -> (!loop.tensor<[4], f32>) {
  ^bb0(%y: !aten.tensor<[4], f32>):
    %z = aten.add_.Tensor(%y, %y) : !aten.tensor<[4], f32>
    buffer.yield %z : !aten.tensor<[4], f32>
  }
  %o = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %e[i0] : !loop.tensor<[4], f32>
    %b = arith.addf %a, %a : f32
    loop.yield %b : f32
  }
  func.return %o : !loop.tensor<[4], f32>
}

// -----

// A producer too costly to recompute (max-cost=1 here), read once by a nest
// that only widens it to f32, which two nests read: the producer is stored at
// its own bf16 and the widening is inlined into both readers (inlined into the
// widening nest, it would have been stored as f32: twice the bytes).
// CHECK-LABEL: func.func @widened
// WIDEN-LABEL: func.func @widened
// WIDEN:         %x = loop.pointwise [4, 16] : !loop.tensor<[4, 16], bf16>
// WIDEN:         loop.reduction sum
// WIDEN-NEXT:    ^
// WIDEN-NEXT:      loop.load %x[i0, r0] : !loop.tensor<[4, 16], bf16>
// WIDEN-NEXT:      arith.extf
// WIDEN:         loop.pointwise [4, 16] : !loop.tensor<[4, 16], f32>
// WIDEN-NEXT:    ^
// WIDEN-NEXT:      loop.load %x[i0, i1] : !loop.tensor<[4, 16], bf16>
func.func @widened(%y: !buffer.buffer<[4, 16], bf16>) -> (!loop.tensor<[4, 1], f32>, !loop.tensor<[4, 16], f32>) {
  %x = loop.pointwise [4, 16] : !loop.tensor<[4, 16], bf16> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %y[i0, i1] : !buffer.buffer<[4, 16], bf16>
    %1 = arith.extf %0 : bf16 to f32
    %2 = math.tanh %1 : f32
    %3 = math.exp %2 : f32
    %4 = arith.truncf %3 : f32 to bf16
    loop.yield %4 : bf16
  }
  %w = loop.pointwise [4, 16] : !loop.tensor<[4, 16], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !loop.tensor<[4, 16], bf16>
    %1 = arith.extf %0 : bf16 to f32
    loop.yield %1 : f32
  }
  %s = loop.reduction sum [4, 1] [16] : !loop.tensor<[4, 1], f32> {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %0 = loop.load %w[i0, r0] : !loop.tensor<[4, 16], f32>
    loop.yield %0 : f32
  }
  %p = loop.pointwise [4, 16] : !loop.tensor<[4, 16], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %w[i0, i1] : !loop.tensor<[4, 16], f32>
    %1 = loop.load %s[i0, 0] : !loop.tensor<[4, 1], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %s, %p : !loop.tensor<[4, 1], f32>, !loop.tensor<[4, 16], f32>
}

// -----

// A residual sum %y is copied for a convolution (aten-channels-last's clone:
// an identity copy, stored anyway for the extern), then read by a 2x2 pool
// after the convolution. The pool loads the stored copy: recomputing %y there
// kept its two inputs alive until the pool (SE-ResNeXt-26d's ResNet-D
// shortcut: two 49 MiB buffers above Inductor's peak). %y, now read once,
// is inlined into the copy.
// CHECK-LABEL: func.func @stored_copy
// CHECK:         %[[C:.*]] = loop.pointwise [2, 4, 4, 4]
// CHECK-NEXT:    ^
// CHECK-NEXT:      loop.load %a[i0, i1, i2, i3]
// CHECK-NEXT:      loop.load %b[i0, i1, i2, i3]
// CHECK-NEXT:      arith.addf
// CHECK:         buffer.extern "aten.convolution.default" (%[[C]], %w)
// CHECK:         loop.reduction sum [2, 4, 2, 2] [2, 2]
// CHECK-NEXT:    ^
// CHECK-NEXT:      loop.load %[[C]][i0, i1, 2*i2 + r0, 2*i3 + r1]
// CHECK-NEXT:      loop.yield
func.func @stored_copy(%a: !buffer.buffer<[2, 4, 4, 4], f32>, %b: !buffer.buffer<[2, 4, 4, 4], f32>, %w: !buffer.buffer<[4, 4, 1, 1], f32>) -> (!loop.tensor<[2, 4, 4, 4], f32>, !loop.tensor<[2, 4, 2, 2], f32>) {
  %y = loop.pointwise [2, 4, 4, 4] : !loop.tensor<[2, 4, 4, 4], f32> {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %0 = loop.load %a[i0, i1, i2, i3] : !buffer.buffer<[2, 4, 4, 4], f32>
    %1 = loop.load %b[i0, i1, i2, i3] : !buffer.buffer<[2, 4, 4, 4], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  %c = loop.pointwise [2, 4, 4, 4] : !loop.tensor<[2, 4, 4, 4], f32> {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %0 = loop.load %y[i0, i1, i2, i3] : !loop.tensor<[2, 4, 4, 4], f32>
    loop.yield %0 : f32
  }
  %conv = buffer.extern "aten.convolution.default" (%c, %w) : (!loop.tensor<[2, 4, 4, 4], f32>, !buffer.buffer<[4, 4, 1, 1], f32>) -> (!loop.tensor<[2, 4, 4, 4], f32>) {
  ^bb0(%x: !aten.tensor<[2, 4, 4, 4], f32>, %k: !aten.tensor<[4, 4, 1, 1], f32>):
    %r = aten.convolution.default(%x, %k, none, stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[2, 4, 4, 4], f32>
    buffer.yield %r : !aten.tensor<[2, 4, 4, 4], f32>
  }
  %pool = loop.reduction sum [2, 4, 2, 2] [2, 2] : !loop.tensor<[2, 4, 2, 2], f32> {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %r0: index, %r1: index):
    %0 = loop.load %y[i0, i1, 2*i2 + r0, 2*i3 + r1] : !loop.tensor<[2, 4, 4, 4], f32>
    loop.yield %0 : f32
  }
  func.return %conv, %pool : !loop.tensor<[2, 4, 4, 4], f32>, !loop.tensor<[2, 4, 2, 2], f32>
}
