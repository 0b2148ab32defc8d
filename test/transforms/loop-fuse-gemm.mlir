// RUN: fx-opt %s -p 'convert-aten-to-loop{gemm=triton},loop-inline,loop-split-reduction,loop-fuse' --split-input-file | filecheck %s

// A gemm template's epilogue kinds join its group (loop-fuse); its prologue
// is inlined into its body (loop-inline); nothing else joins it.

// Bias and activation.
// CHECK-LABEL: func.func @bias_gelu
// CHECK: loop.fused [8, 32] [64]
// CHECK: loop.reduction sum [8, 32] [64] template gemm
// CHECK: loop.pointwise [8, 32]
// CHECK: loop.load %b[i1]
// CHECK: math.erf
// CHECK-NOT: loop.pointwise
func.func @bias_gelu(%x: !aten.tensor<[8, 64], f32>, %w: !aten.tensor<[32, 64], f32>, %b: !aten.tensor<[32], f32>) -> !aten.tensor<[8, 32], f32> {
  %t = aten.permute.default(%w, dims = [1, 0]) : !aten.tensor<[64, 32], f32, strides [1, 64]>
  %0 = aten.addmm.default(%b, %x, %t) : !aten.tensor<[8, 32], f32>
  %1 = aten.gelu.default(%0) : !aten.tensor<[8, 32], f32>
  func.return %1 : !aten.tensor<[8, 32], f32>
}

// -----

// A residual add and a cast to bf16.
// CHECK-LABEL: func.func @residual_cast
// CHECK: loop.fused [8, 32] [64] : !loop.tensor<[8, 32], bf16>
// CHECK: loop.reduction sum [8, 32] [64] template gemm
// CHECK: loop.pointwise [8, 32] : !loop.tensor<[8, 32], bf16>
// CHECK: loop.load %r[i0, i1]
// CHECK: arith.addf
// CHECK: arith.truncf
func.func @residual_cast(%x: !aten.tensor<[8, 64], f32>, %w: !aten.tensor<[64, 32], f32>, %r: !aten.tensor<[8, 32], f32>) -> !aten.tensor<[8, 32], bf16> {
  %0 = aten.mm.default(%x, %w) : !aten.tensor<[8, 32], f32>
  %1 = aten.add.Tensor(%0, %r) : !aten.tensor<[8, 32], f32>
  %2 = aten._to_copy.default(%1, dtype = bf16) : !aten.tensor<[8, 32], bf16>
  func.return %2 : !aten.tensor<[8, 32], bf16>
}

// -----

// A prologue: the activation's scale and cast are inlined into the product's
// body (computed per K tile in the kernel), not stored.
// CHECK-LABEL: func.func @prologue
// CHECK: loop.reduction sum [8, 32] [64] template gemm
// CHECK-NEXT: ^bb0
// CHECK-NEXT: loop.load %x[i0, r0]
// CHECK: arith.mulf
// CHECK: arith.truncf
// CHECK: arith.extf
func.func @prologue(%x: !aten.tensor<[8, 64], f32>, %w: !aten.tensor<[64, 32], bf16>) -> !aten.tensor<[8, 32], bf16> {
  %s = aten.mul.Scalar(%x, other = 0.5) : !aten.tensor<[8, 64], f32>
  %c = aten._to_copy.default(%s, dtype = bf16) : !aten.tensor<[8, 64], bf16>
  %0 = aten.mm.default(%c, %w) : !aten.tensor<[8, 32], bf16>
  func.return %0 : !aten.tensor<[8, 32], bf16>
}

// -----

// A sibling reduction over the same ranges stays out of the template's group.
// CHECK-LABEL: func.func @no_sibling
// CHECK: loop.reduction sum [8, 32] [64] template gemm
// CHECK: loop.reduction sum [8, 32] [64] :
func.func @no_sibling(%x: !aten.tensor<[8, 64], f32>, %w: !aten.tensor<[64, 32], f32>, %y: !aten.tensor<[8, 32, 64], f32>) -> (!aten.tensor<[8, 32], f32>, !aten.tensor<[8, 32], f32>) {
  %0 = aten.mm.default(%x, %w) : !aten.tensor<[8, 32], f32>
  %1 = aten.sum.dim_IntList(%y, dim = [2]) : !aten.tensor<[8, 32], f32>
  func.return %0, %1 : !aten.tensor<[8, 32], f32>, !aten.tensor<[8, 32], f32>
}

// -----

// A costly producer of an operand is no prologue (strategy/gemm.py,
// cheap_prologue): GPT-2's tanh GELU between two Linears joins the first
// product's group as its epilogue and is stored once, instead of being
// recomputed in the second's K loop once per tile of its columns.
// CHECK-LABEL: func.func @gelu_between_linears
// CHECK: loop.fused [32, 64]
// CHECK: loop.reduction sum [32, 64] [48] template gemm
// CHECK: math.tanh
// CHECK: loop.reduction sum [32, 48] [64] template gemm
// CHECK-NEXT: ^bb0
// CHECK-NEXT: loop.load %mul[i0, r0] : !loop.tensor<[32, 64], bf16>
// CHECK-NOT: math.tanh
// CHECK: func.return
func.func @gelu_between_linears(%x: !aten.tensor<[32, 48], bf16>, %b1: !aten.tensor<[64], bf16>, %w1: !aten.tensor<[48, 64], bf16>, %b2: !aten.tensor<[48], bf16>, %w2: !aten.tensor<[64, 48], bf16>) -> !aten.tensor<[32, 48], bf16> {
  %h = aten.addmm.default(%b1, %x, %w1) : !aten.tensor<[32, 64], bf16>
  %c1 = aten.constant 0.5 : f64
  %mul = aten.mul.Tensor(%h, %c1) : !aten.tensor<[32, 64], bf16>
  %pow = aten.pow.Tensor_Scalar(%h, exponent = 3.0) : !aten.tensor<[32, 64], bf16>
  %c2 = aten.constant 0.044715 : f64
  %mul_1 = aten.mul.Tensor(%pow, %c2) : !aten.tensor<[32, 64], bf16>
  %add_3 = aten.add.Tensor(%h, %mul_1) : !aten.tensor<[32, 64], bf16>
  %c3 = aten.constant 0.7978845608028654 : f64
  %mul_2 = aten.mul.Tensor(%add_3, %c3) : !aten.tensor<[32, 64], bf16>
  %tanh = aten.tanh.default(%mul_2) : !aten.tensor<[32, 64], bf16>
  %c4 = aten.constant 1.0 : f64
  %add_4 = aten.add.Tensor(%tanh, %c4) : !aten.tensor<[32, 64], bf16>
  %mul_3 = aten.mul.Tensor(%mul, %add_4) : !aten.tensor<[32, 64], bf16>
  %o = aten.addmm.default(%b2, %mul_3, %w2) : !aten.tensor<[32, 48], bf16>
  func.return %o : !aten.tensor<[32, 48], bf16>
}

// -----

// A product whose finish (bias, rounding) a residual add reads that only a
// layer norm reads: the finish stays the template's epilogue (loop-inline
// leaves it out of the add, loop-fuse takes it), so the template writes the
// bf16 finish and the norm reads it and the residual (the add inlined
// there), rather than the template's f32 accumulator.
// CHECK-LABEL: func.func @residual_norm
// CHECK: %[[G:.*]] = loop.fused [8, 32] [64] : !loop.tensor<[8, 32], bf16>
// CHECK: loop.reduction sum [8, 32] [64] template gemm
// CHECK: loop.pointwise [8, 32] : !loop.tensor<[8, 32], bf16>
// CHECK: loop.fused [8] [32]
// CHECK: loop.load %[[G]][i0, r0] : !loop.tensor<[8, 32], bf16>
// CHECK: loop.load %r[i0, r0]
// CHECK-NOT: template gemm
func.func @residual_norm(%x: !aten.tensor<[8, 64], bf16>, %w: !aten.tensor<[32, 64], bf16>, %b: !aten.tensor<[32], bf16>, %r: !aten.tensor<[8, 32], bf16>) -> !aten.tensor<[8, 32], bf16> {
  %t = aten.permute.default(%w, dims = [1, 0]) : !aten.tensor<[64, 32], bf16, strides [1, 64]>
  %0 = aten.addmm.default(%b, %x, %t) : !aten.tensor<[8, 32], bf16>
  %1 = aten.add.Tensor(%0, %r) : !aten.tensor<[8, 32], bf16>
  %2, %3, %4 = aten.native_layer_norm.default(%1, normalized_shape = [32], none, none, eps = 1.0e-05) : (!aten.tensor<[8, 32], bf16>, !aten.tensor<[8, 1], f32>, !aten.tensor<[8, 1], f32>)
  func.return %2 : !aten.tensor<[8, 32], bf16>
}

// -----

// The same with the norm computed in f32 (a cast between): the finish is
// not inlined into the cast that only the norm and its normalizing step
// read, so the template writes the bf16 sum and the norm's group reads it
// (the cast inlined there), not an f32 copy of it.
// CHECK-LABEL: func.func @residual_cast_norm
// CHECK: %[[G:.*]] = loop.fused [8, 32] [64] : !loop.tensor<[8, 32], bf16>
// CHECK: loop.reduction sum [8, 32] [64] template gemm
// CHECK: loop.fused [8] [32] : !loop.tensor<[8, 32], f32>
// CHECK: loop.reduction welford
// CHECK-NEXT: ^bb0
// CHECK-NEXT: loop.load %[[G]][i0, r0] : !loop.tensor<[8, 32], bf16>
func.func @residual_cast_norm(%x: !aten.tensor<[8, 64], bf16>, %w: !aten.tensor<[32, 64], bf16>, %b: !aten.tensor<[32], bf16>, %r: !aten.tensor<[8, 32], bf16>) -> !aten.tensor<[8, 32], f32> {
  %t = aten.permute.default(%w, dims = [1, 0]) : !aten.tensor<[64, 32], bf16, strides [1, 64]>
  %0 = aten.addmm.default(%b, %x, %t) : !aten.tensor<[8, 32], bf16>
  %1 = aten.add.Tensor(%0, %r) : !aten.tensor<[8, 32], bf16>
  %c = aten._to_copy.default(%1, dtype = f32) : !aten.tensor<[8, 32], f32>
  %2, %3, %4 = aten.native_layer_norm.default(%c, normalized_shape = [32], none, none, eps = 1.0e-05) : (!aten.tensor<[8, 32], f32>, !aten.tensor<[8, 1], f32>, !aten.tensor<[8, 1], f32>)
  func.return %2 : !aten.tensor<[8, 32], f32>
}
