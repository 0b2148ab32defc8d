// RUN: fx-opt %s -t cpp | filecheck %s

// host.free drops the wrapper's reference at the last use (the caching
// allocator gets the block back), and a view's handle is released after its
// last read (targets/lifetimes.py); a reinterpret of a fresh allocation uses
// the absolute offset; host.autotune runs one candidate through a
// coil::Autotuner keyed by the launches' size symbols.

// CHECK:      coil::Autotuner autotune_coil_sum_0;
// CHECK-LABEL: std::vector<c10::IValue> call(
// CHECK:        at::Tensor tmp = coil::empty_strided({s0, 8}, {8, 1}, at::ScalarType::Float, at::Device(at::kCUDA, 0));
// CHECK-NEXT:   at::Tensor half = tmp.as_strided({s0, 4}, {8, 1}, 4);
// CHECK-NEXT:   coil_exp_1.launch(at::Device(at::kCUDA, 0), s0, 1, 1, {coil::ptr(x), coil::ptr(tmp), coil::i64(s0)});
// CHECK-NEXT:   at::Tensor total = coil::empty_strided({s0}, {1}, at::ScalarType::Float, at::Device(at::kCUDA, 0));
// CHECK-NEXT:   autotune_coil_sum_0.run(at::Device(at::kCUDA, 0), {s0}, {
// CHECK-NEXT:     [&] { coil_sum_0_c0.launch(at::Device(at::kCUDA, 0), coil::floordiv(s0 + 31, 32), 1, 1, {coil::ptr(half), coil::ptr(total), coil::i64(s0)}); },
// CHECK-NEXT:     [&] { coil_sum_0_c1.launch(at::Device(at::kCUDA, 0), s0, 1, 1, {coil::ptr(half), coil::ptr(total), coil::i64(s0)}); },
// CHECK-NEXT:   });
// CHECK-NEXT:   half.reset();
// CHECK-NEXT:   tmp.reset();
// CHECK-NEXT:   return {c10::IValue(total)};

!x = !buffer.buffer<[s0, 8], f32, device "cuda:0">
!h = !buffer.buffer<[s0, 4], f32, strides [8, 1], offset 4, device "cuda:0">
!r = !buffer.buffer<[s0], f32, device "cuda:0">
builtin.module {
  tt.func public @coil_exp_1(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %s0: i64) {
    tt.return
  }
  tt.func public @coil_sum_0_c0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %s0: i64) {
    tt.return
  }
  tt.func public @coil_sum_0_c1(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %s0: i64) {
    tt.return
  }
  host.func @forward(%x: !x) -> !r {
    %tmp = host.empty_strided : !x
    %half = host.reinterpret %tmp : !x -> !h
    host.launch @coil_exp_1 grid [s0, 1, 1] (%x, %tmp : !x, !x) scalars [s0] {num_warps = 4 : i64, num_stages = 1 : i64}
    %total = host.empty_strided : !r
    host.autotune "coil_sum_0" {
      host.launch @coil_sum_0_c0 grid [(s0 + 31) floordiv 32, 1, 1] (%half, %total : !h, !r) scalars [s0] {num_warps = 4 : i64, num_stages = 1 : i64}
      host.launch @coil_sum_0_c1 grid [s0, 1, 1] (%half, %total : !h, !r) scalars [s0] {num_warps = 8 : i64, num_stages = 1 : i64}
    }
    host.free %tmp : !x
    host.return %total : !r
  }
}
