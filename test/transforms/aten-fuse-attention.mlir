// RUN: fx-opt %s -p aten-fuse-attention --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'aten-fuse-attention{fused-only=false}' --split-input-file | filecheck %s --check-prefix=ANY

// Each function is what coil's importer gives for one spelling of attention
// (test/python/test_attention_rewrite.py has the PyTorch source of each:
// B=2, H=4, L=6, S=10, E=8, inference). The pass replaces the block by
// torch's SDPA as traced for the operands: on the CPU, its flash kernel.

// q @ k.transpose(-1, -2) / sqrt(d): the products' views are q, k and v's own (scale 1/sqrt(8))

// CHECK-LABEL: func.func @matmul_div_sqrt
// CHECK-NOT:     aten.bmm
// CHECK-NOT:     aten.mm
// CHECK:         %[[O:.*]], %{{.*}} = aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%arg1, %arg0, %arg2, scale = 0.35355339059327373)
// CHECK:         func.return %[[O]]
// CHECK-NOT:     aten._softmax

func.func @matmul_div_sqrt(%arg0: !aten.tensor<[2, 4, 10, 8], f32>, %arg1: !aten.tensor<[2, 4, 6, 8], f32>, %arg2: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %permute = aten.permute.default(%arg0, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %0 = aten.constant 2.8284271247461903 : f64
  %div = aten.div.Tensor(%view_2, %0) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%div, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %expand_2 = aten.expand.default(%_softmax, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %expand_3 = aten.expand.default(%arg2, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], f32>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_5 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// the scale on q: folded into SDPA's, q read before it

// CHECK-LABEL: func.func @scale_on_q
// CHECK-NOT:     aten.bmm
// CHECK-NOT:     aten.mm
// CHECK:         aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%arg0, %arg1, %arg2, scale = 0.3535533905932738)
// CHECK-NOT:     aten._softmax

func.func @scale_on_q(%arg0: !aten.tensor<[2, 4, 6, 8], f32>, %arg1: !aten.tensor<[2, 4, 10, 8], f32>, %arg2: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %0 = aten.constant 0.3535533905932738 : f64
  %mul = aten.mul.Tensor(%arg0, %0) : !aten.tensor<[2, 4, 6, 8], f32>
  %permute = aten.permute.default(%arg1, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%mul, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%view_2, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %expand_2 = aten.expand.default(%_softmax, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %expand_3 = aten.expand.default(%arg2, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], f32>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_5 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// d**-0.25 on q and on k: SDPA's scale is their product

// CHECK-LABEL: func.func @scale_split
// CHECK-NOT:     aten.bmm
// CHECK-NOT:     aten.mm
// CHECK:         aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%arg0, %arg1, %arg2, scale = 0.35355339059327373)
// CHECK-NOT:     aten._softmax

func.func @scale_split(%arg0: !aten.tensor<[2, 4, 6, 8], f32>, %arg1: !aten.tensor<[2, 4, 10, 8], f32>, %arg2: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %0 = aten.constant 0.5946035575013605 : f64
  %mul = aten.mul.Tensor(%arg0, %0) : !aten.tensor<[2, 4, 6, 8], f32>
  %permute = aten.permute.default(%arg1, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %1 = aten.constant 0.5946035575013605 : f64
  %mul_1 = aten.mul.Tensor(%permute, %1) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%mul, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_1 = aten.expand.default(%mul_1, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%view_2, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %expand_2 = aten.expand.default(%_softmax, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %expand_3 = aten.expand.default(%arg2, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], f32>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_5 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// no scale (T5): scale = 1

// CHECK-LABEL: func.func @no_scale
// CHECK-NOT:     aten.bmm
// CHECK-NOT:     aten.mm
// CHECK:         aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%arg1, %arg0, %arg2, scale = 1.0)
// CHECK-NOT:     aten._softmax

func.func @no_scale(%arg0: !aten.tensor<[2, 4, 10, 8], f32>, %arg1: !aten.tensor<[2, 4, 6, 8], f32>, %arg2: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %permute = aten.permute.default(%arg0, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%view_2, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %expand_2 = aten.expand.default(%_softmax, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %expand_3 = aten.expand.default(%arg2, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], f32>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_5 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// torch.bmm on [B*H, L, E]: SDPA gets [1, B*H, L, E] (its CPU kernel takes 4-D only)

// CHECK-LABEL: func.func @bmm_3d
// CHECK-NOT:     aten.bmm
// CHECK-NOT:     aten.mm
// CHECK:         %[[Q:.*]] = aten.unsqueeze.default(%view, dim = 0)
// CHECK:         %[[O:.*]], %{{.*}} = aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%[[Q]],
// CHECK:         aten.select.int(%[[O]], dim = 0, index = 0)
// CHECK-NOT:     aten._softmax

func.func @bmm_3d(%arg0: !aten.tensor<[2, 4, 6, 8], f32>, %arg1: !aten.tensor<[2, 4, 10, 8], f32>, %arg2: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %view = aten.view.default(%arg0, size = [-1, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %view_1 = aten.view.default(%arg1, size = [-1, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %view_2 = aten.view.default(%arg2, size = [-1, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %permute = aten.permute.default(%view_1, dims = [0, 2, 1]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %permute) : !aten.tensor<[8, 6, 10], f32>
  %0 = aten.constant 0.3535533905932738 : f64
  %mul = aten.mul.Tensor(%bmm, %0) : !aten.tensor<[8, 6, 10], f32>
  %_softmax = aten._softmax.default(%mul, dim = -1, half_to_float = false) : !aten.tensor<[8, 6, 10], f32>
  %bmm_1 = aten.bmm.default(%_softmax, %view_2) : !aten.tensor<[8, 6, 8], f32>
  %view_3 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_3 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// baddbmm(bias, q, k^T, alpha=scale): the bias is an additive mask; a row of -inf would be NaN in eager, so rows with no key left are NaN

// CHECK-LABEL: func.func @baddbmm_mask
// CHECK-NOT:     aten.bmm
// CHECK-NOT:     aten.mm
// CHECK:         %[[M:.*]] = aten.unsqueeze.default(%arg3, dim = 0)
// CHECK:         aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"({{.*}}, attn_mask = %[[M]], scale = 0.3535
// CHECK:         aten.gt.Scalar(%[[M]], other = -inf)
// CHECK:         aten.any.dim
// CHECK:         aten.where.self
// CHECK-NOT:     aten._softmax

func.func @baddbmm_mask(%arg0: !aten.tensor<[2, 4, 6, 8], f32>, %arg1: !aten.tensor<[2, 4, 10, 8], f32>, %arg2: !aten.tensor<[2, 4, 10, 8], f32>, %arg3: !aten.tensor<[8, 6, 10], f32>) -> !aten.tensor<[8, 6, 8], f32> {
  %view = aten.view.default(%arg0, size = [-1, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %view_1 = aten.view.default(%arg1, size = [-1, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %view_2 = aten.view.default(%arg2, size = [-1, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %permute = aten.permute.default(%view_1, dims = [0, 2, 1]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %permute) : !aten.tensor<[8, 6, 10], f32>
  %0 = aten.constant 0.3535533905932738 : f64
  %mul = aten.mul.Tensor(%bmm, %0) : !aten.tensor<[8, 6, 10], f32>
  %add = aten.add.Tensor(%arg3, %mul) : !aten.tensor<[8, 6, 10], f32>
  %_softmax = aten._softmax.default(%add, dim = -1, half_to_float = false) : !aten.tensor<[8, 6, 10], f32>
  %bmm_1 = aten.bmm.default(%_softmax, %view_2) : !aten.tensor<[8, 6, 8], f32>
  func.return %bmm_1 : !aten.tensor<[8, 6, 8], f32>
}

// -----

// baddbmm kept whole (the importer's form today): its alpha is the scale, its
// beta·self an additive mask; beta = 0 ignores self as ATen does

// CHECK-LABEL: func.func @baddbmm_whole
// CHECK-NOT:     aten.baddbmm
// CHECK:         %[[M:.*]] = aten.unsqueeze.default(%arg3, dim = 0)
// CHECK:         aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"({{.*}}, attn_mask = %[[M]], scale = 0.3535
// CHECK-NOT:     aten._softmax
// CHECK-LABEL: func.func @baddbmm_beta_zero
// CHECK-NOT:     aten.baddbmm
// CHECK:         aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"
// CHECK-NOT:     attn_mask
// CHECK-SAME:    scale = 0.3535
// CHECK-NOT:     aten._softmax

func.func @baddbmm_whole(%arg0: !aten.tensor<[2, 4, 6, 8], f32>, %arg1: !aten.tensor<[2, 4, 10, 8], f32>, %arg2: !aten.tensor<[2, 4, 10, 8], f32>, %arg3: !aten.tensor<[8, 6, 10], f32>) -> !aten.tensor<[8, 6, 8], f32> {
  %view = aten.view.default(%arg0, size = [-1, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %view_1 = aten.view.default(%arg1, size = [-1, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %view_2 = aten.view.default(%arg2, size = [-1, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %permute = aten.permute.default(%view_1, dims = [0, 2, 1]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %baddbmm = aten.baddbmm.default(%arg3, %view, %permute, beta = 1.0, alpha = 0.3535533905932738) : !aten.tensor<[8, 6, 10], f32>
  %_softmax = aten._softmax.default(%baddbmm, dim = -1, half_to_float = false) : !aten.tensor<[8, 6, 10], f32>
  %bmm = aten.bmm.default(%_softmax, %view_2) : !aten.tensor<[8, 6, 8], f32>
  func.return %bmm : !aten.tensor<[8, 6, 8], f32>
}
func.func @baddbmm_beta_zero(%arg0: !aten.tensor<[2, 4, 6, 8], f32>, %arg1: !aten.tensor<[2, 4, 10, 8], f32>, %arg2: !aten.tensor<[2, 4, 10, 8], f32>, %arg3: !aten.tensor<[8, 6, 10], f32>) -> !aten.tensor<[8, 6, 8], f32> {
  %view = aten.view.default(%arg0, size = [-1, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %view_1 = aten.view.default(%arg1, size = [-1, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %view_2 = aten.view.default(%arg2, size = [-1, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %permute = aten.permute.default(%view_1, dims = [0, 2, 1]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %baddbmm = aten.baddbmm.default(%arg3, %view, %permute, beta = 0.0, alpha = 0.3535533905932738) : !aten.tensor<[8, 6, 10], f32>
  %_softmax = aten._softmax.default(%baddbmm, dim = -1, half_to_float = false) : !aten.tensor<[8, 6, 10], f32>
  %bmm = aten.bmm.default(%_softmax, %view_2) : !aten.tensor<[8, 6, 8], f32>
  func.return %bmm : !aten.tensor<[8, 6, 8], f32>
}

// -----

// einsum: unsqueezes and permutes around the products, the same elements

// CHECK-LABEL: func.func @einsum
// CHECK-NOT:     aten.bmm
// CHECK-NOT:     aten.mm
// CHECK:         aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%arg0, %arg1, %arg2, scale = 0.35355339059327373)
// CHECK-NOT:     aten._softmax

func.func @einsum(%arg0: !aten.tensor<[2, 4, 6, 8], f32>, %arg1: !aten.tensor<[2, 4, 10, 8], f32>, %arg2: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %unsqueeze = aten.unsqueeze.default(%arg0, dim = 4) : !aten.tensor<[2, 4, 6, 8, 1], f32>
  %permute = aten.permute.default(%unsqueeze, dims = [0, 1, 2, 4, 3]) : !aten.tensor<[2, 4, 6, 1, 8], f32, strides [192, 48, 8, 1, 1]>
  %unsqueeze_1 = aten.unsqueeze.default(%arg1, dim = 4) : !aten.tensor<[2, 4, 10, 8, 1], f32>
  %permute_1 = aten.permute.default(%unsqueeze_1, dims = [0, 1, 4, 2, 3]) : !aten.tensor<[2, 4, 1, 10, 8], f32, strides [320, 80, 1, 8, 1]>
  %permute_2 = aten.permute.default(%permute, dims = [0, 1, 2, 4, 3]) : !aten.tensor<[2, 4, 6, 8, 1], f32>
  %view = aten.view.default(%permute_2, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %permute_3 = aten.permute.default(%permute_1, dims = [0, 1, 4, 3, 2]) : !aten.tensor<[2, 4, 8, 10, 1], f32, strides [320, 80, 1, 8, 1]>
  %view_1 = aten.view.default(%permute_3, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 1, 10]) : !aten.tensor<[2, 4, 6, 1, 10], f32>
  %permute_4 = aten.permute.default(%view_2, dims = [0, 1, 2, 4, 3]) : !aten.tensor<[2, 4, 6, 10, 1], f32, strides [240, 60, 10, 1, 10]>
  %view_3 = aten.view.default(%permute_4, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %0 = aten.constant 2.8284271247461903 : f64
  %div = aten.div.Tensor(%view_3, %0) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%div, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %unsqueeze_2 = aten.unsqueeze.default(%_softmax, dim = 4) : !aten.tensor<[2, 4, 6, 10, 1], f32>
  %permute_5 = aten.permute.default(%unsqueeze_2, dims = [0, 1, 2, 4, 3]) : !aten.tensor<[2, 4, 6, 1, 10], f32, strides [240, 60, 10, 1, 1]>
  %unsqueeze_3 = aten.unsqueeze.default(%arg2, dim = 4) : !aten.tensor<[2, 4, 10, 8, 1], f32>
  %permute_6 = aten.permute.default(%unsqueeze_3, dims = [0, 1, 4, 3, 2]) : !aten.tensor<[2, 4, 1, 8, 10], f32, strides [320, 80, 1, 1, 8]>
  %permute_7 = aten.permute.default(%permute_5, dims = [0, 1, 2, 4, 3]) : !aten.tensor<[2, 4, 6, 10, 1], f32>
  %view_4 = aten.view.default(%permute_7, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %permute_8 = aten.permute.default(%permute_6, dims = [0, 1, 4, 3, 2]) : !aten.tensor<[2, 4, 10, 8, 1], f32>
  %view_5 = aten.view.default(%permute_8, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_4, %view_5) : !aten.tensor<[8, 6, 8], f32>
  %view_6 = aten.view.default(%bmm_1, size = [2, 4, 6, 1, 8]) : !aten.tensor<[2, 4, 6, 1, 8], f32>
  %permute_9 = aten.permute.default(%view_6, dims = [0, 1, 2, 4, 3]) : !aten.tensor<[2, 4, 6, 8, 1], f32, strides [192, 48, 8, 1, 8]>
  %view_7 = aten.view.default(%permute_9, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_7 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// HF's (1 - mask) * finfo.min padding mask [B, 1, 1, S], passed as it is

// CHECK-LABEL: func.func @additive_padding_mask
// CHECK-NOT:     aten.bmm
// CHECK-NOT:     aten.mm
// CHECK:         %[[M:.*]] = aten.mul.Tensor(%sub
// CHECK:         aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%arg1, %arg2, %arg3, attn_mask = %[[M]], scale = 0.35355339059327373)
// CHECK-NOT:     aten._softmax

func.func @additive_padding_mask(%arg0: !aten.tensor<[2, 10], i1>, %arg1: !aten.tensor<[2, 4, 6, 8], f32>, %arg2: !aten.tensor<[2, 4, 10, 8], f32>, %arg3: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %unsqueeze = aten.unsqueeze.default(%arg0, dim = 1) : !aten.tensor<[2, 1, 10], i1>
  %unsqueeze_1 = aten.unsqueeze.default(%unsqueeze, dim = 2) : !aten.tensor<[2, 1, 1, 10], i1>
  %_to_copy = aten._to_copy.default(%unsqueeze_1, dtype = f32) : !aten.tensor<[2, 1, 1, 10], f32>
  %0 = aten.constant 1.0 : f64
  %sub = aten.sub.Tensor(%0, %_to_copy) : !aten.tensor<[2, 1, 1, 10], f32>
  %1 = aten.constant -3.4028234663852886e+38 : f64
  %mul = aten.mul.Tensor(%sub, %1) : !aten.tensor<[2, 1, 1, 10], f32>
  %permute = aten.permute.default(%arg2, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %2 = aten.constant 2.8284271247461903 : f64
  %div = aten.div.Tensor(%view_2, %2) : !aten.tensor<[2, 4, 6, 10], f32>
  %add = aten.add.Tensor(%div, %mul) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%add, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %expand_2 = aten.expand.default(%_softmax, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %expand_3 = aten.expand.default(%arg3, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], f32>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_5 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// an [H, L, S] position bias (ALiBi, relative positions): an additive mask made 4-D

// CHECK-LABEL: func.func @alibi_bias
// CHECK-NOT:     aten.bmm
// CHECK-NOT:     aten.mm
// CHECK:         %[[M:.*]] = aten.unsqueeze.default(%arg2, dim = 0)
// CHECK:         aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%arg1, %arg0, %arg3, attn_mask = %[[M]], scale = 0.3535533905932738)
// CHECK-NOT:     aten._softmax

func.func @alibi_bias(%arg0: !aten.tensor<[2, 4, 10, 8], f32>, %arg1: !aten.tensor<[2, 4, 6, 8], f32>, %arg2: !aten.tensor<[4, 6, 10], f32>, %arg3: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %permute = aten.permute.default(%arg0, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %0 = aten.constant 0.3535533905932738 : f64
  %mul = aten.mul.Tensor(%view_2, %0) : !aten.tensor<[2, 4, 6, 10], f32>
  %add = aten.add.Tensor(%mul, %arg2) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%add, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %expand_2 = aten.expand.default(%_softmax, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %expand_3 = aten.expand.default(%arg3, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], f32>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_5 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// masked_fill(~tril, -inf) with a tril buffer: SDPA's bool mask is the buffer itself (True keeps); a query with no key would be NaN in eager

// CHECK-LABEL: func.func @causal_masked_fill
// CHECK-NOT:     aten.bmm
// CHECK-NOT:     aten.mm
// CHECK:         %[[M:.*]] = aten.where.self(%arg2,
// CHECK:         %[[O:.*]], %{{.*}} = aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%arg1, %arg0, %arg3, attn_mask = %[[M]], scale = 0.3535533905932738)
// CHECK:         %[[ALIVE:.*]] = aten.any.dim(%arg2, dim = -1, keepdim = true)
// CHECK:         aten.where.self(%[[ALIVE]], %[[O]],
// CHECK-NOT:     aten._softmax

func.func @causal_masked_fill(%arg0: !aten.tensor<[2, 4, 10, 8], f32>, %arg1: !aten.tensor<[2, 4, 6, 8], f32>, %arg2: !aten.tensor<[6, 10], i1>, %arg3: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %permute = aten.permute.default(%arg0, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %0 = aten.constant 0.3535533905932738 : f64
  %mul = aten.mul.Tensor(%view_2, %0) : !aten.tensor<[2, 4, 6, 10], f32>
  %bitwise_not = aten.bitwise_not.default(%arg2) : !aten.tensor<[6, 10], i1>
  %scalar_tensor = aten.scalar_tensor.default(s = -inf, dtype = f32, layout = strided, device = "cpu") : !aten.tensor<[], f32>
  %where = aten.where.self(%bitwise_not, %scalar_tensor, %mul) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%where, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %expand_2 = aten.expand.default(%_softmax, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %expand_3 = aten.expand.default(%arg3, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], f32>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_5 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// where(keep, s, finfo.min): a finite fill, so a query with no key gets uniform weights in eager: the mean of v

// CHECK-LABEL: func.func @causal_where_finfo_min
// CHECK-NOT:     aten.bmm
// CHECK-NOT:     aten.mm
// CHECK:         %[[O:.*]], %{{.*}} = aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%arg1, %arg0, %arg3, attn_mask =
// CHECK:         %[[MEAN:.*]] = aten.mean.dim(%arg3, dim = [-2], keepdim = true)
// CHECK:         %[[ALIVE:.*]] = aten.any.dim(%arg2, dim = -1, keepdim = true)
// CHECK:         aten.where.self(%[[ALIVE]], %[[O]], %[[MEAN]])
// CHECK-NOT:     aten._softmax

func.func @causal_where_finfo_min(%arg0: !aten.tensor<[2, 4, 10, 8], f32>, %arg1: !aten.tensor<[2, 4, 6, 8], f32>, %arg2: !aten.tensor<[2, 1, 6, 10], i1>, %arg3: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %permute = aten.permute.default(%arg0, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %0 = aten.constant 2.8284271247461903 : f64
  %div = aten.div.Tensor(%view_2, %0) : !aten.tensor<[2, 4, 6, 10], f32>
  %scalar_tensor = aten.scalar_tensor.default(s = -3.4028234663852886e+38, dtype = f32, layout = strided, device = "cpu") : !aten.tensor<[], f32>
  %where = aten.where.self(%arg2, %div, %scalar_tensor) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%where, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %expand_2 = aten.expand.default(%_softmax, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %expand_3 = aten.expand.default(%arg3, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], f32>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_5 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// bf16 scores, softmax(x.float()).to(q.dtype): the fused kernel's softmax runs in float32 too

// CHECK-LABEL: func.func @softmax_fp32_cast_back
// CHECK-NOT:     aten.bmm
// CHECK-NOT:     aten.mm
// CHECK:         aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%arg1, %arg0, %arg2, scale = 0.3535533905932738) : (!aten.tensor<[2, 4, 6, 8], bf16>
// CHECK-NOT:     aten._softmax

func.func @softmax_fp32_cast_back(%arg0: !aten.tensor<[2, 4, 10, 8], bf16>, %arg1: !aten.tensor<[2, 4, 6, 8], bf16>, %arg2: !aten.tensor<[2, 4, 10, 8], bf16>) -> !aten.tensor<[2, 4, 6, 8], bf16> {
  %permute = aten.permute.default(%arg0, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], bf16, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], bf16>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], bf16>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], bf16, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], bf16, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], bf16>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], bf16>
  %0 = aten.constant 0.3535533905932738 : f64
  %mul = aten.mul.Tensor(%view_2, %0) : !aten.tensor<[2, 4, 6, 10], bf16>
  %_to_copy = aten._to_copy.default(%mul, dtype = f32) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%_to_copy, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %_to_copy_1 = aten._to_copy.default(%_softmax, dtype = bf16) : !aten.tensor<[2, 4, 6, 10], bf16>
  %expand_2 = aten.expand.default(%_to_copy_1, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], bf16>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], bf16>
  %expand_3 = aten.expand.default(%arg2, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], bf16>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], bf16>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], bf16>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], bf16>
  func.return %view_5 : !aten.tensor<[2, 4, 6, 8], bf16>
}

// -----

// softmax(x, dtype=torch.float32) and a cast back

// CHECK-LABEL: func.func @softmax_dtype_arg
// CHECK-NOT:     aten.bmm
// CHECK-NOT:     aten.mm
// CHECK:         aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%arg1, %arg0, %arg2, scale = 0.3535533905932738) : (!aten.tensor<[2, 4, 6, 8], bf16>
// CHECK-NOT:     aten._softmax

func.func @softmax_dtype_arg(%arg0: !aten.tensor<[2, 4, 10, 8], bf16>, %arg1: !aten.tensor<[2, 4, 6, 8], bf16>, %arg2: !aten.tensor<[2, 4, 10, 8], bf16>) -> !aten.tensor<[2, 4, 6, 8], bf16> {
  %permute = aten.permute.default(%arg0, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], bf16, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], bf16>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], bf16>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], bf16, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], bf16, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], bf16>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], bf16>
  %0 = aten.constant 0.3535533905932738 : f64
  %mul = aten.mul.Tensor(%view_2, %0) : !aten.tensor<[2, 4, 6, 10], bf16>
  %_to_copy = aten._to_copy.default(%mul, dtype = f32, layout = strided, device = "cpu") : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%_to_copy, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %_to_copy_1 = aten._to_copy.default(%_softmax, dtype = bf16) : !aten.tensor<[2, 4, 6, 10], bf16>
  %expand_2 = aten.expand.default(%_to_copy_1, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], bf16>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], bf16>
  %expand_3 = aten.expand.default(%arg2, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], bf16>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], bf16>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], bf16>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], bf16>
  func.return %view_5 : !aten.tensor<[2, 4, 6, 8], bf16>
}

// -----

// HF's repeat_kv (expand + reshape of 2 kv heads to 4): SDPA reads the 2 heads (enable_gqa)

// CHECK-LABEL: func.func @gqa_repeat_kv
// CHECK-NOT:     aten.bmm
// CHECK-NOT:     aten.mm
// CHECK:         aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%arg1, %arg0, %arg2, scale = 0.3535533905932738)
// CHECK-NOT:     aten._softmax

func.func @gqa_repeat_kv(%arg0: !aten.tensor<[2, 2, 10, 8], f32>, %arg1: !aten.tensor<[2, 4, 6, 8], f32>, %arg2: !aten.tensor<[2, 2, 10, 8], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %unsqueeze = aten.unsqueeze.default(%arg0, dim = 2) : !aten.tensor<[2, 2, 1, 10, 8], f32>
  %expand = aten.expand.default(%unsqueeze, size = [2, 2, 2, 10, 8]) : !aten.tensor<[2, 2, 2, 10, 8], f32, strides [160, 80, 0, 8, 1]>
  %clone = aten.clone.default(%expand, memory_format = contiguous_format) : !aten.tensor<[2, 2, 2, 10, 8], f32>
  %view = aten.view.default(%clone, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %permute = aten.permute.default(%view, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand_1 = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view_1 = aten.view.default(%expand_1, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_2 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_2 = aten.view.default(%expand_2, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view_1, %view_2) : !aten.tensor<[8, 6, 10], f32>
  %view_3 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %0 = aten.constant 0.3535533905932738 : f64
  %mul = aten.mul.Tensor(%view_3, %0) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%mul, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %unsqueeze_1 = aten.unsqueeze.default(%arg2, dim = 2) : !aten.tensor<[2, 2, 1, 10, 8], f32>
  %expand_3 = aten.expand.default(%unsqueeze_1, size = [2, 2, 2, 10, 8]) : !aten.tensor<[2, 2, 2, 10, 8], f32, strides [160, 80, 0, 8, 1]>
  %clone_1 = aten.clone.default(%expand_3, memory_format = contiguous_format) : !aten.tensor<[2, 2, 2, 10, 8], f32>
  %view_4 = aten.view.default(%clone_1, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %expand_4 = aten.expand.default(%_softmax, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %view_5 = aten.view.default(%expand_4, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %expand_5 = aten.expand.default(%view_4, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_6 = aten.view.default(%expand_5, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_5, %view_6) : !aten.tensor<[8, 6, 8], f32>
  %view_7 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_7 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// repeat_interleave of k and v: the same

// CHECK-LABEL: func.func @gqa_repeat_interleave
// CHECK-NOT:     aten.bmm
// CHECK-NOT:     aten.mm
// CHECK:         aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%arg2, %arg0, %arg1, scale = 0.35355339059327373)
// CHECK-NOT:     aten._softmax

func.func @gqa_repeat_interleave(%arg0: !aten.tensor<[2, 2, 10, 8], f32>, %arg1: !aten.tensor<[2, 2, 10, 8], f32>, %arg2: !aten.tensor<[2, 4, 6, 8], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %unsqueeze = aten.unsqueeze.default(%arg0, dim = 2) : !aten.tensor<[2, 2, 1, 10, 8], f32>
  %expand = aten.expand.default(%unsqueeze, size = [2, 2, 2, 10, 8]) : !aten.tensor<[2, 2, 2, 10, 8], f32, strides [160, 80, 0, 8, 1]>
  %clone = aten.clone.default(%expand, memory_format = contiguous_format) : !aten.tensor<[2, 2, 2, 10, 8], f32>
  %view = aten.view.default(%clone, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %unsqueeze_1 = aten.unsqueeze.default(%arg1, dim = 2) : !aten.tensor<[2, 2, 1, 10, 8], f32>
  %expand_1 = aten.expand.default(%unsqueeze_1, size = [2, 2, 2, 10, 8]) : !aten.tensor<[2, 2, 2, 10, 8], f32, strides [160, 80, 0, 8, 1]>
  %clone_1 = aten.clone.default(%expand_1, memory_format = contiguous_format) : !aten.tensor<[2, 2, 2, 10, 8], f32>
  %view_1 = aten.view.default(%clone_1, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %permute = aten.permute.default(%view, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand_2 = aten.expand.default(%arg2, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view_2 = aten.view.default(%expand_2, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_3 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_3 = aten.view.default(%expand_3, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view_2, %view_3) : !aten.tensor<[8, 6, 10], f32>
  %view_4 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %0 = aten.constant 2.8284271247461903 : f64
  %div = aten.div.Tensor(%view_4, %0) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%div, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %expand_4 = aten.expand.default(%_softmax, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %view_5 = aten.view.default(%expand_4, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %expand_5 = aten.expand.default(%view_1, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_6 = aten.view.default(%expand_5, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_5, %view_6) : !aten.tensor<[8, 6, 8], f32>
  %view_7 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_7 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// 2-D q @ k.T: mm, SDPA on [1, 1, L, E]

// CHECK-LABEL: func.func @mm_2d
// CHECK-NOT:     aten.bmm
// CHECK-NOT:     aten.mm
// CHECK:         aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%unsqueeze_1, %unsqueeze_3, %unsqueeze_5, scale = 0.35355339059327373)
// CHECK-NOT:     aten._softmax

func.func @mm_2d(%arg0: !aten.tensor<[2, 4, 6, 8], f32>, %arg1: !aten.tensor<[2, 4, 10, 8], f32>, %arg2: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[6, 8], f32> {
  %select = aten.select.int(%arg0, dim = 0, index = 0) : !aten.tensor<[4, 6, 8], f32>
  %select_1 = aten.select.int(%select, dim = 0, index = 0) : !aten.tensor<[6, 8], f32>
  %select_2 = aten.select.int(%arg1, dim = 0, index = 0) : !aten.tensor<[4, 10, 8], f32>
  %select_3 = aten.select.int(%select_2, dim = 0, index = 0) : !aten.tensor<[10, 8], f32>
  %permute = aten.permute.default(%select_3, dims = [1, 0]) : !aten.tensor<[8, 10], f32, strides [1, 8]>
  %mm = aten.mm.default(%select_1, %permute) : !aten.tensor<[6, 10], f32>
  %0 = aten.constant 2.8284271247461903 : f64
  %div = aten.div.Tensor(%mm, %0) : !aten.tensor<[6, 10], f32>
  %_softmax = aten._softmax.default(%div, dim = -1, half_to_float = false) : !aten.tensor<[6, 10], f32>
  %select_4 = aten.select.int(%arg2, dim = 0, index = 0) : !aten.tensor<[4, 10, 8], f32>
  %select_5 = aten.select.int(%select_4, dim = 0, index = 0) : !aten.tensor<[10, 8], f32>
  %mm_1 = aten.mm.default(%_softmax, %select_5) : !aten.tensor<[6, 8], f32>
  func.return %mm_1 : !aten.tensor<[6, 8], f32>
}

// -----

// Not rewritten: softmax over the queries (dim=-2): not attention.

// CHECK-LABEL: func.func @softmax_over_queries
// CHECK-NOT:     _scaled_dot_product
// CHECK:         aten._softmax.default
// CHECK-NOT:     _scaled_dot_product
// ANY-LABEL: func.func @softmax_over_queries
// ANY-NOT:       _scaled_dot_product

func.func @softmax_over_queries(%arg0: !aten.tensor<[2, 4, 10, 8], f32>, %arg1: !aten.tensor<[2, 4, 6, 8], f32>, %arg2: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %permute = aten.permute.default(%arg0, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %0 = aten.constant 2.8284271247461903 : f64
  %div = aten.div.Tensor(%view_2, %0) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%div, dim = -2, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %expand_2 = aten.expand.default(%_softmax, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %expand_3 = aten.expand.default(%arg2, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], f32>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_5 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// Not rewritten: the weights are returned too: they must exist.

// CHECK-LABEL: func.func @weights_returned
// CHECK-NOT:     _scaled_dot_product
// CHECK:         aten._softmax.default
// CHECK-NOT:     _scaled_dot_product
// ANY-LABEL: func.func @weights_returned
// ANY-NOT:       _scaled_dot_product

func.func @weights_returned(%arg0: !aten.tensor<[2, 4, 10, 8], f32>, %arg1: !aten.tensor<[2, 4, 6, 8], f32>, %arg2: !aten.tensor<[2, 4, 10, 8], f32>) -> (!aten.tensor<[2, 4, 6, 8], f32>, !aten.tensor<[2, 4, 6, 10], f32>) {
  %permute = aten.permute.default(%arg0, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %0 = aten.constant 2.8284271247461903 : f64
  %div = aten.div.Tensor(%view_2, %0) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%div, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %expand_2 = aten.expand.default(%_softmax, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %expand_3 = aten.expand.default(%arg2, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], f32>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_5, %_softmax : !aten.tensor<[2, 4, 6, 8], f32>, !aten.tensor<[2, 4, 6, 10], f32>
}

// -----

// Not rewritten: the scale after the softmax scales the output, not the scores.

// CHECK-LABEL: func.func @scale_after_softmax
// CHECK-NOT:     _scaled_dot_product
// CHECK:         aten._softmax.default
// CHECK-NOT:     _scaled_dot_product
// ANY-LABEL: func.func @scale_after_softmax
// ANY-NOT:       _scaled_dot_product

func.func @scale_after_softmax(%arg0: !aten.tensor<[2, 4, 10, 8], f32>, %arg1: !aten.tensor<[2, 4, 6, 8], f32>, %arg2: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %permute = aten.permute.default(%arg0, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%view_2, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %0 = aten.constant 2.8284271247461903 : f64
  %div = aten.div.Tensor(%_softmax, %0) : !aten.tensor<[2, 4, 6, 10], f32>
  %expand_2 = aten.expand.default(%div, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %expand_3 = aten.expand.default(%arg2, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], f32>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_5 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// Not rewritten: a [2, 1, H, L, S] bias makes the scores 5-D: not SDPA's mask.

// CHECK-LABEL: func.func @mask_broadcasts_scores
// CHECK-NOT:     _scaled_dot_product
// CHECK:         aten._softmax.default
// CHECK-NOT:     _scaled_dot_product
// ANY-LABEL: func.func @mask_broadcasts_scores
// ANY-NOT:       _scaled_dot_product

func.func @mask_broadcasts_scores(%arg0: !aten.tensor<[2, 4, 10, 8], f32>, %arg1: !aten.tensor<[2, 4, 6, 8], f32>, %arg2: !aten.tensor<[2, 1, 4, 6, 10], f32>, %arg3: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[2, 2, 4, 6, 8], f32> {
  %permute = aten.permute.default(%arg0, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %add = aten.add.Tensor(%view_2, %arg2) : !aten.tensor<[2, 2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%add, dim = -1, half_to_float = false) : !aten.tensor<[2, 2, 4, 6, 10], f32>
  %expand_2 = aten.expand.default(%_softmax, size = [2, 2, 4, 6, 10]) : !aten.tensor<[2, 2, 4, 6, 10], f32>
  %view_3 = aten.view.default(%expand_2, size = [16, 6, 10]) : !aten.tensor<[16, 6, 10], f32>
  %expand_3 = aten.expand.default(%arg3, size = [2, 2, 4, 10, 8]) : !aten.tensor<[2, 2, 4, 10, 8], f32, strides [0, 320, 80, 8, 1]>
  %clone = aten.clone.default(%expand_3, memory_format = contiguous_format) : !aten.tensor<[2, 2, 4, 10, 8], f32>
  %view_4 = aten.view.default(%clone, size = [16, 10, 8]) : !aten.tensor<[16, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[16, 6, 8], f32>
  %view_5 = aten.view.default(%bmm_1, size = [2, 2, 4, 6, 8]) : !aten.tensor<[2, 2, 4, 6, 8], f32>
  func.return %view_5 : !aten.tensor<[2, 2, 4, 6, 8], f32>
}

// -----

// Not rewritten: masked_fill with 0.0 changes the scores; it does not mask.

// CHECK-LABEL: func.func @fill_not_a_mask
// CHECK-NOT:     _scaled_dot_product
// CHECK:         aten._softmax.default
// CHECK-NOT:     _scaled_dot_product
// ANY-LABEL: func.func @fill_not_a_mask
// ANY-NOT:       _scaled_dot_product

func.func @fill_not_a_mask(%arg0: !aten.tensor<[2, 4, 10, 8], f32>, %arg1: !aten.tensor<[2, 4, 6, 8], f32>, %arg2: !aten.tensor<[6, 10], i1>, %arg3: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %permute = aten.permute.default(%arg0, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %scalar_tensor = aten.scalar_tensor.default(s = 0.0, dtype = f32, layout = strided, device = "cpu") : !aten.tensor<[], f32>
  %where = aten.where.self(%arg2, %scalar_tensor, %view_2) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%where, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %expand_2 = aten.expand.default(%_softmax, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %expand_3 = aten.expand.default(%arg3, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], f32>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_5 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// Not rewritten: the weights read transposed ([L, S] as [S, L], L == S here).

// CHECK-LABEL: func.func @weights_transposed
// CHECK-NOT:     _scaled_dot_product
// CHECK:         aten._softmax.default
// CHECK-NOT:     _scaled_dot_product
// ANY-LABEL: func.func @weights_transposed
// ANY-NOT:       _scaled_dot_product

func.func @weights_transposed(%arg0: !aten.tensor<[2, 4, 10, 8], f32>, %arg1: !aten.tensor<[2, 4, 10, 8], f32>, %arg2: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[2, 4, 10, 8], f32> {
  %permute = aten.permute.default(%arg0, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view = aten.view.default(%expand, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 10, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 10, 10]) : !aten.tensor<[2, 4, 10, 10], f32>
  %_softmax = aten._softmax.default(%view_2, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 10, 10], f32>
  %permute_1 = aten.permute.default(%_softmax, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 10, 10], f32, strides [400, 100, 1, 10]>
  %expand_2 = aten.expand.default(%permute_1, size = [2, 4, 10, 10]) : !aten.tensor<[2, 4, 10, 10], f32, strides [400, 100, 1, 10]>
  %view_3 = aten.view.default(%expand_2, size = [8, 10, 10]) : !aten.tensor<[8, 10, 10], f32, strides [100, 1, 10]>
  %expand_3 = aten.expand.default(%arg2, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 10, 8], f32>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  func.return %view_5 : !aten.tensor<[2, 4, 10, 8], f32>
}

// -----

// Not rewritten: a per-head tensor scale: SDPA's scale is one number.

// CHECK-LABEL: func.func @tensor_temperature
// CHECK-NOT:     _scaled_dot_product
// CHECK:         aten._softmax.default
// CHECK-NOT:     _scaled_dot_product
// ANY-LABEL: func.func @tensor_temperature
// ANY-NOT:       _scaled_dot_product

func.func @tensor_temperature(%arg0: !aten.tensor<[2, 4, 10, 8], f32>, %arg1: !aten.tensor<[2, 4, 6, 8], f32>, %arg2: !aten.tensor<[1, 4, 1, 1], f32>, %arg3: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %permute = aten.permute.default(%arg0, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %mul = aten.mul.Tensor(%view_2, %arg2) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%mul, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %expand_2 = aten.expand.default(%_softmax, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %expand_3 = aten.expand.default(%arg3, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], f32>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_5 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// Dropout of the weights (a training graph): SDPA's dropout_p. On the CPU
// torch runs SDPA with dropout on its math path, the same unfused ops: kept,
// unless fused-only=false (then SDPA's math form: the scale split over q and
// k, a softmax that gives 0 for a row of -inf, and the dropout).

// CHECK-LABEL: func.func @dropout
// CHECK:         aten.native_dropout.default(%_softmax, p = 0.1
// CHECK-NOT:     _scaled_dot_product
// ANY-LABEL:   func.func @dropout
// ANY:           aten.mul.Scalar(%arg1, other = 0.5946035575013605)
// ANY:           %[[W:.*]] = aten.where.self(
// ANY:           aten.native_dropout.default(%[[W]], p = 0.1, train = true)

func.func @dropout(%arg0: !aten.tensor<[2, 4, 10, 8], f32>, %arg1: !aten.tensor<[2, 4, 6, 8], f32>, %arg2: !aten.tensor<[2, 4, 10, 8], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %permute = aten.permute.default(%arg0, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %0 = aten.constant 2.8284271247461903 : f64
  %div = aten.div.Tensor(%view_2, %0) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%div, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %drop, %keep = aten.native_dropout.default(%_softmax, p = 0.1, train = true) : (!aten.tensor<[2, 4, 6, 10], f32>, !aten.tensor<[2, 4, 6, 10], i1>)
  %expand_2 = aten.expand.default(%drop, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %expand_3 = aten.expand.default(%arg2, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], f32>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_5 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// s * scale + bias, then masked_fill(mask, finfo.min) (MPT, Bloom): the fill comes
// last, after the additive bias, so it is the masked keys' value in SDPA's float
// mask (a fully masked row stays uniform, as in eager); a row SDPA sees as all
// -inf (the bias -inf wherever the mask keeps) is NaN, as in eager.

// CHECK-LABEL: func.func @alibi_then_finfo_min
// CHECK-NOT:     aten.bmm
// CHECK:         %[[KEEP:.*]] = aten.logical_not.default(%arg2)
// CHECK:         %[[FILL:.*]] = aten.scalar_tensor.default(s = -3.4028234663852886e+38
// CHECK:         %[[MASK:.*]] = aten.where.self(%[[KEEP]], %arg4, %[[FILL]])
// CHECK:         %[[O:.*]], %{{.*}} = aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%arg1, %arg0, %arg3, attn_mask = %[[MASK]], scale = 0.35355339059327373)
// CHECK:         %[[LIVE:.*]] = aten.gt.Scalar(%[[MASK]], other = -inf)
// CHECK:         %[[ALIVE:.*]] = aten.any.dim(%[[LIVE]], dim = -1, keepdim = true)
// CHECK:         aten.where.self(%[[ALIVE]], %[[O]],
// CHECK-NOT:     aten._softmax

func.func @alibi_then_finfo_min(%arg0: !aten.tensor<[2, 4, 10, 8], f32>, %arg1: !aten.tensor<[2, 4, 6, 8], f32>, %arg2: !aten.tensor<[2, 1, 6, 10], i1>, %arg3: !aten.tensor<[2, 4, 10, 8], f32>, %arg4: !aten.tensor<[4, 6, 10], f32>) -> !aten.tensor<[2, 4, 6, 8], f32> {
  %permute = aten.permute.default(%arg0, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], f32>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], f32, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], f32, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], f32>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %0 = aten.constant 0.35355339059327373 : f64
  %mul = aten.mul.Tensor(%view_2, %0) : !aten.tensor<[2, 4, 6, 10], f32>
  %add = aten.add.Tensor(%mul, %arg4) : !aten.tensor<[2, 4, 6, 10], f32>
  %scalar_tensor = aten.scalar_tensor.default(s = -3.4028234663852886e+38, dtype = f32, layout = strided, device = "cpu") : !aten.tensor<[], f32>
  %where = aten.where.self(%arg2, %scalar_tensor, %add) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%where, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %expand_2 = aten.expand.default(%_softmax, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], f32>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], f32>
  %expand_3 = aten.expand.default(%arg3, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], f32>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], f32>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], f32>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], f32>
  func.return %view_5 : !aten.tensor<[2, 4, 6, 8], f32>
}

// -----

// Not rewritten: bf16 scores plus an f32 bias (MPT's ALiBi table) are summed in
// f32; SDPA takes a float mask in the query's dtype only.

// CHECK-LABEL: func.func @bias_promotes_scores
// CHECK-NOT:     _scaled_dot_product
// CHECK:         aten._softmax.default
// CHECK-NOT:     _scaled_dot_product
// ANY-LABEL: func.func @bias_promotes_scores
// ANY-NOT:     _scaled_dot_product

func.func @bias_promotes_scores(%arg0: !aten.tensor<[2, 4, 10, 8], bf16>, %arg1: !aten.tensor<[2, 4, 6, 8], bf16>, %arg2: !aten.tensor<[4, 6, 10], f32>, %arg3: !aten.tensor<[2, 1, 6, 10], i1>, %arg4: !aten.tensor<[2, 4, 10, 8], bf16>) -> !aten.tensor<[2, 4, 6, 8], bf16> {
  %permute = aten.permute.default(%arg0, dims = [0, 1, 3, 2]) : !aten.tensor<[2, 4, 8, 10], bf16, strides [320, 80, 1, 8]>
  %expand = aten.expand.default(%arg1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], bf16>
  %view = aten.view.default(%expand, size = [8, 6, 8]) : !aten.tensor<[8, 6, 8], bf16>
  %expand_1 = aten.expand.default(%permute, size = [2, 4, 8, 10]) : !aten.tensor<[2, 4, 8, 10], bf16, strides [320, 80, 1, 8]>
  %view_1 = aten.view.default(%expand_1, size = [8, 8, 10]) : !aten.tensor<[8, 8, 10], bf16, strides [80, 1, 8]>
  %bmm = aten.bmm.default(%view, %view_1) : !aten.tensor<[8, 6, 10], bf16>
  %view_2 = aten.view.default(%bmm, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], bf16>
  %0 = aten.constant 0.3535533905932738 : f64
  %mul = aten.mul.Tensor(%view_2, %0) : !aten.tensor<[2, 4, 6, 10], bf16>
  %add = aten.add.Tensor(%mul, %arg2) : !aten.tensor<[2, 4, 6, 10], f32>
  %scalar_tensor = aten.scalar_tensor.default(s = -3.4028234663852886e+38, dtype = f32, layout = strided, device = "cpu") : !aten.tensor<[], f32>
  %where = aten.where.self(%arg3, %scalar_tensor, %add) : !aten.tensor<[2, 4, 6, 10], f32>
  %_softmax = aten._softmax.default(%where, dim = -1, half_to_float = false) : !aten.tensor<[2, 4, 6, 10], f32>
  %_to_copy = aten._to_copy.default(%_softmax, dtype = bf16) : !aten.tensor<[2, 4, 6, 10], bf16>
  %expand_2 = aten.expand.default(%_to_copy, size = [2, 4, 6, 10]) : !aten.tensor<[2, 4, 6, 10], bf16>
  %view_3 = aten.view.default(%expand_2, size = [8, 6, 10]) : !aten.tensor<[8, 6, 10], bf16>
  %expand_3 = aten.expand.default(%arg4, size = [2, 4, 10, 8]) : !aten.tensor<[2, 4, 10, 8], bf16>
  %view_4 = aten.view.default(%expand_3, size = [8, 10, 8]) : !aten.tensor<[8, 10, 8], bf16>
  %bmm_1 = aten.bmm.default(%view_3, %view_4) : !aten.tensor<[8, 6, 8], bf16>
  %view_5 = aten.view.default(%bmm_1, size = [2, 4, 6, 8]) : !aten.tensor<[2, 4, 6, 8], bf16>
  func.return %view_5 : !aten.tensor<[2, 4, 6, 8], bf16>
}
