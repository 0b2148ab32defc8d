// RUN: fx-opt %s -p 'buffer-hoist-constants{inference=true}' --split-input-file | filecheck %s
// RUN: fx-opt %s -p buffer-hoist-constants --split-input-file | filecheck %s --check-prefix=TRAIN
// RUN: fx-opt %s -p 'buffer-hoist-constants{inference=true},memory-plan' --split-input-file | filecheck %s --check-prefix=PLAN
// RUN: fx-opt %s -p memory-plan --split-input-file | filecheck %s --check-prefix=BEFORE

// A convolution weight copied to channels-last on every call (bufferize's copy
// into the layout the extern wants): the copy reads a parameter alone, so it
// moves into @conv_constants, whose argument is the weight (coil.input = 1:
// @conv's second argument); @conv reads its result as a trailing argument.
// The input's copy reads %x (not static) and stays.
// CHECK-LABEL: func.func @conv
// CHECK-SAME:    %x: {{.*}}, %w: !buffer.buffer<[8, 4, 3, 3], bf16, device "cuda:0"> {coil.static, coil.aligned},
// CHECK-SAME:    %w_to_nhwc: !buffer.buffer<[8, 4, 3, 3], bf16, strides [36, 1, 12, 4], device "cuda:0"> {coil.folded = 0 : i64, coil.aligned})
// CHECK-SAME:    attributes {coil.constants = @conv_constants, coil.folded_bytes = #coil.expr<576>}
// CHECK:      %[[XN:.*]] = buffer.alloc : !buffer.buffer<[2, 4, 8, 8], bf16, strides [256, 1, 32, 4], device "cuda:0">
// CHECK-NEXT: loop.pointwise [2, 4, 8, 8] outs(%[[XN]]
// CHECK-NOT:  buffer.alloc
// CHECK:      buffer.extern "aten.convolution.default" (%[[XN]], %w_to_nhwc)
// CHECK-LABEL: func.func @conv_constants
// CHECK-SAME:    (%w: !buffer.buffer<[8, 4, 3, 3], bf16, device "cuda:0"> {coil.input = 1 : i64, coil.aligned})
// CHECK-SAME:    -> !buffer.buffer<[8, 4, 3, 3], bf16, strides [36, 1, 12, 4], device "cuda:0">
// CHECK-NEXT: %[[WN:.*]] = buffer.alloc : !buffer.buffer<[8, 4, 3, 3], bf16, strides [36, 1, 12, 4], device "cuda:0">
// CHECK-NEXT: loop.pointwise [8, 4, 3, 3] outs(%[[WN]]
// CHECK:        loop.load %w[i0, i1, i2, i3]
// CHECK:      func.return %[[WN]]
// A training graph (no inference=true) is left as it is.
// TRAIN-LABEL: func.func @conv
// TRAIN-NOT:   coil.constants
// TRAIN-NOT:   func.func @conv_constants
// The plan of @conv no longer holds the weight's copy (576 bytes less: the
// image's copy and the convolution's result remain).
// PLAN-LABEL: func.func @conv
// PLAN-SAME:  coil.peak_bytes = #coil.expr<2176>
// BEFORE-LABEL: func.func @conv
// BEFORE-SAME:  coil.peak_bytes = #coil.expr<2752>
func.func @conv(%x: !buffer.buffer<[2, 4, 8, 8], bf16, device "cuda:0">, %w: !buffer.buffer<[8, 4, 3, 3], bf16, device "cuda:0"> {coil.static, coil.aligned}) -> !buffer.buffer<[2, 8, 6, 6], bf16, strides [288, 1, 48, 8], device "cuda:0"> {
  %x_to_nhwc = buffer.alloc : !buffer.buffer<[2, 4, 8, 8], bf16, strides [256, 1, 32, 4], device "cuda:0">
  loop.pointwise [2, 4, 8, 8] outs(%x_to_nhwc : !buffer.buffer<[2, 4, 8, 8], bf16, strides [256, 1, 32, 4], device "cuda:0">) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %0 = loop.load %x[i0, i1, i2, i3] : !buffer.buffer<[2, 4, 8, 8], bf16, device "cuda:0">
    loop.yield %0 : bf16
  }
  %w_to_nhwc = buffer.alloc : !buffer.buffer<[8, 4, 3, 3], bf16, strides [36, 1, 12, 4], device "cuda:0">
  loop.pointwise [8, 4, 3, 3] outs(%w_to_nhwc : !buffer.buffer<[8, 4, 3, 3], bf16, strides [36, 1, 12, 4], device "cuda:0">) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %0 = loop.load %w[i0, i1, i2, i3] : !buffer.buffer<[8, 4, 3, 3], bf16, device "cuda:0">
    loop.yield %0 : bf16
  }
  %c = buffer.extern "aten.convolution.default" (%x_to_nhwc, %w_to_nhwc) : (!buffer.buffer<[2, 4, 8, 8], bf16, strides [256, 1, 32, 4], device "cuda:0">, !buffer.buffer<[8, 4, 3, 3], bf16, strides [36, 1, 12, 4], device "cuda:0">) -> (!buffer.buffer<[2, 8, 6, 6], bf16, strides [288, 1, 48, 8], device "cuda:0">) {
  ^bb0(%xa: !aten.tensor<[2, 4, 8, 8], bf16, strides [256, 1, 32, 4], device "cuda:0">, %wa: !aten.tensor<[8, 4, 3, 3], bf16, strides [36, 1, 12, 4], device "cuda:0">):
    %1 = aten.convolution.default(%xa, %wa, none, stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[2, 8, 6, 6], bf16, strides [288, 1, 48, 8], device "cuda:0">
    buffer.yield %1 : !aten.tensor<[2, 8, 6, 6], bf16, strides [288, 1, 48, 8], device "cuda:0">
  }
  func.return %c : !buffer.buffer<[2, 8, 6, 6], bf16, strides [288, 1, 48, 8], device "cuda:0">
}

// -----

// gemm_alignment's pad of a Linear weight (a region of several calls: its
// result is the cat's fresh storage, not an alias of the weight) and of its
// bias move; the product reads them through the trailing arguments, in the
// order of @head_constants' results.
// CHECK-LABEL: func.func @head
// CHECK-SAME:    %[[WP:permute_padded]]: !buffer.buffer<[64, 1008], bf16, strides [1, 64], device "cuda:0"> {coil.folded = 0 : i64, coil.aligned}
// CHECK-SAME:    %[[BP:b_padded]]: !buffer.buffer<[1008], bf16, device "cuda:0"> {coil.folded = 1 : i64, coil.aligned}
// CHECK-NOT:  aten.cat
// CHECK:      buffer.extern "aten.addmm.default" (%[[BP]], %x, %[[WP]])
// CHECK-LABEL: func.func @head_constants
// CHECK-SAME:    (%w: {{.*}} {coil.input = 0 : i64}, %b: {{.*}} {coil.input = 1 : i64})
// CHECK:      %[[V:.*]] = buffer.view %w
// CHECK:      %[[P:.*]] = buffer.extern "aten.transpose.int" (%[[V]])
// CHECK:        aten.cat.default
// CHECK:      %[[Q:.*]] = buffer.extern "aten.new_zeros.default" (%b)
// CHECK:      func.return %[[P]], %[[Q]]
// Both pads are fresh extern results, planned like allocations: @head's peak
// is its product alone once they move.
// PLAN-LABEL: func.func @head
// PLAN-SAME:  coil.peak_bytes = #coil.expr<32256>
// PLAN-LABEL: func.func @head_constants
// PLAN-SAME:  coil.peak_bytes = #coil.expr<131040>
// BEFORE-LABEL: func.func @head
// BEFORE-SAME:  coil.peak_bytes = #coil.expr<163296>
func.func @head(%w: !buffer.buffer<[1003, 64], bf16, device "cuda:0"> {coil.static}, %b: !buffer.buffer<[1003], bf16, device "cuda:0"> {coil.static}, %x: !buffer.buffer<[16, 64], bf16, device "cuda:0">) -> !buffer.buffer<[16, 1003], bf16, strides [1008, 1], device "cuda:0"> {
  %permute = buffer.view %w : !buffer.buffer<[1003, 64], bf16, device "cuda:0"> -> !buffer.buffer<[64, 1003], bf16, strides [1, 64], device "cuda:0">
  %permute_padded = buffer.extern "aten.transpose.int" (%permute) : (!buffer.buffer<[64, 1003], bf16, strides [1, 64], device "cuda:0">) -> (!buffer.buffer<[64, 1008], bf16, strides [1, 64], device "cuda:0">) {
  ^bb0(%0: !aten.tensor<[64, 1003], bf16, strides [1, 64], device "cuda:0">):
    %1 = aten.transpose.int(%0, dim0 = 0, dim1 = 1) : !aten.tensor<[1003, 64], bf16, device "cuda:0">
    %2 = aten.new_zeros.default(%1, size = [5, 64]) : !aten.tensor<[5, 64], bf16, device "cuda:0">
    %3 = aten.cat.default([%1, %2]) : !aten.tensor<[1008, 64], bf16, device "cuda:0">
    %4 = aten.transpose.int(%3, dim0 = 0, dim1 = 1) : !aten.tensor<[64, 1008], bf16, strides [1, 64], device "cuda:0">
    buffer.yield %4 : !aten.tensor<[64, 1008], bf16, strides [1, 64], device "cuda:0">
  }
  %b_padded = buffer.extern "aten.new_zeros.default" (%b) : (!buffer.buffer<[1003], bf16, device "cuda:0">) -> (!buffer.buffer<[1008], bf16, device "cuda:0">) {
  ^bb0(%5: !aten.tensor<[1003], bf16, device "cuda:0">):
    %6 = aten.new_zeros.default(%5, size = [5]) : !aten.tensor<[5], bf16, device "cuda:0">
    %7 = aten.cat.default([%5, %6]) : !aten.tensor<[1008], bf16, device "cuda:0">
    buffer.yield %7 : !aten.tensor<[1008], bf16, device "cuda:0">
  }
  %mm = buffer.extern "aten.addmm.default" (%b_padded, %x, %permute_padded) : (!buffer.buffer<[1008], bf16, device "cuda:0">, !buffer.buffer<[16, 64], bf16, device "cuda:0">, !buffer.buffer<[64, 1008], bf16, strides [1, 64], device "cuda:0">) -> (!buffer.buffer<[16, 1008], bf16, device "cuda:0">) {
  ^bb0(%ba: !aten.tensor<[1008], bf16, device "cuda:0">, %xa: !aten.tensor<[16, 64], bf16, device "cuda:0">, %wa: !aten.tensor<[64, 1008], bf16, strides [1, 64], device "cuda:0">):
    %8 = aten.addmm.default(%ba, %xa, %wa) : !aten.tensor<[16, 1008], bf16, device "cuda:0">
    buffer.yield %8 : !aten.tensor<[16, 1008], bf16, device "cuda:0">
  }
  %v = buffer.view %mm : !buffer.buffer<[16, 1008], bf16, device "cuda:0"> -> !buffer.buffer<[16, 1003], bf16, strides [1008, 1], device "cuda:0">
  func.return %v : !buffer.buffer<[16, 1003], bf16, strides [1008, 1], device "cuda:0">
}

// -----

// What stays: a nest that also reads an activation; a constructor alone (an
// arange: it reads no parameter, and is as cheap to compute as to load); a
// nest reading the random seed; a parameter the function writes (a running
// statistic updated in place: it changes during the call). Nothing moves.
// CHECK-LABEL: func.func @stays
// CHECK-NOT:  coil.constants
// CHECK-NOT:  func.func @stays_constants
func.func @stays(%x: !buffer.buffer<[8], f32>, %w: !buffer.buffer<[8], f32> {coil.static}, %m: !buffer.buffer<[8], f32> {coil.static}) -> (!buffer.buffer<[8], f32>, !buffer.buffer<[8], f32>, !buffer.buffer<[8], f32>) {
  %a = buffer.alloc : !buffer.buffer<[8], f32>
  loop.pointwise [8] outs(%a : !buffer.buffer<[8], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[8], f32>
    %1 = loop.load %w[i0] : !buffer.buffer<[8], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  %r = buffer.alloc : !buffer.buffer<[8], f32>
  loop.pointwise [8] outs(%r : !buffer.buffer<[8], f32>) {
  ^bb0(%i0: index):
    %3 = loop.index i0 : i64
    %f3 = arith.sitofp %3 : i64 to f32
    loop.yield %f3 : f32
  }
  %s = loop.seed : i64
  %n = buffer.alloc : !buffer.buffer<[8], f32>
  loop.pointwise [8] outs(%n : !buffer.buffer<[8], f32>) {
  ^bb0(%i0: index):
    %4 = loop.rand %s[i0] : f32
    %5 = loop.load %w[i0] : !buffer.buffer<[8], f32>
    %6 = arith.mulf %4, %5 : f32
    loop.yield %6 : f32
  }
  %e = buffer.alloc : !buffer.buffer<[8], f32>
  loop.pointwise [8] outs(%e : !buffer.buffer<[8], f32>) {
  ^bb0(%i0: index):
    %7 = loop.load %m[i0] : !buffer.buffer<[8], f32>
    %8 = math.exp %7 : f32
    loop.yield %8 : f32
  }
  loop.pointwise [8] outs(%m : !buffer.buffer<[8], f32>) {
  ^bb0(%i0: index):
    %9 = loop.load %x[i0] : !buffer.buffer<[8], f32>
    loop.yield %9 : f32
  }
  func.return %a, %n, %e : !buffer.buffer<[8], f32>, !buffer.buffer<[8], f32>, !buffer.buffer<[8], f32>
}

// -----

// A constant returned (or a view of one) is copied: the caller owns what the
// function returns, and the cached buffer must not change under it. A view of
// the constant that the function reads stays in it, over the trailing
// argument; the constructor feeding the moved nest moves with it.
// CHECK-LABEL: func.func @returned
// CHECK-SAME:    %[[F:e]]: !buffer.buffer<[4, 8], f32> {coil.folded = 0 : i64, coil.aligned}
// CHECK:      %[[T:.*]] = buffer.view %[[F]] : {{.*}} -> !buffer.buffer<[8, 4], f32, strides [1, 8]>
// CHECK:      loop.load %[[T]][i0, i1]
// CHECK:      %[[C:.*]] = buffer.alloc : !buffer.buffer<[8, 4], f32, strides [1, 8]>
// CHECK-NEXT: loop.pointwise [8, 4] outs(%[[C]]
// CHECK:        loop.load %[[T]][i0, i1]
// CHECK:      func.return %{{.*}}, %[[C]]
// CHECK-LABEL: func.func @returned_constants
// CHECK:      %[[R:.*]] = buffer.alloc : !buffer.buffer<[4, 8], f32>
// CHECK-NEXT: loop.pointwise [4, 8] outs(%[[R]]
// CHECK:      %[[E:.*]] = buffer.alloc : !buffer.buffer<[4, 8], f32>
// CHECK-NEXT: loop.pointwise [4, 8] outs(%[[E]]
// CHECK:      func.return %[[E]]
func.func @returned(%w: !buffer.buffer<[4, 8], f32> {coil.constant = "_tensor_constant0"}, %x: !buffer.buffer<[8, 4], f32>) -> (!buffer.buffer<[8, 4], f32>, !buffer.buffer<[8, 4], f32, strides [1, 8]>) {
  %r = buffer.alloc : !buffer.buffer<[4, 8], f32>
  loop.pointwise [4, 8] outs(%r : !buffer.buffer<[4, 8], f32>) {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.index i1 : i64
    %f0 = arith.sitofp %0 : i64 to f32
    loop.yield %f0 : f32
  }
  %e = buffer.alloc : !buffer.buffer<[4, 8], f32>
  loop.pointwise [4, 8] outs(%e : !buffer.buffer<[4, 8], f32>) {
  ^bb0(%i0: index, %i1: index):
    %1 = loop.load %w[i0, i1] : !buffer.buffer<[4, 8], f32>
    %2 = loop.load %r[i0, i1] : !buffer.buffer<[4, 8], f32>
    %3 = arith.addf %1, %2 : f32
    %4 = math.exp %3 : f32
    loop.yield %4 : f32
  }
  %t = buffer.view %e : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[8, 4], f32, strides [1, 8]>
  %y = buffer.alloc : !buffer.buffer<[8, 4], f32>
  loop.pointwise [8, 4] outs(%y : !buffer.buffer<[8, 4], f32>) {
  ^bb0(%i0: index, %i1: index):
    %5 = loop.load %t[i0, i1] : !buffer.buffer<[8, 4], f32, strides [1, 8]>
    %6 = loop.load %x[i0, i1] : !buffer.buffer<[8, 4], f32>
    %7 = arith.mulf %5, %6 : f32
    loop.yield %7 : f32
  }
  func.return %y, %t : !buffer.buffer<[8, 4], f32>, !buffer.buffer<[8, 4], f32, strides [1, 8]>
}
