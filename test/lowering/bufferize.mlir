// RUN: fx-opt %s -p 'bufferize{tf32=true}' --split-input-file | filecheck %s
// bufferize's options (gemm padding, padded results, TF32 layouts, padded
// constants) are checked in bufferize-options.mlir, on the cases they change.

// A nest gets a row-major buffer and writes it (destination-passing style);
// its loads in later bodies read the buffer. A result is allocated directly
// with the layout eager returns.

// CHECK-LABEL: func.func @nests
// CHECK-SAME: -> !buffer.buffer<[4, 8], f32, strides [1, 4]> {
// CHECK-NEXT: %[[E:.*]] = buffer.alloc : !buffer.buffer<[4, 8], f32>
// CHECK-NEXT: loop.pointwise [4, 8] outs(%[[E]] : !buffer.buffer<[4, 8], f32>) {
// CHECK:      %[[S:.*]] = buffer.alloc : !buffer.buffer<[4], f32>
// CHECK-NEXT: loop.reduction sum [4] [8] outs(%[[S]] : !buffer.buffer<[4], f32>) {
// CHECK:        loop.load %[[E]][i0, r0] : !buffer.buffer<[4, 8], f32>
// CHECK:      %[[Y:.*]] = buffer.alloc : !buffer.buffer<[4, 8], f32, strides [1, 4]>
// CHECK-NEXT: loop.pointwise [4, 8] outs(%[[Y]] : !buffer.buffer<[4, 8], f32, strides [1, 4]>) {
// CHECK:        loop.load %[[S]][i0] : !buffer.buffer<[4], f32>
// CHECK:      func.return %[[Y]] : !buffer.buffer<[4, 8], f32, strides [1, 4]>
// CHECK-NOT:  coil.result_types
func.func @nests(%x: !buffer.buffer<[4, 8], f32>) -> !loop.tensor<[4, 8], f32> attributes {coil.result_types = [!aten.tensor<[4, 8], f32, strides [1, 4]>]} {
  %e = loop.pointwise [4, 8] : !loop.tensor<[4, 8], f32> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !buffer.buffer<[4, 8], f32>
    %b = math.exp %a : f32
    loop.yield %b : f32
  }
  %s = loop.reduction sum [4] [8] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %e[i0, r0] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  %y = loop.pointwise [4, 8] : !loop.tensor<[4, 8], f32> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %e[i0, i1] : !loop.tensor<[4, 8], f32>
    %b = loop.load %s[i0] : !loop.tensor<[4], f32>
    %c = arith.divf %a, %b : f32
    loop.yield %c : f32
  }
  func.return %y : !loop.tensor<[4, 8], f32>
}

// -----

// Only a fusion group's results get buffers; its members stay value-semantic.
// Welford's three results get three buffers.

// CHECK-LABEL: func.func @fused
// CHECK-NEXT: %[[M:.*]] = buffer.alloc : !buffer.buffer<[s0], f32, device "cuda:0">
// CHECK-NEXT: loop.fused [s0] [16] outs(%[[M]] : !buffer.buffer<[s0], f32, device "cuda:0">) {
// CHECK-NEXT:   %[[MX:.*]] = loop.reduction max [s0] [16] : !loop.tensor<[s0], f32> {
// CHECK:        loop.reduction sum [s0] [16] : !loop.tensor<[s0], f32> {
// CHECK:          loop.load %[[MX]][i0] : !loop.tensor<[s0], f32>
// CHECK:        loop.yield %{{.*}} : !loop.tensor<[s0], f32>
// CHECK:      %[[MEAN:.*]] = buffer.alloc
// CHECK-NEXT: %[[M2:.*]] = buffer.alloc
// CHECK-NEXT: %[[N:.*]] = buffer.alloc
// CHECK-NEXT: loop.reduction welford [s0] [16] outs(%[[MEAN]], %[[M2]], %[[N]] :
// CHECK:      func.return %[[M]], %[[MEAN]] : !buffer.buffer<[s0], f32, device "cuda:0">, !buffer.buffer<[s0], f32, device "cuda:0">
func.func @fused(%x: !buffer.buffer<[s0, 16], f32, device "cuda:0">) -> (!loop.tensor<[s0], f32>, !loop.tensor<[s0], f32>) attributes {coil.result_types = [!aten.tensor<[s0], f32, device "cuda:0">, !aten.tensor<[s0], f32, device "cuda:0">]} {
  %m = loop.fused [s0] [16] : !loop.tensor<[s0], f32> {
    %mx = loop.reduction max [s0] [16] : !loop.tensor<[s0], f32> {
    ^bb0(%i0: index, %r0: index):
      %a = loop.load %x[i0, r0] : !buffer.buffer<[s0, 16], f32, device "cuda:0">
      loop.yield %a : f32
    }
    %sm = loop.reduction sum [s0] [16] : !loop.tensor<[s0], f32> {
    ^bb0(%i0: index, %r0: index):
      %a = loop.load %x[i0, r0] : !buffer.buffer<[s0, 16], f32, device "cuda:0">
      %b = loop.load %mx[i0] : !loop.tensor<[s0], f32>
      %c = arith.subf %a, %b : f32
      %d = math.exp %c : f32
      loop.yield %d : f32
    }
    loop.yield %sm : !loop.tensor<[s0], f32>
  }
  %mean, %m2, %n = loop.reduction welford [s0] [16] : !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !buffer.buffer<[s0, 16], f32, device "cuda:0">
    loop.yield %a : f32
  }
  func.return %m, %mean : !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32>
}

// -----

// Results that are inputs, or returned twice; scalars pass through.

// CHECK-LABEL: func.func @passthrough
// CHECK-SAME: -> (!buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>, index, i64)
// CHECK-NEXT: %[[K:.*]] = aten.constant 3 : i64
// CHECK-NEXT: %[[Y:.*]] = buffer.alloc : !buffer.buffer<[4], f32>
// CHECK-NOT:  buffer.alloc
// CHECK:      func.return %x, %[[Y]], %[[Y]], %n, %[[K]] :
func.func @passthrough(%x: !buffer.buffer<[4], f32>, %n: index {coil.symbol = #coil.expr<s0>}) -> (!buffer.buffer<[4], f32>, !loop.tensor<[4], f32>, !loop.tensor<[4], f32>, index, i64) attributes {coil.result_types = [!aten.tensor<[4], f32>, !aten.tensor<[4], f32>, !aten.tensor<[4], f32>, index, i64]} {
  %k = aten.constant 3 : i64
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !buffer.buffer<[4], f32>
    loop.yield %a : f32
  }
  func.return %x, %y, %y, %n, %k : !buffer.buffer<[4], f32>, !loop.tensor<[4], f32>, !loop.tensor<[4], f32>, index, i64
}

// -----

// Strided-affine views are buffer.view ops with the computed layout: a
// transpose, a slice (offset), a view of a view, an expand (stride 0), a
// symbolic slice.

// CHECK-LABEL: func.func @views
// CHECK-NOT:  buffer.alloc
// CHECK-NEXT: %[[T:.*]] = buffer.view %x : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[8, 4], f32, strides [1, 8]>
// CHECK-NEXT: %[[S:.*]] = buffer.view %x : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[4, 7], f32, strides [8, 1], offset 1>
// CHECK-NEXT: %[[C:.*]] = buffer.view %[[T]] : !buffer.buffer<[8, 4], f32, strides [1, 8]> -> !buffer.buffer<[7], f32, offset 17>
// CHECK-NEXT: %[[B:.*]] = buffer.view %x : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[3, 4, 8], f32, strides [0, 8, 1]>
// CHECK-NEXT: %[[D:.*]] = buffer.view %z : !buffer.buffer<[s0, s1], f32> -> !buffer.buffer<[s0, s1 - 1], f32, strides [s1, 1], offset 1>
// CHECK-NEXT: func.return %[[T]], %[[S]], %[[C]], %[[B]], %[[D]] :
func.func @views(%x: !buffer.buffer<[4, 8], f32>, %z: !buffer.buffer<[s0, s1], f32>) -> (!loop.tensor<[8, 4], f32>, !loop.tensor<[4, 7], f32>, !loop.tensor<[7], f32>, !loop.tensor<[3, 4, 8], f32>, !loop.tensor<[s0, s1 - 1], f32>) attributes {coil.result_types = [!aten.tensor<[8, 4], f32, strides [1, 8]>, !aten.tensor<[4, 7], f32, strides [8, 1]>, !aten.tensor<[7], f32>, !aten.tensor<[3, 4, 8], f32, strides [0, 8, 1]>, !aten.tensor<[s0, s1 - 1], f32, strides [s1, 1]>]} {
  %t = loop.view %x[i1, i0] : !buffer.buffer<[4, 8], f32> -> !loop.tensor<[8, 4], f32>
  %s = loop.view %x[i0, i1 + 1] : !buffer.buffer<[4, 8], f32> -> !loop.tensor<[4, 7], f32>
  %c = loop.view %t[i0 + 1, 2] : !loop.tensor<[8, 4], f32> -> !loop.tensor<[7], f32>
  %b = loop.view %x[i1, i2] : !buffer.buffer<[4, 8], f32> -> !loop.tensor<[3, 4, 8], f32>
  %d = loop.view %z[i0, i1 + 1] : !buffer.buffer<[s0, s1], f32> -> !loop.tensor<[s0, s1 - 1], f32>
  func.return %t, %s, %c, %b, %d : !loop.tensor<[8, 4], f32>, !loop.tensor<[4, 7], f32>, !loop.tensor<[7], f32>, !loop.tensor<[3, 4, 8], f32>, !loop.tensor<[s0, s1 - 1], f32>
}

// -----

// A view result whose layout differs from eager's is copied into eager's
// (here the nest's own result is returned row-major too, so it keeps that
// layout; returned alone, see @returned_transpose).

// CHECK-LABEL: func.func @view_result_relayout
// CHECK:      %[[E:.*]] = buffer.alloc : !buffer.buffer<[4, 8], f32>
// CHECK:      %[[T:.*]] = buffer.view %[[E]] : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[8, 4], f32, strides [1, 8]>
// CHECK-NEXT: %[[OUT:.*]] = buffer.alloc : !buffer.buffer<[8, 4], f32>
// CHECK-NEXT: loop.pointwise [8, 4] outs(%[[OUT]] : !buffer.buffer<[8, 4], f32>) {
// CHECK-NEXT: ^bb0(%{{.*}}: index, %{{.*}}: index):
// CHECK-NEXT:   %[[V:.*]] = loop.load %[[T]][i0, i1] : !buffer.buffer<[8, 4], f32, strides [1, 8]>
// CHECK-NEXT:   loop.yield %[[V]] : f32
// CHECK:      func.return %[[E]], %[[OUT]] : !buffer.buffer<[4, 8], f32>, !buffer.buffer<[8, 4], f32>
func.func @view_result_relayout(%x: !buffer.buffer<[4, 8], f32>) -> (!loop.tensor<[4, 8], f32>, !loop.tensor<[8, 4], f32>) attributes {coil.result_types = [!aten.tensor<[4, 8], f32>, !aten.tensor<[8, 4], f32>]} {
  %e = loop.pointwise [4, 8] : !loop.tensor<[4, 8], f32> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !buffer.buffer<[4, 8], f32>
    %b = math.exp %a : f32
    loop.yield %b : f32
  }
  %t = loop.view %e[i1, i0] : !loop.tensor<[4, 8], f32> -> !loop.tensor<[8, 4], f32>
  func.return %e, %t : !loop.tensor<[4, 8], f32>, !loop.tensor<[8, 4], f32>
}

// -----

// A view that is not strided (reshape of a transpose) is materialized for an
// extern call; one read only by loads is folded into them.

// CHECK-LABEL: func.func @reshape_of_transpose
// CHECK-NEXT: %[[T:.*]] = buffer.view %x : !buffer.buffer<[4, 6], f32> -> !buffer.buffer<[6, 4], f32, strides [1, 6]>
// CHECK-NEXT: %[[R:.*]] = buffer.alloc : !buffer.buffer<[24], f32>
// CHECK-NEXT: loop.pointwise [24] outs(%[[R]] : !buffer.buffer<[24], f32>) {
// CHECK:        loop.load %[[T]][i0 floordiv 4, i0 mod 4] : !buffer.buffer<[6, 4], f32, strides [1, 6]>
// CHECK:      %[[Q:.*]] = buffer.view %[[R]] : !buffer.buffer<[24], f32> -> !buffer.buffer<[6, 4], f32>
// CHECK-NEXT: %[[MM:.*]] = buffer.extern "aten.mm.default" (%[[Q]], %w) : (!buffer.buffer<[6, 4], f32>, !buffer.buffer<[4, 5], f32>) -> (!buffer.buffer<[6, 5], f32>) {
// CHECK:      %[[N:.*]] = buffer.alloc : !buffer.buffer<[24], f32>
// CHECK:      func.return %[[MM]], %[[N]]
func.func @reshape_of_transpose(%x: !buffer.buffer<[4, 6], f32>, %w: !buffer.buffer<[4, 5], f32>) -> (!loop.tensor<[6, 5], f32>, !loop.tensor<[24], f32>) attributes {coil.result_types = [!aten.tensor<[6, 5], f32>, !aten.tensor<[24], f32>]} {
  %t = loop.view %x[i1, i0] : !buffer.buffer<[4, 6], f32> -> !loop.tensor<[6, 4], f32>
  %r = loop.view %t[i0 floordiv 4, i0 mod 4] : !loop.tensor<[6, 4], f32> -> !loop.tensor<[24], f32>
  %q = loop.view %r[i0 * 4 + i1] : !loop.tensor<[24], f32> -> !loop.tensor<[6, 4], f32>
  %mm = buffer.extern "aten.mm.default" (%q, %w) : (!loop.tensor<[6, 4], f32>, !buffer.buffer<[4, 5], f32>) -> (!loop.tensor<[6, 5], f32>) {
  ^bb0(%a: !aten.tensor<[6, 4], f32>, %b: !aten.tensor<[4, 5], f32>):
    %0 = aten.mm.default(%a, %b) : !aten.tensor<[6, 5], f32>
    buffer.yield %0 : !aten.tensor<[6, 5], f32>
  }
  %n = loop.pointwise [24] : !loop.tensor<[24], f32> {
  ^bb0(%i0: index):
    %a = loop.load %r[i0] : !loop.tensor<[24], f32>
    %b = arith.negf %a : f32
    loop.yield %b : f32
  }
  func.return %mm, %n : !loop.tensor<[6, 5], f32>, !loop.tensor<[24], f32>
}

// -----

// An extern operand already in the layout ATen saw is passed as is; a
// product's matrix operand that is the transpose of the traced row-major one
// is passed as is too (cuBLAS reads either order; the region is retyped);
// results take the layout the call returns.

// CHECK-LABEL: func.func @extern_layouts
// CHECK-NEXT: %[[T:.*]] = buffer.view %x : !buffer.buffer<[4, 6], f32> -> !buffer.buffer<[6, 4], f32, strides [1, 6]>
// CHECK-NOT:  loop.pointwise
// CHECK:      %[[MM:.*]] = buffer.extern "aten.mm.default" (%[[T]], %w) : (!buffer.buffer<[6, 4], f32, strides [1, 6]>, !buffer.buffer<[4, 5], f32>) -> (!buffer.buffer<[6, 5], f32>) {
// CHECK-NEXT: ^bb0(%{{.*}}: !aten.tensor<[6, 4], f32, strides [1, 6]>, %{{.*}}: !aten.tensor<[4, 5], f32>):
// CHECK:      %[[TT:.*]] = buffer.extern "aten.t.default" (%[[MM]]) : (!buffer.buffer<[6, 5], f32>) -> (!buffer.buffer<[5, 6], f32, strides [1, 5]>) {
// CHECK-NOT:  buffer.alloc
// CHECK:      func.return %[[TT]] : !buffer.buffer<[5, 6], f32, strides [1, 5]>
func.func @extern_layouts(%x: !buffer.buffer<[4, 6], f32>, %w: !buffer.buffer<[4, 5], f32>) -> !loop.tensor<[5, 6], f32> attributes {coil.result_types = [!aten.tensor<[5, 6], f32, strides [1, 5]>]} {
  %t = loop.view %x[i1, i0] : !buffer.buffer<[4, 6], f32> -> !loop.tensor<[6, 4], f32>
  %mm = buffer.extern "aten.mm.default" (%t, %w) : (!loop.tensor<[6, 4], f32>, !buffer.buffer<[4, 5], f32>) -> (!loop.tensor<[6, 5], f32>) {
  ^bb0(%a: !aten.tensor<[6, 4], f32>, %b: !aten.tensor<[4, 5], f32>):
    %0 = aten.mm.default(%a, %b) : !aten.tensor<[6, 5], f32>
    buffer.yield %0 : !aten.tensor<[6, 5], f32>
  }
  %tt = buffer.extern "aten.t.default" (%mm) : (!loop.tensor<[6, 5], f32>) -> (!loop.tensor<[5, 6], f32>) {
  ^bb0(%a: !aten.tensor<[6, 5], f32>):
    %0 = aten.t.default(%a) : !aten.tensor<[5, 6], f32, strides [1, 5]>
    buffer.yield %0 : !aten.tensor<[5, 6], f32, strides [1, 5]>
  }
  func.return %tt : !loop.tensor<[5, 6], f32>
}

// -----

// A nest without its unit batch range (loop-fuse squeezes it), viewed back to
// 4-D for a convolution that reads NHWC: it is stored in the layout the call
// wants through the view, so the call reads it as is (no copy in front).

// CHECK-LABEL: func.func @extern_layout_through_a_view
// CHECK-NEXT: %[[P:.*]] = buffer.alloc : !buffer.buffer<[4, 3, 5], f32, strides [1, 20, 4]>
// CHECK-NEXT: loop.pointwise [4, 3, 5] outs(%[[P]] : !buffer.buffer<[4, 3, 5], f32, strides [1, 20, 4]>) {
// CHECK:      %[[V:.*]] = buffer.view %[[P]] : !buffer.buffer<[4, 3, 5], f32, strides [1, 20, 4]> -> !buffer.buffer<[1, 4, 3, 5], f32, strides [60, 1, 20, 4]>
// CHECK-NEXT: buffer.extern "aten.convolution.default" (%[[V]], %w)
func.func @extern_layout_through_a_view(%x: !buffer.buffer<[4, 3, 5], f32>, %w: !buffer.buffer<[2, 4, 1, 1], f32, strides [4, 1, 4, 4]>) -> !loop.tensor<[1, 2, 3, 5], f32> attributes {coil.result_types = [!aten.tensor<[1, 2, 3, 5], f32, strides [30, 1, 10, 2]>]} {
  %p = loop.pointwise [4, 3, 5] : !loop.tensor<[4, 3, 5], f32> {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %0 = loop.load %x[i0, i1, i2] : !buffer.buffer<[4, 3, 5], f32>
    loop.yield %0 : f32
  }
  %v = loop.view %p[i1, i2, i3] : !loop.tensor<[4, 3, 5], f32> -> !loop.tensor<[1, 4, 3, 5], f32>
  %c = buffer.extern "aten.convolution.default" (%v, %w) : (!loop.tensor<[1, 4, 3, 5], f32>, !buffer.buffer<[2, 4, 1, 1], f32, strides [4, 1, 4, 4]>) -> (!loop.tensor<[1, 2, 3, 5], f32>) {
  ^bb0(%a: !aten.tensor<[1, 4, 3, 5], f32, strides [60, 1, 20, 4]>, %b: !aten.tensor<[2, 4, 1, 1], f32, strides [4, 1, 4, 4]>):
    %0 = aten.convolution.default(%a, %b, none, stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[1, 2, 3, 5], f32, strides [30, 1, 10, 2]>
    buffer.yield %0 : !aten.tensor<[1, 2, 3, 5], f32, strides [30, 1, 10, 2]>
  }
  func.return %c : !loop.tensor<[1, 2, 3, 5], f32>
}

// -----

// Mutation of a graph input: the write goes last, after every read of it;
// reads after the copy read the copied value; a result that aliases the input
// through a view made before the copy keeps the value it had.

// CHECK-LABEL: func.func @mutation
// CHECK-NEXT: %[[NEW:.*]] = buffer.alloc : !buffer.buffer<[4], f32>
// CHECK-NEXT: loop.pointwise [4] outs(%[[NEW]] : !buffer.buffer<[4], f32>) {
// CHECK:      %[[V:.*]] = buffer.view %rm : !buffer.buffer<[4], f32> -> !buffer.buffer<[4], f32>
// CHECK-NEXT: %[[Y:.*]] = buffer.alloc : !buffer.buffer<[4], f32>
// CHECK-NEXT: loop.pointwise [4] outs(%[[Y]] : !buffer.buffer<[4], f32>) {
// CHECK:        loop.load %[[NEW]][i0]
// CHECK-NOT:  loop.copy
// CHECK:      %[[OLD:.*]] = buffer.alloc : !buffer.buffer<[4], f32>
// CHECK-NEXT: loop.pointwise [4] outs(%[[OLD]] : !buffer.buffer<[4], f32>) {
// CHECK:        loop.load %[[V]][i0]
// CHECK:      loop.pointwise [4] outs(%rm : !buffer.buffer<[4], f32>) {
// CHECK:        loop.load %[[NEW]][i0]
// CHECK:      func.return %[[Y]], %[[OLD]], %[[NEW]] :
func.func @mutation(%x: !buffer.buffer<[4], f32>, %rm: !buffer.buffer<[4], f32>) -> (!loop.tensor<[4], f32>, !loop.tensor<[4], f32>, !buffer.buffer<[4], f32>) attributes {coil.result_types = [!aten.tensor<[4], f32>, !aten.tensor<[4], f32>, !aten.tensor<[4], f32>]} {
  %new = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %rm[i0] : !buffer.buffer<[4], f32>
    %b = loop.load %x[i0] : !buffer.buffer<[4], f32>
    %c = arith.addf %a, %b : f32
    loop.yield %c : f32
  }
  %v = loop.view %rm[i0] : !buffer.buffer<[4], f32> -> !loop.tensor<[4], f32>
  loop.copy %new, %rm : !loop.tensor<[4], f32>, !buffer.buffer<[4], f32>
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %rm[i0] : !buffer.buffer<[4], f32>
    %b = math.exp %a : f32
    loop.yield %b : f32
  }
  func.return %y, %v, %rm : !loop.tensor<[4], f32>, !loop.tensor<[4], f32>, !buffer.buffer<[4], f32>
}

// -----

// Negative cases: a view with a negative stride (flip) is not a buffer.view
// but a copy; a non-strided view read only by loads is folded into them.

// CHECK-LABEL: func.func @not_strided
// CHECK-NOT:  buffer.view
// CHECK:      %[[F:.*]] = buffer.alloc : !buffer.buffer<[8], f32>
// CHECK-NEXT: loop.pointwise [8] outs(%[[F]] : !buffer.buffer<[8], f32>) {
// CHECK:        loop.load %x[7 - i0] : !buffer.buffer<[8], f32>
// CHECK:      %[[G:.*]] = buffer.alloc : !buffer.buffer<[8], f32>
// CHECK-NEXT: loop.pointwise [8] outs(%[[G]] : !buffer.buffer<[8], f32>) {
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   loop.load %y[i0 floordiv 4, i0 mod 4] : !buffer.buffer<[2, 4], f32, strides [1, 2]>
// CHECK:      func.return %[[F]], %[[G]]
func.func @not_strided(%x: !buffer.buffer<[8], f32>, %y: !buffer.buffer<[2, 4], f32, strides [1, 2]>) -> (!loop.tensor<[8], f32>, !loop.tensor<[8], f32>) attributes {coil.result_types = [!aten.tensor<[8], f32>, !aten.tensor<[8], f32>]} {
  %f = loop.view %x[7 - i0] : !buffer.buffer<[8], f32> -> !loop.tensor<[8], f32>
  %r = loop.view %y[i0 floordiv 4, i0 mod 4] : !buffer.buffer<[2, 4], f32, strides [1, 2]> -> !loop.tensor<[8], f32>
  %g = loop.pointwise [8] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %a = loop.load %r[i0] : !loop.tensor<[8], f32>
    loop.yield %a : f32
  }
  func.return %f, %g : !loop.tensor<[8], f32>, !loop.tensor<[8], f32>
}

// -----

// A symbolic offset that is non-negative for every size (sizes are >= 2).

// CHECK-LABEL: func.func @last_column
// CHECK-NEXT: %[[D:.*]] = buffer.view %z : !buffer.buffer<[s0, s1], f32> -> !buffer.buffer<[s0], f32, strides [s1], offset s1 - 1>
// CHECK-NEXT: func.return %[[D]]
func.func @last_column(%z: !buffer.buffer<[s0, s1], f32>) -> !loop.tensor<[s0], f32> {
  %d = loop.view %z[i0, s1 - 1] : !buffer.buffer<[s0, s1], f32> -> !loop.tensor<[s0], f32>
  func.return %d : !loop.tensor<[s0], f32>
}

// -----

// A reshape of a row-major buffer is strided once floordiv/mod pairs combine
// (8*(i0 floordiv 4) ... = 2*i0), or vanish over the ranges (i1 mod 8 = i1).

// CHECK-LABEL: func.func @reshape_contiguous
// CHECK-NEXT: %[[R:.*]] = buffer.view %x : !buffer.buffer<[3, 4, 2], f32> -> !buffer.buffer<[12, 2], f32>
// CHECK-NEXT: %[[S:.*]] = buffer.view %x : !buffer.buffer<[3, 4, 2], f32> -> !buffer.buffer<[3, 8], f32>
// CHECK-NOT:  buffer.alloc
// CHECK:      func.return %[[R]], %[[S]]
func.func @reshape_contiguous(%x: !buffer.buffer<[3, 4, 2], f32>) -> (!loop.tensor<[12, 2], f32>, !loop.tensor<[3, 8], f32>) attributes {coil.result_types = [!aten.tensor<[12, 2], f32>, !aten.tensor<[3, 8], f32>]} {
  %r = loop.view %x[i0 floordiv 4, i0 mod 4, i1] : !buffer.buffer<[3, 4, 2], f32> -> !loop.tensor<[12, 2], f32>
  %s = loop.view %x[i0, i1 floordiv 2, i1 mod 2] : !buffer.buffer<[3, 4, 2], f32> -> !loop.tensor<[3, 8], f32>
  func.return %r, %s : !loop.tensor<[12, 2], f32>, !loop.tensor<[3, 8], f32>
}

// -----

// A nest whose transpose is returned ((x.t() + y).relu().t() with eager's
// row-major result) is stored column-major, so the returned view is already in
// eager's layout: no copy nest.
// CHECK-LABEL: func.func @returned_transpose
// CHECK:      %[[R:.*]] = buffer.alloc : !buffer.buffer<[8, 4], f32, strides [1, 8]>
// CHECK:      loop.pointwise [8, 4] outs(%[[R]]
// CHECK:      %[[T:.*]] = buffer.view %[[R]] : {{.*}} -> !buffer.buffer<[4, 8], f32>
// CHECK-NOT:  loop.pointwise
// CHECK:      func.return %[[T]]
func.func @returned_transpose(%x: !buffer.buffer<[4, 8], f32>) -> !loop.tensor<[4, 8], f32> attributes {coil.result_types = [!aten.tensor<[4, 8], f32>]} {
  %r = loop.pointwise [8, 4] : !loop.tensor<[8, 4], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i1, i0] : !buffer.buffer<[4, 8], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %t = loop.view %r[i1, i0] : !loop.tensor<[8, 4], f32> -> !loop.tensor<[4, 8], f32>
  func.return %t : !loop.tensor<[4, 8], f32>
}

// -----

// A column-major B (a Linear's weight.t(), strides [1, 64]) is padded in its
// own layout: the [50, 64] weight behind it gets two zero rows joined to it (a
// contiguous copy), and the product reads the transpose, strides [1, 64].
// CHECK-LABEL: func.func @padded_gemm_column_major
// CHECK:      %[[WP:.*]] = buffer.extern "aten.transpose.int" (%w) : {{.*}} -> (!buffer.buffer<[64, 52], f32, strides [1, 64], device "cuda:0">)
// CHECK:        aten.transpose.int(%{{.*}}, dim0 = 0, dim1 = 1) : !aten.tensor<[50, 64], f32, device "cuda:0">
// CHECK-NEXT:   aten.new_zeros.default(%{{.*}}, size = [2, 64]) : !aten.tensor<[2, 64], f32, device "cuda:0">
// CHECK-NEXT:   aten.cat.default([%{{.*}}, %{{.*}}]) : !aten.tensor<[52, 64], f32, device "cuda:0">
// CHECK-NEXT:   aten.transpose.int(%{{.*}}, dim0 = 0, dim1 = 1) : !aten.tensor<[64, 52], f32, strides [1, 64], device "cuda:0">
// CHECK:      buffer.extern "aten.mm.default" (%x, %[[WP]])
// CHECK:        aten.mm.default(%{{.*}}, %{{.*}}) : !aten.tensor<[1024, 52], f32, device "cuda:0">
func.func @padded_gemm_column_major(%x: !buffer.buffer<[1024, 64], f32, device "cuda:0">, %w: !buffer.buffer<[64, 50], f32, strides [1, 64], device "cuda:0">) -> !loop.tensor<[1024, 50], f32> attributes {coil.result_types = [!aten.tensor<[1024, 50], f32, device "cuda:0">]} {
  %mm = buffer.extern "aten.mm.default" (%x, %w) : (!buffer.buffer<[1024, 64], f32, device "cuda:0">, !buffer.buffer<[64, 50], f32, strides [1, 64], device "cuda:0">) -> (!loop.tensor<[1024, 50], f32>) {
  ^bb0(%xa: !aten.tensor<[1024, 64], f32, device "cuda:0">, %wa: !aten.tensor<[64, 50], f32, strides [1, 64], device "cuda:0">):
    %m = aten.mm.default(%xa, %wa) : !aten.tensor<[1024, 50], f32, device "cuda:0">
    buffer.yield %m : !aten.tensor<[1024, 50], f32, device "cuda:0">
  }
  func.return %mm : !loop.tensor<[1024, 50], f32>
}

// -----

// Aligned rows (64 f32) or a CPU product: no padding.
// CHECK-LABEL: func.func @aligned_gemms
// CHECK-NOT:  mm.out
// CHECK:      func.return
func.func @aligned_gemms(%x: !buffer.buffer<[8, 64], f32, device "cuda:0">, %w: !buffer.buffer<[64, 64], f32, device "cuda:0">, %y: !buffer.buffer<[8, 64], f32>, %v: !buffer.buffer<[64, 50], f32>) -> (!loop.tensor<[8, 64], f32>, !loop.tensor<[8, 50], f32>) {
  %a = buffer.extern "aten.mm.default" (%x, %w) : (!buffer.buffer<[8, 64], f32, device "cuda:0">, !buffer.buffer<[64, 64], f32, device "cuda:0">) -> (!loop.tensor<[8, 64], f32>) {
  ^bb0(%xa: !aten.tensor<[8, 64], f32, device "cuda:0">, %wa: !aten.tensor<[64, 64], f32, device "cuda:0">):
    %m = aten.mm.default(%xa, %wa) : !aten.tensor<[8, 64], f32, device "cuda:0">
    buffer.yield %m : !aten.tensor<[8, 64], f32, device "cuda:0">
  }
  %b = buffer.extern "aten.mm.default" (%y, %v) : (!buffer.buffer<[8, 64], f32>, !buffer.buffer<[64, 50], f32>) -> (!loop.tensor<[8, 50], f32>) {
  ^bb0(%ya: !aten.tensor<[8, 64], f32>, %va: !aten.tensor<[64, 50], f32>):
    %m = aten.mm.default(%ya, %va) : !aten.tensor<[8, 50], f32>
    buffer.yield %m : !aten.tensor<[8, 50], f32>
  }
  func.return %a, %b : !loop.tensor<[8, 64], f32>, !loop.tensor<[8, 50], f32>
}

// -----

// Mutated inputs written in place (an optimizer step): the nest computing an
// input's new value writes the input's buffer -- no buffer of its own, no copy
// kernel -- where nothing after it reads the input and it reads the input only
// at the point it writes. In a group, members up to the one yielding the value
// may read the input (they run before its store in each program): the new %m
// reads %m, the new %p (an earlier member) reads %m too.

// CHECK-LABEL: func.func @in_place
// CHECK-NOT:     buffer.alloc
// CHECK:         loop.fused [16] [] outs(%p, %m : !buffer.buffer<[16], f32>, !buffer.buffer<[16], f32>) {
// CHECK-NOT:     loop.pointwise [16] outs
// CHECK:         func.return
func.func @in_place(%p: !buffer.buffer<[16], f32>, %g: !buffer.buffer<[16], f32>, %m: !buffer.buffer<[16], f32>) attributes {coil.result_types = []} {
  %p_new, %m_new = loop.fused [16] [] : !loop.tensor<[16], f32>, !loop.tensor<[16], f32> {
    %a = loop.pointwise [16] : !loop.tensor<[16], f32> {
    ^bb0(%i0: index):
      %0 = loop.load %p[i0] : !buffer.buffer<[16], f32>
      %1 = loop.load %m[i0] : !buffer.buffer<[16], f32>
      %2 = arith.subf %0, %1 : f32
      loop.yield %2 : f32
    }
    %b = loop.pointwise [16] : !loop.tensor<[16], f32> {
    ^bb0(%i0: index):
      %0 = loop.load %m[i0] : !buffer.buffer<[16], f32>
      %1 = loop.load %g[i0] : !buffer.buffer<[16], f32>
      %2 = arith.addf %0, %1 : f32
      loop.yield %2 : f32
    }
    loop.yield %a, %b : !loop.tensor<[16], f32>, !loop.tensor<[16], f32>
  }
  loop.copy %p_new, %p : !loop.tensor<[16], f32>, !buffer.buffer<[16], f32>
  loop.copy %m_new, %m : !loop.tensor<[16], f32>, !buffer.buffer<[16], f32>
  func.return
}

// -----

// A scatter updates its out in place after the out holds a copy of its into
// tensor: a graph input is copied into a new buffer first.
// CHECK-LABEL: func.func @scatter_copies_input
// CHECK:      %[[Y:.*]] = buffer.alloc : !buffer.buffer<[5], f32>
// CHECK-NEXT: loop.pointwise [5] outs(%[[Y]] : !buffer.buffer<[5], f32>) {
// CHECK:        loop.load %x[i0]
// CHECK:      loop.scatter add [3] at [t0] outs(%[[Y]] : !buffer.buffer<[5], f32>) {
// CHECK:      func.return %[[Y]]
func.func @scatter_copies_input(%x: !buffer.buffer<[5], f32>, %i: !buffer.buffer<[3], i64>) -> !loop.tensor<[5], f32> attributes {coil.result_types = [!aten.tensor<[5], f32>]} {
  %y = loop.scatter add [3] into(%x : !buffer.buffer<[5], f32>) at [t0] : !loop.tensor<[5], f32> {
  ^bb0(%i0: index):
    %t = loop.load %i[i0] : !buffer.buffer<[3], i64>
    %one = arith.constant 1.0 : f32
    loop.yield %one, %t : f32, i64
  }
  func.return %y : !loop.tensor<[5], f32>
}

// -----

// Not in place: a member after the one yielding the new %m reads the old %m
// (it would see the new one), and a later nest reads the old %g (written in
// place, the earlier nest would have overwritten it). Both keep their buffer
// and the copy at the end; the new %p (the last member) is written in place.

// CHECK-LABEL: func.func @not_in_place
// CHECK:         %[[M:.*]] = buffer.alloc : !buffer.buffer<[16], f32>
// CHECK-NEXT:    loop.fused [16] [] outs(%[[M]], %p : !buffer.buffer<[16], f32>, !buffer.buffer<[16], f32>) {
// CHECK:         %[[G:.*]] = buffer.alloc : !buffer.buffer<[16], f32>
// CHECK-NEXT:    loop.pointwise [16] outs(%[[G]] : !buffer.buffer<[16], f32>) {
// CHECK:         %[[Y:.*]] = buffer.alloc : !buffer.buffer<[16], f32>
// CHECK-NEXT:    loop.pointwise [16] outs(%[[Y]] : !buffer.buffer<[16], f32>) {
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      loop.load %g[i0]
// CHECK:         loop.pointwise [16] outs(%m : !buffer.buffer<[16], f32>) {
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      loop.load %[[M]][i0]
// CHECK:         loop.pointwise [16] outs(%g : !buffer.buffer<[16], f32>) {
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      loop.load %[[G]][i0]
// CHECK:         func.return %[[Y]]
func.func @not_in_place(%p: !buffer.buffer<[16], f32>, %g: !buffer.buffer<[16], f32>, %m: !buffer.buffer<[16], f32>) -> !loop.tensor<[16], f32> attributes {coil.result_types = [!aten.tensor<[16], f32>]} {
  %m_new, %p_new = loop.fused [16] [] : !loop.tensor<[16], f32>, !loop.tensor<[16], f32> {
    %b = loop.pointwise [16] : !loop.tensor<[16], f32> {
    ^bb0(%i0: index):
      %0 = loop.load %m[i0] : !buffer.buffer<[16], f32>
      %1 = math.exp %0 : f32
      loop.yield %1 : f32
    }
    %a = loop.pointwise [16] : !loop.tensor<[16], f32> {
    ^bb0(%i0: index):
      %0 = loop.load %p[i0] : !buffer.buffer<[16], f32>
      %1 = loop.load %m[i0] : !buffer.buffer<[16], f32>
      %2 = arith.subf %0, %1 : f32
      loop.yield %2 : f32
    }
    loop.yield %b, %a : !loop.tensor<[16], f32>, !loop.tensor<[16], f32>
  }
  %g_new = loop.pointwise [16] : !loop.tensor<[16], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %g[i0] : !buffer.buffer<[16], f32>
    %1 = math.sqrt %0 : f32
    loop.yield %1 : f32
  }
  %y = loop.pointwise [16] : !loop.tensor<[16], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %g[i0] : !buffer.buffer<[16], f32>
    %1 = arith.negf %0 : f32
    loop.yield %1 : f32
  }
  loop.copy %p_new, %p : !loop.tensor<[16], f32>, !buffer.buffer<[16], f32>
  loop.copy %m_new, %m : !loop.tensor<[16], f32>, !buffer.buffer<[16], f32>
  loop.copy %g_new, %g : !loop.tensor<[16], f32>, !buffer.buffer<[16], f32>
  func.return %y : !loop.tensor<[16], f32>
}

// -----

// A nest (or scatter) whose one reader is a scatter's into: the scatter updates
// the buffer that nest wrote, no copy (zeros(...).index_put_(...)).
// CHECK-LABEL: func.func @scatter_in_place
// CHECK:      %[[Z:.*]] = buffer.alloc : !buffer.buffer<[5], f32>
// CHECK-NEXT: loop.pointwise [5] outs(%[[Z]] : !buffer.buffer<[5], f32>) {
// CHECK:      loop.scatter store [3] at [t0] outs(%[[Z]] : !buffer.buffer<[5], f32>) {
// CHECK:      loop.scatter add [3] at [t0] outs(%[[Z]] : !buffer.buffer<[5], f32>) {
// CHECK-NOT:  buffer.alloc
// CHECK:      func.return %[[Z]]
func.func @scatter_in_place(%i: !buffer.buffer<[3], i64>) -> !loop.tensor<[5], f32> attributes {coil.result_types = [!aten.tensor<[5], f32>]} {
  %z = loop.pointwise [5] : !loop.tensor<[5], f32> {
  ^bb0(%i0: index):
    %c = arith.constant 0.0 : f32
    loop.yield %c : f32
  }
  %a = loop.scatter store [3] into(%z : !loop.tensor<[5], f32>) at [t0] : !loop.tensor<[5], f32> {
  ^bb0(%i0: index):
    %t = loop.load %i[i0] : !buffer.buffer<[3], i64>
    %c = arith.constant 2.0 : f32
    loop.yield %c, %t : f32, i64
  }
  %b = loop.scatter add [3] into(%a : !loop.tensor<[5], f32>) at [t0] : !loop.tensor<[5], f32> {
  ^bb0(%i0: index):
    %t = loop.load %i[i0] : !buffer.buffer<[3], i64>
    %c = arith.constant 1.0 : f32
    loop.yield %c, %t : f32, i64
  }
  func.return %b : !loop.tensor<[5], f32>
}

// -----

// Not in place either: a nest reading the input at another point (a flip:
// element i is written by one program and read by another), and a new value
// that is also returned (an output may not alias an input).

// CHECK-LABEL: func.func @flipped_or_returned
// CHECK:         %[[F:.*]] = buffer.alloc : !buffer.buffer<[8], f32>
// CHECK-NEXT:    loop.pointwise [8] outs(%[[F]] : !buffer.buffer<[8], f32>) {
// CHECK:         %[[R:.*]] = buffer.alloc : !buffer.buffer<[8], f32>
// CHECK-NEXT:    loop.pointwise [8] outs(%[[R]] : !buffer.buffer<[8], f32>) {
// CHECK:         loop.pointwise [8] outs(%x : !buffer.buffer<[8], f32>) {
// CHECK:         loop.pointwise [8] outs(%y : !buffer.buffer<[8], f32>) {
// CHECK:         func.return %[[R]]
func.func @flipped_or_returned(%x: !buffer.buffer<[8], f32>, %y: !buffer.buffer<[8], f32>) -> !loop.tensor<[8], f32> attributes {coil.result_types = [!aten.tensor<[8], f32>]} {
  %f = loop.pointwise [8] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %x[7 - i0] : !buffer.buffer<[8], f32>
    loop.yield %0 : f32
  }
  %r = loop.pointwise [8] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %y[i0] : !buffer.buffer<[8], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  loop.copy %f, %x : !loop.tensor<[8], f32>, !buffer.buffer<[8], f32>
  loop.copy %r, %y : !loop.tensor<[8], f32>, !buffer.buffer<[8], f32>
  func.return %r : !loop.tensor<[8], f32>
}

// -----

// The old value is read elsewhere (returned): the scatter updates a copy.
// CHECK-LABEL: func.func @scatter_copies_what_others_read
// CHECK:      %[[Z:.*]] = buffer.alloc
// CHECK:      %[[A:.*]] = buffer.alloc
// CHECK-NEXT: loop.pointwise [5] outs(%[[A]] : !buffer.buffer<[5], f32>) {
// CHECK:        loop.load %[[Z]][i0]
// CHECK:      loop.scatter store [3] at [t0] outs(%[[A]] : !buffer.buffer<[5], f32>) {
// CHECK:      func.return %[[A]], %[[Z]]
func.func @scatter_copies_what_others_read(%i: !buffer.buffer<[3], i64>) -> (!loop.tensor<[5], f32>, !loop.tensor<[5], f32>) attributes {coil.result_types = [!aten.tensor<[5], f32>, !aten.tensor<[5], f32>]} {
  %z = loop.pointwise [5] : !loop.tensor<[5], f32> {
  ^bb0(%i0: index):
    %c = arith.constant 0.0 : f32
    loop.yield %c : f32
  }
  %a = loop.scatter store [3] into(%z : !loop.tensor<[5], f32>) at [t0] : !loop.tensor<[5], f32> {
  ^bb0(%i0: index):
    %t = loop.load %i[i0] : !buffer.buffer<[3], i64>
    %c = arith.constant 2.0 : f32
    loop.yield %c, %t : f32, i64
  }
  func.return %a, %z : !loop.tensor<[5], f32>, !loop.tensor<[5], f32>
}

// -----

// ATen's pooling and upsampling kernels take a channels-last input as it is
// and return channels-last results (torch's meta function says which): the
// NHWC operand of avg_pool2d (ResNet-D's shortcut) is passed uncopied, the
// call's result is NHWC, and a convolution after it reads it as it is. A
// pooled result that is returned is still copied into eager's layout.
// CHECK-LABEL: func.func @pool_follows_channels_last
// CHECK-NOT:  loop.pointwise
// CHECK:      %[[P:.*]] = buffer.extern "aten.avg_pool2d.default" (%x) : (!buffer.buffer<[2, 4, 6, 6], f32, strides [144, 1, 24, 4]>) -> (!buffer.buffer<[2, 4, 3, 3], f32, strides [36, 1, 12, 4]>)
// CHECK-NEXT: ^bb0(%{{.*}}: !aten.tensor<[2, 4, 6, 6], f32, strides [144, 1, 24, 4]>):
// CHECK-NEXT:   aten.avg_pool2d.default(%{{.*}}) : !aten.tensor<[2, 4, 3, 3], f32, strides [36, 1, 12, 4]>
// CHECK-NOT:  loop.pointwise
// CHECK:      buffer.extern "aten.convolution.default" (%[[P]], %w)
// CHECK:      %[[C:.*]] = buffer.alloc : !buffer.buffer<[2, 4, 3, 3], f32>
// CHECK-NEXT: loop.pointwise [2, 4, 3, 3] outs(%[[C]]
// CHECK:      func.return %{{.*}}, %[[C]]
func.func @pool_follows_channels_last(%x: !buffer.buffer<[2, 4, 6, 6], f32, strides [144, 1, 24, 4]>, %w: !buffer.buffer<[8, 4, 1, 1], f32, strides [4, 1, 4, 4]>) -> (!loop.tensor<[2, 8, 3, 3], f32>, !loop.tensor<[2, 4, 3, 3], f32>) attributes {coil.result_types = [!aten.tensor<[2, 8, 3, 3], f32, strides [72, 1, 24, 8]>, !aten.tensor<[2, 4, 3, 3], f32>]} {
  %p = buffer.extern "aten.avg_pool2d.default" (%x) : (!buffer.buffer<[2, 4, 6, 6], f32, strides [144, 1, 24, 4]>) -> (!loop.tensor<[2, 4, 3, 3], f32>) {
  ^bb0(%xa: !aten.tensor<[2, 4, 6, 6], f32>):
    %0 = aten.avg_pool2d.default(%xa, kernel_size = [2, 2], stride = [2, 2], ceil_mode = true, count_include_pad = false) : !aten.tensor<[2, 4, 3, 3], f32>
    buffer.yield %0 : !aten.tensor<[2, 4, 3, 3], f32>
  }
  %c = buffer.extern "aten.convolution.default" (%p, %w) : (!loop.tensor<[2, 4, 3, 3], f32>, !buffer.buffer<[8, 4, 1, 1], f32, strides [4, 1, 4, 4]>) -> (!loop.tensor<[2, 8, 3, 3], f32>) {
  ^bb0(%pa: !aten.tensor<[2, 4, 3, 3], f32, strides [36, 1, 12, 4]>, %wa: !aten.tensor<[8, 4, 1, 1], f32, strides [4, 1, 4, 4]>):
    %1 = aten.convolution.default(%pa, %wa, none, stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[2, 8, 3, 3], f32, strides [72, 1, 24, 8]>
    buffer.yield %1 : !aten.tensor<[2, 8, 3, 3], f32, strides [72, 1, 24, 8]>
  }
  func.return %c, %p : !loop.tensor<[2, 8, 3, 3], f32>, !loop.tensor<[2, 4, 3, 3], f32>
}

// -----

// A static KV cache's write, functionalized: index_put into a mutated input,
// an identity copy of it copied back, and a reader of the new value. The
// scatter writes its slots into %cache itself: no copy of the cache before it,
// none back after it, the reader reads %cache.
// CHECK-LABEL: func.func @scatter_into_mutated_input
// CHECK-NOT:  buffer.alloc : !buffer.buffer<[2, 8, 4], f32>
// CHECK:      loop.scatter store [2, 1, 4] at [i0, t0, i2] outs(%cache : !buffer.buffer<[2, 8, 4], f32>) {
// CHECK:      loop.reduction
// CHECK:        loop.load %cache[i0, r0, i1]
// CHECK-NOT:  loop.pointwise [2, 8, 4]
// CHECK:      func.return
func.func @scatter_into_mutated_input(%cache: !buffer.buffer<[2, 8, 4], f32>, %pos: !buffer.buffer<[1], i64>, %k: !buffer.buffer<[2, 1, 4], f32>) -> !loop.tensor<[2, 4], f32> attributes {coil.result_types = [!aten.tensor<[2, 4], f32>]} {
  %new = loop.scatter store [2, 1, 4] into(%cache : !buffer.buffer<[2, 8, 4], f32>) at [i0, t0, i2] : !loop.tensor<[2, 8, 4], f32> {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %t = loop.load %pos[i1] : !buffer.buffer<[1], i64>
    %v = loop.load %k[i0, i1, i2] : !buffer.buffer<[2, 1, 4], f32>
    loop.yield %v, %t : f32, i64
  }
  %sum = loop.reduction sum [2, 4] [8] : !loop.tensor<[2, 4], f32> {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %v = loop.load %new[i0, r0, i1] : !loop.tensor<[2, 8, 4], f32>
    loop.yield %v : f32
  }
  %copy = loop.pointwise [2, 8, 4] : !loop.tensor<[2, 8, 4], f32> {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %v = loop.load %new[i0, i1, i2] : !loop.tensor<[2, 8, 4], f32>
    loop.yield %v : f32
  }
  loop.copy %copy, %cache : !loop.tensor<[2, 8, 4], f32>, !buffer.buffer<[2, 8, 4], f32>
  func.return %sum : !loop.tensor<[2, 4], f32>
}

// -----

// Not in place: the input's old value is read after the scatter (the scatter
// would change what that read sees), so the input is copied first and the new
// value written back at the end.
// CHECK-LABEL: func.func @scatter_into_input_read_after
// CHECK:      %[[NEW:.*]] = buffer.alloc : !buffer.buffer<[8], f32>
// CHECK-NEXT: loop.pointwise [8] outs(%[[NEW]] : !buffer.buffer<[8], f32>) {
// CHECK:      loop.scatter store [1] at [t0] outs(%[[NEW]] : !buffer.buffer<[8], f32>) {
// CHECK:      loop.load %cache[i0]
// CHECK:      loop.pointwise [8] outs(%cache : !buffer.buffer<[8], f32>) {
// CHECK-NEXT: ^{{.*}}
// CHECK-NEXT:   loop.load %[[NEW]][i0]
func.func @scatter_into_input_read_after(%cache: !buffer.buffer<[8], f32>, %pos: !buffer.buffer<[1], i64>) -> !loop.tensor<[8], f32> attributes {coil.result_types = [!aten.tensor<[8], f32>]} {
  %new = loop.scatter store [1] into(%cache : !buffer.buffer<[8], f32>) at [t0] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %t = loop.load %pos[i0] : !buffer.buffer<[1], i64>
    %c = arith.constant 1.0 : f32
    loop.yield %c, %t : f32, i64
  }
  %old = loop.pointwise [8] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %v = loop.load %cache[i0] : !buffer.buffer<[8], f32>
    %w = arith.addf %v, %v : f32
    loop.yield %w : f32
  }
  loop.copy %new, %cache : !loop.tensor<[8], f32>, !buffer.buffer<[8], f32>
  func.return %old : !loop.tensor<[8], f32>
}

// -----

// Not in place: the new value is also returned (an output may not alias an
// input), so the scatter updates a copy.
// CHECK-LABEL: func.func @scatter_into_input_returned
// CHECK:      %[[NEW:.*]] = buffer.alloc : !buffer.buffer<[8], f32>
// CHECK:      loop.scatter store [1] at [t0] outs(%[[NEW]] : !buffer.buffer<[8], f32>) {
func.func @scatter_into_input_returned(%cache: !buffer.buffer<[8], f32>, %pos: !buffer.buffer<[1], i64>) -> !loop.tensor<[8], f32> attributes {coil.result_types = [!aten.tensor<[8], f32>]} {
  %new = loop.scatter store [1] into(%cache : !buffer.buffer<[8], f32>) at [t0] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %t = loop.load %pos[i0] : !buffer.buffer<[1], i64>
    %c = arith.constant 1.0 : f32
    loop.yield %c, %t : f32, i64
  }
  loop.copy %new, %cache : !loop.tensor<[8], f32>, !buffer.buffer<[8], f32>
  func.return %new : !loop.tensor<[8], f32>
}

// -----

// An activation that reads NHWC data is stored NHWC also when the image's
// sizes are symbolic (a dynamic batch and image size): the vote counts the
// coefficients of the indices, and the channel stride of an NHWC image is 1
// at every size. Before, symbolic strides did not vote and the activation
// went to NCHW between two NHWC tensors (ResNet-50 under dynamic=True: its
// max pool then reduced a padded window per lane, 0.25 ms against the static
// compile's unrolled window, 5x, on an H200).
// CHECK-LABEL: func.func @symbolic_activation_follows_channels_last
// CHECK:      %[[R:.*]] = buffer.alloc : !buffer.buffer<[s0, 4, s1, s1], f32, strides [4*s1*s1, 1, 4*s1, 4]>
// CHECK-NEXT: loop.pointwise [s0, 4, s1, s1] outs(%[[R]]
func.func @symbolic_activation_follows_channels_last(%n: index {coil.symbol = #coil.expr<s0>}, %h: index {coil.symbol = #coil.expr<s1>}, %x: !buffer.buffer<[s0, 4, s1, s1], f32, strides [4*s1*s1, 1, 4*s1, 4]>) -> !loop.tensor<[s0, 4], f32> attributes {coil.result_types = [!aten.tensor<[s0, 4], f32>]} {
  %r = loop.pointwise [s0, 4, s1, s1] : !loop.tensor<[s0, 4, s1, s1], f32> {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %0 = loop.load %x[i0, i1, i2, i3] : !buffer.buffer<[s0, 4, s1, s1], f32, strides [4*s1*s1, 1, 4*s1, 4]>
    %1 = arith.constant 0.000000e+00 : f32
    %2 = arith.maximumf %0, %1 : f32
    loop.yield %2 : f32
  }
  %s = loop.reduction max [s0, 4] [s1, s1] : !loop.tensor<[s0, 4], f32> {
  ^bb0(%i0: index, %i1: index, %r0: index, %r1: index):
    %3 = loop.load %r[i0, i1, r0, r1] : !loop.tensor<[s0, 4, s1, s1], f32>
    loop.yield %3 : f32
  }
  func.return %s : !loop.tensor<[s0, 4], f32>
}

// -----

// A nearest/bilinear-style gather of a Linear's [B*HW, C] output viewed as an
// NCHW image: its rows come from indirect operands computed from i2/i3, its
// positional part walks the channels with stride 1. Stored NHWC (a 1-D tile
// walking NCHW read each tap a whole row of channels apart); a gather whose
// channel index is not contiguous (the second) stays row-major.
// CHECK-LABEL: func.func @gather_follows_channels
// CHECK:       buffer.alloc : !buffer.buffer<[2, 8, 6, 6], bf16, strides [288, 1, 48, 8]>
// CHECK:       buffer.alloc : !buffer.buffer<[2, 8, 6, 6], bf16>
func.func @gather_follows_channels(%mm: !buffer.buffer<[18, 8], bf16>, %x: !buffer.buffer<[2, 8, 3, 3], bf16>) -> (!loop.tensor<[2, 8, 6, 6], bf16>, !loop.tensor<[2, 8, 6, 6], bf16>) {
  %up = loop.pointwise [2, 8, 6, 6] : !loop.tensor<[2, 8, 6, 6], bf16> {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %h = loop.index i2 floordiv 2 : i64
    %w = loop.index i3 floordiv 2 : i64
    %v = loop.load %mm[9*i0 + 3*t0 + t1, i1] indirect(%h, %w : i64, i64) : !buffer.buffer<[18, 8], bf16>
    loop.yield %v : bf16
  }
  %up2 = loop.pointwise [2, 8, 6, 6] : !loop.tensor<[2, 8, 6, 6], bf16> {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %h = loop.index i2 floordiv 2 : i64
    %w = loop.index i3 floordiv 2 : i64
    %v = loop.load %x[i0, i1, t0, t1] indirect(%h, %w : i64, i64) : !buffer.buffer<[2, 8, 3, 3], bf16>
    loop.yield %v : bf16
  }
  func.return %up, %up2 : !loop.tensor<[2, 8, 6, 6], bf16>, !loop.tensor<[2, 8, 6, 6], bf16>
}
