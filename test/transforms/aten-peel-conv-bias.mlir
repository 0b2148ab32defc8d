// RUN: fx-opt %s -p aten-peel-conv-bias --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'aten-peel-conv-bias{all-devices=true}' --split-input-file | filecheck %s --check-prefix=ALL

// A CUDA convolution with a bias: the convolution runs without it and an add
// of the bias viewed as [C, 1, 1] follows, with the old result's type (the
// nest of the relu then adds it, instead of ATen's separate bias kernel).

// CHECK-LABEL: func.func @cuda
// CHECK-NEXT:    %b_1 = aten.view.default(%b, size = [16, 1, 1]) : !aten.tensor<[16, 1, 1], bf16, device "cuda:0">
// CHECK-NEXT:    %c = aten.convolution.default(%x, %w, none, stride = [1, 1], {{.*}} : !aten.tensor<[2, 16, 6, 6], bf16, device "cuda:0">
// CHECK-NEXT:    %c_1 = aten.add.Tensor(%c, %b_1) : !aten.tensor<[2, 16, 6, 6], bf16, device "cuda:0">
// CHECK-NEXT:    %r = aten.relu.default(%c_1)

func.func @cuda(%x: !aten.tensor<[2, 8, 8, 8], bf16, device "cuda:0">, %w: !aten.tensor<[16, 8, 3, 3], bf16, device "cuda:0">, %b: !aten.tensor<[16], bf16, device "cuda:0">) -> !aten.tensor<[2, 16, 6, 6], bf16, device "cuda:0"> {
  %c = aten.convolution.default(%x, %w, %b, stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[2, 16, 6, 6], bf16, device "cuda:0">
  %r = aten.relu.default(%c) : !aten.tensor<[2, 16, 6, 6], bf16, device "cuda:0">
  func.return %r : !aten.tensor<[2, 16, 6, 6], bf16, device "cuda:0">
}

// -----

// On the CPU the bias stays in the convolution (oneDNN fuses it), unless
// all-devices=true.

// CHECK-LABEL: func.func @cpu
// CHECK-NEXT:    %c = aten.convolution.default(%x, %w, %b,
// ALL-LABEL: func.func @cpu
// ALL-NEXT:      %b_1 = aten.view.default(%b, size = [16, 1, 1])
// ALL-NEXT:      %c = aten.convolution.default(%x, %w, none, stride

func.func @cpu(%x: !aten.tensor<[2, 8, 8, 8], f32>, %w: !aten.tensor<[16, 8, 3, 3], f32>, %b: !aten.tensor<[16], f32>) -> !aten.tensor<[2, 16, 6, 6], f32> {
  %c = aten.convolution.default(%x, %w, %b, stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[2, 16, 6, 6], f32>
  func.return %c : !aten.tensor<[2, 16, 6, 6], f32>
}
