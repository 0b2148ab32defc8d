// RUN: fx-opt %s -p 'convert-aten-to-loop{gemm=triton}' --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'convert-aten-to-loop{gemm=extern}' --split-input-file | filecheck %s --check-prefix=EXTERN
// RUN: fx-opt %s -p convert-aten-to-loop --split-input-file | filecheck %s --check-prefix=AUTO

// Matrix products as gemm templates (aten_to_loop/gemm.py): a sum over K of f32
// products marked `template gemm`, then a pointwise finish (bias, rounding).
// gemm=extern keeps cuBLAS; the default (auto) keeps cuBLAS on the CPU.

// A Linear: the weight read through its transpose; bias and rounding to bf16
// in the finish.
// CHECK-LABEL: func.func @linear
// CHECK: %[[T:.*]] = loop.view %w[i1, i0]
// CHECK: %[[R:.*]] = loop.reduction sum [8, 32] [64] template gemm : !loop.tensor<[8, 32], f32> {
// CHECK-NEXT: ^bb0(%i0: index, %i1: index, %r0: index):
// CHECK-NEXT: %[[X:.*]] = loop.load %x[i0, r0]
// CHECK-NEXT: %[[W:.*]] = loop.load %[[T]][r0, i1]
// CHECK-NEXT: %[[XF:.*]] = arith.extf %[[X]] : bf16 to f32
// CHECK-NEXT: %[[WF:.*]] = arith.extf %[[W]] : bf16 to f32
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[XF]], %[[WF]] : f32
// CHECK-NEXT: loop.yield %[[P]] : f32
// CHECK: loop.pointwise [8, 32] : !loop.tensor<[8, 32], bf16> {
// CHECK: loop.load %[[R]][i0, i1]
// CHECK: loop.load %b[i1]
// CHECK: arith.addf
// CHECK: arith.truncf
// EXTERN-LABEL: func.func @linear
// EXTERN: buffer.extern "aten.addmm.default"
// AUTO-LABEL: func.func @linear
// AUTO: buffer.extern "aten.addmm.default"
func.func @linear(%x: !aten.tensor<[8, 64], bf16>, %w: !aten.tensor<[32, 64], bf16>, %b: !aten.tensor<[32], bf16>) -> !aten.tensor<[8, 32], bf16> {
  %t = aten.permute.default(%w, dims = [1, 0]) : !aten.tensor<[64, 32], bf16, strides [1, 64]>
  %0 = aten.addmm.default(%b, %x, %t) : !aten.tensor<[8, 32], bf16>
  func.return %0 : !aten.tensor<[8, 32], bf16>
}

// -----

// A batched product over [B, M, N]; an f32 result needs no finish.
// CHECK-LABEL: func.func @bmm
// CHECK: %[[R:.*]] = loop.reduction sum [3, 8, 16] [24] template gemm : !loop.tensor<[3, 8, 16], f32> {
// CHECK-NEXT: ^bb0(%i0: index, %i1: index, %i2: index, %r0: index):
// CHECK-NEXT: loop.load %a[i0, i1, r0]
// CHECK-NEXT: loop.load %b[i0, r0, i2]
// CHECK: func.return %[[R]]
func.func @bmm(%a: !aten.tensor<[3, 8, 24], f32>, %b: !aten.tensor<[3, 24, 16], f32>) -> !aten.tensor<[3, 8, 16], f32> {
  %0 = aten.bmm.default(%a, %b) : !aten.tensor<[3, 8, 16], f32>
  func.return %0 : !aten.tensor<[3, 8, 16], f32>
}

// -----

// addmm's beta and alpha scale the bias and the product in the finish.
// CHECK-LABEL: func.func @addmm_scaled
// CHECK: %[[R:.*]] = loop.reduction sum [4, 6] [5] template gemm
// CHECK: loop.pointwise [4, 6]
// CHECK: %[[V:.*]] = loop.load %[[R]][i0, i1]
// CHECK: %[[A:.*]] = arith.constant 2.000000e+00
// CHECK: arith.mulf %[[V]], %[[A]]
// CHECK: loop.load %c[i0, i1]
// CHECK: arith.constant 5.000000e-01
func.func @addmm_scaled(%c: !aten.tensor<[4, 6], f32>, %a: !aten.tensor<[4, 5], f32>, %b: !aten.tensor<[5, 6], f32>) -> !aten.tensor<[4, 6], f32> {
  %0 = aten.addmm.default(%c, %a, %b, beta = 0.5, alpha = 2.0) : !aten.tensor<[4, 6], f32>
  func.return %0 : !aten.tensor<[4, 6], f32>
}

// -----

// A Linear on [B, S, K] rows (view -> mm -> view back): the product runs over
// [B, S, N], so the activation after it has its ranges and fuses.
// CHECK-LABEL: func.func @rows_3d
// CHECK: %[[R:.*]] = loop.reduction sum [2, 5, 16] [8] template gemm
// CHECK-NEXT: ^bb0(%i0: index, %i1: index, %i2: index, %r0: index):
// CHECK: loop.pointwise [2, 5, 16]
// CHECK: loop.load %[[R]][i0, i1, i2]
// CHECK-NOT: buffer.extern
func.func @rows_3d(%x: !aten.tensor<[2, 5, 8], f32>, %w: !aten.tensor<[8, 16], f32>) -> !aten.tensor<[2, 5, 16], f32> {
  %v = aten.view.default(%x, size = [10, 8]) : !aten.tensor<[10, 8], f32>
  %0 = aten.mm.default(%v, %w) : !aten.tensor<[10, 16], f32>
  %1 = aten.view.default(%0, size = [2, 5, 16]) : !aten.tensor<[2, 5, 16], f32>
  %2 = aten.relu.default(%1) : !aten.tensor<[2, 5, 16], f32>
  func.return %2 : !aten.tensor<[2, 5, 16], f32>
}

// -----

// Integer products stay ATen's.
// CHECK-LABEL: func.func @integer
// CHECK: buffer.extern "aten.mm.default"
func.func @integer(%a: !aten.tensor<[4, 5], i64>, %b: !aten.tensor<[5, 6], i64>) -> !aten.tensor<[4, 6], i64> {
  %0 = aten.mm.default(%a, %b) : !aten.tensor<[4, 6], i64>
  func.return %0 : !aten.tensor<[4, 6], i64>
}

// -----

// A 1x1 convolution: pixels are rows, output channels columns, input channels K.
// CHECK-LABEL: func.func @conv1x1
// CHECK: %[[R:.*]] = loop.reduction sum [2, 6, 5, 5] [8] template gemm
// CHECK-NEXT: ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %r0: index):
// CHECK-NEXT: loop.load %x[i0, r0, i2, i3]
// CHECK-NEXT: loop.load %w[i1, r0, 0, 0]
// CHECK: loop.pointwise [2, 6, 5, 5]
// CHECK: loop.load %b[i1]
// EXTERN-LABEL: func.func @conv1x1
// EXTERN: buffer.extern "aten.convolution.default"
func.func @conv1x1(%x: !aten.tensor<[2, 8, 5, 5], f32>, %w: !aten.tensor<[6, 8, 1, 1], f32>, %b: !aten.tensor<[6], f32>) -> !aten.tensor<[2, 6, 5, 5], f32> {
  %0 = aten.convolution.default(%x, %w, %b, stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[2, 6, 5, 5], f32>
  func.return %0 : !aten.tensor<[2, 6, 5, 5], f32>
}

// -----

// A strided 1x1 convolution (a bottleneck's downsampling shortcut): each
// output pixel reads the input pixel at twice its position.
// CHECK-LABEL: func.func @conv1x1_strided
// CHECK: loop.reduction sum [2, 6, 3, 3] [8] template gemm
// CHECK-NEXT: ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %r0: index):
// CHECK-NEXT: loop.load %x[i0, r0, 2*i2, 2*i3]
// CHECK-NEXT: loop.load %w[i1, r0, 0, 0]
// EXTERN-LABEL: func.func @conv1x1_strided
// EXTERN: buffer.extern "aten.convolution.default"
func.func @conv1x1_strided(%x: !aten.tensor<[2, 8, 5, 5], f32>, %w: !aten.tensor<[6, 8, 1, 1], f32>, %b: !aten.tensor<[6], f32>) -> !aten.tensor<[2, 6, 3, 3], f32> {
  %0 = aten.convolution.default(%x, %w, %b, stride = [2, 2], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[2, 6, 3, 3], f32>
  func.return %0 : !aten.tensor<[2, 6, 3, 3], f32>
}

// -----

// A depthwise convolution (groups = C_in = C_out) under gemm=triton: a
// reduction over the 3x3 window reading the input pixel each window point
// covers, masked in the padding, times the channel's weight; cuDNN's otherwise.
// CHECK-LABEL: func.func @depthwise
// CHECK: loop.reduction sum [2, 6, 3, 3] [3, 3] : !loop.tensor<[2, 6, 3, 3], f32>
// CHECK-NEXT: ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %r0: index, %r1: index):
// CHECK: loop.load %x[i0, i1, 2*i2 + r0 - 1, 2*i3 + r1 - 1] mask(
// CHECK: loop.load %w[i1, 0, r0, r1]
// EXTERN-LABEL: func.func @depthwise
// EXTERN: buffer.extern "aten.convolution.default"
// AUTO-LABEL: func.func @depthwise
// AUTO: buffer.extern "aten.convolution.default"
func.func @depthwise(%x: !aten.tensor<[2, 6, 5, 5], f32>, %w: !aten.tensor<[6, 1, 3, 3], f32>) -> !aten.tensor<[2, 6, 3, 3], f32> {
  %0 = aten.convolution.default(%x, %w, none, stride = [2, 2], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 6) : !aten.tensor<[2, 6, 3, 3], f32>
  func.return %0 : !aten.tensor<[2, 6, 3, 3], f32>
}

// -----

// A padded 1x1 convolution stays cuDNN's (its border reads zeros).
// CHECK-LABEL: func.func @conv1x1_padded
// CHECK: buffer.extern "aten.convolution.default"
func.func @conv1x1_padded(%x: !aten.tensor<[2, 8, 5, 5], f32>, %w: !aten.tensor<[6, 8, 1, 1], f32>) -> !aten.tensor<[2, 6, 7, 7], f32> {
  %0 = aten.convolution.default(%x, %w, none, stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[2, 6, 7, 7], f32>
  func.return %0 : !aten.tensor<[2, 6, 7, 7], f32>
}

// -----

// Decompose-K, where max-autotune chose a K split (the config's k4): one
// template over K's slices as its batch, f32, then the slices' sum.
// CHECK-LABEL: func.func @decompose_k
// CHECK: %[[P:.*]] = loop.reduction sum [4, 16, 24] [256] template "gemm:16x32x32w2s2g8k4" : !loop.tensor<[4, 16, 24], f32>
// CHECK-NEXT: ^bb0(%i0: index, %i1: index, %i2: index, %r0: index):
// CHECK-NEXT: loop.load %x[i1, 256*i0 + r0]
// CHECK-NEXT: loop.load %w[256*i0 + r0, i2]
// CHECK: loop.reduction sum [16, 24] [4] : !loop.tensor<[16, 24], f32>
// CHECK: loop.load %[[P]][r0, i0, i1]
// AUTO-LABEL: func.func @decompose_k
// AUTO: loop.reduction sum [4, 16, 24] [256] template "gemm:16x32x32w2s2g8k4"
// EXTERN-LABEL: func.func @decompose_k
// EXTERN: buffer.extern "aten.mm.default"
func.func @decompose_k(%x: !aten.tensor<[16, 1024], f32>, %w: !aten.tensor<[1024, 24], f32>) -> !aten.tensor<[16, 24], f32> {
  %0 = aten.mm.default(%x, %w) {coil.gemm = "triton 16x32x32w2s2g8k4"} : !aten.tensor<[16, 24], f32>
  func.return %0 : !aten.tensor<[16, 24], f32>
}
