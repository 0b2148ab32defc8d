// RUN: fx-opt %s -p convert-buffer-to-host -t python | filecheck %s

// A small tensor constant inside an extern region is made once, when the
// module loads, where the calls only read it (no host-to-device copy per
// call); one a call writes in place, or that a call's result could alias,
// is made per call, so no call sees another's changes.

// CHECK:      {{^}}c = torch.tensor([1.0, 2.0], dtype=torch.float32, device="cpu").reshape((2,))  # read only: made once
// CHECK-NOT:  torch.tensor(
// CHECK-LABEL: def call(args):
// CHECK:      m = torch.ops.aten.mul.Tensor(x, c)
// CHECK-NOT:  del c{{$}}
// CHECK:      c_1 = torch.tensor([0.0, 0.0], dtype=torch.float32, device="cpu").reshape((2,))
// CHECK-NEXT: a = torch.ops.aten.add_.Tensor(c_1, x)
// CHECK:      c_2 = torch.tensor([3.0, 4.0], dtype=torch.float32, device="cpu").reshape((2,))
// CHECK-NEXT: v = torch.ops.aten.view.default(c_2, [2])
func.func @constants(%x: !buffer.buffer<[2], f32>) -> (!buffer.buffer<[2], f32>, !buffer.buffer<[2], f32>, !buffer.buffer<[2], f32>) {
  %m = buffer.extern "aten.mul.Tensor" (%x) : (!buffer.buffer<[2], f32>) -> (!buffer.buffer<[2], f32>) {
  ^bb0(%p: !aten.tensor<[2], f32>):
    %c = aten.tensor_constant dense<[1.0, 2.0]> : tensor<2xf32> -> !aten.tensor<[2], f32>
    %0 = aten.mul.Tensor(%p, %c) : !aten.tensor<[2], f32>
    buffer.yield %0 : !aten.tensor<[2], f32>
  }
  %a = buffer.extern "aten.add_.Tensor" (%x) : (!buffer.buffer<[2], f32>) -> (!buffer.buffer<[2], f32>) {
  ^bb0(%p: !aten.tensor<[2], f32>):
    %c = aten.tensor_constant dense<[0.0, 0.0]> : tensor<2xf32> -> !aten.tensor<[2], f32>
    %1 = aten.add_.Tensor(%c, %p) : !aten.tensor<[2], f32>
    buffer.yield %1 : !aten.tensor<[2], f32>
  }
  %v = buffer.extern "aten.view.default" (%x) : (!buffer.buffer<[2], f32>) -> (!buffer.buffer<[2], f32>) {
  ^bb0(%p: !aten.tensor<[2], f32>):
    %c = aten.tensor_constant dense<[3.0, 4.0]> : tensor<2xf32> -> !aten.tensor<[2], f32>
    %2 = aten.view.default(%c, size = [2]) : !aten.tensor<[2], f32>
    buffer.yield %2 : !aten.tensor<[2], f32>
  }
  func.return %m, %a, %v : !buffer.buffer<[2], f32>, !buffer.buffer<[2], f32>, !buffer.buffer<[2], f32>
}
