// RUN: not fx-opt %s -t cpp 2>&1 | filecheck %s

// A launch whose arguments do not fit the kernel's parameters.

// CHECK: -t cpp: host.launch of @coil_k_0 passes 2 argument(s); the kernel takes 3
// CHECK-NOT: Traceback
!y = !buffer.buffer<[4], f32, device "cuda:0">
builtin.module {
  tt.func public @coil_k_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %n: i64) {
    tt.return
  }
  host.func @forward(%x: !y) -> !y {
    %o = host.empty_strided : !y
    host.launch @coil_k_0 grid [1, 1, 1] (%x, %o : !y, !y)
    host.return %o : !y
  }
}
