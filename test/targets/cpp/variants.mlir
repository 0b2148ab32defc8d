// RUN: fx-opt %s -t cpp | filecheck %s

// host.variants in the C++ wrapper: one comparison of the size against each
// bound, the last launch past every bound.

// CHECK-LABEL: std::vector<c10::IValue> call(
// CHECK:        if (s1 <= 1024) {
// CHECK-NEXT:       coil_sum_0_r1024.launch(at::Device(at::kCPU), s0, 1, 1, {coil::ptr(x), coil::ptr(total), coil::i64(s0), coil::i64(s1)});
// CHECK-NEXT:   } else {
// CHECK-NEXT:       coil_sum_0.launch(at::Device(at::kCPU), s0, 1, 1, {coil::ptr(x), coil::ptr(total), coil::i64(s0), coil::i64(s1)});
// CHECK-NEXT:   }

!x = !buffer.buffer<[s0, s1], f32>
!r = !buffer.buffer<[s0], f32>
builtin.module {
  tt.func public @coil_sum_0_r1024(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %s0: i64, %s1: i64) {
    tt.return
  }
  tt.func public @coil_sum_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %s0: i64, %s1: i64) {
    tt.return
  }
  host.func @forward(%x: !x) -> !r {
    %total = host.empty_strided : !r
    host.variants "coil_sum_0" size <s1> bounds <[1024]> {
      host.launch @coil_sum_0_r1024 grid [s0, 1, 1] (%x, %total : !x, !r) scalars [s0, s1]
      host.launch @coil_sum_0 grid [s0, 1, 1] (%x, %total : !x, !r) scalars [s0, s1]
    }
    host.return %total : !r
  }
}
