// RUN: fx-opt %s -p convert-aten-to-loop --split-input-file > %t
// RUN: filecheck %s < %t
// RUN: filecheck %s --check-prefix=DCE < %t

// max_pool2d_with_indices: a max over the [3, 3] window read at
// 2*o - 1 + k, the padding masked to -inf; the indices are an argmax over
// the same window (the last NaN's position where the window holds one)
// mapped back to the input plane (ih * 11 + iw).

// CHECK-LABEL: func.func @pool
// CHECK:       %v = loop.reduction max [2, 3, 5, 6] [3, 3] : !loop.tensor<[2, 3, 5, 6], f32> {
// CHECK:         loop.load %x[i0, i1, 2*i2 + r0 - 1, 2*i3 + r1 - 1] mask(
// CHECK-NEXT:    arith.constant 0xff800000 : f32
// CHECK-NEXT:    arith.select
// CHECK:       %[[ARG:.*]] = loop.reduction argmax [2, 3, 5, 6] [3, 3] : !loop.tensor<[2, 3, 5, 6], i64> {
// CHECK:       %[[NAN:.*]] = loop.reduction max [2, 3, 5, 6] [3, 3] : !loop.tensor<[2, 3, 5, 6], i64> {
// CHECK:         arith.cmpf uno
// CHECK:       %[[R:.*]] = loop.pointwise [2, 3, 5, 6] : !loop.tensor<[2, 3, 5, 6], i64> {
// CHECK:         loop.load %[[ARG]][i0, i1, i2, i3]
// CHECK:         loop.load %[[NAN]][i0, i1, i2, i3]
// CHECK:       %i = loop.pointwise [2, 3, 5, 6] : !loop.tensor<[2, 3, 5, 6], i64> {
// CHECK-NEXT:  ^
// CHECK-NEXT:    loop.load %[[R]][i0, i1, i2, i3]
// CHECK:         arith.floordivsi
// CHECK:         arith.remsi
// CHECK:         loop.index 11 : i64
// CHECK:       func.return %v, %i

func.func @pool(%x: !aten.tensor<[2, 3, 9, 11], f32>) -> (!aten.tensor<[2, 3, 5, 6], f32>, !aten.tensor<[2, 3, 5, 6], i64>) {
  %v, %i = aten.max_pool2d_with_indices.default(%x, kernel_size = [3, 3], stride = [2, 2], padding = [1, 1]) : (!aten.tensor<[2, 3, 5, 6], f32>, !aten.tensor<[2, 3, 5, 6], i64>)
  func.return %v, %i : !aten.tensor<[2, 3, 5, 6], f32>, !aten.tensor<[2, 3, 5, 6], i64>
}

// -----

// An inference graph that drops the indices never computes them.

// DCE-LABEL: func.func @values_only
// DCE:         loop.reduction max
// DCE-NOT:     argmax
// DCE:         func.return

func.func @values_only(%x: !aten.tensor<[2, 3, 9, 11], bf16>) -> !aten.tensor<[2, 3, 5, 6], bf16> {
  %v, %i = aten.max_pool2d_with_indices.default(%x, kernel_size = [3, 3], stride = [2, 2], padding = [1, 1]) : (!aten.tensor<[2, 3, 5, 6], bf16>, !aten.tensor<[2, 3, 5, 6], i64>)
  func.return %v : !aten.tensor<[2, 3, 5, 6], bf16>
}

// -----

// avg_pool2d: a sum over the window with the padding masked to 0, then a
// pointwise division by ATen's divisor; count_include_pad = false counts the
// window clipped to the input.

// CHECK-LABEL: func.func @avg
// CHECK:       %[[SUM:.*]] = loop.reduction sum [2, 3, 5, 6] [3, 3] : !loop.tensor<[2, 3, 5, 6], f32> {
// CHECK:         loop.load %x[i0, i1, 2*i2 + r0 - 1, 2*i3 + r1 - 1] mask(%[[M:.*]])
// CHECK:         arith.select %[[M]]
// CHECK:       %y = loop.pointwise [2, 3, 5, 6] : !loop.tensor<[2, 3, 5, 6], f32> {
// CHECK:         loop.index ((-max(0, 2*i2 - 1)) + min(9, 2*i2 + 2))*((-max(0, 2*i3 - 1)) + min(11, 2*i3 + 2)) : i64
// CHECK:         loop.load %[[SUM]][i0, i1, i2, i3]
// CHECK:         arith.divf

func.func @avg(%x: !aten.tensor<[2, 3, 9, 11], f32>) -> !aten.tensor<[2, 3, 5, 6], f32> {
  %y = aten.avg_pool2d.default(%x, kernel_size = [3, 3], stride = [2, 2], padding = [1, 1], count_include_pad = false) : !aten.tensor<[2, 3, 5, 6], f32>
  func.return %y : !aten.tensor<[2, 3, 5, 6], f32>
}

// -----

// avg_pool2d_backward as a gather: each input element sums, over the 2x2
// windows that can reach it (from ceil((h + 1 - 2) / 2) = h floordiv 2), the
// gradient of those inside the output that do reach it, divided by 9 (every
// window fits the padded input); bf16 accumulates in f32.

// CHECK-LABEL: func.func @avg_backward
// CHECK:       %[[SUM:.*]] = loop.reduction sum [2, 3, 9, 11] [2, 2] : !loop.tensor<[2, 3, 9, 11], f32> {
// CHECK:         loop.index (-r0) - i2 floordiv 2 + 4 : i64
// CHECK:         loop.index i2 - 2*r0 - 2*(i2 floordiv 2) + 1 : i64
// CHECK:         %[[G:.*]] = loop.load %g[i0, i1, r0 + i2 floordiv 2, r1 + i3 floordiv 2] mask(%[[M:.*]]) : !buffer.buffer<[2, 3, 5, 6], bf16>
// CHECK:         arith.extf %[[G]]
// CHECK:         arith.constant 9.000000e+00 : f32
// CHECK:         arith.divf
// CHECK:       loop.pointwise [2, 3, 9, 11] : !loop.tensor<[2, 3, 9, 11], bf16> {
// CHECK:         arith.truncf

func.func @avg_backward(%g: !aten.tensor<[2, 3, 5, 6], bf16>, %x: !aten.tensor<[2, 3, 9, 11], bf16>) -> !aten.tensor<[2, 3, 9, 11], bf16> {
  %y = aten.avg_pool2d_backward.default(%g, %x, kernel_size = [3, 3], stride = [2, 2], padding = [1, 1], ceil_mode = false, count_include_pad = true) : !aten.tensor<[2, 3, 9, 11], bf16>
  func.return %y : !aten.tensor<[2, 3, 9, 11], bf16>
}

// -----

// max_pool2d_with_indices_backward as a gather: the gradients of the windows
// that can reach the element, where the saved index names it (11*h + w).

// CHECK-LABEL: func.func @max_backward
// CHECK:       %y = loop.reduction sum [2, 3, 9, 11] [2, 2] : !loop.tensor<[2, 3, 9, 11], f32> {
// CHECK:         %[[G:.*]] = loop.load %g[i0, i1, r0 + i2 floordiv 2, r1 + i3 floordiv 2] mask(%[[M:.*]]) :
// CHECK:         %[[I:.*]] = loop.load %i[i0, i1, r0 + i2 floordiv 2, r1 + i3 floordiv 2] mask(%[[M]]) :
// CHECK:         %[[ME:.*]] = loop.index 11*i2 + i3 : i64
// CHECK:         %[[EQ:.*]] = arith.cmpi eq, %[[I]], %[[ME]] : i64
// CHECK:         arith.select %[[EQ]], %[[G]]
// CHECK-NOT:   extern

func.func @max_backward(%g: !aten.tensor<[2, 3, 5, 6], f32>, %x: !aten.tensor<[2, 3, 9, 11], f32>, %i: !aten.tensor<[2, 3, 5, 6], i64>) -> !aten.tensor<[2, 3, 9, 11], f32> {
  %y = aten.max_pool2d_with_indices_backward.default(%g, %x, %i, kernel_size = [3, 3], stride = [2, 2], padding = [1, 1], dilation = [1, 1], ceil_mode = false) : !aten.tensor<[2, 3, 9, 11], f32>
  func.return %y : !aten.tensor<[2, 3, 9, 11], f32>
}

// -----

// Adaptive windows from floor(o*I/O) to ceil((o+1)*I/O): 7 -> 4 rows gives
// windows of 2 and 3, reduced over the largest with the points past each
// window's end masked; the divisor is each window's size.

// CHECK-LABEL: func.func @adaptive_avg
// CHECK:       %[[SUM:.*]] = loop.reduction sum [2, 3, 4, 3] [3, 3] : !loop.tensor<[2, 3, 4, 3], f32> {
// CHECK:         loop.index (-r0) - (7*i2) floordiv 4 + (7*i2 + 10) floordiv 4 - 1 : i64
// CHECK:         loop.load %x[i0, i1, r0 + (7*i2) floordiv 4, r1 + (5*i3) floordiv 3] mask(
// CHECK:       %y = loop.pointwise [2, 3, 4, 3] : !loop.tensor<[2, 3, 4, 3], f32> {
// CHECK:         loop.index ((7*i2) floordiv 4)*((5*i3) floordiv 3)
// CHECK:         arith.divf

func.func @adaptive_avg(%x: !aten.tensor<[2, 3, 7, 5], f32>) -> !aten.tensor<[2, 3, 4, 3], f32> {
  %y = aten._adaptive_avg_pool2d.default(%x, output_size = [4, 3]) : !aten.tensor<[2, 3, 4, 3], f32>
  func.return %y : !aten.tensor<[2, 3, 4, 3], f32>
}

// -----

// Its backward: input row h is in windows floor(4h/7) up to ceil(4(h+1)/7).

// CHECK-LABEL: func.func @adaptive_avg_backward
// CHECK:       %y = loop.reduction sum [2, 3, 7, 5] [2, 2] : !loop.tensor<[2, 3, 7, 5], f32> {
// CHECK:         loop.index (-r0) - (4*i2) floordiv 7 + (4*i2 + 10) floordiv 7 - 1 : i64
// CHECK:         loop.load %g[i0, i1, r0 + (4*i2) floordiv 7, r1 + (3*i3) floordiv 5] mask(
// CHECK:         arith.divf

func.func @adaptive_avg_backward(%g: !aten.tensor<[2, 3, 4, 3], f32>, %x: !aten.tensor<[2, 3, 7, 5], f32>) -> !aten.tensor<[2, 3, 7, 5], f32> {
  %y = aten._adaptive_avg_pool2d_backward.default(%g, %x) : !aten.tensor<[2, 3, 7, 5], f32>
  func.return %y : !aten.tensor<[2, 3, 7, 5], f32>
}

// -----

// adaptive_max_pool2d: max and argmax over the adaptive window, the last NaN's
// position, and the flat index (row start + r0) * 5 + (column start + r1).

// CHECK-LABEL: func.func @adaptive_max
// CHECK:       %v = loop.reduction max [2, 3, 4, 3] [3, 3]
// CHECK:       %[[ARG:.*]] = loop.reduction argmax [2, 3, 4, 3] [3, 3]
// CHECK:       %[[NAN:.*]] = loop.reduction max [2, 3, 4, 3] [3, 3] : !loop.tensor<[2, 3, 4, 3], i64>
// CHECK:       %[[R:.*]] = loop.pointwise [2, 3, 4, 3] : !loop.tensor<[2, 3, 4, 3], i64> {
// CHECK:         loop.load %[[ARG]]
// CHECK:         loop.load %[[NAN]]
// CHECK:       %i = loop.pointwise [2, 3, 4, 3] : !loop.tensor<[2, 3, 4, 3], i64> {
// CHECK:         loop.load %[[R]]
// CHECK:         loop.index (7*i2) floordiv 4 : i64
// CHECK:         loop.index (5*i3) floordiv 3 : i64
// CHECK:         loop.index 5 : i64
// CHECK:       func.return %v, %i

func.func @adaptive_max(%x: !aten.tensor<[2, 3, 7, 5], f32>) -> (!aten.tensor<[2, 3, 4, 3], f32>, !aten.tensor<[2, 3, 4, 3], i64>) {
  %v, %i = aten.adaptive_max_pool2d.default(%x, output_size = [4, 3]) : (!aten.tensor<[2, 3, 4, 3], f32>, !aten.tensor<[2, 3, 4, 3], i64>)
  func.return %v, %i : !aten.tensor<[2, 3, 4, 3], f32>, !aten.tensor<[2, 3, 4, 3], i64>
}

// -----

// Its backward, a gather over the windows that contain the element.

// CHECK-LABEL: func.func @adaptive_max_backward
// CHECK:       %y = loop.reduction sum [2, 3, 7, 5] [2, 2] : !loop.tensor<[2, 3, 7, 5], f32> {
// CHECK:         loop.load %i[i0, i1, r0 + (4*i2) floordiv 7, r1 + (3*i3) floordiv 5] mask(
// CHECK:         loop.index 5*i2 + i3 : i64
// CHECK:         arith.cmpi eq

func.func @adaptive_max_backward(%g: !aten.tensor<[2, 3, 4, 3], f32>, %x: !aten.tensor<[2, 3, 7, 5], f32>, %i: !aten.tensor<[2, 3, 4, 3], i64>) -> !aten.tensor<[2, 3, 7, 5], f32> {
  %y = aten.adaptive_max_pool2d_backward.default(%g, %x, %i) : !aten.tensor<[2, 3, 7, 5], f32>
  func.return %y : !aten.tensor<[2, 3, 7, 5], f32>
}

// -----

// 3-d max pooling: a [2, 2, 2] window, the flat index over the 5x6x7 volume.

// CHECK-LABEL: func.func @max3d
// CHECK:       loop.reduction argmax [1, 2, 3, 4, 4] [2, 2, 2]
// CHECK:         loop.load %x[i0, i1, 2*i2 + r0 - 1, 2*i3 + r1 - 1, 2*i4 + r2 - 1] mask(
// CHECK:       %i = loop.pointwise [1, 2, 3, 4, 4] : !loop.tensor<[1, 2, 3, 4, 4], i64>
// CHECK:         loop.index 6 : i64
// CHECK:         loop.index 7 : i64

func.func @max3d(%x: !aten.tensor<[1, 2, 5, 6, 7], f32>) -> !aten.tensor<[1, 2, 3, 4, 4], i64> {
  %v, %i = aten.max_pool3d_with_indices.default(%x, kernel_size = [2, 2, 2], stride = [2, 2, 2], padding = [1, 1, 1]) : (!aten.tensor<[1, 2, 3, 4, 4], f32>, !aten.tensor<[1, 2, 3, 4, 4], i64>)
  func.return %i : !aten.tensor<[1, 2, 3, 4, 4], i64>
}

// -----

// Windows that tile the input (kernel = stride): each element is in exactly
// one window, the one its position names; no mask.

// CHECK-LABEL: func.func @avg3d_backward
// CHECK:       %y = loop.reduction sum [1, 2, 5, 6, 7] [1, 1, 1] : !loop.tensor<[1, 2, 5, 6, 7], f32> {
// CHECK-NEXT:  ^
// CHECK-NEXT:    loop.load %g[i0, i1, r0 + (i2 + 1) floordiv 2, r1 + (i3 + 1) floordiv 2, r2 + (i4 + 1) floordiv 2] :
// CHECK-NEXT:    arith.constant 8.000000e+00 : f32

func.func @avg3d_backward(%g: !aten.tensor<[1, 2, 3, 4, 4], f32>, %x: !aten.tensor<[1, 2, 5, 6, 7], f32>) -> !aten.tensor<[1, 2, 5, 6, 7], f32> {
  %y = aten.avg_pool3d_backward.default(%g, %x, kernel_size = [2, 2, 2], stride = [2, 2, 2], padding = [1, 1, 1], ceil_mode = false, count_include_pad = true) : !aten.tensor<[1, 2, 5, 6, 7], f32>
  func.return %y : !aten.tensor<[1, 2, 5, 6, 7], f32>
}

// -----

// im2col (nn.Unfold): a pointwise gather; row q = (c*3 + i)*3 + j of the
// column matrix, column l = bh*3 + bw of the 2x3 patch grid, reads
// x[c, 2*bh - 1 + i, 2*bw - 1 + j] (0 in the padding).

// CHECK-LABEL: func.func @im2col
// CHECK:       %y = loop.pointwise [2, 27, 12] : !loop.tensor<[2, 27, 12], f32> {
// CHECK:         loop.load %x[i0, i1 floordiv 9, 2*(i2 floordiv 3) + (i1 floordiv 3) mod 3 - 1, i1 mod 3 + 2*(i2 mod 3) - 1] mask(%[[M:.*]]) :
// CHECK:         arith.select %[[M]]

func.func @im2col(%x: !aten.tensor<[2, 3, 7, 6], f32>) -> !aten.tensor<[2, 27, 12], f32> {
  %y = aten.im2col.default(%x, kernel_size = [3, 3], dilation = [1, 1], padding = [1, 1], stride = [2, 2]) : !aten.tensor<[2, 27, 12], f32>
  func.return %y : !aten.tensor<[2, 27, 12], f32>
}

// -----

// col2im (nn.Fold) as a gather: pixel (h, w) sums the entries of the 2x2 patch
// positions that can cover it, kernel row h + 1 - 2*bh, where that is in
// [0, 3); no scatter.

// CHECK-LABEL: func.func @col2im
// CHECK:       %y = loop.reduction sum [2, 3, 7, 6] [2, 2] : !loop.tensor<[2, 3, 7, 6], f32> {
// CHECK:         loop.index i2 - 2*r0 - 2*(i2 floordiv 2) + 1 : i64
// CHECK:         loop.load %c[i0, 9*i1 + 3*i2 + i3 - 6*r0 - 2*r1 - 6*(i2 floordiv 2) - 2*(i3 floordiv 2) + 4, 3*r0 + r1 + 3*(i2 floordiv 2) + i3 floordiv 2] mask(

func.func @col2im(%c: !aten.tensor<[2, 27, 12], f32>) -> !aten.tensor<[2, 3, 7, 6], f32> {
  %y = aten.col2im.default(%c, output_size = [7, 6], kernel_size = [3, 3], dilation = [1, 1], padding = [1, 1], stride = [2, 2]) : !aten.tensor<[2, 3, 7, 6], f32>
  func.return %y : !aten.tensor<[2, 3, 7, 6], f32>
}

// -----

// A dilated col2im: only patch positions whose offset is a multiple of the
// dilation reach the pixel.

// CHECK-LABEL: func.func @col2im_dilated
// CHECK:       loop.reduction sum [3, 6, 7] [3, 4] : !loop.tensor<[3, 6, 7], f32> {
// CHECK:         loop.index (4 - r0) mod 2 : i64
// CHECK:         arith.cmpi eq
// CHECK:         loop.index (6 - r1) mod 3 : i64
// CHECK:         arith.cmpi eq
// CHECK:         loop.load %c[{{.*}}] mask(

func.func @col2im_dilated(%c: !aten.tensor<[12, 24], bf16>) -> !aten.tensor<[3, 6, 7], bf16> {
  %y = aten.col2im.default(%c, output_size = [6, 7], kernel_size = [2, 2], dilation = [2, 3], padding = [0, 1], stride = [1, 1]) : !aten.tensor<[3, 6, 7], bf16>
  func.return %y : !aten.tensor<[3, 6, 7], bf16>
}
