// RUN: fx-opt %s -p convert-aten-to-loop --split-input-file | filecheck %s

// One compare per input boundary; each input loads under its mask (dtype promoted).
// CHECK-LABEL: func.func @cat_three
// CHECK: loop.pointwise [2, s0 + 4] : !loop.tensor<[2, s0 + 4], f32>
// CHECK: %[[I1:.*]] = loop.index i1 - s0 : i64
// CHECK: %[[LT0:.*]] = arith.cmpi slt, %[[I1]], %{{.*}} : i64
// CHECK: %[[I2:.*]] = loop.index i1 - s0 - 3 : i64
// CHECK: %[[LT1:.*]] = arith.cmpi slt, %[[I2]], %{{.*}} : i64
// CHECK: %[[A:.*]] = loop.load %a[i0, i1] mask(%[[LT0]])
// CHECK: %[[NOT0:.*]] = arith.xori %[[LT0]]
// CHECK: %[[M1:.*]] = arith.andi %[[NOT0]], %[[LT1]] : i1
// CHECK: %[[B:.*]] = loop.load %b[i0, i1 - s0] mask(%[[M1]]) : !buffer.buffer<[2, 3], f16>
// CHECK: %[[BF:.*]] = arith.extf %[[B]] : f16 to f32
// CHECK: %[[NOT1:.*]] = arith.xori %[[LT1]]
// CHECK: %[[C:.*]] = loop.load %c[i0, i1 - s0 - 3] mask(%[[NOT1]])
// CHECK: %[[S1:.*]] = arith.select %[[LT1]], %[[BF]], %[[C]] : f32
// CHECK: %[[S0:.*]] = arith.select %[[LT0]], %[[A]], %[[S1]] : f32
// CHECK: loop.yield %[[S0]] : f32
func.func @cat_three(%a: !aten.tensor<[2, s0], f32>, %b: !aten.tensor<[2, 3], f16>, %c: !aten.tensor<[2, 1], f32>) -> !aten.tensor<[2, s0 + 4], f32> {
  %y = aten.cat.default([%a, %b, %c], dim = -1) : !aten.tensor<[2, s0 + 4], f32>
  func.return %y : !aten.tensor<[2, s0 + 4], f32>
}

// -----

// Negative pads crop: a shifted index and no mask on that side.
// CHECK-LABEL: func.func @pad_and_crop
// CHECK: loop.pointwise [6, 5]
// CHECK: loop.index i1 - 1 : i64
// CHECK: loop.index i0 - 2 : i64
// CHECK-NOT: loop.index
// CHECK: %[[M:.*]] = arith.andi
// CHECK: %[[X:.*]] = loop.load %x[i0 - 2, i1 - 1] mask(%[[M]])
// CHECK: %[[V:.*]] = arith.constant 1.500000e+00 : f32
// CHECK: arith.select %[[M]], %[[X]], %[[V]] : f32
func.func @pad_and_crop(%x: !aten.tensor<[4, 6], f32>) -> !aten.tensor<[6, 5], f32> {
  %y = aten.constant_pad_nd.default(%x, pad = [1, -2, 2, 0], value = 1.5) : !aten.tensor<[6, 5], f32>
  func.return %y : !aten.tensor<[6, 5], f32>
}

// -----

// CHECK-LABEL: func.func @flip_roll_repeat
// CHECK: loop.load %x[3 - i0, 5 - i1] : !buffer.buffer<[4, 6], f32>
// CHECK: loop.load %x[i0, (i1 + 4) mod 6] : !buffer.buffer<[4, 6], f32>
// CHECK: loop.pointwise [2, 8, 6]
// CHECK: loop.load %x[i1 mod 4, i2 mod 6] : !buffer.buffer<[4, 6], f32>
func.func @flip_roll_repeat(%x: !aten.tensor<[4, 6], f32>) -> (!aten.tensor<[4, 6], f32>, !aten.tensor<[4, 6], f32>, !aten.tensor<[2, 8, 6], f32>) {
  %f = aten.flip.default(%x, dims = [0, -1]) : !aten.tensor<[4, 6], f32>
  %r = aten.roll.default(%x, shifts = [2], dims = [1]) : !aten.tensor<[4, 6], f32>
  %p = aten.repeat.default(%x, repeats = [2, 2, 1]) : !aten.tensor<[2, 8, 6], f32>
  func.return %f, %r, %p : !aten.tensor<[4, 6], f32>, !aten.tensor<[4, 6], f32>, !aten.tensor<[2, 8, 6], f32>
}

// -----

// Indirect loads: t0 is the loaded index (i32 widened to i64).
// CHECK-LABEL: func.func @gathers
// CHECK: %[[ID:.*]] = loop.load %ids[i0, i1] : !buffer.buffer<[4, 8], i64>
// CHECK-NEXT: loop.load %w[t0, i2] indirect(%[[ID]] : i64) : !buffer.buffer<[50, 16], f32>
// CHECK: %[[S:.*]] = loop.load %sel[i1] : !buffer.buffer<[3], i32>
// CHECK-NEXT: %[[S64:.*]] = arith.extsi %[[S]] : i32 to i64
// CHECK-NEXT: loop.load %w[i0, t0] indirect(%[[S64]] : i64)
// CHECK: %[[G:.*]] = loop.load %ids[i0, i1] : !buffer.buffer<[4, 8], i64>
// CHECK-NEXT: loop.load %w[t0, i1] indirect(%[[G]] : i64)
func.func @gathers(%w: !aten.tensor<[50, 16], f32>, %ids: !aten.tensor<[4, 8], i64>, %sel: !aten.tensor<[3], i32>) -> (!aten.tensor<[4, 8, 16], f32>, !aten.tensor<[50, 3], f32>, !aten.tensor<[4, 8], f32>) {
  %e = aten.embedding.default(%w, %ids) : !aten.tensor<[4, 8, 16], f32>
  %s = aten.index_select.default(%w, dim = 1, %sel) : !aten.tensor<[50, 3], f32>
  %g = aten.gather.default(%w, dim = 0, %ids) : !aten.tensor<[4, 8], f32>
  func.return %e, %s, %g : !aten.tensor<[4, 8, 16], f32>, !aten.tensor<[50, 3], f32>, !aten.tensor<[4, 8], f32>
}

// -----

// Two index tensors separated by a slice: the broadcast index dims go first.
// Negative indices wrap: idx + size where idx < 0.
// CHECK-LABEL: func.func @advanced_index
// CHECK: loop.pointwise [3, 4, 6]
// CHECK: %[[I:.*]] = loop.load %i[i0, 0] : !buffer.buffer<[3, 1], i64>
// CHECK: %[[N:.*]] = arith.cmpi slt, %[[I]]
// CHECK: %[[W:.*]] = arith.addi %[[I]]
// CHECK: %[[IW:.*]] = arith.select %[[N]], %[[W]], %[[I]] : i64
// CHECK: %[[J:.*]] = loop.load %j[i1] : !buffer.buffer<[4], i64>
// CHECK: %[[JW:.*]] = arith.select
// CHECK: loop.load %x[t0, i2, t1] indirect(%[[IW]], %[[JW]] : i64, i64) : !buffer.buffer<[5, 6, 7], f32>
func.func @advanced_index(%x: !aten.tensor<[5, 6, 7], f32>, %i: !aten.tensor<[3, 1], i64>, %j: !aten.tensor<[4], i64>) -> !aten.tensor<[3, 4, 6], f32> {
  %y = aten.index.Tensor(%x, [%i, none, %j]) : !aten.tensor<[3, 4, 6], f32>
  func.return %y : !aten.tensor<[3, 4, 6], f32>
}

// -----

// Boolean masks have a data-dependent shape: ATen.
// CHECK-LABEL: func.func @index_with_mask
// CHECK-NOT: loop.pointwise
// CHECK: buffer.extern "aten.index.Tensor" (%x, %m)
func.func @index_with_mask(%x: !aten.tensor<[5, 6], f32>, %m: !aten.tensor<[5], i1>) -> !aten.tensor<[s0, 6], f32> {
  %y = aten.index.Tensor(%x, [%m]) : !aten.tensor<[s0, 6], f32>
  func.return %y : !aten.tensor<[s0, 6], f32>
}

// -----

// CHECK-LABEL: func.func @factories
// CHECK: loop.pointwise [s0] : !loop.tensor<[s0], i64>
// CHECK-NEXT: ^bb0(%{{.*}}: index):
// CHECK-NEXT: loop.index i0 + 2 : i64
// Float ramps compute start + step * i in f64, as torch's CPU kernel.
// CHECK: loop.pointwise [4] : !loop.tensor<[4], f32>
// CHECK: arith.sitofp %{{.*}} : i64 to f64
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK: loop.pointwise [2, 3] : !loop.tensor<[2, 3], f16>
// CHECK: arith.constant 9.997560e-02 : f16
// CHECK: loop.pointwise [s0, 3] : !loop.tensor<[s0, 3], f16>
// CHECK: arith.constant 1.000000e+00 : f16
// CHECK: loop.pointwise [] : !loop.tensor<[], f32>
// CHECK: arith.constant 0xff800000 : f32
func.func @factories(%x: !aten.tensor<[s0, 3], f16>) -> (!aten.tensor<[s0], i64>, !aten.tensor<[4], f32>, !aten.tensor<[2, 3], f16>, !aten.tensor<[s0, 3], f16>, !aten.tensor<[], f32>) {
  %a = aten.arange.start_step(start = 2, end = s0 + 2, layout = strided, device = "cpu", pin_memory = false) : !aten.tensor<[s0], i64>
  %b = aten.arange.start_step(start = 0.5, end = 2.5, step = 0.5, dtype = f32, device = "cpu") : !aten.tensor<[4], f32>
  %c = aten.full.default(size = [2, 3], fill_value = 0.1, dtype = f16, device = "cpu", pin_memory = false) : !aten.tensor<[2, 3], f16>
  %d = aten.ones_like.default(%x, pin_memory = false) : !aten.tensor<[s0, 3], f16>
  %e = aten.scalar_tensor.default(s = -inf, dtype = f32, layout = strided, device = "cpu") : !aten.tensor<[], f32>
  func.return %a, %b, %c, %d, %e : !aten.tensor<[s0], i64>, !aten.tensor<[4], f32>, !aten.tensor<[2, 3], f16>, !aten.tensor<[s0, 3], f16>, !aten.tensor<[], f32>
}

// -----

// copy broadcasts and casts; copy_ into a graph input is a loop.copy, and its
// result is the input itself.
// CHECK-LABEL: func.func @copies
// CHECK: %c = loop.pointwise [4, 6]
// CHECK: loop.load %src[i1] : !buffer.buffer<[6], f16>
// CHECK: arith.extf
// CHECK: %[[NEW:.*]] = loop.pointwise [4, 6] : !loop.tensor<[4, 6], f32>
// CHECK: loop.copy %[[NEW]], %x : !loop.tensor<[4, 6], f32>, !buffer.buffer<[4, 6], f32>
// CHECK-NEXT: func.return %c, %x
func.func @copies(%x: !aten.tensor<[4, 6], f32>, %src: !aten.tensor<[6], f16>) -> (!aten.tensor<[4, 6], f32>, !aten.tensor<[4, 6], f32>) {
  %c = aten.copy.default(%x, %src) : !aten.tensor<[4, 6], f32>
  %m = aten.copy_.default(%x, %src) : !aten.tensor<[4, 6], f32>
  func.return %c, %m : !aten.tensor<[4, 6], f32>, !aten.tensor<[4, 6], f32>
}

// -----

// Each random op draws from its own counter range.
// CHECK-LABEL: func.func @random
// CHECK-NEXT: %[[SEED:.*]] = loop.seed : i64
// CHECK: loop.rand %[[SEED]][6*i0 + i1] : f32
// CHECK: loop.randn %[[SEED]][i0 + 24] : f32
// CHECK-NEXT: arith.truncf %{{.*}} : f32 to f16
// The dropout output and its mask read the same counters.
// CHECK: loop.rand %[[SEED]][6*i0 + i1 + 27] : f32
// CHECK: arith.cmpf ogt
// CHECK: %mask = loop.pointwise [4, 6] : !loop.tensor<[4, 6], i1>
// CHECK: loop.rand %[[SEED]][6*i0 + i1 + 27] : f32
func.func @random(%x: !aten.tensor<[4, 6], f32>) -> (!aten.tensor<[4, 6], f32>, !aten.tensor<[3], f16>, !aten.tensor<[4, 6], f32>, !aten.tensor<[4, 6], i1>) {
  %r = aten.rand_like.default(%x, pin_memory = false) : !aten.tensor<[4, 6], f32>
  %n = aten.randn.default(size = [3], dtype = f16, device = "cpu", pin_memory = false) : !aten.tensor<[3], f16>
  %o, %mask = aten.native_dropout.default(%x, p = 0.25, train = true) : (!aten.tensor<[4, 6], f32>, !aten.tensor<[4, 6], i1>)
  func.return %r, %n, %o, %mask : !aten.tensor<[4, 6], f32>, !aten.tensor<[3], f16>, !aten.tensor<[4, 6], f32>, !aten.tensor<[4, 6], i1>
}

// -----

// replication_pad2d_backward as a gather: input column w sums the gradient
// from (w + 2) * min(1, w) (0 at the first column, through the left pad) up to
// w + 3, or through the right pad at the last; rows likewise with pads 0 and 3.
// A [4, 3] window (max(lo, hi) + 1 per dim), each element's tail masked; bf16
// sums in f32.

// CHECK-LABEL: func.func @replication_pad_backward
// CHECK:       %[[SUM:.*]] = loop.reduction sum [2, 3, 5, 6] [4, 3] : !loop.tensor<[2, 3, 5, 6], f32> {
// CHECK:         loop.load %g[i0, i1, i2*min(1, i2) + r0, i3*min(1, i3) + r1 + 2*min(1, i3)] mask(%[[M:.*]]) : !buffer.buffer<[2, 3, 8, 9], bf16>
// CHECK:         arith.extf
// CHECK:         arith.select %[[M]]
// CHECK:       loop.pointwise [2, 3, 5, 6] : !loop.tensor<[2, 3, 5, 6], bf16>
// CHECK:         loop.load %[[SUM]]
// CHECK-NEXT:    arith.truncf

func.func @replication_pad_backward(%g: !aten.tensor<[2, 3, 8, 9], bf16>, %x: !aten.tensor<[2, 3, 5, 6], bf16>) -> !aten.tensor<[2, 3, 5, 6], bf16> {
  %y = aten.replication_pad2d_backward.default(%g, %x, padding = [2, 1, 0, 3]) : !aten.tensor<[2, 3, 5, 6], bf16>
  func.return %y : !aten.tensor<[2, 3, 5, 6], bf16>
}
