// RUN: fx-opt %s -t triton | filecheck %s

// tt.scan: a lone addf combiner prints as tl.cumsum; any other combiner is
// outlined into its own @triton.jit function (before the kernel) and called
// through tl.associative_scan, whose two operands unpack into two results;
// reverse=True where the scan runs from the end.

// CHECK:       # kind: scan
// CHECK-NEXT:  @triton.jit
// CHECK-LABEL: def coil_cumsum_0(in_ptr0, out_ptr0):
// CHECK:           s = tl.cumsum(v, 1)
// CHECK-NOT:   coil_cumsum_0_combine

// CHECK-LABEL: def coil_cummax_1_combine0(a0, a1, b0, b1):
// CHECK-NEXT:      ge = b0 >= a0
// CHECK-NEXT:      v2 = tl.where(ge, b0, a0)
// CHECK-NEXT:      i2 = tl.where(ge, b1, a1)
// CHECK-NEXT:      return v2, i2
// CHECK-EMPTY:
// CHECK-EMPTY:
// CHECK-NEXT:  @triton.jit
// CHECK-NEXT:  def coil_cummax_1(in_ptr0, out_ptr0):
// CHECK:           best, where = tl.associative_scan((v, r), 0, coil_cummax_1_combine0, reverse=True)
// CHECK:           tl.store(oa, where)

builtin.module {
  tt.func public @coil_cumsum_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>)
      attributes {coil.kind = "scan", coil.source_lines = []} {
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %r2 = tt.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %rb = tt.broadcast %r2 : tensor<1x64xi32> -> tensor<4x64xi32>
    %p = tt.splat %in_ptr0 : !tt.ptr<f32> -> tensor<4x64x!tt.ptr<f32>>
    %pa = tt.addptr %p, %rb : tensor<4x64x!tt.ptr<f32>>, tensor<4x64xi32>
    %v = tt.load %pa : tensor<4x64x!tt.ptr<f32>>
    %s = "tt.scan"(%v) <{axis = 1 : i32, reverse = false}> ({
    ^bb0(%l: f32, %rr: f32):
      %q = arith.addf %l, %rr : f32
      tt.scan.return %q : f32
    }) : (tensor<4x64xf32>) -> tensor<4x64xf32>
    %o = tt.splat %out_ptr0 : !tt.ptr<f32> -> tensor<4x64x!tt.ptr<f32>>
    %oa = tt.addptr %o, %rb : tensor<4x64x!tt.ptr<f32>>, tensor<4x64xi32>
    tt.store %oa, %s : tensor<4x64x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @coil_cummax_1(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<i32>) {
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %p = tt.splat %in_ptr0 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %pa = tt.addptr %p, %r : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %v = tt.load %pa : tensor<128x!tt.ptr<f32>>
    %best, %where = "tt.scan"(%v, %r) <{axis = 0 : i32, reverse = true}> ({
    ^bb0(%va: f32, %ia: i32, %vb: f32, %ib: i32):
      %ge = arith.cmpf oge, %vb, %va : f32
      %v2 = arith.select %ge, %vb, %va : f32
      %i2 = arith.select %ge, %ib, %ia : i32
      tt.scan.return %v2, %i2 : f32, i32
    }) : (tensor<128xf32>, tensor<128xi32>) -> (tensor<128xf32>, tensor<128xi32>)
    %o = tt.splat %out_ptr0 : !tt.ptr<i32> -> tensor<128x!tt.ptr<i32>>
    %oa = tt.addptr %o, %r : tensor<128x!tt.ptr<i32>>, tensor<128xi32>
    tt.store %oa, %where : tensor<128x!tt.ptr<i32>>
    tt.return
  }
}
