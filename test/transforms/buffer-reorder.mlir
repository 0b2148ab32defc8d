// RUN: fx-opt %s -p buffer-reorder,memory-plan --split-input-file | filecheck %s

// A residual block: %x (a kernel's result, 400 B) is read by the main path
// (%a = exp(x), %b = neg(a), 400 B each) and by the shortcut (%s, 40 B), both
// added at the end. In the given order %x is alive through the main path
// (x, a and b: 1200 B at neg); the shortcut first lets %x die at exp
// (x, s, a: 840 B). Allocations follow their first user.
// CHECK-LABEL: func.func @shortcut_first
// CHECK-SAME:  coil.peak_bytes = #coil.expr<840>
// CHECK:       %[[X:.*]] = buffer.alloc : !buffer.buffer<[100], f32>
// CHECK-NEXT:  loop.pointwise [100] outs(%[[X]] :
// CHECK:       %[[S:.*]] = buffer.alloc : !buffer.buffer<[10], f32>
// CHECK-NEXT:  loop.pointwise [10] outs(%[[S]] :
// CHECK:       buffer.extern "aten.exp.default" (%[[X]])
// CHECK:       buffer.extern "aten.neg.default"
// CHECK:       loop.pointwise [100] outs(
func.func @shortcut_first(%in: !buffer.buffer<[100], f32>) -> !buffer.buffer<[100], f32> {
  %x = buffer.alloc : !buffer.buffer<[100], f32>
  loop.pointwise [100] outs(%x : !buffer.buffer<[100], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %in[i0] : !buffer.buffer<[100], f32>
    %e = math.sqrt %v : f32
    loop.yield %e : f32
  }
  %a = buffer.extern "aten.exp.default" (%x) : (!buffer.buffer<[100], f32>) -> (!buffer.buffer<[100], f32>) {
  ^bb0(%t: !aten.tensor<[100], f32>):
    %r = aten.exp.default(%t) : !aten.tensor<[100], f32>
    buffer.yield %r : !aten.tensor<[100], f32>
  }
  %b = buffer.extern "aten.neg.default" (%a) : (!buffer.buffer<[100], f32>) -> (!buffer.buffer<[100], f32>) {
  ^bb0(%t: !aten.tensor<[100], f32>):
    %r = aten.neg.default(%t) : !aten.tensor<[100], f32>
    buffer.yield %r : !aten.tensor<[100], f32>
  }
  %s = buffer.alloc : !buffer.buffer<[10], f32>
  loop.pointwise [10] outs(%s : !buffer.buffer<[10], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %x[10 * i0] : !buffer.buffer<[100], f32>
    loop.yield %v : f32
  }
  %out = buffer.alloc : !buffer.buffer<[100], f32>
  loop.pointwise [100] outs(%out : !buffer.buffer<[100], f32>) {
  ^bb0(%i0: index):
    %p = loop.load %b[i0] : !buffer.buffer<[100], f32>
    %q = loop.load %s[i0 floordiv 10] : !buffer.buffer<[10], f32>
    %y = arith.addf %p, %q : f32
    loop.yield %y : f32
  }
  func.return %out : !buffer.buffer<[100], f32>
}

// -----

// The same block with a random draw (aten.rand_like, nondeterministic_seeded)
// between the main path and the shortcut: it keeps its place among the other
// ops, so the shortcut cannot move before the main path, and the order stays.
// CHECK-LABEL: func.func @fixed_extern
// CHECK-SAME:  coil.peak_bytes = #coil.expr<1240>
// CHECK:       buffer.extern "aten.exp.default"
// CHECK:       buffer.extern "aten.neg.default"
// CHECK:       buffer.extern "aten.rand_like.default"
// CHECK:       loop.pointwise [10] outs(
func.func @fixed_extern(%in: !buffer.buffer<[100], f32>) -> (!buffer.buffer<[100], f32>, !buffer.buffer<[100], f32>) {
  %x = buffer.alloc : !buffer.buffer<[100], f32>
  loop.pointwise [100] outs(%x : !buffer.buffer<[100], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %in[i0] : !buffer.buffer<[100], f32>
    %e = math.sqrt %v : f32
    loop.yield %e : f32
  }
  %a = buffer.extern "aten.exp.default" (%x) : (!buffer.buffer<[100], f32>) -> (!buffer.buffer<[100], f32>) {
  ^bb0(%t: !aten.tensor<[100], f32>):
    %r = aten.exp.default(%t) : !aten.tensor<[100], f32>
    buffer.yield %r : !aten.tensor<[100], f32>
  }
  %b = buffer.extern "aten.neg.default" (%a) : (!buffer.buffer<[100], f32>) -> (!buffer.buffer<[100], f32>) {
  ^bb0(%t: !aten.tensor<[100], f32>):
    %r = aten.neg.default(%t) : !aten.tensor<[100], f32>
    buffer.yield %r : !aten.tensor<[100], f32>
  }
  %n = buffer.extern "aten.rand_like.default" (%in) : (!buffer.buffer<[100], f32>) -> (!buffer.buffer<[100], f32>) {
  ^bb0(%t: !aten.tensor<[100], f32>):
    %r = aten.rand_like.default(%t) : !aten.tensor<[100], f32>
    buffer.yield %r : !aten.tensor<[100], f32>
  }
  %s = buffer.alloc : !buffer.buffer<[10], f32>
  loop.pointwise [10] outs(%s : !buffer.buffer<[10], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %x[10 * i0] : !buffer.buffer<[100], f32>
    loop.yield %v : f32
  }
  %out = buffer.alloc : !buffer.buffer<[100], f32>
  loop.pointwise [100] outs(%out : !buffer.buffer<[100], f32>) {
  ^bb0(%i0: index):
    %p = loop.load %b[i0] : !buffer.buffer<[100], f32>
    %q = loop.load %s[i0 floordiv 10] : !buffer.buffer<[10], f32>
    %y = arith.addf %p, %q : f32
    loop.yield %y : f32
  }
  func.return %out, %n : !buffer.buffer<[100], f32>, !buffer.buffer<[100], f32>
}

// -----

// Two orders with the same planned peak that differ at a convolution's
// workspace. %s (the stem, 2048 B) is read by the main path (a 1x1
// convolution to %a, 6144 B, then a grouped 3x3 stride-2 one to %b, 1536 B,
// 2 groups of 12 channels) and by the shortcut (%c, a 1x1 stride-2
// convolution, 1536 B). Both orders plan 9728 B: FX s+a+b at the grouped
// convolution, shortcut first s+c+a at the 1x1. The grouped convolution's
// workspace (12 channels per group, not a power of two: estimated as its
// input plus its output, 7680 B; cuDNN allocates it inside the call) comes
// on top of what is alive there: s+a+b+7680 = 17408 in the FX order,
// c+a+b+7680 = 16896 with the shortcut first, which is kept (regnety_016's
// first block on an H200).
// CHECK-LABEL: func.func @grouped
// CHECK-SAME:  coil.peak_bytes = #coil.expr<9728>
// CHECK:       %[[S:.*]] = buffer.alloc : !buffer.buffer<[1, 8, 8, 8], f32>
// CHECK:       %[[C:.*]] = buffer.extern "aten.convolution.default" (%[[S]], %w3)
// CHECK:       %[[A:.*]] = buffer.extern "aten.convolution.default" (%[[S]], %w1)
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:  aten.convolution.default
// CHECK-NEXT:  buffer.yield
// CHECK-NEXT:  }
// CHECK-NEXT:  buffer.dealloc %[[S]]
// CHECK:       buffer.extern "aten.convolution.default" (%[[A]], %w2)
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:  groups = 2
func.func @grouped(%x: !buffer.buffer<[1, 8, 8, 8], f32>, %w1: !buffer.buffer<[24, 8, 1, 1], f32>, %w2: !buffer.buffer<[24, 12, 3, 3], f32>, %w3: !buffer.buffer<[24, 8, 1, 1], f32>) -> !buffer.buffer<[1, 24, 4, 4], f32> {
  %s = buffer.alloc : !buffer.buffer<[1, 8, 8, 8], f32>
  loop.pointwise [1, 8, 8, 8] outs(%s : !buffer.buffer<[1, 8, 8, 8], f32>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %v = loop.load %x[i0, i1, i2, i3] : !buffer.buffer<[1, 8, 8, 8], f32>
    %e = math.sqrt %v : f32
    loop.yield %e : f32
  }
  %a = buffer.extern "aten.convolution.default" (%s, %w1) : (!buffer.buffer<[1, 8, 8, 8], f32>, !buffer.buffer<[24, 8, 1, 1], f32>) -> (!buffer.buffer<[1, 24, 8, 8], f32>) {
  ^bb0(%t: !aten.tensor<[1, 8, 8, 8], f32>, %k: !aten.tensor<[24, 8, 1, 1], f32>):
    %r = aten.convolution.default(%t, %k, none, stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[1, 24, 8, 8], f32>
    buffer.yield %r : !aten.tensor<[1, 24, 8, 8], f32>
  }
  %b = buffer.extern "aten.convolution.default" (%a, %w2) : (!buffer.buffer<[1, 24, 8, 8], f32>, !buffer.buffer<[24, 12, 3, 3], f32>) -> (!buffer.buffer<[1, 24, 4, 4], f32>) {
  ^bb0(%t: !aten.tensor<[1, 24, 8, 8], f32>, %k: !aten.tensor<[24, 12, 3, 3], f32>):
    %r = aten.convolution.default(%t, %k, none, stride = [2, 2], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 2) : !aten.tensor<[1, 24, 4, 4], f32>
    buffer.yield %r : !aten.tensor<[1, 24, 4, 4], f32>
  }
  %c = buffer.extern "aten.convolution.default" (%s, %w3) : (!buffer.buffer<[1, 8, 8, 8], f32>, !buffer.buffer<[24, 8, 1, 1], f32>) -> (!buffer.buffer<[1, 24, 4, 4], f32>) {
  ^bb0(%t: !aten.tensor<[1, 8, 8, 8], f32>, %k: !aten.tensor<[24, 8, 1, 1], f32>):
    %r = aten.convolution.default(%t, %k, none, stride = [2, 2], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[1, 24, 4, 4], f32>
    buffer.yield %r : !aten.tensor<[1, 24, 4, 4], f32>
  }
  %out = buffer.alloc : !buffer.buffer<[1, 24, 4, 4], f32>
  loop.pointwise [1, 24, 4, 4] outs(%out : !buffer.buffer<[1, 24, 4, 4], f32>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %p = loop.load %b[i0, i1, i2, i3] : !buffer.buffer<[1, 24, 4, 4], f32>
    %q = loop.load %c[i0, i1, i2, i3] : !buffer.buffer<[1, 24, 4, 4], f32>
    %y = arith.addf %p, %q : f32
    loop.yield %y : f32
  }
  func.return %out : !buffer.buffer<[1, 24, 4, 4], f32>
}

// -----

// The same block with 3 groups of 8 channels (a power of two: no workspace
// estimated; regnetx_002's such convolution measured none): both orders plan
// 9728 B and estimate as much, so the FX order stays.
// CHECK-LABEL: func.func @eight_per_group
// CHECK-SAME:  coil.peak_bytes = #coil.expr<9728>
// CHECK:       buffer.extern "aten.convolution.default" (%{{.*}}, %w1)
// CHECK:       buffer.extern "aten.convolution.default" (%{{.*}}, %w2)
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:  groups = 3
// CHECK:       buffer.extern "aten.convolution.default" (%{{.*}}, %w3)
func.func @eight_per_group(%x: !buffer.buffer<[1, 8, 8, 8], f32>, %w1: !buffer.buffer<[24, 8, 1, 1], f32>, %w2: !buffer.buffer<[24, 8, 3, 3], f32>, %w3: !buffer.buffer<[24, 8, 1, 1], f32>) -> !buffer.buffer<[1, 24, 4, 4], f32> {
  %s = buffer.alloc : !buffer.buffer<[1, 8, 8, 8], f32>
  loop.pointwise [1, 8, 8, 8] outs(%s : !buffer.buffer<[1, 8, 8, 8], f32>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %v = loop.load %x[i0, i1, i2, i3] : !buffer.buffer<[1, 8, 8, 8], f32>
    %e = math.sqrt %v : f32
    loop.yield %e : f32
  }
  %a = buffer.extern "aten.convolution.default" (%s, %w1) : (!buffer.buffer<[1, 8, 8, 8], f32>, !buffer.buffer<[24, 8, 1, 1], f32>) -> (!buffer.buffer<[1, 24, 8, 8], f32>) {
  ^bb0(%t: !aten.tensor<[1, 8, 8, 8], f32>, %k: !aten.tensor<[24, 8, 1, 1], f32>):
    %r = aten.convolution.default(%t, %k, none, stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[1, 24, 8, 8], f32>
    buffer.yield %r : !aten.tensor<[1, 24, 8, 8], f32>
  }
  %b = buffer.extern "aten.convolution.default" (%a, %w2) : (!buffer.buffer<[1, 24, 8, 8], f32>, !buffer.buffer<[24, 8, 3, 3], f32>) -> (!buffer.buffer<[1, 24, 4, 4], f32>) {
  ^bb0(%t: !aten.tensor<[1, 24, 8, 8], f32>, %k: !aten.tensor<[24, 8, 3, 3], f32>):
    %r = aten.convolution.default(%t, %k, none, stride = [2, 2], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 3) : !aten.tensor<[1, 24, 4, 4], f32>
    buffer.yield %r : !aten.tensor<[1, 24, 4, 4], f32>
  }
  %c = buffer.extern "aten.convolution.default" (%s, %w3) : (!buffer.buffer<[1, 8, 8, 8], f32>, !buffer.buffer<[24, 8, 1, 1], f32>) -> (!buffer.buffer<[1, 24, 4, 4], f32>) {
  ^bb0(%t: !aten.tensor<[1, 8, 8, 8], f32>, %k: !aten.tensor<[24, 8, 1, 1], f32>):
    %r = aten.convolution.default(%t, %k, none, stride = [2, 2], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[1, 24, 4, 4], f32>
    buffer.yield %r : !aten.tensor<[1, 24, 4, 4], f32>
  }
  %out = buffer.alloc : !buffer.buffer<[1, 24, 4, 4], f32>
  loop.pointwise [1, 24, 4, 4] outs(%out : !buffer.buffer<[1, 24, 4, 4], f32>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %p = loop.load %b[i0, i1, i2, i3] : !buffer.buffer<[1, 24, 4, 4], f32>
    %q = loop.load %c[i0, i1, i2, i3] : !buffer.buffer<[1, 24, 4, 4], f32>
    %y = arith.addf %p, %q : f32
    loop.yield %y : f32
  }
  func.return %out : !buffer.buffer<[1, 24, 4, 4], f32>
}

// -----

// The same block with a 1x1 main-path convolution (no workspace estimated):
// the FX order stays.
// CHECK-LABEL: func.func @pointwise
// CHECK-SAME:  coil.peak_bytes = #coil.expr<9728>
// CHECK:       buffer.extern "aten.convolution.default" (%{{.*}}, %w1)
// CHECK:       buffer.extern "aten.convolution.default" (%{{.*}}, %w2)
// CHECK:       buffer.extern "aten.convolution.default" (%{{.*}}, %w3)
func.func @pointwise(%x: !buffer.buffer<[1, 8, 8, 8], f32>, %w1: !buffer.buffer<[24, 8, 1, 1], f32>, %w2: !buffer.buffer<[24, 24, 1, 1], f32>, %w3: !buffer.buffer<[24, 8, 1, 1], f32>) -> !buffer.buffer<[1, 24, 4, 4], f32> {
  %s = buffer.alloc : !buffer.buffer<[1, 8, 8, 8], f32>
  loop.pointwise [1, 8, 8, 8] outs(%s : !buffer.buffer<[1, 8, 8, 8], f32>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %v = loop.load %x[i0, i1, i2, i3] : !buffer.buffer<[1, 8, 8, 8], f32>
    %e = math.sqrt %v : f32
    loop.yield %e : f32
  }
  %a = buffer.extern "aten.convolution.default" (%s, %w1) : (!buffer.buffer<[1, 8, 8, 8], f32>, !buffer.buffer<[24, 8, 1, 1], f32>) -> (!buffer.buffer<[1, 24, 8, 8], f32>) {
  ^bb0(%t: !aten.tensor<[1, 8, 8, 8], f32>, %k: !aten.tensor<[24, 8, 1, 1], f32>):
    %r = aten.convolution.default(%t, %k, none, stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[1, 24, 8, 8], f32>
    buffer.yield %r : !aten.tensor<[1, 24, 8, 8], f32>
  }
  %b = buffer.extern "aten.convolution.default" (%a, %w2) : (!buffer.buffer<[1, 24, 8, 8], f32>, !buffer.buffer<[24, 24, 1, 1], f32>) -> (!buffer.buffer<[1, 24, 4, 4], f32>) {
  ^bb0(%t: !aten.tensor<[1, 24, 8, 8], f32>, %k: !aten.tensor<[24, 24, 1, 1], f32>):
    %r = aten.convolution.default(%t, %k, none, stride = [2, 2], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[1, 24, 4, 4], f32>
    buffer.yield %r : !aten.tensor<[1, 24, 4, 4], f32>
  }
  %c = buffer.extern "aten.convolution.default" (%s, %w3) : (!buffer.buffer<[1, 8, 8, 8], f32>, !buffer.buffer<[24, 8, 1, 1], f32>) -> (!buffer.buffer<[1, 24, 4, 4], f32>) {
  ^bb0(%t: !aten.tensor<[1, 8, 8, 8], f32>, %k: !aten.tensor<[24, 8, 1, 1], f32>):
    %r = aten.convolution.default(%t, %k, none, stride = [2, 2], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1) : !aten.tensor<[1, 24, 4, 4], f32>
    buffer.yield %r : !aten.tensor<[1, 24, 4, 4], f32>
  }
  %out = buffer.alloc : !buffer.buffer<[1, 24, 4, 4], f32>
  loop.pointwise [1, 24, 4, 4] outs(%out : !buffer.buffer<[1, 24, 4, 4], f32>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %p = loop.load %b[i0, i1, i2, i3] : !buffer.buffer<[1, 24, 4, 4], f32>
    %q = loop.load %c[i0, i1, i2, i3] : !buffer.buffer<[1, 24, 4, 4], f32>
    %y = arith.addf %p, %q : f32
    loop.yield %y : f32
  }
  func.return %out : !buffer.buffer<[1, 24, 4, 4], f32>
}
