// RUN: fx-opt %s -t triton | filecheck %s

// scf.for carries its iter_args as variables (assigned before the loop,
// reassigned at scf.yield); scf.if assigns its results in both branches.

// CHECK-LABEL: def coil_loop_0(in_ptr0, out_ptr0, s0):
// CHECK-NEXT:      s0 = s0.to(tl.int64)
// CHECK:           acc = zero
// CHECK-NEXT:      cnt = tl.full([], 0, tl.int32)
// CHECK-NEXT:      for k in range(c0, s0, c32):
// CHECK-NEXT:          ks = tl.full([32], k, tl.int64)
// CHECK:               a2 = acc + v
// CHECK-NEXT:          n2 = cnt + 1
// CHECK-NEXT:          acc, cnt = a2, n2
// CHECK-NEXT:      pos = cnt > 0
// CHECK-NEXT:      if pos:
// CHECK-NEXT:          total = tl.sum(acc, 0)
// CHECK-NEXT:          res = total
// CHECK-NEXT:      else:
// CHECK-NEXT:          res = tl.full([], 0.0, tl.float32)
// CHECK-NEXT:      tl.store(out_ptr0, res)

builtin.module {
  tt.func public @coil_loop_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %s0: i64) {
    %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %r64 = arith.extsi %r : tensor<32xi32> to tensor<32xi64>
    %zero = arith.constant dense<0.0> : tensor<32xf32>
    %c0 = arith.constant 0 : i64
    %c32 = arith.constant 32 : i64
    %i0 = arith.constant 0 : i32
    %i1 = arith.constant 1 : i32
    %acc, %cnt = scf.for %k = %c0 to %s0 step %c32 iter_args(%a = %zero, %n = %i0) -> (tensor<32xf32>, i32) : i64 {
      %ks = tt.splat %k : i64 -> tensor<32xi64>
      %col = arith.addi %ks, %r64 : tensor<32xi64>
      %p = tt.splat %in_ptr0 : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
      %pa = tt.addptr %p, %col : tensor<32x!tt.ptr<f32>>, tensor<32xi64>
      %v = tt.load %pa : tensor<32x!tt.ptr<f32>>
      %a2 = arith.addf %a, %v : tensor<32xf32>
      %n2 = arith.addi %n, %i1 : i32
      scf.yield %a2, %n2 : tensor<32xf32>, i32
    }
    %pos = arith.cmpi sgt, %cnt, %i0 : i32
    %res = scf.if %pos -> (f32) {
      %total = "tt.reduce"(%acc) <{axis = 0 : i32}> ({
      ^bb0(%l: f32, %rr: f32):
        %q = arith.addf %l, %rr : f32
        tt.reduce.return %q : f32
      }) : (tensor<32xf32>) -> f32
      scf.yield %total : f32
    } else {
      %f0 = arith.constant 0.0 : f32
      scf.yield %f0 : f32
    }
    tt.store %out_ptr0, %res : !tt.ptr<f32>
    tt.return
  }
}
