// RUN: fx-opt %s -t triton | filecheck %s

// tt.atomic_rmw as a scatter's accumulation prints Triton's atomics with their
// mask and memory semantics (fadd and add are both tl.atomic_add; max on a
// float is tl.atomic_max, which Triton implements for floats itself).

// CHECK-LABEL: def coil_scatter_0(in_ptr0, out_ptr0):
// CHECK:           a = tl.atomic_add(p, v, mask=m, sem="relaxed", scope="gpu")
// CHECK-NEXT:      b = tl.atomic_max(p, v, mask=m, sem="relaxed", scope="gpu")
// CHECK-NEXT:      c = tl.atomic_min(p, v, sem="relaxed", scope="gpu")
// CHECK:           d = tl.atomic_add(q, k, mask=m, sem="relaxed", scope="gpu")

builtin.module {
  tt.func public @coil_scatter_0(%in_ptr0: !tt.ptr<i64>, %out_ptr0: !tt.ptr<f32>)
      attributes {coil.kind = "scatter", coil.source_lines = []} {
    %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %n = arith.constant dense<18> : tensor<32xi32>
    %m = arith.cmpi slt, %r, %n : tensor<32xi32>
    %s = tt.splat %out_ptr0 : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %p = tt.addptr %s, %r : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %v = arith.constant dense<1.000000e+00> : tensor<32xf32>
    %a = tt.atomic_rmw fadd, relaxed, gpu, %p, %v, %m : (tensor<32x!tt.ptr<f32>>, tensor<32xf32>, tensor<32xi1>) -> tensor<32xf32>
    %b = tt.atomic_rmw max, relaxed, gpu, %p, %v, %m : (tensor<32x!tt.ptr<f32>>, tensor<32xf32>, tensor<32xi1>) -> tensor<32xf32>
    %c = tt.atomic_rmw min, relaxed, gpu, %p, %v : (tensor<32x!tt.ptr<f32>>, tensor<32xf32>) -> tensor<32xf32>
    %si = tt.splat %in_ptr0 : !tt.ptr<i64> -> tensor<32x!tt.ptr<i64>>
    %q = tt.addptr %si, %r : tensor<32x!tt.ptr<i64>>, tensor<32xi32>
    %k = arith.constant dense<1> : tensor<32xi64>
    %d = tt.atomic_rmw add, relaxed, gpu, %q, %k, %m : (tensor<32x!tt.ptr<i64>>, tensor<32xi64>, tensor<32xi1>) -> tensor<32xi64>
    tt.return
  }
}
