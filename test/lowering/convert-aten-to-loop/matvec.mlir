// RUN: fx-opt %s -p convert-aten-to-loop --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'convert-aten-to-loop{matvec=on}' --split-input-file | filecheck %s --check-prefix=ON
// RUN: fx-opt %s -p 'convert-aten-to-loop{matvec=off}' --split-input-file | filecheck %s --check-prefix=OFF

// Matrix-vector products (aten_to_loop/matvec.py): on CUDA, mm/addmm with one
// row or one column become a sum over K of f32 products, and a pointwise
// epilogue adds the bias and rounds once; everything else stays cuBLAS's.

// A batch-1 Linear: the weight's transpose is a view the reduction reads
// through; bias and rounding to bf16 in the epilogue.
// CHECK-LABEL: func.func @linear_b1
// CHECK: %[[T:.*]] = loop.view %w[i1, i0]
// CHECK: %[[R:.*]] = loop.reduction sum [1, 32] [64] : !loop.tensor<[1, 32], f32> {
// CHECK-NEXT: ^bb0(%i0: index, %i1: index, %r0: index):
// CHECK-NEXT: %[[X:.*]] = loop.load %x[i0, r0]
// CHECK-NEXT: %[[XF:.*]] = arith.extf %[[X]] : bf16 to f32
// CHECK-NEXT: %[[W:.*]] = loop.load %[[T]][r0, i1]
// CHECK-NEXT: %[[WF:.*]] = arith.extf %[[W]] : bf16 to f32
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[XF]], %[[WF]] : f32
// CHECK-NEXT: loop.yield %[[P]] : f32
// CHECK: loop.pointwise [1, 32] : !loop.tensor<[1, 32], bf16> {
// CHECK: loop.load %[[R]][i0, i1]
// CHECK: loop.load %b[i1]
// CHECK: arith.addf
// CHECK: arith.truncf
// CHECK-NOT: buffer.extern
// OFF-LABEL: func.func @linear_b1
// OFF: buffer.extern "aten.addmm.default"
func.func @linear_b1(%x: !aten.tensor<[1, 64], bf16, device "cuda:0">, %w: !aten.tensor<[32, 64], bf16, device "cuda:0">, %b: !aten.tensor<[32], bf16, device "cuda:0">) -> !aten.tensor<[1, 32], bf16, device "cuda:0"> {
  %t = aten.permute.default(%w, dims = [1, 0]) : !aten.tensor<[64, 32], bf16, strides [1, 64], device "cuda:0">
  %0 = aten.addmm.default(%b, %x, %t) : !aten.tensor<[1, 32], bf16, device "cuda:0">
  func.return %0 : !aten.tensor<[1, 32], bf16, device "cuda:0">
}

// -----

// One column: a sum over K for each of M rows; an f32 result needs no epilogue.
// CHECK-LABEL: func.func @one_column
// CHECK: %[[R:.*]] = loop.reduction sum [16, 1] [64] : !loop.tensor<[16, 1], f32> {
// CHECK: loop.load %a[i0, r0]
// CHECK: loop.load %v[r0, i1]
// CHECK: arith.mulf
// CHECK: func.return %[[R]]
func.func @one_column(%a: !aten.tensor<[16, 64], f32, device "cuda:0">, %v: !aten.tensor<[64, 1], f32, device "cuda:0">) -> !aten.tensor<[16, 1], f32, device "cuda:0"> {
  %0 = aten.mm.default(%a, %v) : !aten.tensor<[16, 1], f32, device "cuda:0">
  func.return %0 : !aten.tensor<[16, 1], f32, device "cuda:0">
}

// -----

// Two rows of a row-major [K, N] matrix would each read it down its columns:
// cuBLAS, even with matvec=on.
// CHECK-LABEL: func.func @two_rows
// CHECK: buffer.extern "aten.mm.default"
// ON-LABEL: func.func @two_rows
// ON: buffer.extern "aten.mm.default"
func.func @two_rows(%x: !aten.tensor<[2, 64], bf16, device "cuda:0">, %w: !aten.tensor<[64, 32], bf16, device "cuda:0">) -> !aten.tensor<[2, 32], bf16, device "cuda:0"> {
  %0 = aten.mm.default(%x, %w) : !aten.tensor<[2, 32], bf16, device "cuda:0">
  func.return %0 : !aten.tensor<[2, 32], bf16, device "cuda:0">
}

// -----

// On the CPU ATen's GEMV is the default; matvec=on lowers it anyway (here
// with a symbolic K).
// CHECK-LABEL: func.func @on_cpu
// CHECK: buffer.extern "aten.mm.default"
// ON-LABEL: func.func @on_cpu
// ON: loop.reduction sum [1, 32] [s0]
// ON-NOT: buffer.extern
func.func @on_cpu(%x: !aten.tensor<[1, s0], f32>, %w: !aten.tensor<[32, s0], f32>) -> !aten.tensor<[1, 32], f32> {
  %t = aten.permute.default(%w, dims = [1, 0]) : !aten.tensor<[s0, 32], f32, strides [1, s0]>
  %0 = aten.mm.default(%x, %t) : !aten.tensor<[1, 32], f32>
  func.return %0 : !aten.tensor<[1, 32], f32>
}

// -----

// A row-major [K, N] matrix (GPT-2's Conv1D weight) would be a column sum over
// K rows, slower than cuBLAS's GEMV at these sizes: cuBLAS, even with matvec=on.
// CHECK-LABEL: func.func @row_major_weight
// CHECK: buffer.extern "aten.addmm.default"
// ON-LABEL: func.func @row_major_weight
// ON: buffer.extern "aten.addmm.default"
func.func @row_major_weight(%b: !aten.tensor<[32], bf16, device "cuda:0">, %x: !aten.tensor<[1, 64], bf16, device "cuda:0">, %w: !aten.tensor<[64, 32], bf16, device "cuda:0">) -> !aten.tensor<[1, 32], bf16, device "cuda:0"> {
  %0 = aten.addmm.default(%b, %x, %w) : !aten.tensor<[1, 32], bf16, device "cuda:0">
  func.return %0 : !aten.tensor<[1, 32], bf16, device "cuda:0">
}

// -----

// addmm with beta or alpha, and integer products: cuBLAS/ATen.
// CHECK-LABEL: func.func @scaled
// CHECK: buffer.extern "aten.addmm.default"
// ON-LABEL: func.func @scaled
// ON: buffer.extern "aten.addmm.default"
// CHECK-LABEL: func.func @integers
// CHECK: buffer.extern "aten.mm.default"
func.func @scaled(%b: !aten.tensor<[32], f32, device "cuda:0">, %x: !aten.tensor<[1, 64], f32, device "cuda:0">, %w: !aten.tensor<[64, 32], f32, device "cuda:0">) -> !aten.tensor<[1, 32], f32, device "cuda:0"> {
  %0 = aten.addmm.default(%b, %x, %w, beta = 2.0) : !aten.tensor<[1, 32], f32, device "cuda:0">
  func.return %0 : !aten.tensor<[1, 32], f32, device "cuda:0">
}
func.func @integers(%x: !aten.tensor<[1, 64], i64, device "cuda:0">, %w: !aten.tensor<[64, 32], i64, device "cuda:0">) -> !aten.tensor<[1, 32], i64, device "cuda:0"> {
  %0 = aten.mm.default(%x, %w) : !aten.tensor<[1, 32], i64, device "cuda:0">
  func.return %0 : !aten.tensor<[1, 32], i64, device "cuda:0">
}

// -----

// A few rows of a Linear's weight (a decode batch): the same sum over K, over
// [M, N]; its kernel computes all M rows a program, the weight read once
// (convert-loop-to-tt). matvec=auto takes it where strategy/rows.py estimates
// it faster than cuBLAS and its epilogue kernel (here: 4 rows, a bias and a
// ReLU after; without the ReLU, cuBLAS's addmm adds the bias itself and
// the estimates are within the margin); matvec=on always.
// CHECK-LABEL: func.func @rows_linear
// CHECK: loop.reduction sum [4, 32] [64]
// CHECK-NOT: buffer.extern
// ON-LABEL: func.func @rows_linear
// ON: loop.reduction sum [4, 32] [64]
// ON: loop.load %b[i1]
// OFF-LABEL: func.func @rows_linear
// OFF: buffer.extern "aten.addmm.default"
func.func @rows_linear(%x: !aten.tensor<[4, 64], bf16, device "cuda:0">, %w: !aten.tensor<[32, 64], bf16, device "cuda:0">, %b: !aten.tensor<[32], bf16, device "cuda:0">) -> !aten.tensor<[4, 32], bf16, device "cuda:0"> {
  %t = aten.permute.default(%w, dims = [1, 0]) : !aten.tensor<[64, 32], bf16, strides [1, 64], device "cuda:0">
  %0 = aten.addmm.default(%b, %x, %t) : !aten.tensor<[4, 32], bf16, device "cuda:0">
  %1 = aten.relu.default(%0) : !aten.tensor<[4, 32], bf16, device "cuda:0">
  func.return %1 : !aten.tensor<[4, 32], bf16, device "cuda:0">
}

// -----

// Eight rows of a 2048 x 5632 weight with no epilogue: cuBLAS's tensor cores
// beat eight f32 accumulators a lane on the FMA units (strategy/rows.py);
// matvec=on lowers it anyway.
// CHECK-LABEL: func.func @rows_large
// CHECK: buffer.extern "aten.mm.default"
// ON-LABEL: func.func @rows_large
// ON: loop.reduction sum [8, 5632] [2048]
func.func @rows_large(%x: !aten.tensor<[8, 2048], bf16, device "cuda:0">, %w: !aten.tensor<[5632, 2048], bf16, device "cuda:0">) -> !aten.tensor<[8, 5632], bf16, device "cuda:0"> {
  %t = aten.permute.default(%w, dims = [1, 0]) : !aten.tensor<[2048, 5632], bf16, strides [1, 2048], device "cuda:0">
  %0 = aten.mm.default(%x, %t) : !aten.tensor<[8, 5632], bf16, device "cuda:0">
  func.return %0 : !aten.tensor<[8, 5632], bf16, device "cuda:0">
}
