// RUN: fx-opt %s -t triton | filecheck %s

// tt.reduce: a lone addf combiner prints as tl.sum; any other combiner is
// outlined into its own @triton.jit function printed before the kernel, and a
// two-operand reduce unpacks both results.

// CHECK:       # kind: reduction
// CHECK-NEXT:  @triton.jit
// CHECK-LABEL: def coil_sum_0(in_ptr0, out_ptr0):
// CHECK:           s = tl.sum(v, 1)
// CHECK-NOT:   combine

// CHECK-LABEL: def coil_argmax_1_combine0(a0, a1, b0, b1):
// CHECK-NEXT:      gt = a0 > b0
// CHECK-NEXT:      eq = a0 == b0
// CHECK-NEXT:      lt = a1 < b1
// CHECK-NEXT:      tie = eq & lt
// CHECK-NEXT:      take = gt | tie
// CHECK-NEXT:      v2 = tl.where(take, a0, b0)
// CHECK-NEXT:      i2 = tl.where(take, a1, b1)
// CHECK-NEXT:      return v2, i2
// CHECK-EMPTY:
// CHECK-EMPTY:
// CHECK-NEXT:  @triton.jit
// CHECK-NEXT:  def coil_argmax_1(in_ptr0, out_ptr0):
// CHECK:           best, where = tl.reduce((v, r), 0, coil_argmax_1_combine0)
// CHECK-NEXT:      tl.store(out_ptr0, where)

builtin.module {
  tt.func public @coil_sum_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>)
      attributes {coil.kind = "reduction", coil.source_lines = []} {
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %r2 = tt.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %rb = tt.broadcast %r2 : tensor<1x64xi32> -> tensor<4x64xi32>
    %p = tt.splat %in_ptr0 : !tt.ptr<f32> -> tensor<4x64x!tt.ptr<f32>>
    %pa = tt.addptr %p, %rb : tensor<4x64x!tt.ptr<f32>>, tensor<4x64xi32>
    %v = tt.load %pa : tensor<4x64x!tt.ptr<f32>>
    %s = "tt.reduce"(%v) <{axis = 1 : i32}> ({
    ^bb0(%l: f32, %rr: f32):
      %q = arith.addf %l, %rr : f32
      tt.reduce.return %q : f32
    }) : (tensor<4x64xf32>) -> tensor<4xf32>
    %r4 = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
    %o = tt.splat %out_ptr0 : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>>
    %oa = tt.addptr %o, %r4 : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
    tt.store %oa, %s : tensor<4x!tt.ptr<f32>>
    tt.return
  }
  tt.func public @coil_argmax_1(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<i32>) {
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %p = tt.splat %in_ptr0 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %pa = tt.addptr %p, %r : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %v = tt.load %pa : tensor<128x!tt.ptr<f32>>
    %best, %where = "tt.reduce"(%v, %r) <{axis = 0 : i32}> ({
    ^bb0(%va: f32, %ia: i32, %vb: f32, %ib: i32):
      %gt = arith.cmpf ogt, %va, %vb : f32
      %eq = arith.cmpf oeq, %va, %vb : f32
      %lt = arith.cmpi slt, %ia, %ib : i32
      %tie = arith.andi %eq, %lt : i1
      %take = arith.ori %gt, %tie : i1
      %v2 = arith.select %take, %va, %vb : f32
      %i2 = arith.select %take, %ia, %ib : i32
      tt.reduce.return %v2, %i2 : f32, i32
    }) : (tensor<128xf32>, tensor<128xi32>) -> (f32, i32)
    tt.store %out_ptr0, %where : !tt.ptr<i32>
    tt.return
  }
}
