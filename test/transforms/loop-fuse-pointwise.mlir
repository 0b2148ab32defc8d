// RUN: fx-opt %s -p loop-fuse --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'loop-fuse{allow-pointwise-siblings=false}' --split-input-file | filecheck %s --check-prefix=OFF

// An optimizer step's shape: the new parameter reads the gradient and the
// moment, the new moment reads them too; each is copied into its input. The
// moment's nest moves up across the parameter's copy (it does not read the
// parameter) and joins: one group, no reduction ranges, members in order,
// both results leave it; the copies stay where they were.

// CHECK-LABEL: func.func @optimizer_like
// CHECK-NEXT:    %[[GP:.*]], %[[GM:.*]] = loop.fused [16] [] : !loop.tensor<[16], f32>, !loop.tensor<[16], f32> {
// CHECK-NEXT:      %[[P:.*]] = loop.pointwise [16] : !loop.tensor<[16], f32> {
// CHECK:             loop.load %p[i0]
// CHECK:           %[[M:.*]] = loop.pointwise [16] : !loop.tensor<[16], f32> {
// CHECK:             loop.load %m[i0]
// CHECK:           loop.yield %[[P]], %[[M]] : !loop.tensor<[16], f32>, !loop.tensor<[16], f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.copy %[[GP]], %p
// CHECK-NEXT:    loop.copy %[[GM]], %m
// CHECK-NEXT:    func.return
// OFF-LABEL: func.func @optimizer_like
// OFF-NOT:     loop.fused
func.func @optimizer_like(%p: !buffer.buffer<[16], f32>, %g: !buffer.buffer<[16], f32>, %m: !buffer.buffer<[16], f32>) {
  %p_new = loop.pointwise [16] : !loop.tensor<[16], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %p[i0] : !buffer.buffer<[16], f32>
    %1 = loop.load %g[i0] : !buffer.buffer<[16], f32>
    %2 = loop.load %m[i0] : !buffer.buffer<[16], f32>
    %3 = arith.mulf %1, %2 : f32
    %4 = arith.subf %0, %3 : f32
    loop.yield %4 : f32
  }
  loop.copy %p_new, %p : !loop.tensor<[16], f32>, !buffer.buffer<[16], f32>
  %m_new = loop.pointwise [16] : !loop.tensor<[16], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %m[i0] : !buffer.buffer<[16], f32>
    %1 = loop.load %g[i0] : !buffer.buffer<[16], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  loop.copy %m_new, %m : !loop.tensor<[16], f32>, !buffer.buffer<[16], f32>
  func.return
}

// -----

// A nest that reads an input a loop.copy between them writes stays apart: moved
// up, it would read the old value.

// CHECK-LABEL: func.func @reads_a_copied_input
// CHECK-NOT:     loop.fused
func.func @reads_a_copied_input(%p: !buffer.buffer<[16], f32>, %g: !buffer.buffer<[16], f32>) {
  %p_new = loop.pointwise [16] : !loop.tensor<[16], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %p[i0] : !buffer.buffer<[16], f32>
    %1 = loop.load %g[i0] : !buffer.buffer<[16], f32>
    %2 = arith.subf %0, %1 : f32
    loop.yield %2 : f32
  }
  loop.copy %p_new, %p : !loop.tensor<[16], f32>, !buffer.buffer<[16], f32>
  %q = loop.pointwise [16] : !loop.tensor<[16], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %p[i0] : !buffer.buffer<[16], f32>
    %1 = loop.load %g[i0] : !buffer.buffer<[16], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  loop.copy %q, %g : !loop.tensor<[16], f32>, !buffer.buffer<[16], f32>
  func.return
}

// -----

// Siblings reading %x at their own point, and a nest reading the first one's
// result there, form one group; a transposed read (a 2-D tile's job) and a
// nest sharing nothing stay apart.

// CHECK-LABEL: func.func @siblings
// CHECK-NEXT:    %[[GA:.*]], %[[GB:.*]], %[[GC:.*]] = loop.fused [8, 8] [] : !loop.tensor<[8, 8], f32>, !loop.tensor<[8, 8], f32>, !loop.tensor<[8, 8], f32> {
// CHECK-NEXT:      %[[A:.*]] = loop.pointwise [8, 8]
// CHECK:             math.exp
// CHECK:           %[[B:.*]] = loop.pointwise [8, 8]
// CHECK:             math.sqrt
// CHECK:           %[[C:.*]] = loop.pointwise [8, 8]
// CHECK:             loop.load %[[A]][i0, i1] : !loop.tensor<[8, 8], f32>
// CHECK:           loop.yield %[[A]], %[[B]], %[[C]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[T:.*]] = loop.pointwise [8, 8]
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      loop.load %x[i1, i0]
// CHECK:         %[[U:.*]] = loop.pointwise [8, 8]
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      loop.load %y[i0, i1]
// CHECK:         func.return %[[GA]], %[[GB]], %[[GC]], %[[T]], %[[U]]
func.func @siblings(%x: !buffer.buffer<[8, 8], f32>, %y: !buffer.buffer<[8, 8], f32>) -> (!loop.tensor<[8, 8], f32>, !loop.tensor<[8, 8], f32>, !loop.tensor<[8, 8], f32>, !loop.tensor<[8, 8], f32>, !loop.tensor<[8, 8], f32>) {
  %a = loop.pointwise [8, 8] : !loop.tensor<[8, 8], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[8, 8], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %t = loop.pointwise [8, 8] : !loop.tensor<[8, 8], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i1, i0] : !buffer.buffer<[8, 8], f32>
    %1 = math.log %0 : f32
    loop.yield %1 : f32
  }
  %b = loop.pointwise [8, 8] : !loop.tensor<[8, 8], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[8, 8], f32>
    %1 = math.sqrt %0 : f32
    loop.yield %1 : f32
  }
  %u = loop.pointwise [8, 8] : !loop.tensor<[8, 8], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %y[i0, i1] : !buffer.buffer<[8, 8], f32>
    %1 = arith.negf %0 : f32
    loop.yield %1 : f32
  }
  %c = loop.pointwise [8, 8] : !loop.tensor<[8, 8], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %a[i0, i1] : !loop.tensor<[8, 8], f32>
    %1 = arith.mulf %0, %0 : f32
    loop.yield %1 : f32
  }
  func.return %a, %b, %c, %t, %u : !loop.tensor<[8, 8], f32>, !loop.tensor<[8, 8], f32>, !loop.tensor<[8, 8], f32>, !loop.tensor<[8, 8], f32>, !loop.tensor<[8, 8], f32>
}

// -----

// A nest reading a member's result at another point (a flip) cannot join:
// that element belongs to another program.

// CHECK-LABEL: func.func @shifted
// CHECK-NOT:     loop.fused
func.func @shifted(%x: !buffer.buffer<[16], f32>) -> (!loop.tensor<[16], f32>, !loop.tensor<[16], f32>) {
  %a = loop.pointwise [16] : !loop.tensor<[16], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[16], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %b = loop.pointwise [16] : !loop.tensor<[16], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %a[15 - i0] : !loop.tensor<[16], f32>
    %1 = loop.load %x[i0] : !buffer.buffer<[16], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %a, %b : !loop.tensor<[16], f32>, !loop.tensor<[16], f32>
}

// -----

// An identity copy read only by an extern call stays apart: bufferize hands
// the call the copy's source and erases it; as a member of a group it would
// be stored, a second copy of the tensor.

// CHECK-LABEL: func.func @copy_for_an_extern
// CHECK-NOT:     loop.fused
// CHECK:         %[[A:.*]] = loop.pointwise [8, 8]
// CHECK:         %[[C:.*]] = loop.pointwise [8, 8]
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      loop.load %[[A]][i0, i1] : !loop.tensor<[8, 8], f32>
// CHECK-NEXT:      loop.yield
// CHECK:         buffer.extern "aten.mm.default" (%[[C]], %x)
func.func @copy_for_an_extern(%x: !buffer.buffer<[8, 8], f32>) -> (!loop.tensor<[8, 8], f32>, !loop.tensor<[8, 8], f32>) {
  %a = loop.pointwise [8, 8] : !loop.tensor<[8, 8], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[8, 8], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %c = loop.pointwise [8, 8] : !loop.tensor<[8, 8], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %a[i0, i1] : !loop.tensor<[8, 8], f32>
    loop.yield %0 : f32
  }
  %m = buffer.extern "aten.mm.default" (%c, %x) : (!loop.tensor<[8, 8], f32>, !buffer.buffer<[8, 8], f32>) -> (!loop.tensor<[8, 8], f32>) {
  ^bb0(%ca: !aten.tensor<[8, 8], f32>, %xa: !aten.tensor<[8, 8], f32>):
    %0 = aten.mm.default(%ca, %xa) : !aten.tensor<[8, 8], f32>
    buffer.yield %0 : !aten.tensor<[8, 8], f32>
  }
  func.return %a, %m : !loop.tensor<[8, 8], f32>, !loop.tensor<[8, 8], f32>
}
