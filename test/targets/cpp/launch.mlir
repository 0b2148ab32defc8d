// RUN: fx-opt %s -t cpp | filecheck %s

// A pointwise kernel on a CUDA device: inputs checked, a device guard, the
// output allocated through ATen, the launch through coil::Kernel with the
// grid and one argument per kernel parameter (pointers as coil::ptr), the
// output returned. The kernel is declared with its Triton signature, which is
// what it is compiled with.

// CHECK:      #include "coil_runtime.h"
// CHECK:      // coil_exp_0(in_ptr0: *fp32, out_ptr0: *fp32)
// CHECK-NEXT: coil::Kernel coil_exp_0("coil_exp_0", &kernel_dir);
// CHECK-LABEL: std::vector<c10::IValue> call(std::vector<c10::IValue>& args) {
// CHECK:        at::Tensor x = coil::tensor_input(args, 0, "x");
// CHECK-NEXT:   args.clear();
// CHECK-NEXT:   coil::check_input("x", x, {4096}, {1}, at::ScalarType::Float, at::Device(at::kCUDA, 0));
// No autograd graph for ATen's calls (and out= calls on inputs requiring grad).
// CHECK-NEXT:   at::NoGradGuard no_grad;
// CHECK-NEXT:   c10::DeviceGuard device_guard(at::Device(at::kCUDA, 0));
// CHECK-NEXT:   at::Tensor exp = coil::empty_strided({4096}, {1}, at::ScalarType::Float, at::Device(at::kCUDA, 0));
// CHECK-NEXT:   coil_exp_0.launch(at::Device(at::kCUDA, 0), 4, 1, 1, {coil::ptr(x), coil::ptr(exp)});
// CHECK-NEXT:   return {c10::IValue(exp)};
// CHECK:      COIL_DEFINE_ENTRY(call, 1, kernel_dir)

!y = !buffer.buffer<[4096], f32, device "cuda:0">
builtin.module {
  tt.func public @coil_exp_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>) {
    tt.return
  }
  host.func @forward(%x: !y) -> !y {
    %exp = host.empty_strided : !y
    host.launch @coil_exp_0 grid [4, 1, 1] (%x, %exp : !y, !y) {num_warps = 4 : i64, num_stages = 1 : i64}
    host.return %exp : !y
  }
}
