// RUN: fx-opt %s -p convert-aten-to-loop --split-input-file | filecheck %s

// Row-major reshapes: only the dims of a split or merged group need floordiv/mod.
// CHECK-LABEL: func.func @reshape_split_merge
// CHECK-SAME: (%x: !buffer.buffer<[4, 6], f32>)
// CHECK-NEXT: loop.view %x[i0 floordiv 6, i0 mod 6] : !buffer.buffer<[4, 6], f32> -> !loop.tensor<[24], f32>
// CHECK-NEXT: loop.view %x[2*i0 + i1, i2] : !buffer.buffer<[4, 6], f32> -> !loop.tensor<[2, 2, 6], f32>
// CHECK-NEXT: loop.view %x[2*i0 + i1 floordiv 6, (12*i0 + i1) mod 6] : !buffer.buffer<[4, 6], f32> -> !loop.tensor<[2, 12], f32>
// CHECK-NOT: loop.pointwise
func.func @reshape_split_merge(%x: !aten.tensor<[4, 6], f32>) -> (!aten.tensor<[24], f32>, !aten.tensor<[2, 2, 6], f32>, !aten.tensor<[2, 12], f32>) {
  %flat = aten.view.default(%x, size = [-1]) : !aten.tensor<[24], f32>
  %split = aten.reshape.default(%x, shape = [2, 2, 6]) : !aten.tensor<[2, 2, 6], f32>
  %mixed = aten._unsafe_view.default(%x, size = [2, 12]) : !aten.tensor<[2, 12], f32>
  func.return %flat, %split, %mixed : !aten.tensor<[24], f32>, !aten.tensor<[2, 2, 6], f32>, !aten.tensor<[2, 12], f32>
}

// -----

// Equal symbolic sizes map straight through; only the split dim is index math.
// CHECK-LABEL: func.func @reshape_symbolic
// CHECK-NEXT: loop.view %x[i0, i1, 4*i2 + i3] : !buffer.buffer<[s0, s1, 8], f32> -> !loop.tensor<[s0, s1, 2, 4], f32>
func.func @reshape_symbolic(%x: !aten.tensor<[s0, s1, 8], f32>) -> !aten.tensor<[s0, s1, 2, 4], f32> {
  %y = aten.view.default(%x, size = [s0, s1, 2, 4]) : !aten.tensor<[s0, s1, 2, 4], f32>
  func.return %y : !aten.tensor<[s0, s1, 2, 4], f32>
}

// -----

// CHECK-LABEL: func.func @permute_transpose_t
// CHECK-NEXT: loop.view %x[i1, i2, i0] : !buffer.buffer<[2, 3, 4], f32> -> !loop.tensor<[4, 2, 3], f32>
// CHECK-NEXT: loop.view %x[i0, i2, i1] : !buffer.buffer<[2, 3, 4], f32> -> !loop.tensor<[2, 4, 3], f32>
// CHECK-NEXT: loop.view %m[i1, i0] : !buffer.buffer<[3, 5], f32> -> !loop.tensor<[5, 3], f32>
func.func @permute_transpose_t(%x: !aten.tensor<[2, 3, 4], f32>, %m: !aten.tensor<[3, 5], f32>) -> (!aten.tensor<[4, 2, 3], f32, strides [1, 12, 4]>, !aten.tensor<[2, 4, 3], f32, strides [12, 1, 4]>, !aten.tensor<[5, 3], f32, strides [1, 5]>) {
  %p = aten.permute.default(%x, dims = [2, 0, 1]) : !aten.tensor<[4, 2, 3], f32, strides [1, 12, 4]>
  %t = aten.transpose.int(%x, dim0 = -1, dim1 = 1) : !aten.tensor<[2, 4, 3], f32, strides [12, 1, 4]>
  %mt = aten.t.default(%m) : !aten.tensor<[5, 3], f32, strides [1, 5]>
  func.return %p, %t, %mt : !aten.tensor<[4, 2, 3], f32, strides [1, 12, 4]>, !aten.tensor<[2, 4, 3], f32, strides [12, 1, 4]>, !aten.tensor<[5, 3], f32, strides [1, 5]>
}

// -----

// Broadcast size-1 dims read index 0; new leading dims are dropped.
// CHECK-LABEL: func.func @expand_squeeze_unsqueeze
// CHECK-NEXT: loop.view %x[i1, 0] : !buffer.buffer<[3, 1], f32> -> !loop.tensor<[2, 3, 4], f32>
// CHECK-NEXT: loop.view %x[i0, 0] : !buffer.buffer<[3, 1], f32> -> !loop.tensor<[3], f32>
// CHECK-NEXT: loop.view %x[i0, i2] : !buffer.buffer<[3, 1], f32> -> !loop.tensor<[3, 1, 1], f32>
func.func @expand_squeeze_unsqueeze(%x: !aten.tensor<[3, 1], f32>) -> (!aten.tensor<[2, 3, 4], f32, strides [0, 1, 0]>, !aten.tensor<[3], f32>, !aten.tensor<[3, 1, 1], f32>) {
  %e = aten.expand.default(%x, size = [2, -1, 4]) : !aten.tensor<[2, 3, 4], f32, strides [0, 1, 0]>
  %s = aten.squeeze.dim(%x, dim = -1) : !aten.tensor<[3], f32>
  %u = aten.unsqueeze.default(%x, dim = 1) : !aten.tensor<[3, 1, 1], f32>
  func.return %e, %s, %u : !aten.tensor<[2, 3, 4], f32, strides [0, 1, 0]>, !aten.tensor<[3], f32>, !aten.tensor<[3, 1, 1], f32>
}

// -----

// Steps, huge ends and negative starts/indices as torch normalizes them.
// CHECK-LABEL: func.func @slice_select
// CHECK-NEXT: loop.view %x[i0, 2*i1 + 1] : !buffer.buffer<[s0, 10], f32> -> !loop.tensor<[s0, 4], f32>
// CHECK-NEXT: loop.view %x[i0 + s0 - 2, i1] : !buffer.buffer<[s0, 10], f32> -> !loop.tensor<[2, 10], f32>
// CHECK-NEXT: loop.view %x[i0, 9] : !buffer.buffer<[s0, 10], f32> -> !loop.tensor<[s0], f32>
func.func @slice_select(%x: !aten.tensor<[s0, 10], f32>) -> (!aten.tensor<[s0, 4], f32, strides [10, 2]>, !aten.tensor<[2, 10], f32>, !aten.tensor<[s0], f32, strides [10]>) {
  %a = aten.slice.Tensor(%x, dim = 1, start = 1, end = 9223372036854775807, step = 2) : !aten.tensor<[s0, 4], f32, strides [10, 2]>
  %b = aten.slice.Tensor(%x, start = -2, end = 9223372036854775807) : !aten.tensor<[2, 10], f32>
  %c = aten.select.int(%x, dim = 1, index = -1) : !aten.tensor<[s0], f32, strides [10]>
  func.return %a, %b, %c : !aten.tensor<[s0, 4], f32, strides [10, 2]>, !aten.tensor<[2, 10], f32>, !aten.tensor<[s0], f32, strides [10]>
}

// -----

// A view's source may be a view: no copy in between.
// CHECK-LABEL: func.func @view_of_view
// CHECK-NEXT: %[[T:.*]] = loop.view %x[i1, i0] : !buffer.buffer<[4, 6], f32> -> !loop.tensor<[6, 4], f32>
// CHECK-NEXT: loop.view %[[T]][i0, 2*i1 + i2] : !loop.tensor<[6, 4], f32> -> !loop.tensor<[6, 2, 2], f32>
// CHECK-NEXT: func.return
func.func @view_of_view(%x: !aten.tensor<[4, 6], f32>) -> !aten.tensor<[6, 2, 2], f32, strides [1, 12, 6]> {
  %t = aten.permute.default(%x, dims = [1, 0]) : !aten.tensor<[6, 4], f32, strides [1, 6]>
  %v = aten.view.default(%t, size = [6, 2, 2]) : !aten.tensor<[6, 2, 2], f32, strides [1, 12, 6]>
  func.return %v : !aten.tensor<[6, 2, 2], f32, strides [1, 12, 6]>
}

// -----

// Multi-result views: one loop.view per result.
// CHECK-LABEL: func.func @split_unbind
// CHECK-NEXT: %[[A:.*]] = loop.view %x[i0, i1] : !buffer.buffer<[4, 6], f32> -> !loop.tensor<[4, 2], f32>
// CHECK-NEXT: %[[B:.*]] = loop.view %x[i0, i1 + 2] : !buffer.buffer<[4, 6], f32> -> !loop.tensor<[4, 4], f32>
// CHECK-NEXT: %[[R0:.*]] = loop.view %x[0, i0]
// CHECK-NEXT: loop.view %x[1, i0]
// CHECK-NEXT: loop.view %x[2, i0]
// CHECK-NEXT: %[[R3:.*]] = loop.view %x[3, i0]
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[R0]], %[[R3]]
func.func @split_unbind(%x: !aten.tensor<[4, 6], f32>) -> (!aten.tensor<[4, 2], f32, strides [6, 1]>, !aten.tensor<[4, 4], f32, strides [6, 1]>, !aten.tensor<[6], f32>, !aten.tensor<[6], f32>) {
  %a, %b = aten.split_with_sizes.default(%x, split_sizes = [2, 4], dim = 1) : (!aten.tensor<[4, 2], f32, strides [6, 1]>, !aten.tensor<[4, 4], f32, strides [6, 1]>)
  %r0, %r1, %r2, %r3 = aten.unbind.int(%x) : (!aten.tensor<[6], f32>, !aten.tensor<[6], f32>, !aten.tensor<[6], f32>, !aten.tensor<[6], f32>)
  func.return %a, %b, %r0, %r3 : !aten.tensor<[4, 2], f32, strides [6, 1]>, !aten.tensor<[4, 4], f32, strides [6, 1]>, !aten.tensor<[6], f32>, !aten.tensor<[6], f32>
}

// -----

// as_strided of a nest's fresh row-major result: result index -> storage
// offset -> source index. Of a graph input it is an ATen call: as_strided counts
// from the storage's start, and an input's storage offset is known only at run
// time. diagonal and alias are plain index maps.
// CHECK-LABEL: func.func @as_strided_diagonal_alias
// CHECK: %[[N:.*]] = loop.pointwise [4, 6]
// CHECK: loop.view %[[N]][(i0 + 2*i1 + 1) floordiv 6, (i0 + 2*i1 + 1) mod 6] : !loop.tensor<[4, 6], f32> -> !loop.tensor<[2, 2], f32>
// CHECK-NEXT: buffer.extern "aten.as_strided.default" (%x)
// CHECK: loop.view %x[i0, i0 + 1] : !buffer.buffer<[4, 6], f32> -> !loop.tensor<[3], f32>
// CHECK-NEXT: loop.view %x[i0, i1] : !buffer.buffer<[4, 6], f32> -> !loop.tensor<[4, 6], f32>
func.func @as_strided_diagonal_alias(%x: !aten.tensor<[4, 6], f32>) -> (!aten.tensor<[2, 2], f32, strides [1, 2]>, !aten.tensor<[2, 2], f32, strides [1, 2]>, !aten.tensor<[3], f32, strides [7]>, !aten.tensor<[4, 6], f32>) {
  %n = aten.neg.default(%x) : !aten.tensor<[4, 6], f32>
  %an = aten.as_strided.default(%n, size = [2, 2], stride = [1, 2], storage_offset = 1) : !aten.tensor<[2, 2], f32, strides [1, 2]>
  %a = aten.as_strided.default(%x, size = [2, 2], stride = [1, 2], storage_offset = 1) : !aten.tensor<[2, 2], f32, strides [1, 2]>
  %d = aten.diagonal.default(%x, offset = 1) : !aten.tensor<[3], f32, strides [7]>
  %al = aten.alias.default(%x) : !aten.tensor<[4, 6], f32>
  func.return %an, %a, %d, %al : !aten.tensor<[2, 2], f32, strides [1, 2]>, !aten.tensor<[2, 2], f32, strides [1, 2]>, !aten.tensor<[3], f32, strides [7]>, !aten.tensor<[4, 6], f32>
}

// -----

// A nest's result whose strides differ from row-major only on dimensions of
// size 1 (a keepdim mean over a channels-last tensor) is its own row-major
// data: as_strided of it is an index map (timm ConvNeXt's pooled features).
// CHECK-LABEL: func.func @as_strided_size_one_strides
// CHECK: %[[N:.*]] = loop.pointwise [2, 8, 1, 1]
// CHECK: loop.view %[[N]][i0 + i1 floordiv 8, (8*i0 + i1) mod 8, 0, 0] : !loop.tensor<[2, 8, 1, 1], f32> -> !loop.tensor<[2, 8], f32>
// CHECK-NOT: buffer.extern
func.func @as_strided_size_one_strides(%x: !aten.tensor<[2, 8, 1, 1], f32, strides [8, 1, 8, 8]>) -> !aten.tensor<[2, 8], f32> {
  %n = aten.neg.default(%x) : !aten.tensor<[2, 8, 1, 1], f32, strides [8, 1, 8, 8]>
  %a = aten.as_strided.default(%n, size = [2, 8], stride = [8, 1], storage_offset = 0) : !aten.tensor<[2, 8], f32>
  func.return %a : !aten.tensor<[2, 8], f32>
}

// -----

// as_strided reads storage: a transposed input is not its own row-major data.
// CHECK-LABEL: func.func @as_strided_of_strided_input
// CHECK-NOT: loop.view
// CHECK: buffer.extern "aten.as_strided.default" (%x)
func.func @as_strided_of_strided_input(%x: !aten.tensor<[4, 6], f32, strides [1, 4]>) -> !aten.tensor<[2, 2], f32, strides [1, 2]> {
  %a = aten.as_strided.default(%x, size = [2, 2], stride = [1, 2]) : !aten.tensor<[2, 2], f32, strides [1, 2]>
  func.return %a : !aten.tensor<[2, 2], f32, strides [1, 2]>
}

// -----

// A view of a view: as_strided of a slice (storage is not its own) goes to ATen.
// CHECK-LABEL: func.func @as_strided_of_view
// CHECK-NEXT: %[[S:.*]] = loop.view %x[i0 + 1, i1]
// CHECK-NEXT: buffer.extern "aten.as_strided.default" (%[[S]])
func.func @as_strided_of_view(%x: !aten.tensor<[4, 6], f32>) -> !aten.tensor<[2, 2], f32> {
  %s = aten.slice.Tensor(%x, start = 1, end = 3) : !aten.tensor<[2, 6], f32>
  %a = aten.as_strided.default(%s, size = [2, 2], stride = [2, 1]) : !aten.tensor<[2, 2], f32>
  func.return %a : !aten.tensor<[2, 2], f32>
}
