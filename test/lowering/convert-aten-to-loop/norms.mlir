// RUN: fx-opt %s -p convert-aten-to-loop --split-input-file | filecheck %s

// Inference batch norm is one pointwise nest per result, with symbolic sizes
// too (aten-decompose keeps it there: its decomposition would add guards):
// (x - mean) * (1 / sqrt(var + eps)) * weight + bias over channel i1, in f32
// for bf16; the saved statistics (empty on the CPU), unread, are erased.

// CHECK-LABEL: func.func @batch_norm_inference
// CHECK:       loop.pointwise [s0, 8, s1, s1] : !loop.tensor<[s0, 8, s1, s1], bf16> {
// CHECK:         loop.load %x[i0, i1, i2, i3]
// CHECK:         loop.load %mean[i1]
// CHECK:         arith.subf
// CHECK:         loop.load %var[i1]
// CHECK:         arith.constant 1.0{{0*}}e-05 : f32
// CHECK:         arith.addf
// CHECK:         math.sqrt
// CHECK:         arith.divf
// CHECK:         arith.mulf
// CHECK:         loop.load %w[i1]
// CHECK:         arith.mulf
// CHECK:         loop.load %b[i1]
// CHECK:         arith.addf
// CHECK:         arith.truncf {{.*}} : f32 to bf16
// CHECK-NOT:   loop.pointwise
// CHECK-NOT:   buffer.extern

func.func @batch_norm_inference(%n: index {coil.symbol = #coil.expr<s0>}, %h: index {coil.symbol = #coil.expr<s1>}, %x: !aten.tensor<[s0, 8, s1, s1], bf16>, %w: !aten.tensor<[8], bf16>, %b: !aten.tensor<[8], bf16>, %mean: !aten.tensor<[8], bf16>, %var: !aten.tensor<[8], bf16>) -> !aten.tensor<[s0, 8, s1, s1], bf16> {
  %y, %m, %r = aten._native_batch_norm_legit_no_training.default(%x, %w, %b, %mean, %var, momentum = 0.1, eps = 1.0e-05) : (!aten.tensor<[s0, 8, s1, s1], bf16>, !aten.tensor<[0], f32>, !aten.tensor<[0], f32>)
  func.return %y : !aten.tensor<[s0, 8, s1, s1], bf16>
}

// -----

// On CUDA the saved statistics are the running mean and the inverse std per
// channel; without weight and bias the affine step is left out.

// CHECK-LABEL: func.func @batch_norm_inference_cuda
// CHECK:       loop.pointwise [4, 3] : !loop.tensor<[4, 3], f32> {
// CHECK-NOT:     loop.load %w
// CHECK:       loop.pointwise [3] : !loop.tensor<[3], f32> {
// CHECK:         loop.load %mean[i0]
// CHECK:       loop.pointwise [3] : !loop.tensor<[3], f32> {
// CHECK:         loop.load %var[i0]
// CHECK:         math.sqrt

func.func @batch_norm_inference_cuda(%x: !aten.tensor<[4, 3], f32, device "cuda:0">, %mean: !aten.tensor<[3], f32, device "cuda:0">, %var: !aten.tensor<[3], f32, device "cuda:0">) -> (!aten.tensor<[4, 3], f32, device "cuda:0">, !aten.tensor<[3], f32, device "cuda:0">, !aten.tensor<[3], f32, device "cuda:0">) {
  %y, %m, %r = aten._native_batch_norm_legit_no_training.default(%x, none, none, %mean, %var, momentum = 0.1, eps = 1.0e-05) : (!aten.tensor<[4, 3], f32, device "cuda:0">, !aten.tensor<[3], f32, device "cuda:0">, !aten.tensor<[3], f32, device "cuda:0">)
  func.return %y, %m, %r : !aten.tensor<[4, 3], f32, device "cuda:0">, !aten.tensor<[3], f32, device "cuda:0">, !aten.tensor<[3], f32, device "cuda:0">
}
