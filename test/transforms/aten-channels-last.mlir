// RUN: fx-opt %s -p 'aten-channels-last{inference=true}' --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'aten-channels-last{mode=on}' --split-input-file | filecheck %s --check-prefix=ON
// RUN: fx-opt %s -p aten-channels-last --split-input-file | filecheck %s --check-prefix=TRAIN
// RUN: fx-opt %s -p 'aten-channels-last{inference=true},convert-aten-to-loop,loop-inline,bufferize' --split-input-file | filecheck %s --check-prefix=BUF
// RUN: not fx-opt %s -p 'aten-channels-last{mode=nhwc}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: fx-opt %s -p 'aten-channels-last{mode=on},convert-aten-to-loop,bufferize' --split-input-file | filecheck %s --check-prefix=NHWC

// OPTION: aten-channels-last: option 'mode' must be one of "auto", "on", "off"; got nhwc

// Two convolutions with a relu between them, on a CUDA device (inference): the
// image and the weights are cloned channels-last, the convolutions return
// NHWC, the relu reads its input through a copy back to the old layout (so its
// type, and every other op's, is unchanged), and the second convolution reads
// the first's NHWC result through a channels-last clone of the relu.

// CHECK-LABEL: func.func @convs
// CHECK-NEXT:    %x_1 = aten.clone.default(%x, memory_format = channels_last) : !aten.tensor<[8, 64, 16, 16], bf16, strides [16384, 1, 1024, 64], device "cuda:0">
// CHECK-NEXT:    %w1_1 = aten.clone.default(%w1, memory_format = channels_last) : !aten.tensor<[128, 64, 3, 3], bf16, strides [576, 1, 192, 64], device "cuda:0">
// CHECK-NEXT:    %c1 = aten.convolution.default(%x_1, %w1_1, {{.*}} : !aten.tensor<[8, 128, 16, 16], bf16, strides [32768, 1, 2048, 128], device "cuda:0">
// CHECK-NEXT:    %c1_1 = aten.clone.default(%c1, memory_format = contiguous_format) : !aten.tensor<[8, 128, 16, 16], bf16, device "cuda:0">
// CHECK-NEXT:    %r = aten.relu.default(%c1_1) : !aten.tensor<[8, 128, 16, 16], bf16, device "cuda:0">
// CHECK-NEXT:    %r_1 = aten.clone.default(%r, memory_format = channels_last)
// CHECK-NEXT:    %w2_1 = aten.clone.default(%w2, memory_format = channels_last)
// CHECK-NEXT:    %c2 = aten.convolution.default(%r_1, %w2_1, {{.*}} strides [32768, 1, 2048, 128], device "cuda:0">
// CHECK-NEXT:    %c2_1 = aten.clone.default(%c2, memory_format = contiguous_format)
// CHECK-NEXT:    func.return %c2_1

// TRAIN-LABEL: func.func @convs
// TRAIN-NOT:     aten.clone
// TRAIN:         func.return %c2

// At the buffer level the graph inputs' copies into NHWC are named so
// (`%x_to_nhwc`: their kernels are coil_x_to_nhwc_N, not named for one
// argument), and the copies in front of the second convolution are gone:
// the relu's nest stores NHWC because the convolution reads it so, and the
// result is copied to eager's (row-major) layout at the end.

// BUF-LABEL: func.func @convs
// BUF:         %x_to_nhwc = buffer.alloc : !buffer.buffer<[8, 64, 16, 16], bf16, strides [16384, 1, 1024, 64]
// BUF:         %c1 = buffer.extern "aten.convolution.default" (%x_to_nhwc, %w1_to_nhwc, %b)
// BUF:         %r = buffer.alloc : !buffer.buffer<[8, 128, 16, 16], bf16, strides [32768, 1, 2048, 128]
// BUF-NEXT:    loop.pointwise [8, 128, 16, 16] outs(%r
// BUF-NEXT:    ^
// BUF-NEXT:      loop.load %c1[i0, i1, i2, i3]
// BUF:         %c2 = buffer.extern "aten.convolution.default" (%r, %w2_to_nhwc, %b)
// BUF:         %[[OUT:.*]] = buffer.alloc : !buffer.buffer<[8, 128, 16, 16], bf16, device "cuda:0">
// BUF-NEXT:    loop.pointwise [8, 128, 16, 16] outs(%[[OUT]]
// BUF:         func.return %[[OUT]]

func.func @convs(%x: !aten.tensor<[8, 64, 16, 16], bf16, device "cuda:0">, %w1: !aten.tensor<[128, 64, 3, 3], bf16, device "cuda:0">, %w2: !aten.tensor<[128, 128, 3, 3], bf16, device "cuda:0">, %b: !aten.tensor<[128], bf16, device "cuda:0">) -> !aten.tensor<[8, 128, 16, 16], bf16, device "cuda:0"> {
  %c1 = aten.convolution.default(%x, %w1, %b, stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[8, 128, 16, 16], bf16, device "cuda:0">
  %r = aten.relu.default(%c1) : !aten.tensor<[8, 128, 16, 16], bf16, device "cuda:0">
  %c2 = aten.convolution.default(%r, %w2, %b, stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[8, 128, 16, 16], bf16, device "cuda:0">
  func.return %c2 : !aten.tensor<[8, 128, 16, 16], bf16, device "cuda:0">
}

// -----

// On the CPU with oneDNN (mkldnn, in torch's CPU builds), auto converts an
// inference graph always, as Inductor does (oneDNN's convolutions run on
// blocked/NHWC data: an NCHW input is reordered on every call); training
// graphs stay NCHW; mode=on converts it anyway.

// CHECK-LABEL: func.func @cpu
// CHECK:         aten.clone.default(%x, memory_format = channels_last)
// TRAIN-LABEL: func.func @cpu
// TRAIN-NOT:     aten.clone
// ON-LABEL: func.func @cpu
// ON:          aten.clone.default(%x, memory_format = channels_last)

func.func @cpu(%x: !aten.tensor<[2, 8, 5, 5], f32>, %w: !aten.tensor<[8, 8, 3, 3], f32>, %b: !aten.tensor<[8], f32>) -> !aten.tensor<[2, 8, 3, 3], f32> {
  %c = aten.convolution.default(%x, %w, %b, stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[2, 8, 3, 3], f32>
  func.return %c : !aten.tensor<[2, 8, 3, 3], f32>
}

// -----

// A grouped convolution with more than one input channel per group is slower
// channels-last (Inductor's 1.358): with no other convolution, auto declines.

// CHECK-LABEL: func.func @grouped
// CHECK-NOT:     aten.clone

func.func @grouped(%x: !aten.tensor<[8, 256, 28, 28], bf16, device "cuda:0">, %w: !aten.tensor<[256, 128, 3, 3], bf16, device "cuda:0">, %b: !aten.tensor<[256], bf16, device "cuda:0">) -> !aten.tensor<[8, 256, 28, 28], bf16, device "cuda:0"> {
  %c = aten.convolution.default(%x, %w, %b, stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 2) : !aten.tensor<[8, 256, 28, 28], bf16, device "cuda:0">
  func.return %c : !aten.tensor<[8, 256, 28, 28], bf16, device "cuda:0">
}

// -----

// A nest that reads a convolution's NHWC result at its own point, and that no
// extern call reads, is stored NHWC too (not transposed to row-major): here
// the copy back to the old layout and the tanh (no loop-inline to merge
// them); the mean reads them, and only the returned product is row-major.

// CHECK-LABEL: func.func @excite
// NHWC-LABEL: func.func @excite
// NHWC:         %c = buffer.extern "aten.convolution.default"
// NHWC:         %c_2 = buffer.alloc : !buffer.buffer<[2, 8, 6, 6], f32, strides [288, 1, 48, 8]>
// NHWC:         %t = buffer.alloc : !buffer.buffer<[2, 8, 6, 6], f32, strides [288, 1, 48, 8]>
// NHWC:         %y = buffer.alloc : !buffer.buffer<[2, 8, 6, 6], f32>

func.func @excite(%x: !aten.tensor<[2, 8, 8, 8], f32>, %w: !aten.tensor<[8, 8, 3, 3], f32>) -> !aten.tensor<[2, 8, 6, 6], f32> {
  %c = aten.convolution.default(%x, %w, none, stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[2, 8, 6, 6], f32>
  %t = aten.tanh.default(%c) : !aten.tensor<[2, 8, 6, 6], f32>
  %m = aten.mean.dim(%t, dim = [2, 3], keepdim = true) : !aten.tensor<[2, 8, 1, 1], f32>
  %y = aten.mul.Tensor(%t, %m) : !aten.tensor<[2, 8, 6, 6], f32>
  func.return %y : !aten.tensor<[2, 8, 6, 6], f32>
}
