// RUN: fx-opt %s -t python | filecheck %s
// RUN: fx-opt %s -t cpp | filecheck %s --check-prefix=CPP

// A 0-d input typed on CUDA that only ATen calls read stays where it arrived
// (targets/scalar_inputs.py): the memory-efficient attention backward reads its
// philox seed and offset through host pointers, so moving a CPU seed to the GPU
// made it dereference device memory. (scalar-input.mlir: a kernel's read moves it.)
// CHECK:      check_input("seed", seed, (), (), torch.int64, "cuda:0")
// CHECK:      _inputs.learn
// CHECK-NOT:  .to("cuda:0")
// CHECK:      torch.ops.aten.add.Tensor(x, seed)
// CPP:        coil::check_input("seed", seed, {}, {}, at::ScalarType::Long, at::Device(at::kCUDA, 0));
// CPP-NOT:    seed.to(
// CPP:        call_op(op_aten_add_Tensor(), {x, seed

!x = !buffer.buffer<[4], i64, device "cuda:0">
!s = !buffer.buffer<[], i64, device "cuda:0">
builtin.module {
  host.func @forward(%x: !x, %seed: !s) -> (!x) {
    %y = host.extern "aten.add.Tensor" (%x, %seed) : (!x, !s) -> (!x) {
    ^bb0(%xa: !aten.tensor<[4], i64, device "cuda:0">, %sa: !aten.tensor<[], i64, device "cuda:0">):
      %add = aten.add.Tensor(%xa, %sa) : !aten.tensor<[4], i64, device "cuda:0">
      host.yield %add : !aten.tensor<[4], i64, device "cuda:0">
    }
    host.return %y : !x
  }
}
