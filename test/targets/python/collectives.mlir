// RUN: fx-opt %s -p '%default_pipeline' -t python | filecheck %s

// Through the default pipeline: collectives become calls of the same c10d ops
// with the group's name, the waits calls of wait_tensor. Traced with each wait
// right after its collective, the wrapper starts both collectives, runs the
// kernel that needs neither, then waits (aten-reorder-collectives). An input
// handed to a collective is deleted after the collective's wait, not after
// the call that starts it.

// CHECK-LABEL: def call(args):
// CHECK:      reduce_scatter = torch.ops._c10d_functional.reduce_scatter_tensor.default(x, 'sum', 2, '0')
// CHECK-NEXT: all_gather = torch.ops._c10d_functional.all_gather_into_tensor.default(x, 2, '0')
// CHECK-NOT:  del x
// CHECK:      coil_sin_0_launch.run(1, 1, 1, stream, x, sin)
// CHECK-NEXT: wait = torch.ops._c10d_functional.wait_tensor.default(reduce_scatter)
// CHECK-NEXT: wait_1 = torch.ops._c10d_functional.wait_tensor.default(all_gather)
// CHECK-NEXT: del x
// CHECK:      return (wait, wait_1, sin)
func.func @forward(%x: !aten.tensor<[4, 3], f32>) -> (!aten.tensor<[2, 3], f32>, !aten.tensor<[8, 3], f32>, !aten.tensor<[4, 3], f32>) {
  %reduce_scatter = _c10d_functional.reduce_scatter_tensor.default(%x, reduce_op = "sum", group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[2, 3], f32>
  %wait = _c10d_functional.wait_tensor.default(%reduce_scatter) : !aten.tensor<[2, 3], f32>
  %all_gather = _c10d_functional.all_gather_into_tensor.default(%x, group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[8, 3], f32>
  %wait_1 = _c10d_functional.wait_tensor.default(%all_gather) : !aten.tensor<[8, 3], f32>
  %sin = aten.sin.default(%x) : !aten.tensor<[4, 3], f32>
  func.return %wait, %wait_1, %sin : !aten.tensor<[2, 3], f32>, !aten.tensor<[8, 3], f32>, !aten.tensor<[4, 3], f32>
}
