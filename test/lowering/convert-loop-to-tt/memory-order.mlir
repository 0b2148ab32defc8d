// RUN: fx-opt %s -p convert-loop-to-tt --split-input-file | filecheck %s

// A kernel's lanes walk its output in memory order (tiling.output_order):
// a channels-last output [N, C, H, W] (strides [HWC, 1, WC, C]) decomposes
// xindex over (N, H, W, C), so C is the fastest index and the output and
// the channels-last input are read and written at xindex itself: a 1-D tile,
// no division per element for the addresses.

// CHECK-LABEL: tt.func public @coil_out_0
// CHECK-NOT:     yindex
// CHECK:         %i1 = arith.remsi %xindex, %{{.*}} : tensor<1024xi32>
// CHECK:         tt.addptr %{{.*}}, %xindex
// CHECK:         tt.load
// CHECK:         tt.addptr %{{.*}}, %i1
// CHECK:         tt.store
func.func @channels_last_scale(%x: !buffer.buffer<[2, 64, 8, 8], f32, strides [4096, 1, 512, 64]>, %w: !buffer.buffer<[64], f32>) -> !buffer.buffer<[2, 64, 8, 8], f32, strides [4096, 1, 512, 64]> {
  %out = buffer.alloc : !buffer.buffer<[2, 64, 8, 8], f32, strides [4096, 1, 512, 64]>
  loop.pointwise [2, 64, 8, 8] outs(%out : !buffer.buffer<[2, 64, 8, 8], f32, strides [4096, 1, 512, 64]>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %0 = loop.load %x[i0, i1, i2, i3] : !buffer.buffer<[2, 64, 8, 8], f32, strides [4096, 1, 512, 64]>
    %1 = loop.load %w[i1] : !buffer.buffer<[64], f32>
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.constant 0.000000e+00 : f32
    %4 = arith.maximumf %2, %3 : f32
    loop.yield %4 : f32
  }
  func.return %out : !buffer.buffer<[2, 64, 8, 8], f32, strides [4096, 1, 512, 64]>
}

// -----

// A channels-last 3x3 max pool (stride 2): the window is a reduction over
// channels-last reads. In the output's memory order C is the last output
// index, along which the reads are contiguous (an outer reduction), and the
// window is small: it is unrolled (kernel.py `_unrolls`), one output per lane
// and 1024 on a program, nine loads combined with maximumf in window order,
// no tt.reduce; not 64 output columns 64 elements apart. The per-channel
// scale (a batch norm folded into the window) moves with no window index and
// has no say in whether the reads run along the output; its index is in
// bounds wherever the tile is, so it is read once, without the window's mask,
// and selected under it (nine selects of one load, not nine masked loads).

// CHECK-LABEL: tt.func public @coil_out_0
// CHECK:         %{{.*}} = tt.make_range {start = 0 : i32, end = 1024 : i32}
// CHECK:         %i1 = arith.remsi %xindex
// CHECK-COUNT-10: tt.load
// CHECK-NOT:     tt.load
// CHECK-NOT:     tt.reduce
// CHECK:         arith.maximumf
// CHECK:         tt.store
// CHECK:       host.launch @coil_out_0 grid [8, 1, 1]
func.func @max_pool(%x: !buffer.buffer<[2, 64, 16, 16], f32, strides [16384, 1, 1024, 64]>, %w: !buffer.buffer<[64], f32>) -> !buffer.buffer<[2, 64, 8, 8], f32, strides [4096, 1, 512, 64]> {
  %out = buffer.alloc : !buffer.buffer<[2, 64, 8, 8], f32, strides [4096, 1, 512, 64]>
  loop.reduction max [2, 64, 8, 8] [3, 3] outs(%out : !buffer.buffer<[2, 64, 8, 8], f32, strides [4096, 1, 512, 64]>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %r0: index, %r1: index):
    %0 = loop.index 2*i2 + r0 : i64
    %1 = arith.constant 16 : i64
    %2 = arith.cmpi slt, %0, %1 : i64
    %3 = loop.index 2*i3 + r1 : i64
    %4 = arith.cmpi slt, %3, %1 : i64
    %5 = arith.andi %2, %4 : i1
    %6 = loop.load %x[i0, i1, 2*i2 + r0, 2*i3 + r1] mask(%5) : !buffer.buffer<[2, 64, 16, 16], f32, strides [16384, 1, 1024, 64]>
    %s = loop.load %w[i1] mask(%5) : !buffer.buffer<[64], f32>
    %m = arith.mulf %6, %s : f32
    %7 = arith.constant 0xff800000 : f32
    %8 = arith.select %5, %m, %7 : f32
    loop.yield %8 : f32
  }
  func.return %out : !buffer.buffer<[2, 64, 8, 8], f32, strides [4096, 1, 512, 64]>
}

// -----

// The same window in a group with a pointwise member over its result (the
// bf16 pool's copy into the output): unrolled too, the member computed on the
// reduced lanes.

// CHECK-LABEL: tt.func public @coil_max_copy_out_0
// CHECK-COUNT-9: tt.load
// CHECK-NOT:     tt.reduce
// CHECK:         tt.store
// CHECK:       host.launch @coil_max_copy_out_0 grid [8, 1, 1]
func.func @max_pool_group(%x: !buffer.buffer<[2, 64, 16, 16], bf16, strides [16384, 1, 1024, 64]>) -> !buffer.buffer<[2, 64, 8, 8], bf16, strides [4096, 1, 512, 64]> {
  %out = buffer.alloc : !buffer.buffer<[2, 64, 8, 8], bf16, strides [4096, 1, 512, 64]>
  loop.fused [2, 64, 8, 8] [3, 3] outs(%out : !buffer.buffer<[2, 64, 8, 8], bf16, strides [4096, 1, 512, 64]>) {
    %max = loop.reduction max [2, 64, 8, 8] [3, 3] : !loop.tensor<[2, 64, 8, 8], bf16> {
    ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %r0: index, %r1: index):
      %0 = loop.index 2*i2 + r0 : i64
      %1 = arith.constant 16 : i64
      %2 = arith.cmpi slt, %0, %1 : i64
      %3 = loop.index 2*i3 + r1 : i64
      %4 = arith.cmpi slt, %3, %1 : i64
      %5 = arith.andi %2, %4 : i1
      %6 = loop.load %x[i0, i1, 2*i2 + r0, 2*i3 + r1] mask(%5) : !buffer.buffer<[2, 64, 16, 16], bf16, strides [16384, 1, 1024, 64]>
      %7 = arith.constant 0xff80 : bf16
      %8 = arith.select %5, %6, %7 : bf16
      loop.yield %8 : bf16
    }
    %copy = loop.pointwise [2, 64, 8, 8] : !loop.tensor<[2, 64, 8, 8], bf16> {
    ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
      %9 = loop.load %max[i0, i1, i2, i3] : !loop.tensor<[2, 64, 8, 8], bf16>
      loop.yield %9 : bf16
    }
    loop.yield %copy : !loop.tensor<[2, 64, 8, 8], bf16>
  }
  func.return %out : !buffer.buffer<[2, 64, 8, 8], bf16, strides [4096, 1, 512, 64]>
}

// -----

// A window sum over x plus a per-channel w read under the window's mask: w's
// index is in bounds wherever the tile is, so it is loaded once, and each
// window point selects it under its own mask (nine selects of that one load;
// a shared load used raw gave border outputs w added at masked-off points).
// CHECK-LABEL: tt.func public @coil_out_0
// CHECK:         %[[W:.*]] = tt.load %{{.*}} {evict = evict_last}
// CHECK-COUNT-9: arith.select %{{.*}}, %[[W]], %{{.*}}
// CHECK-NOT:     %[[W]]
// CHECK:         tt.return
func.func @masked_window_scale(%x: !buffer.buffer<[2, 64, 9, 9], f32, strides [5184, 1, 576, 64]>, %w: !buffer.buffer<[64], f32>) -> !buffer.buffer<[2, 64, 8, 8], f32, strides [4096, 1, 512, 64]> {
  %out = buffer.alloc : !buffer.buffer<[2, 64, 8, 8], f32, strides [4096, 1, 512, 64]>
  loop.reduction sum [2, 64, 8, 8] [3, 3] outs(%out : !buffer.buffer<[2, 64, 8, 8], f32, strides [4096, 1, 512, 64]>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %r0: index, %r1: index):
    %0 = loop.index i2 + r0 : i64
    %1 = arith.constant 9 : i64
    %2 = arith.cmpi slt, %0, %1 : i64
    %3 = loop.index i3 + r1 : i64
    %4 = arith.cmpi slt, %3, %1 : i64
    %5 = arith.andi %2, %4 : i1
    %v = loop.load %x[i0, i1, i2 + r0, i3 + r1] mask(%5) : !buffer.buffer<[2, 64, 9, 9], f32, strides [5184, 1, 576, 64]>
    %s = loop.load %w[i1] mask(%5) : !buffer.buffer<[64], f32>
    %t = arith.addf %v, %s : f32
    loop.yield %t : f32
  }
  func.return %out : !buffer.buffer<[2, 64, 8, 8], f32, strides [4096, 1, 512, 64]>
}

// -----

// The same channels-last scale with symbolic sizes (a dynamic compile): the
// strides [64*s1*s1, 1, 64*s1, 64] order N, H, W, C at a size hint
// (strategy/access.py order_from_strides), so the kernel keeps the static
// compile's 1-D tile; with the logical order it took 2-D [32, 32] tiles.

// CHECK-LABEL: tt.func public @coil_out_0
// CHECK-NOT:     yindex
// CHECK:         tt.make_range {start = 0 : i32, end = 1024 : i32}
// CHECK:         tt.addptr %{{.*}}, %xindex
// CHECK:         tt.load
// CHECK:         tt.store
func.func @channels_last_scale_dynamic(%x: !buffer.buffer<[s0, 64, s1, s1], f32, strides [64*s1*s1, 1, 64*s1, 64]>, %w: !buffer.buffer<[64], f32>) -> !buffer.buffer<[s0, 64, s1, s1], f32, strides [64*s1*s1, 1, 64*s1, 64]> {
  %out = buffer.alloc : !buffer.buffer<[s0, 64, s1, s1], f32, strides [64*s1*s1, 1, 64*s1, 64]>
  loop.pointwise [s0, 64, s1, s1] outs(%out : !buffer.buffer<[s0, 64, s1, s1], f32, strides [64*s1*s1, 1, 64*s1, 64]>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %0 = loop.load %x[i0, i1, i2, i3] : !buffer.buffer<[s0, 64, s1, s1], f32, strides [64*s1*s1, 1, 64*s1, 64]>
    %1 = loop.load %w[i1] : !buffer.buffer<[64], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %out : !buffer.buffer<[s0, 64, s1, s1], f32, strides [64*s1*s1, 1, 64*s1, 64]>
}

// -----

// A dynamic channels-last 3x3 max pool keeps the static one's unrolled window
// (its loads are contiguous along the output's memory order, an outer
// reduction): no tt.reduce over a padded [XBLOCK, 16] tile.

// CHECK-LABEL: tt.func public @coil_out_0
// CHECK-COUNT-9: tt.load
// CHECK-NOT:     tt.reduce
// CHECK:         tt.store
func.func @max_pool_dynamic(%x: !buffer.buffer<[s0, 64, s1, s1], f32, strides [64*s1*s1, 1, 64*s1, 64]>) -> !buffer.buffer<[s0, 64, s2, s2], f32, strides [64*s2*s2, 1, 64*s2, 64]> {
  %out = buffer.alloc : !buffer.buffer<[s0, 64, s2, s2], f32, strides [64*s2*s2, 1, 64*s2, 64]>
  loop.reduction max [s0, 64, s2, s2] [3, 3] outs(%out : !buffer.buffer<[s0, 64, s2, s2], f32, strides [64*s2*s2, 1, 64*s2, 64]>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %r0: index, %r1: index):
    %0 = loop.load %x[i0, i1, 2*i2 + r0, 2*i3 + r1] : !buffer.buffer<[s0, 64, s1, s1], f32, strides [64*s1*s1, 1, 64*s1, 64]>
    loop.yield %0 : f32
  }
  func.return %out : !buffer.buffer<[s0, 64, s2, s2], f32, strides [64*s2*s2, 1, 64*s2, 64]>
}
