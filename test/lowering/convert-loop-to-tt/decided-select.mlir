// RUN: fx-opt %s -p convert-loop-to-tt -t triton | filecheck %s

// aten.index wraps a negative index (i < 0 ? i + n : i); a bilinear
// upsample's source row is a float clamped at 0 and truncated, so the ranges
// (value_range.py) decide the comparison and the select is its arm: no
// tl.where is emitted for the row, and no assert. The column's index is
// loaded, its range unknown: its wrap and its assert stay.
// CHECK-LABEL: def coil_up_0(
// CHECK-NOT:     row = tl.where
// CHECK:         jj = tl.where(jneg, jw, j)
// CHECK-NOT:     tl.where
// CHECK-NOT:     (dim 0)
// CHECK:         tl.store
func.func @up(%x: !buffer.buffer<[4, 8], f32>, %col: !buffer.buffer<[16], i64>) -> !buffer.buffer<[16, 16], f32> {
  %up = buffer.alloc : !buffer.buffer<[16, 16], f32>
  loop.pointwise [16, 16] outs(%up : !buffer.buffer<[16, 16], f32>) {
  ^bb0(%i0: index, %i1: index):
    %i = loop.index i0 : i64
    %f = arith.sitofp %i : i64 to f32
    %half = arith.constant 5.000000e-01 : f32
    %a = arith.addf %f, %half : f32
    %q = arith.constant 2.500000e-01 : f32
    %m = arith.mulf %a, %q : f32
    %s = arith.subf %m, %half : f32
    %zf = arith.constant 0.000000e+00 : f32
    %c = arith.maximumf %s, %zf : f32
    %r = arith.fptosi %c : f32 to i64
    %zero = arith.constant 0 : i64
    %n = arith.constant 4 : i64
    %neg = arith.cmpi slt, %r, %zero : i64
    %w = arith.addi %r, %n : i64
    %row = arith.select %neg, %w, %r : i64
    %j = loop.load %col[i1] : !buffer.buffer<[16], i64>
    %eight = arith.constant 8 : i64
    %jneg = arith.cmpi slt, %j, %zero : i64
    %jw = arith.addi %j, %eight : i64
    %jj = arith.select %jneg, %jw, %j : i64
    %v = loop.load %x[t0, t1] indirect(%row, %jj : i64, i64) : !buffer.buffer<[4, 8], f32>
    loop.yield %v : f32
  }
  func.return %up : !buffer.buffer<[16, 16], f32>
}
