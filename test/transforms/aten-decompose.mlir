// RUN: fx-opt %s -p aten-decompose --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'aten-decompose{ops="aten.gelu.default"}' --split-input-file | filecheck %s --check-prefix=ONLY-GELU

// CHECK-LABEL: func.func @softmax
func.func @softmax(%x: !aten.tensor<[s0, 16], f32>) -> !aten.tensor<[s0, 16], f32> {
  // CHECK-NEXT: %[[MAX:.*]] = aten.amax.default(%x, dim = [-1], keepdim = true) : !aten.tensor<[s0, 1], f32>
  // CHECK-NEXT: %[[SUB:.*]] = aten.sub.Tensor(%x, %[[MAX]]) : !aten.tensor<[s0, 16], f32>
  // CHECK-NEXT: %[[EXP:.*]] = aten.exp.default(%[[SUB]])
  // CHECK-NEXT: %[[SUM:.*]] = aten.sum.dim_IntList(%[[EXP]], dim = [-1], keepdim = true) : !aten.tensor<[s0, 1], f32>
  // CHECK-NEXT: %[[DIV:.*]] = aten.div.Tensor(%[[EXP]], %[[SUM]]) : !aten.tensor<[s0, 16], f32>
  // CHECK-NEXT: func.return %[[DIV]]
  // ONLY-GELU: aten._softmax.default
  %y = aten._softmax.default(%x, dim = -1, half_to_float = false) : !aten.tensor<[s0, 16], f32>
  func.return %y : !aten.tensor<[s0, 16], f32>
}

// -----

// Multi-result composite: every result is replaced.
// CHECK-LABEL: func.func @layer_norm
func.func @layer_norm(%x: !aten.tensor<[4, 8], f32>, %w: !aten.tensor<[8], f32>, %b: !aten.tensor<[8], f32>) -> (!aten.tensor<[4, 8], f32>, !aten.tensor<[4, 1], f32>) {
  // CHECK-NOT: aten.native_layer_norm
  // CHECK: aten.var_mean.correction(%x, dim = [1], correction = 0, keepdim = true)
  // CHECK: aten.rsqrt.default
  // CHECK: func.return %{{.*}}, %{{.*}} : !aten.tensor<[4, 8], f32>, !aten.tensor<[4, 1], f32>
  %y, %mean, %rstd = aten.native_layer_norm.default(%x, normalized_shape = [8], %w, %b, eps = 1.0e-05) : (!aten.tensor<[4, 8], f32>, !aten.tensor<[4, 1], f32>, !aten.tensor<[4, 1], f32>)
  func.return %y, %mean : !aten.tensor<[4, 8], f32>, !aten.tensor<[4, 1], f32>
}

// -----

// A composite that decomposes into another one of the set decomposes fully.
// CHECK-LABEL: func.func @batch_norm_eval
func.func @batch_norm_eval(%x: !aten.tensor<[2, 3, 4, 4], f32>, %w: !aten.tensor<[3], f32>, %b: !aten.tensor<[3], f32>, %rm: !aten.tensor<[3], f32>, %rv: !aten.tensor<[3], f32>) -> !aten.tensor<[2, 3, 4, 4], f32> {
  // CHECK-NOT: batch_norm
  // CHECK: aten.reciprocal.default
  // CHECK-NOT: batch_norm
  %y, %m, %r = aten._native_batch_norm_legit_no_training.default(%x, %w, %b, %rm, %rv, momentum = 0.1, eps = 1.0e-05) : (!aten.tensor<[2, 3, 4, 4], f32>, !aten.tensor<[0], f32>, !aten.tensor<[0], f32>)
  func.return %y : !aten.tensor<[2, 3, 4, 4], f32>
}

// -----

// bf16 eval batch norm on a CUDA device: torch's decomposition returns saved
// mean and invstd of [3] f32 where the op's are [0] bf16. Nothing reads them,
// so it decomposes all the same (it stayed an ATen call, and the kernels
// around it unfused); where one of them is read, the op stays.
// CHECK-LABEL: func.func @batch_norm_eval_bf16
// CHECK-NOT: batch_norm
// CHECK: aten.reciprocal.default
// CHECK-NOT: batch_norm
// CHECK-LABEL: func.func @batch_norm_result_read
// CHECK-NEXT: aten._native_batch_norm_legit_no_training.default
!x = !aten.tensor<[2, 3, 4, 4], bf16, device "cuda:0">
!c = !aten.tensor<[3], bf16, device "cuda:0">
!e = !aten.tensor<[0], bf16, device "cuda:0">
func.func @batch_norm_eval_bf16(%x: !x, %w: !c, %b: !c, %rm: !c, %rv: !c) -> !x {
  %y, %m, %r = aten._native_batch_norm_legit_no_training.default(%x, %w, %b, %rm, %rv, momentum = 0.1, eps = 1.0e-05) : (!x, !e, !e)
  func.return %y : !x
}
func.func @batch_norm_result_read(%x: !x, %w: !c, %b: !c, %rm: !c, %rv: !c) -> (!x, !e) {
  %y, %m, %r = aten._native_batch_norm_legit_no_training.default(%x, %w, %b, %rm, %rv, momentum = 0.1, eps = 1.0e-05) : (!x, !e, !e)
  func.return %y, %m : !x, !e
}

// -----

// CHECK-LABEL: func.func @gelu
// ONLY-GELU-LABEL: func.func @gelu
func.func @gelu(%x: !aten.tensor<[8], f16>) -> !aten.tensor<[8], f16> {
  // CHECK-NOT: aten.gelu
  // CHECK: aten.erf.default
  // ONLY-GELU-NOT: aten.gelu
  // ONLY-GELU: aten.erf.default
  %y = aten.gelu.default(%x) : !aten.tensor<[8], f16>
  func.return %y : !aten.tensor<[8], f16>
}

// -----

// Ops outside the set are untouched.
// CHECK-LABEL: func.func @untouched
func.func @untouched(%x: !aten.tensor<[4, 4], f32>) -> !aten.tensor<[4, 4], f32> {
  // CHECK-NEXT: aten.mm.default(%x, %x)
  %y = aten.mm.default(%x, %x) : !aten.tensor<[4, 4], f32>
  func.return %y : !aten.tensor<[4, 4], f32>
}

// -----

// A decomposition may return one of the op's inputs (dropout in eval mode).
// CHECK-LABEL: func.func @returns_an_input
func.func @returns_an_input(%r: !aten.tensor<[4], f32>) -> (!aten.tensor<[4], f32>, !aten.tensor<[4], i1>) {
  // CHECK-NEXT: %[[ONES:.*]] = aten.full_like.default(%r, fill_value = true, dtype = i1
  // CHECK-NEXT: func.return %r, %[[ONES]]
  %o, %m = aten.native_dropout.default(%r, p = 0.5, train = false) : (!aten.tensor<[4], f32>, !aten.tensor<[4], i1>)
  func.return %o, %m : !aten.tensor<[4], f32>, !aten.tensor<[4], i1>
}
