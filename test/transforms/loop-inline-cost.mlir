// RUN: fx-opt %s -p loop-inline --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'loop-inline{max-body-ops=8}' --split-input-file | filecheck %s --check-prefix=SMALL
// RUN: fx-opt %s -p loop-inline,loop-cost-report --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=COST

// loop-inline's cost model: whether a producer is recomputed in its readers or
// stored once is decided from its whole (already fused) body, its readers and
// the bytes they would read.

// A producer stored anyway (returned) is loaded by its two readers, never
// recomputed in them.
// CHECK-LABEL: func.func @stored_two_readers
// CHECK: %[[E:.*]] = loop.pointwise [8, 64]
// CHECK: math.exp
// CHECK: loop.pointwise [8, 64]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: loop.load %[[E]][i0, i1]
// CHECK-NOT: math.exp
// CHECK: loop.reduction sum [8] [64]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: loop.load %[[E]][i0, r0]
// CHECK-NOT: math.exp
// CHECK: func.return
func.func @stored_two_readers(%x: !buffer.buffer<[8, 64], f32>) -> (!loop.tensor<[8, 64], f32>, !loop.tensor<[8, 64], f32>, !loop.tensor<[8], f32>) {
  %e = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[8, 64], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %d = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %e[i0, i1] : !loop.tensor<[8, 64], f32>
    %1 = arith.addf %0, %0 : f32
    loop.yield %1 : f32
  }
  %s = loop.reduction sum [8] [64] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %e[i0, r0] : !loop.tensor<[8, 64], f32>
    loop.yield %0 : f32
  }
  func.return %e, %d, %s : !loop.tensor<[8, 64], f32>, !loop.tensor<[8, 64], f32>, !loop.tensor<[8], f32>
}

// -----

// Three residual blocks, post-norm: h_k = y_(k-1) + a_k, y_k = norm(h_k), and
// each y_k is stored (returned, as a Linear would read it). Each h_k is cheap
// and read by its norm's two nests only: recomputed there. The third norm reads
// only its own inputs (y2, a3), not the whole chain back to x.
// CHECK-LABEL: func.func @residual_chain
// CHECK-NOT: loop.pointwise [8, 64] : {{.*}} {
// CHECK: %[[S1:.*]] = loop.reduction sum
// CHECK: %[[Y1:.*]] = loop.pointwise
// CHECK: %[[S2:.*]] = loop.reduction sum
// CHECK: %[[Y2:.*]] = loop.pointwise
// CHECK: %[[S3:.*]] = loop.reduction sum
// CHECK-NEXT: ^bb0
// CHECK-NEXT: loop.load %[[Y2]][i0, r0]
// CHECK-NEXT: loop.load %a3[i0, r0]
// CHECK-NEXT: arith.addf
// CHECK-NEXT: loop.yield
// CHECK: %[[Y3:.*]] = loop.pointwise
// CHECK-NEXT: ^bb0
// CHECK-NEXT: loop.load %[[Y2]][i0, i1]
// CHECK-NEXT: loop.load %a3[i0, i1]
// CHECK-NEXT: arith.addf
// CHECK-NEXT: loop.load %[[S3]][i0]
// CHECK-NEXT: arith.divf
// CHECK: func.return %[[Y1]], %[[Y2]], %[[Y3]]
func.func @residual_chain(%x: !buffer.buffer<[8, 64], f32>, %a1: !buffer.buffer<[8, 64], f32>, %a2: !buffer.buffer<[8, 64], f32>, %a3: !buffer.buffer<[8, 64], f32>) -> (!loop.tensor<[8, 64], f32>, !loop.tensor<[8, 64], f32>, !loop.tensor<[8, 64], f32>) {
  %h1 = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[8, 64], f32>
    %1 = loop.load %a1[i0, i1] : !buffer.buffer<[8, 64], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  %s1 = loop.reduction sum [8] [64] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %h1[i0, r0] : !loop.tensor<[8, 64], f32>
    loop.yield %0 : f32
  }
  %y1 = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %h1[i0, i1] : !loop.tensor<[8, 64], f32>
    %1 = loop.load %s1[i0] : !loop.tensor<[8], f32>
    %2 = arith.divf %0, %1 : f32
    loop.yield %2 : f32
  }
  %h2 = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %y1[i0, i1] : !loop.tensor<[8, 64], f32>
    %1 = loop.load %a2[i0, i1] : !buffer.buffer<[8, 64], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  %s2 = loop.reduction sum [8] [64] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %h2[i0, r0] : !loop.tensor<[8, 64], f32>
    loop.yield %0 : f32
  }
  %y2 = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %h2[i0, i1] : !loop.tensor<[8, 64], f32>
    %1 = loop.load %s2[i0] : !loop.tensor<[8], f32>
    %2 = arith.divf %0, %1 : f32
    loop.yield %2 : f32
  }
  %h3 = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %y2[i0, i1] : !loop.tensor<[8, 64], f32>
    %1 = loop.load %a3[i0, i1] : !buffer.buffer<[8, 64], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  %s3 = loop.reduction sum [8] [64] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %h3[i0, r0] : !loop.tensor<[8, 64], f32>
    loop.yield %0 : f32
  }
  %y3 = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %h3[i0, i1] : !loop.tensor<[8, 64], f32>
    %1 = loop.load %s3[i0] : !loop.tensor<[8], f32>
    %2 = arith.divf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %y1, %y2, %y3 : !loop.tensor<[8, 64], f32>, !loop.tensor<[8, 64], f32>, !loop.tensor<[8, 64], f32>
}

// -----

// Pre-norm: the residual stream h_k = h_(k-1) + a_k is read by the norm (two
// nests) and by the next residual add. Recomputed while cheap, but once the
// composed stream reads three full tensors into three readers, storing it is
// fewer bytes: the chain is cut, and no nest reads more than three inputs.
// CHECK-LABEL: func.func @prenorm_chain
// CHECK: %[[H2:h2]] = loop.pointwise [8, 64]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: loop.load %x[i0, i1]
// CHECK-NEXT: loop.load %a1[i0, i1]
// CHECK-NEXT: arith.addf
// CHECK-NEXT: loop.load %a2[i0, i1]
// CHECK-NEXT: arith.addf
// CHECK-NEXT: loop.yield
// CHECK: %s3 = loop.reduction sum [8] [64]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: loop.load %[[H2]][i0, r0]
// CHECK-NEXT: loop.load %a3[i0, r0]
// CHECK-NEXT: arith.addf
// CHECK-NEXT: loop.yield
func.func @prenorm_chain(%x: !buffer.buffer<[8, 64], f32>, %a1: !buffer.buffer<[8, 64], f32>, %a2: !buffer.buffer<[8, 64], f32>, %a3: !buffer.buffer<[8, 64], f32>) -> (!loop.tensor<[8, 64], f32>, !loop.tensor<[8, 64], f32>, !loop.tensor<[8, 64], f32>) {
  %h1 = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[8, 64], f32>
    %1 = loop.load %a1[i0, i1] : !buffer.buffer<[8, 64], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  %s1 = loop.reduction sum [8] [64] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %h1[i0, r0] : !loop.tensor<[8, 64], f32>
    loop.yield %0 : f32
  }
  %y1 = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %h1[i0, i1] : !loop.tensor<[8, 64], f32>
    %1 = loop.load %s1[i0] : !loop.tensor<[8], f32>
    %2 = arith.divf %0, %1 : f32
    loop.yield %2 : f32
  }
  %h2 = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %h1[i0, i1] : !loop.tensor<[8, 64], f32>
    %1 = loop.load %a2[i0, i1] : !buffer.buffer<[8, 64], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  %s2 = loop.reduction sum [8] [64] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %h2[i0, r0] : !loop.tensor<[8, 64], f32>
    loop.yield %0 : f32
  }
  %y2 = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %h2[i0, i1] : !loop.tensor<[8, 64], f32>
    %1 = loop.load %s2[i0] : !loop.tensor<[8], f32>
    %2 = arith.divf %0, %1 : f32
    loop.yield %2 : f32
  }
  %h3 = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %h2[i0, i1] : !loop.tensor<[8, 64], f32>
    %1 = loop.load %a3[i0, i1] : !buffer.buffer<[8, 64], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  %s3 = loop.reduction sum [8] [64] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %h3[i0, r0] : !loop.tensor<[8, 64], f32>
    loop.yield %0 : f32
  }
  %y3 = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %h3[i0, i1] : !loop.tensor<[8, 64], f32>
    %1 = loop.load %s3[i0] : !loop.tensor<[8], f32>
    %2 = arith.divf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %y1, %y2, %y3 : !loop.tensor<[8, 64], f32>, !loop.tensor<[8, 64], f32>, !loop.tensor<[8, 64], f32>
}

// -----

// A cheap broadcast (a [64] bias, scaled) read by two nests over [8, 64]: its
// input is 1/8 of what a store would write, so it is recomputed in both.
// CHECK-LABEL: func.func @cheap_broadcast
// CHECK-NOT: loop.pointwise [8, 64] : {{.*}} {
// CHECK: loop.reduction sum [8] [64]
// CHECK: loop.load %b[r0]
// CHECK: arith.mulf
// CHECK: loop.pointwise [8, 64]
// CHECK: loop.load %b[i1]
// CHECK: arith.mulf
// CHECK: func.return
func.func @cheap_broadcast(%x: !buffer.buffer<[8, 64], f32>, %b: !buffer.buffer<[64], f32>) -> (!loop.tensor<[8], f32>, !loop.tensor<[8, 64], f32>) {
  %bb = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %b[i1] : !buffer.buffer<[64], f32>
    %1 = arith.mulf %0, %0 : f32
    loop.yield %1 : f32
  }
  %s = loop.reduction sum [8] [64] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[8, 64], f32>
    %1 = loop.load %bb[i0, r0] : !loop.tensor<[8, 64], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  %y = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[8, 64], f32>
    %1 = loop.load %bb[i0, i1] : !loop.tensor<[8, 64], f32>
    %2 = arith.subf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %s, %y : !loop.tensor<[8], f32>, !loop.tensor<[8, 64], f32>
}

// -----

// An expensive producer (more than max-cost=30 compute ops) read by two nests
// is stored once; read by one, it would be inlined.
// CHECK-LABEL: func.func @expensive_shared
// CHECK: %[[E:.*]] = loop.pointwise [8, 64]
// CHECK-COUNT-32: math.sin
// CHECK: loop.reduction sum [8] [64]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: loop.load %[[E]][i0, r0]
// CHECK-NEXT: loop.yield
// CHECK: loop.pointwise [8, 64]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: loop.load %[[E]][i0, i1]
// CHECK-NOT: math.sin
// CHECK: func.return
func.func @expensive_shared(%x: !buffer.buffer<[8, 64], f32>) -> (!loop.tensor<[8], f32>, !loop.tensor<[8, 64], f32>) {
  %e = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %v0 = loop.load %x[i0, i1] : !buffer.buffer<[8, 64], f32>
    %v1 = math.sin %v0 : f32
    %v2 = math.sin %v1 : f32
    %v3 = math.sin %v2 : f32
    %v4 = math.sin %v3 : f32
    %v5 = math.sin %v4 : f32
    %v6 = math.sin %v5 : f32
    %v7 = math.sin %v6 : f32
    %v8 = math.sin %v7 : f32
    %v9 = math.sin %v8 : f32
    %v10 = math.sin %v9 : f32
    %v11 = math.sin %v10 : f32
    %v12 = math.sin %v11 : f32
    %v13 = math.sin %v12 : f32
    %v14 = math.sin %v13 : f32
    %v15 = math.sin %v14 : f32
    %v16 = math.sin %v15 : f32
    %v17 = math.sin %v16 : f32
    %v18 = math.sin %v17 : f32
    %v19 = math.sin %v18 : f32
    %v20 = math.sin %v19 : f32
    %v21 = math.sin %v20 : f32
    %v22 = math.sin %v21 : f32
    %v23 = math.sin %v22 : f32
    %v24 = math.sin %v23 : f32
    %v25 = math.sin %v24 : f32
    %v26 = math.sin %v25 : f32
    %v27 = math.sin %v26 : f32
    %v28 = math.sin %v27 : f32
    %v29 = math.sin %v28 : f32
    %v30 = math.sin %v29 : f32
    %v31 = math.sin %v30 : f32
    %v32 = math.sin %v31 : f32
    loop.yield %v32 : f32
  }
  %s = loop.reduction sum [8] [64] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %e[i0, r0] : !loop.tensor<[8, 64], f32>
    loop.yield %0 : f32
  }
  %y = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %e[i0, i1] : !loop.tensor<[8, 64], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  func.return %s, %y : !loop.tensor<[8], f32>, !loop.tensor<[8, 64], f32>
}

// -----

// The compile-time guard: with max-body-ops=8, a joins b (4 + 4 ops) but the
// fused b would push c past the limit, so b is stored and c loads it.
// CHECK-LABEL: func.func @guard
// CHECK-COUNT-1: loop.pointwise
// CHECK-NOT: loop.pointwise
// SMALL-LABEL: func.func @guard
// SMALL: %[[B:b]] = loop.pointwise [8, 64]
// SMALL: math.exp
// SMALL: math.tanh
// SMALL: loop.pointwise [8, 64]
// SMALL-NEXT: ^bb0
// SMALL-NEXT: loop.load %[[B]][i0, i1]
// COST-LABEL: @guard:
// COST-NEXT: loop.pointwise [8, 64] c: reads 2.0 KB, writes 2.0 KB, 1 loads, 6 ops, 8 body ops
func.func @guard(%x: !buffer.buffer<[8, 64], f32>) -> !loop.tensor<[8, 64], f32> {
  %a = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[8, 64], f32>
    %1 = math.exp %0 : f32
    %2 = math.sin %1 : f32
    loop.yield %2 : f32
  }
  %b = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %a[i0, i1] : !loop.tensor<[8, 64], f32>
    %1 = math.cos %0 : f32
    %2 = math.tanh %1 : f32
    loop.yield %2 : f32
  }
  %c = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %b[i0, i1] : !loop.tensor<[8, 64], f32>
    %1 = math.log %0 : f32
    %2 = math.sqrt %1 : f32
    loop.yield %2 : f32
  }
  func.return %c : !loop.tensor<[8, 64], f32>
}

// -----

// A reduction's epilogue that a reduction reads by broadcast (the next batch-1
// Linear: its load leaves out the output index i1, so each element would be
// recomputed for each of its 16 outputs) stays stored: loop-fuse makes it the
// first reduction's epilogue. The same reader of a producer that does not read
// a reduction (%g) inlines it; a reader that broadcasts only along its own
// reduction (%s, softmax's sum of exp(x - max)) inlines it too.
// CHECK-LABEL: func.func @epilogue_broadcast
// CHECK: %[[R:.*]] = loop.reduction sum [1, 32] [64]
// CHECK: %[[E:.*]] = loop.pointwise [1, 32]
// CHECK: math.tanh
// CHECK: loop.reduction sum [1, 16] [32]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: loop.load %[[E]][i0, r0]
// CHECK-NOT: math.tanh
// CHECK: loop.reduction sum [1, 16] [32]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: loop.load %x[i0, r0]
// CHECK-NEXT: math.sin
// CHECK: loop.reduction sum [1] [32]
// CHECK-NEXT: ^bb0
// CHECK-NEXT: loop.load %x[i0, r0]
// CHECK-NEXT: loop.load %[[R]][i0, r0]
// CHECK-NEXT: arith.subf
// CHECK: func.return
func.func @epilogue_broadcast(%a: !buffer.buffer<[1, 64], f32>, %w: !buffer.buffer<[64, 32], f32>, %v: !buffer.buffer<[32, 16], f32>, %x: !buffer.buffer<[1, 32], f32>) -> (!loop.tensor<[1, 16], f32>, !loop.tensor<[1, 16], f32>, !loop.tensor<[1], f32>) {
  %r = loop.reduction sum [1, 32] [64] : !loop.tensor<[1, 32], f32> {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %0 = loop.load %a[i0, r0] : !buffer.buffer<[1, 64], f32>
    %1 = loop.load %w[r0, i1] : !buffer.buffer<[64, 32], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  %e = loop.pointwise [1, 32] : !loop.tensor<[1, 32], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %r[i0, i1] : !loop.tensor<[1, 32], f32>
    %1 = math.tanh %0 : f32
    loop.yield %1 : f32
  }
  %y = loop.reduction sum [1, 16] [32] : !loop.tensor<[1, 16], f32> {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %0 = loop.load %e[i0, r0] : !loop.tensor<[1, 32], f32>
    %1 = loop.load %v[r0, i1] : !buffer.buffer<[32, 16], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  %g = loop.pointwise [1, 32] : !loop.tensor<[1, 32], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[1, 32], f32>
    %1 = math.sin %0 : f32
    loop.yield %1 : f32
  }
  %z = loop.reduction sum [1, 16] [32] : !loop.tensor<[1, 16], f32> {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %0 = loop.load %g[i0, r0] : !loop.tensor<[1, 32], f32>
    %1 = loop.load %v[r0, i1] : !buffer.buffer<[32, 16], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  %d = loop.pointwise [1, 32] : !loop.tensor<[1, 32], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[1, 32], f32>
    %1 = loop.load %r[i0, i1] : !loop.tensor<[1, 32], f32>
    %2 = arith.subf %0, %1 : f32
    loop.yield %2 : f32
  }
  %s = loop.reduction sum [1] [32] : !loop.tensor<[1], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %d[i0, r0] : !loop.tensor<[1, 32], f32>
    loop.yield %0 : f32
  }
  func.return %y, %z, %s : !loop.tensor<[1, 16], f32>, !loop.tensor<[1, 16], f32>, !loop.tensor<[1], f32>
}
