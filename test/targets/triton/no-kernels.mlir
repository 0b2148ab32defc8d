// A lowered module whose every op is an ATen call (nn.Linear: addmm) has no
// kernel: -t triton prints the imports and says so (the backend's dump writes
// it as kernels.py) instead of failing.
// RUN: fx-opt %s -p "%default_pipeline" -t triton | filecheck %s

// CHECK: import triton
// CHECK: # No Triton kernels: every op of this module is an ATen call (host.extern).
// CHECK-NOT: @triton.jit

func.func @f(%w: !aten.tensor<[4, 4], f32>, %b: !aten.tensor<[4], f32>,
             %x: !aten.tensor<[2, 4], f32>) -> !aten.tensor<[2, 4], f32> {
  %t = aten.t.default(%w) : !aten.tensor<[4, 4], f32, strides [1, 4]>
  %y = aten.addmm.default(%b, %x, %t) : !aten.tensor<[2, 4], f32>
  func.return %y : !aten.tensor<[2, 4], f32>
}
