// RUN: fx-opt %s -p memory-plan --split-input-file | filecheck %s
// RUN: not fx-opt %S/Inputs/in-flight-write.mlir -p memory-plan 2>&1 | filecheck %s --check-prefix=WRITE
// RUN: not fx-opt %S/Inputs/in-flight-read.mlir -p memory-plan 2>&1 | filecheck %s --check-prefix=READ

// A collective reads its inputs in the background until the wait_tensor of its
// result: such a buffer is neither freed nor reused before that wait, although
// its last use in program order is the collective itself.

// %m is handed to an all-gather; %t is made while the all-gather is in flight.
// Were %m dead after the all-gather, %t would take over its storage and the
// sin/cos kernel would overwrite what NCCL or gloo may still be sending.
// CHECK-LABEL: func.func @in_flight
// CHECK-SAME:    coil.peak_bytes = #coil.expr<192>
// CHECK:         %[[M:.*]] = buffer.alloc : !buffer.buffer<[4, 3], f32>
// CHECK:         %[[G:.*]] = buffer.extern "_c10d_functional.all_gather_into_tensor.default" (%[[M]])
// CHECK-NOT:     buffer.reuse %[[M]]
// CHECK-NOT:     buffer.dealloc %[[M]]
// CHECK:         %[[T:.*]] = buffer.alloc : !buffer.buffer<[4, 3], f32>
// CHECK:         loop.pointwise [4, 3] outs(%[[T]] : !buffer.buffer<[4, 3], f32>)
// CHECK:         %[[Y:.*]] = buffer.extern "_c10d_functional.wait_tensor.default" (%[[G]])
// CHECK:         buffer.yield
// CHECK-NEXT:  }
// After the wait the storage is free again: a later buffer of its size takes it.
// CHECK-NEXT:  %[[U:.*]] = buffer.reuse %[[M]] : !buffer.buffer<[4, 3], f32> -> !buffer.buffer<[4, 3], f32>
// CHECK-NEXT:  loop.pointwise [4, 3] outs(%[[U]] : !buffer.buffer<[4, 3], f32>)
func.func @in_flight(%x: !buffer.buffer<[4, 3], f32>) -> (!buffer.buffer<[8, 3], f32>, !buffer.buffer<[4, 3], f32>, !buffer.buffer<[4, 3], f32>) {
  %m = buffer.alloc : !buffer.buffer<[4, 3], f32>
  loop.pointwise [4, 3] outs(%m : !buffer.buffer<[4, 3], f32>) {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[4, 3], f32>
    %1 = arith.mulf %0, %0 : f32
    loop.yield %1 : f32
  }
  %g = buffer.extern "_c10d_functional.all_gather_into_tensor.default" (%m) : (!buffer.buffer<[4, 3], f32>) -> (!buffer.buffer<[8, 3], f32>) {
  ^bb0(%a: !aten.tensor<[4, 3], f32>):
    %r = _c10d_functional.all_gather_into_tensor.default(%a, group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[8, 3], f32>
    buffer.yield %r : !aten.tensor<[8, 3], f32>
  }
  %t = buffer.alloc : !buffer.buffer<[4, 3], f32>
  loop.pointwise [4, 3] outs(%t : !buffer.buffer<[4, 3], f32>) {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[4, 3], f32>
    %1 = math.sin %0 : f32
    %2 = math.cos %1 : f32
    loop.yield %2 : f32
  }
  %y = buffer.extern "_c10d_functional.wait_tensor.default" (%g) : (!buffer.buffer<[8, 3], f32>) -> (!buffer.buffer<[8, 3], f32>) {
  ^bb0(%a: !aten.tensor<[8, 3], f32>):
    %r = _c10d_functional.wait_tensor.default(%a) : !aten.tensor<[8, 3], f32>
    buffer.yield %r : !aten.tensor<[8, 3], f32>
  }
  %u = buffer.alloc : !buffer.buffer<[4, 3], f32>
  loop.pointwise [4, 3] outs(%u : !buffer.buffer<[4, 3], f32>) {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %t[i0, i1] : !buffer.buffer<[4, 3], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  func.return %y, %t, %u : !buffer.buffer<[8, 3], f32>, !buffer.buffer<[4, 3], f32>, !buffer.buffer<[4, 3], f32>
}

// -----

// A view of the input keeps it in flight too; a result never waited is in
// flight to the end of the function. (The last exp writes in place over %t,
// which it reads only where it writes.)
// CHECK-LABEL: func.func @view_and_no_wait
// CHECK:         %[[M:.*]] = buffer.alloc : !buffer.buffer<[8], f32>
// CHECK:         %[[V:.*]] = buffer.view %[[M]]
// CHECK:         buffer.extern "_c10d_functional.all_reduce.default" (%[[V]])
// CHECK-NOT:     buffer.reuse
// CHECK:         %[[T:.*]] = buffer.alloc : !buffer.buffer<[8], f32>
// CHECK:         buffer.reuse %[[T]]
// CHECK-NOT:     buffer.dealloc %[[M]]
// CHECK:         func.return
func.func @view_and_no_wait(%x: !buffer.buffer<[8], f32>) -> !buffer.buffer<[8], f32> {
  %m = buffer.alloc : !buffer.buffer<[8], f32>
  loop.pointwise [8] outs(%m : !buffer.buffer<[8], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[8], f32>
    loop.yield %0 : f32
  }
  %v = buffer.view %m : !buffer.buffer<[8], f32> -> !buffer.buffer<[2, 4], f32>
  %g = buffer.extern "_c10d_functional.all_reduce.default" (%v) : (!buffer.buffer<[2, 4], f32>) -> (!buffer.buffer<[2, 4], f32>) {
  ^bb0(%a: !aten.tensor<[2, 4], f32>):
    %r = _c10d_functional.all_reduce.default(%a, reduce_op = "sum", group_name = "0") : !aten.tensor<[2, 4], f32>
    buffer.yield %r : !aten.tensor<[2, 4], f32>
  }
  %t = buffer.alloc : !buffer.buffer<[8], f32>
  loop.pointwise [8] outs(%t : !buffer.buffer<[8], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[8], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %w = buffer.alloc : !buffer.buffer<[8], f32>
  loop.pointwise [8] outs(%w : !buffer.buffer<[8], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %t[i0] : !buffer.buffer<[8], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  func.return %w : !buffer.buffer<[8], f32>
}

// A kernel that writes a collective's input before its wait, or reads its
// result before the wait, is an error naming both (a schedule no pass may make).
// WRITE: memory-plan: loop.pointwise writes a buffer it reads while _c10d_functional.all_gather_into_tensor.default is in flight (between the collective and its wait_tensor)
// READ: memory-plan: loop.pointwise reads a buffer it writes while _c10d_functional.reduce_scatter_tensor.default is in flight (between the collective and its wait_tensor)

// -----

// An ATen scatter into a buffer a collective is still sending keeps its
// out-of-place form (memory-plan calls the in-place index_put_ only on a
// buffer that dies there; this one lives until the wait).
// CHECK-LABEL: func.func @no_in_place_in_flight
// CHECK:         buffer.extern "_c10d_functional.all_gather_into_tensor.default"
// CHECK:         buffer.extern "aten.index_put.default"
// CHECK-NOT:     index_put_
// CHECK:         buffer.extern "_c10d_functional.wait_tensor.default"
func.func @no_in_place_in_flight(%x: !buffer.buffer<[4, 3], f32>, %i: !buffer.buffer<[2], i64>, %v: !buffer.buffer<[2, 3], f32>) -> (!buffer.buffer<[8, 3], f32>, !buffer.buffer<[4, 3], f32>) {
  %m = buffer.alloc : !buffer.buffer<[4, 3], f32>
  loop.pointwise [4, 3] outs(%m : !buffer.buffer<[4, 3], f32>) {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[4, 3], f32>
    loop.yield %0 : f32
  }
  %g = buffer.extern "_c10d_functional.all_gather_into_tensor.default" (%m) : (!buffer.buffer<[4, 3], f32>) -> (!buffer.buffer<[8, 3], f32>) {
  ^bb0(%a: !aten.tensor<[4, 3], f32>):
    %r = _c10d_functional.all_gather_into_tensor.default(%a, group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[8, 3], f32>
    buffer.yield %r : !aten.tensor<[8, 3], f32>
  }
  %p = buffer.extern "aten.index_put.default" (%m, %i, %v) : (!buffer.buffer<[4, 3], f32>, !buffer.buffer<[2], i64>, !buffer.buffer<[2, 3], f32>) -> (!buffer.buffer<[4, 3], f32>) {
  ^bb0(%a: !aten.tensor<[4, 3], f32>, %b: !aten.tensor<[2], i64>, %c: !aten.tensor<[2, 3], f32>):
    %0 = aten.index_put.default(%a, [%b], %c, accumulate = true) : !aten.tensor<[4, 3], f32>
    buffer.yield %0 : !aten.tensor<[4, 3], f32>
  }
  %y = buffer.extern "_c10d_functional.wait_tensor.default" (%g) : (!buffer.buffer<[8, 3], f32>) -> (!buffer.buffer<[8, 3], f32>) {
  ^bb0(%a: !aten.tensor<[8, 3], f32>):
    %r = _c10d_functional.wait_tensor.default(%a) : !aten.tensor<[8, 3], f32>
    buffer.yield %r : !aten.tensor<[8, 3], f32>
  }
  func.return %y, %p : !buffer.buffer<[8, 3], f32>, !buffer.buffer<[4, 3], f32>
}
