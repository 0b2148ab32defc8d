// RUN: fx-opt %s -p loop-matvec-prologue --split-input-file | filecheck %s
// RUN: fx-opt %s -p loop-matvec-prologue,cse,loop-fuse --split-input-file | filecheck %s --check-prefix=FUSED

// RMSNorm of one row, then a matrix-vector product of the normed row: the
// product gets its own sum of squares over its 4 outputs (the same sum each),
// the normalization is inlined into its body reading that sum at the
// product's own point, and the norm's nests go away. loop-fuse then makes the
// two reductions one kernel (a reduction chain).
// CHECK-LABEL: func.func @rmsnorm_matvec
// CHECK:         %[[S:.*]] = loop.reduction sum [4] [8] : !loop.tensor<[4], f32> {
// CHECK-NEXT:    ^{{.*}}(%{{.*}}: index, %{{.*}}: index):
// CHECK-NEXT:      %[[H:.*]] = loop.load %h[r0] : !buffer.buffer<[8], f32>
// CHECK-NEXT:      arith.mulf %[[H]], %[[H]] : f32
// CHECK:         %y = loop.reduction sum [4] [8] : !loop.tensor<[4], f32> {
// CHECK:           loop.load %h[r0]
// CHECK:           loop.load %[[S]][i0] : !loop.tensor<[4], f32>
// CHECK:           math.rsqrt
// CHECK:           loop.load %w[i0, r0]
// CHECK-NOT:     loop.pointwise
// CHECK:         func.return %y
// FUSED-LABEL: func.func @rmsnorm_matvec
// FUSED:         loop.fused [4] [8]
// FUSED-NOT:     loop.reduction sum [1]
func.func @rmsnorm_matvec(%h: !buffer.buffer<[8], f32>, %g: !buffer.buffer<[8], f32>, %w: !buffer.buffer<[4, 8], f32>) -> !loop.tensor<[4], f32> {
  %ss = loop.reduction sum [1] [8] : !loop.tensor<[1], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %h[r0] : !buffer.buffer<[8], f32>
    %1 = arith.mulf %0, %0 : f32
    loop.yield %1 : f32
  }
  %n = loop.pointwise [8] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %h[i0] : !buffer.buffer<[8], f32>
    %1 = loop.load %ss[0] : !loop.tensor<[1], f32>
    %2 = math.rsqrt %1 : f32
    %3 = arith.mulf %0, %2 : f32
    %4 = loop.load %g[i0] : !buffer.buffer<[8], f32>
    %5 = arith.mulf %3, %4 : f32
    loop.yield %5 : f32
  }
  %y = loop.reduction sum [4] [8] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %n[r0] : !loop.tensor<[8], f32>
    %1 = loop.load %w[i0, r0] : !buffer.buffer<[4, 8], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %y : !loop.tensor<[4], f32>
}

// -----

// Two products of the normed row (gate and up): each gets its own sum, the
// norm's nests go away; after cse one sum is left and loop-fuse makes one
// kernel of it and both products.
// CHECK-LABEL: func.func @two_products
// CHECK-COUNT-4: loop.reduction sum [4] [8]
// CHECK-NOT:     loop.pointwise
// FUSED-LABEL: func.func @two_products
// FUSED:         loop.fused [4] [8]
// FUSED-NOT:     loop.fused
// FUSED:         func.return
func.func @two_products(%h: !buffer.buffer<[8], f32>, %w: !buffer.buffer<[4, 8], f32>, %u: !buffer.buffer<[4, 8], f32>) -> (!loop.tensor<[4], f32>, !loop.tensor<[4], f32>) {
  %ss = loop.reduction sum [1] [8] : !loop.tensor<[1], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %h[r0] : !buffer.buffer<[8], f32>
    %1 = arith.mulf %0, %0 : f32
    loop.yield %1 : f32
  }
  %n = loop.pointwise [8] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %h[i0] : !buffer.buffer<[8], f32>
    %1 = loop.load %ss[0] : !loop.tensor<[1], f32>
    %2 = math.rsqrt %1 : f32
    %3 = arith.mulf %0, %2 : f32
    loop.yield %3 : f32
  }
  %a = loop.reduction sum [4] [8] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %n[r0] : !loop.tensor<[8], f32>
    %1 = loop.load %w[i0, r0] : !buffer.buffer<[4, 8], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  %b = loop.reduction sum [4] [8] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %n[r0] : !loop.tensor<[8], f32>
    %1 = loop.load %u[i0, r0] : !buffer.buffer<[4, 8], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %a, %b : !loop.tensor<[4], f32>, !loop.tensor<[4], f32>
}

// -----

// Left alone: a product of one output (nothing to save), a normed row read
// at the product's own point (not a vector broadcast over its outputs), and a
// normalization over another length than the product's reduction.
// CHECK-LABEL: func.func @not_prologues
// CHECK:         loop.reduction sum [1] [8]
// CHECK:         loop.pointwise [8]
// CHECK:         loop.reduction sum [1] [8]
// CHECK:         loop.pointwise [8]
// CHECK:         loop.reduction sum [8] [4]
// CHECK:         loop.reduction sum [4] [4]
// CHECK-NOT:     loop.reduction sum [8] [8]
func.func @not_prologues(%h: !buffer.buffer<[8], f32>, %v: !buffer.buffer<[8], f32>, %w: !buffer.buffer<[8, 4], f32>, %x: !buffer.buffer<[4, 4], f32>) -> (!loop.tensor<[1], f32>, !loop.tensor<[8], f32>, !loop.tensor<[4], f32>) {
  %ss = loop.reduction sum [1] [8] : !loop.tensor<[1], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %h[r0] : !buffer.buffer<[8], f32>
    %1 = arith.mulf %0, %0 : f32
    loop.yield %1 : f32
  }
  %n = loop.pointwise [8] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %h[i0] : !buffer.buffer<[8], f32>
    %1 = loop.load %ss[0] : !loop.tensor<[1], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  %one = loop.reduction sum [1] [8] : !loop.tensor<[1], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %n[r0] : !loop.tensor<[8], f32>
    %1 = loop.load %v[r0] : !buffer.buffer<[8], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  %m = loop.pointwise [8] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %h[i0] : !buffer.buffer<[8], f32>
    %1 = loop.load %ss[0] : !loop.tensor<[1], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  %own = loop.reduction sum [8] [4] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %m[i0] : !loop.tensor<[8], f32>
    %1 = loop.load %w[i0, r0] : !buffer.buffer<[8, 4], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  %other = loop.reduction sum [4] [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %m[r0] : !loop.tensor<[8], f32>
    %1 = loop.load %x[i0, r0] : !buffer.buffer<[4, 4], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %one, %own, %other : !loop.tensor<[1], f32>, !loop.tensor<[8], f32>, !loop.tensor<[4], f32>
}
