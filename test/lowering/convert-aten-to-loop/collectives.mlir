// RUN: fx-opt %s -p 'convert-aten-to-loop{fallback=error}' 2>&1 | filecheck %s

// The c10d collectives and their waits are ATen calls by design (torch's c10d
// does the communication): each becomes a buffer.extern of the same op, with
// no fallback warning, and also under fallback=error.

// CHECK-NOT:  no loop lowering
// CHECK-LABEL: func.func @collectives
// CHECK:      %[[M:.*]] = loop.pointwise [4, 3]
// CHECK:      %[[G:.*]] = buffer.extern "_c10d_functional.all_gather_into_tensor.default" (%[[M]]) : (!loop.tensor<[4, 3], f32>) -> (!loop.tensor<[8, 3], f32>) {
// CHECK-NEXT: ^bb0(%[[A:.*]]: !aten.tensor<[4, 3], f32>):
// CHECK-NEXT:   %{{.*}} = _c10d_functional.all_gather_into_tensor.default(%[[A]], group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[8, 3], f32>
// CHECK:      %[[W:.*]] = buffer.extern "_c10d_functional.wait_tensor.default" (%[[G]])
// CHECK:      buffer.extern "_c10d_functional.reduce_scatter_tensor.default" (%x)
// CHECK:      buffer.extern "_c10d_functional_autograd.all_to_all_single.default" (%x)
// CHECK:      buffer.extern "_c10d_functional.broadcast.default" (%x)
// CHECK:      buffer.extern "_c10d_functional.all_reduce.default" (%x)
// The in-place form (no generated op: torchgen cannot name it) is one too.
// CHECK:      buffer.extern "_c10d_functional.all_reduce_" (%{{.*}})
// CHECK:      loop.pointwise [8, 3]
// CHECK-NOT:  no loop lowering
func.func @collectives(%x: !aten.tensor<[4, 3], f32>) -> (!aten.tensor<[8, 3], f32>, !aten.tensor<[2, 3], f32>, !aten.tensor<[4, 3], f32>, !aten.tensor<[4, 3], f32>, !aten.tensor<[4, 3], f32>, !aten.tensor<[4, 3], f32>) {
  %m = aten.mul.Tensor(%x, %x) : !aten.tensor<[4, 3], f32>
  %g = _c10d_functional.all_gather_into_tensor.default(%m, group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[8, 3], f32>
  %gw = _c10d_functional.wait_tensor.default(%g) : !aten.tensor<[8, 3], f32>
  %r = _c10d_functional.reduce_scatter_tensor.default(%x, reduce_op = "sum", group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[2, 3], f32>
  %rw = _c10d_functional.wait_tensor.default(%r) : !aten.tensor<[2, 3], f32>
  %a = _c10d_functional_autograd.all_to_all_single.default(%x, output_split_sizes = [2, 2], input_split_sizes = [2, 2], group_name = "0") ranks [0, 1] : !aten.tensor<[4, 3], f32>
  %aw = _c10d_functional.wait_tensor.default(%a) : !aten.tensor<[4, 3], f32>
  %b = _c10d_functional.broadcast.default(%x, src = 0, group_name = "0") ranks [0, 1] : !aten.tensor<[4, 3], f32>
  %bw = _c10d_functional.wait_tensor.default(%b) : !aten.tensor<[4, 3], f32>
  %s = _c10d_functional.all_reduce.default(%x, reduce_op = "sum", group_name = "0") ranks [0, 1] : !aten.tensor<[4, 3], f32>
  %sw = _c10d_functional.wait_tensor.default(%s) : !aten.tensor<[4, 3], f32>
  %c = aten.clone.default(%x) : !aten.tensor<[4, 3], f32>
  %i = aten.operator "_c10d_functional::all_reduce_"(%c, "sum", "0") : !aten.tensor<[4, 3], f32>
  %iw = _c10d_functional.wait_tensor.default(%i) : !aten.tensor<[4, 3], f32>
  %d = aten.add.Tensor(%gw, %gw) : !aten.tensor<[8, 3], f32>
  func.return %d, %rw, %aw, %bw, %sw, %iw : !aten.tensor<[8, 3], f32>, !aten.tensor<[2, 3], f32>, !aten.tensor<[4, 3], f32>, !aten.tensor<[4, 3], f32>, !aten.tensor<[4, 3], f32>, !aten.tensor<[4, 3], f32>
}
