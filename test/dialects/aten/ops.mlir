// RUN: fx-opt %s | filecheck %s
// RUN: COIL_ROUNDTRIP | filecheck %s
// RUN: COIL_GENERIC_ROUNDTRIP | fx-opt | filecheck %s

// Round trips of a broad sample of generated aten/prims ops: tensors with
// static and symbolic sizes, strides and devices, every argument kind.

// CHECK-LABEL: func.func @types
// CHECK-SAME: (%x: !aten.tensor<[s0, 128], f32>, %y: !aten.tensor<[4, 8], f16, strides [1, 4]>, %z: !aten.tensor<[2*s0 + 1], bf16, device "cuda:0">, %e: !aten.tensor<[], i64>, %n: !aten.tensor<[s0 floordiv 2, (s1 + 3) mod 4], i1>)
func.func @types(%x: !aten.tensor<[s0, 128], f32>, %y: !aten.tensor<[4, 8], f16, strides [1, 4]>,
                 %z: !aten.tensor<[2*s0 + 1], bf16, device "cuda:0">, %e: !aten.tensor<[], i64>,
                 %n: !aten.tensor<[s0 floordiv 2, (s1 + 3) mod 4], i1>) {
  // Row-major strides are the default and are not printed.
  // CHECK-NOT: strides [128, 1]
  func.return
}

// CHECK-LABEL: func.func @pointwise
func.func @pointwise(%a: !aten.tensor<[s0, 8], f32>, %b: !aten.tensor<[8], f32>) -> !aten.tensor<[s0, 8], f32> {
  // CHECK: %add = aten.add.Tensor(%a, %b, alpha = 2) : !aten.tensor<[s0, 8], f32>
  %add = aten.add.Tensor(%a, %b, alpha = 2) : !aten.tensor<[s0, 8], f32>
  // Defaults (alpha = 1) are not printed.
  // CHECK-NEXT: %sub = aten.sub.Tensor(%add, %b) : !aten.tensor<[s0, 8], f32>
  %sub = aten.sub.Tensor(%add, %b, alpha = 1) : !aten.tensor<[s0, 8], f32>
  // CHECK-NEXT: %c = aten.constant 2.5 : f64
  %c = aten.constant 2.5 : f64
  // CHECK-NEXT: %mul = aten.mul.Tensor(%sub, %c) : !aten.tensor<[s0, 8], f32>
  %mul = aten.mul.Tensor(%sub, %c) : !aten.tensor<[s0, 8], f32>
  // CHECK-NEXT: %clamp = aten.clamp.default(%mul, min = -1.0, max = inf) : !aten.tensor<[s0, 8], f32>
  %clamp = aten.clamp.default(%mul, min = -1.0, max = inf) : !aten.tensor<[s0, 8], f32>
  // CHECK-NEXT: %gelu = aten.gelu.default(%clamp, approximate = "tanh") : !aten.tensor<[s0, 8], f32>
  %gelu = aten.gelu.default(%clamp, approximate = "tanh") : !aten.tensor<[s0, 8], f32>
  // CHECK-NEXT: %lt = aten.lt.Scalar(%gelu, other = 0) : !aten.tensor<[s0, 8], i1>
  %lt = aten.lt.Scalar(%gelu, other = 0) : !aten.tensor<[s0, 8], i1>
  // CHECK-NEXT: %where = aten.where.self(%lt, %a, %gelu) : !aten.tensor<[s0, 8], f32>
  %where = aten.where.self(%lt, %a, %gelu) : !aten.tensor<[s0, 8], f32>
  // CHECK-NEXT: %cast = prims.convert_element_type.default(%where, dtype = f16) : !aten.tensor<[s0, 8], f16>
  %cast = prims.convert_element_type.default(%where, dtype = f16) : !aten.tensor<[s0, 8], f16>
  // CHECK-NEXT: %back = aten._to_copy.default(%cast, dtype = f32, device = "cpu") : !aten.tensor<[s0, 8], f32>
  %back = aten._to_copy.default(%cast, dtype = f32, device = "cpu") : !aten.tensor<[s0, 8], f32>
  func.return %back : !aten.tensor<[s0, 8], f32>
}

// CHECK-LABEL: func.func @reductions_and_views
func.func @reductions_and_views(%x: !aten.tensor<[s0, 4, 8], f32>) -> (!aten.tensor<[s0, 4], f32>, !aten.tensor<[s0, 8, 4], f32, strides [32, 1, 8]>) {
  // CHECK: %sum = aten.sum.dim_IntList(%x, dim = [-1], keepdim = true, dtype = f64) : !aten.tensor<[s0, 4, 1], f64>
  %sum = aten.sum.dim_IntList(%x, dim = [-1], keepdim = true, dtype = f64) : !aten.tensor<[s0, 4, 1], f64>
  // CHECK-NEXT: %amax = aten.amax.default(%x, dim = [2]) : !aten.tensor<[s0, 4], f32>
  %amax = aten.amax.default(%x, dim = [2]) : !aten.tensor<[s0, 4], f32>
  // CHECK-NEXT: %var, %mean = aten.var_mean.correction(%x, dim = [2], correction = 0, keepdim = true) : (!aten.tensor<[s0, 4, 1], f32>, !aten.tensor<[s0, 4, 1], f32>)
  %var, %mean = aten.var_mean.correction(%x, dim = [2], correction = 0, keepdim = true) : (!aten.tensor<[s0, 4, 1], f32>, !aten.tensor<[s0, 4, 1], f32>)
  // CHECK-NEXT: %view = aten.view.default(%x, size = [4*s0, 8]) : !aten.tensor<[4*s0, 8], f32>
  %view = aten.view.default(%x, size = [4*s0, 8]) : !aten.tensor<[4*s0, 8], f32>
  // CHECK-NEXT: %t = aten.permute.default(%x, dims = [0, 2, 1]) : !aten.tensor<[s0, 8, 4], f32, strides [32, 1, 8]>
  %t = aten.permute.default(%x, dims = [0, 2, 1]) : !aten.tensor<[s0, 8, 4], f32, strides [32, 1, 8]>
  // CHECK-NEXT: %slice = aten.slice.Tensor(%x, dim = 2, start = 1, end = 7, step = 2) : !aten.tensor<[s0, 4, 3], f32, strides [32, 8, 2]>
  %slice = aten.slice.Tensor(%x, dim = 2, start = 1, end = 7, step = 2) : !aten.tensor<[s0, 4, 3], f32, strides [32, 8, 2]>
  func.return %amax, %t : !aten.tensor<[s0, 4], f32>, !aten.tensor<[s0, 8, 4], f32, strides [32, 1, 8]>
}

// CHECK-LABEL: func.func @lists_and_optionals
func.func @lists_and_optionals(%x: !aten.tensor<[4, 8], f32>, %w: !aten.tensor<[8], f32>, %i: !aten.tensor<[3], i64>) {
  // CHECK: %cat = aten.cat.default([%x, %x], dim = 1) : !aten.tensor<[4, 16], f32>
  %cat = aten.cat.default([%x, %x], dim = 1) : !aten.tensor<[4, 16], f32>
  // CHECK-NEXT: %ln, %m, %r = aten.native_layer_norm.default(%x, normalized_shape = [8], %w, none, eps = 1.0e-05) : (!aten.tensor<[4, 8], f32>, !aten.tensor<[4, 1], f32>, !aten.tensor<[4, 1], f32>)
  %ln, %m, %r = aten.native_layer_norm.default(%x, normalized_shape = [8], %w, none, eps = 1.0e-05) : (!aten.tensor<[4, 8], f32>, !aten.tensor<[4, 1], f32>, !aten.tensor<[4, 1], f32>)
  // CHECK-NEXT: %idx = aten.index.Tensor(%x, [none, %i]) : !aten.tensor<[4, 3], f32>
  %idx = aten.index.Tensor(%x, [none, %i]) : !aten.tensor<[4, 3], f32>
  // CHECK-NEXT: %parts, %parts_1 = aten.split_with_sizes.default(%x, split_sizes = [3, 5], dim = 1) : (!aten.tensor<[4, 3], f32, strides [8, 1]>, !aten.tensor<[4, 5], f32, strides [8, 1]>)
  %parts:2 = aten.split_with_sizes.default(%x, split_sizes = [3, 5], dim = 1) : (!aten.tensor<[4, 3], f32, strides [8, 1]>, !aten.tensor<[4, 5], f32, strides [8, 1]>)
  // CHECK-NEXT: %full = aten.full.default(size = [2, 3], fill_value = 1.5, dtype = f32, layout = strided, device = "cpu", pin_memory = false) : !aten.tensor<[2, 3], f32>
  %full = aten.full.default(size = [2, 3], fill_value = 1.5, dtype = f32, layout = strided, device = "cpu", pin_memory = false) : !aten.tensor<[2, 3], f32>
  // CHECK-NEXT: %clone = aten.clone.default(%x, memory_format = contiguous_format) : !aten.tensor<[4, 8], f32>
  %clone = aten.clone.default(%x, memory_format = contiguous_format) : !aten.tensor<[4, 8], f32>
  // CHECK-NEXT: %drop, %mask = aten.native_dropout.default(%x, p = 0.25, train = true) : (!aten.tensor<[4, 8], f32>, !aten.tensor<[4, 8], i1>)
  %drop, %mask = aten.native_dropout.default(%x, p = 0.25, train = true) : (!aten.tensor<[4, 8], f32>, !aten.tensor<[4, 8], i1>)
  // CHECK-NEXT: %copy = aten.copy_.default(%x, %clone) : !aten.tensor<[4, 8], f32>
  %copy = aten.copy_.default(%x, %clone) : !aten.tensor<[4, 8], f32>
  func.return
}

// CHECK-LABEL: func.func @constants_and_generic
func.func @constants_and_generic(%a: !aten.tensor<[3, 3], f32>, %n: index {coil.symbol = #coil.expr<s0>}) {
  // CHECK: %t = aten.tensor_constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32> -> !aten.tensor<[2], f32>
  %t = aten.tensor_constant dense<[1.0, 2.0]> : tensor<2xf32> -> !aten.tensor<[2], f32>
  // CHECK-NEXT: %s = aten.constant 2*s0 + 1 : index
  %s = aten.constant 2*s0 + 1 : index
  // CHECK-NEXT: %b = aten.constant true : i1
  %b = aten.constant true : i1
  // CHECK-NEXT: %u, %sv, %vh = aten.operator "aten::linalg_svd"(%a, false, driver = none) : (!aten.tensor<[3, 3], f32>, !aten.tensor<[3], f32>, !aten.tensor<[3, 3], f32>)
  %u, %sv, %vh = aten.operator "aten::linalg_svd"(%a, false, driver = none) : (!aten.tensor<[3, 3], f32>, !aten.tensor<[3], f32>, !aten.tensor<[3, 3], f32>)
  // CHECK-NEXT: %o = aten.operator "mylib::scale"(%a, [1, s0], 2.0e-07, "mode", f16) : !aten.tensor<[3, 3], f32>
  %o = aten.operator "mylib::scale"(%a, [1, s0], 2.0e-07, "mode", f16) : !aten.tensor<[3, 3], f32>
  func.return
}

// A size the tracer knows from a guard: a [s0, s0] input viewed as [256] has the
// FakeTensor size s0*s0 (s0 == 16 is a guard, not a substitution). A number
// against an expression is a contradiction only when provably different (the
// fuzzer's reshape of a dynamic square input failed to import).
// CHECK-LABEL: func.func @guarded_size
// CHECK-NEXT: %v = aten.view.default(%x, size = [256]) : !aten.tensor<[s0*s0], f32>
func.func @guarded_size(%x: !aten.tensor<[s0, s0], f32>) {
  %v = aten.view.default(%x, size = [256]) : !aten.tensor<[s0*s0], f32>
  func.return
}

// The same for a symbol against an expression: torch 2.11's compiled autograd
// views a [16, 64] gradient as [s1, s0, 64] under the guard s0 == 16 // s1
// and types the result [s1, 16 // s1, 64] (DDP's backward on 2 GPUs failed to
// import). Two different symbols stay a contradiction (invalid.mlir).
// CHECK-LABEL: func.func @guarded_symbol
// CHECK-NEXT: %v = aten.view.default(%x, size = [s1, s0, 64]) : !aten.tensor<[s1, 16 floordiv s1, 64], f32>
func.func @guarded_symbol(%x: !aten.tensor<[16, 64], f32>) {
  %v = aten.view.default(%x, size = [s1, s0, 64]) : !aten.tensor<[s1, 16 floordiv s1, 64], f32>
  func.return
}
