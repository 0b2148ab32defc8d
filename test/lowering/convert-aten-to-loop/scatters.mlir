// RUN: fx-opt %s -p convert-aten-to-loop{fallback=error} --split-input-file | filecheck %s
// RUN: fx-opt %s -p convert-aten-to-loop{deterministic=true} --split-input-file | filecheck %s --check-prefix=DET

// A scatter with several sources per element is a loop.scatter over the
// index's shape into a copy of self: the body yields the source, then the
// index (t0) that replaces the scattered dimension. Under
// torch.use_deterministic_algorithms (deterministic=true) it is ATen's.

// CHECK-LABEL: func.func @scatter_src
// CHECK:      %[[R:.*]] = loop.scatter store [3, 6] into(%x : !buffer.buffer<[5, 6], f32>) at [t0, i1] : !loop.tensor<[5, 6], f32> {
// CHECK-NEXT: ^bb0(%i0: index, %i1: index):
// CHECK-NEXT:   %[[I:.*]] = loop.load %i[i0, i1] : !buffer.buffer<[3, 6], i64>
// CHECK-NEXT:   %[[S:.*]] = loop.load %s[i0, i1] : !buffer.buffer<[3, 6], f32>
// CHECK-NEXT:   loop.yield %[[S]], %[[I]] : f32, i64
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[R]]
// DET-LABEL: func.func @scatter_src
// DET:         buffer.extern
// DET:           aten.scatter.src
func.func @scatter_src(%x: !aten.tensor<[5, 6], f32>, %i: !aten.tensor<[3, 6], i64>, %s: !aten.tensor<[3, 6], f32>) -> !aten.tensor<[5, 6], f32> {
  %0 = aten.scatter.src(%x, %i, %s, dim = 0) : !aten.tensor<[5, 6], f32>
  func.return %0 : !aten.tensor<[5, 6], f32>
}

// -----

// One source per element (the index has size 1 along dim and self's sizes
// elsewhere) stays a pointwise select, also when deterministic.
// CHECK-LABEL: func.func @scatter_add_one_source
// CHECK-NOT:  loop.scatter
// CHECK:      loop.pointwise [4, 6]
// CHECK:        arith.select
// DET-LABEL: func.func @scatter_add_one_source
// DET-NOT:     buffer.extern
// DET:         func.return
func.func @scatter_add_one_source(%x: !aten.tensor<[4, 6], f32>, %i: !aten.tensor<[4, 1], i64>, %s: !aten.tensor<[4, 1], f32>) -> !aten.tensor<[4, 6], f32> {
  %0 = aten.scatter_add.default(%x, %i, %s, dim = 1) : !aten.tensor<[4, 6], f32>
  func.return %0 : !aten.tensor<[4, 6], f32>
}

// -----

// scatter_reduce mean without self, bf16: a copy of self widened to f32, the
// identity (0) stored where the index points, the sources added atomically,
// a count scattered the same way from 0, then sum / max(count, 1) rounded
// back to bf16.
// CHECK-LABEL: func.func @scatter_reduce_mean
// CHECK:      %[[W:.*]] = loop.pointwise [5, 6] : !loop.tensor<[5, 6], f32> {
// CHECK:        arith.extf
// CHECK:      %[[Z:.*]] = loop.scatter store [3, 6] into(%[[W]] : !loop.tensor<[5, 6], f32>) at [t0, i1]
// CHECK:        arith.constant 0.000000e+00 : f32
// CHECK:      %[[SUM:.*]] = loop.scatter add [3, 6] into(%[[Z]] : !loop.tensor<[5, 6], f32>) at [t0, i1]
// CHECK:      %[[ZERO:.*]] = loop.pointwise [5, 6] : !loop.tensor<[5, 6], f32> {
// CHECK:      %[[N:.*]] = loop.scatter add [3, 6] into(%[[ZERO]] : !loop.tensor<[5, 6], f32>) at [t0, i1]
// CHECK:        arith.constant 1.000000e+00 : f32
// CHECK:      loop.pointwise [5, 6] : !loop.tensor<[5, 6], f32> {
// CHECK:        arith.cmpf oeq
// CHECK:        arith.divf
// CHECK:      loop.pointwise [5, 6] : !loop.tensor<[5, 6], bf16> {
// CHECK:        arith.truncf
func.func @scatter_reduce_mean(%x: !aten.tensor<[5, 6], bf16>, %i: !aten.tensor<[3, 6], i64>, %s: !aten.tensor<[3, 6], bf16>) -> !aten.tensor<[5, 6], bf16> {
  %0 = aten.scatter_reduce.two(%x, %i, %s, dim = 0, reduce = "mean", include_self = false) : !aten.tensor<[5, 6], bf16>
  func.return %0 : !aten.tensor<[5, 6], bf16>
}

// -----

// amax/amin are atomic max/min; prod has no atomic and calls ATen.
// CHECK-LABEL: func.func @scatter_reduce_amax
// CHECK: loop.scatter max [3, 6]
func.func @scatter_reduce_amax(%x: !aten.tensor<[5, 6], i32>, %i: !aten.tensor<[3, 6], i64>, %s: !aten.tensor<[3, 6], i32>) -> !aten.tensor<[5, 6], i32> {
  %0 = aten.scatter_reduce.two(%x, %i, %s, dim = 0, reduce = "amax") : !aten.tensor<[5, 6], i32>
  func.return %0 : !aten.tensor<[5, 6], i32>
}

// -----

// index_put with accumulate: the indexed dim is t0 (negative indices wrap by
// the size), the values broadcast over the indexed shape [4, 6].
// CHECK-LABEL: func.func @index_put_accumulate
// CHECK:      loop.scatter add [4, 6] into(%x : !buffer.buffer<[5, 6], f32>) at [t0, i1] : !loop.tensor<[5, 6], f32> {
// CHECK-NEXT: ^bb0(%i0: index, %i1: index):
// CHECK-NEXT:   %[[I:.*]] = loop.load %i[i0] : !buffer.buffer<[4], i64>
// CHECK-NEXT:   %[[N:.*]] = arith.constant 5 : i64
// CHECK-NEXT:   %[[Z:.*]] = arith.constant 0 : i64
// CHECK-NEXT:   %[[NEG:.*]] = arith.cmpi slt, %[[I]], %[[Z]] : i64
// CHECK-NEXT:   %[[W:.*]] = arith.addi %[[I]], %[[N]] : i64
// CHECK-NEXT:   %[[T:.*]] = arith.select %[[NEG]], %[[W]], %[[I]] : i64
// CHECK-NEXT:   %[[V:.*]] = loop.load %v[i1] : !buffer.buffer<[6], f32>
// CHECK-NEXT:   loop.yield %[[V]], %[[T]] : f32, i64
// DET-LABEL: func.func @index_put_accumulate
// DET:         aten.index_put.default
func.func @index_put_accumulate(%x: !aten.tensor<[5, 6], f32>, %i: !aten.tensor<[4], i64>, %v: !aten.tensor<[6], f32>) -> !aten.tensor<[5, 6], f32> {
  %0 = aten.index_put.default(%x, [%i], %v, accumulate = true) : !aten.tensor<[5, 6], f32>
  func.return %0 : !aten.tensor<[5, 6], f32>
}

// -----

// Separated index tensors put the indexed shape first: ranges [4, 2], the
// middle dim free (i1).
// CHECK-LABEL: func.func @index_put_separated
// CHECK: loop.scatter store [4, 2] into(%x : !buffer.buffer<[5, 2, 3], f32>) at [t0, i1, t1]
func.func @index_put_separated(%x: !aten.tensor<[5, 2, 3], f32>, %i: !aten.tensor<[4], i64>, %j: !aten.tensor<[4], i64>, %v: !aten.tensor<[4, 1], f32>) -> !aten.tensor<[5, 2, 3], f32> {
  %0 = aten.index_put.default(%x, [%i, none, %j], %v) : !aten.tensor<[5, 2, 3], f32>
  func.return %0 : !aten.tensor<[5, 2, 3], f32>
}

// -----

// A boolean mask with one value is a pointwise where (deterministic too).
// CHECK-LABEL: func.func @index_put_mask
// CHECK-NOT:  loop.scatter
// CHECK:      loop.pointwise [5, 6] : !loop.tensor<[5, 6], f32> {
// CHECK:        arith.select
// DET-LABEL: func.func @index_put_mask
// DET-NOT:     buffer.extern
// DET:         func.return
func.func @index_put_mask(%x: !aten.tensor<[5, 6], f32>, %m: !aten.tensor<[5, 6], i1>, %v: !aten.tensor<[], f32>) -> !aten.tensor<[5, 6], f32> {
  %0 = aten.index_put.default(%x, [%m], %v) : !aten.tensor<[5, 6], f32>
  func.return %0 : !aten.tensor<[5, 6], f32>
}

// -----

// A scatter whose index has size 1 along dim and self's sizes elsewhere is a
// select per element (cross-entropy's backward); several sources per element
// are a loop.scatter.
// CHECK-LABEL: func.func @scatters
// CHECK: %s = loop.pointwise [4, 6]
// CHECK: %[[T:.*]] = loop.load %i[i0, 0] : !buffer.buffer<[4, 1], i64>
// CHECK-NEXT: %[[P:.*]] = loop.index i1 : i64
// CHECK-NEXT: %[[HIT:.*]] = arith.cmpi eq, %[[T]], %[[P]] : i64
// CHECK-NEXT: %[[OLD:.*]] = loop.load %x[i0, i1]
// CHECK-NEXT: %[[V:.*]] = arith.constant -1.000000e+00 : f32
// CHECK-NEXT: arith.select %[[HIT]], %[[V]], %[[OLD]] : f32
// CHECK: %a = loop.pointwise [4, 6]
// CHECK: %[[AHIT:.*]] = arith.cmpi eq
// CHECK-NEXT: %[[AOLD:.*]] = loop.load %x[i0, i1]
// CHECK-NEXT: %[[SRC:.*]] = loop.load %x[i0, 0] mask(%[[AHIT]])
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[AOLD]], %[[SRC]] : f32
// CHECK-NEXT: arith.select %[[AHIT]], %[[SUM]], %[[AOLD]] : f32
// CHECK: %m = loop.scatter store [4, 2] into(%x : !buffer.buffer<[4, 6], f32>) at [i0, t0]
func.func @scatters(%x: !aten.tensor<[4, 6], f32>, %i: !aten.tensor<[4, 1], i64>, %j: !aten.tensor<[4, 2], i64>) -> (!aten.tensor<[4, 6], f32>, !aten.tensor<[4, 6], f32>, !aten.tensor<[4, 6], f32>) {
  %s = aten.scatter.value(%x, dim = 1, %i, value = -1.0) : !aten.tensor<[4, 6], f32>
  %a = aten.scatter_add.default(%x, dim = 1, %i, %x) : !aten.tensor<[4, 6], f32>
  %m = aten.scatter.value(%x, dim = 1, %j, value = 2.0) : !aten.tensor<[4, 6], f32>
  func.return %s, %a, %m : !aten.tensor<[4, 6], f32>, !aten.tensor<[4, 6], f32>, !aten.tensor<[4, 6], f32>
}
