// RUN: fx-opt %s | filecheck %s
// RUN: COIL_ROUNDTRIP | filecheck %s
// RUN: COIL_GENERIC_ROUNDTRIP | fx-opt | filecheck %s
// RUN: fx-opt %s -p canonicalize,cse,dce | filecheck %s --check-prefix=KEEP

// The c10d functional collectives: one op per overload, generated from the
// schemas like the aten ops; a collective names its group and, when known, the
// group's global ranks after the arguments. None is Pure: cse never merges two
// identical collectives and dce never drops one whose result is unused.

// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: !aten.tensor<[4, s0], f32>) -> (!aten.tensor<[4, s0], f32>, !aten.tensor<[8, s0], f32>, !aten.tensor<[2, s0], f32>, !aten.tensor<[6, s0], f32>, !aten.tensor<[4, s0], f32>) {
  // CHECK: %ar = _c10d_functional.all_reduce.default(%x, reduce_op = "sum", group_name = "0") ranks [0, 1] : !aten.tensor<[4, s0], f32>
  // CHECK-NEXT: %ar_w = _c10d_functional.wait_tensor.default(%ar) : !aten.tensor<[4, s0], f32>
  %ar = _c10d_functional.all_reduce.default(%x, reduce_op = "sum", group_name = "0") ranks [0, 1] : !aten.tensor<[4, s0], f32>
  %ar_w = _c10d_functional.wait_tensor.default(%ar) : !aten.tensor<[4, s0], f32>
  // CHECK: %ag = _c10d_functional.all_gather_into_tensor.default(%x, group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[8, s0], f32>
  %ag = _c10d_functional.all_gather_into_tensor.default(%x, group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[8, s0], f32>
  %ag_w = _c10d_functional.wait_tensor.default(%ag) : !aten.tensor<[8, s0], f32>
  // A group of other ranks, in group-rank order.
  // CHECK: %rs = _c10d_functional.reduce_scatter_tensor.default(%x, reduce_op = "avg", group_size = 2, group_name = "tp") ranks [3, 1] : !aten.tensor<[2, s0], f32>
  %rs = _c10d_functional.reduce_scatter_tensor.default(%x, reduce_op = "avg", group_size = 2, group_name = "tp") ranks [3, 1] : !aten.tensor<[2, s0], f32>
  %rs_w = _c10d_functional.wait_tensor.default(%rs) : !aten.tensor<[2, s0], f32>
  // CHECK: %a2a = _c10d_functional.all_to_all_single.default(%x, output_split_sizes = [1, 5], input_split_sizes = [2, 2], group_name = "0") ranks [0, 1] : !aten.tensor<[6, s0], f32>
  %a2a = _c10d_functional.all_to_all_single.default(%x, output_split_sizes = [1, 5], input_split_sizes = [2, 2], group_name = "0") ranks [0, 1] : !aten.tensor<[6, s0], f32>
  %a2a_w = _c10d_functional.wait_tensor.default(%a2a) : !aten.tensor<[6, s0], f32>
  // Ranks unknown (IR written by hand, or traced without a process group).
  // CHECK: %bc = _c10d_functional.broadcast.default(%x, src = 1, group_name = "0") : !aten.tensor<[4, s0], f32>
  %bc = _c10d_functional.broadcast.default(%x, src = 1, group_name = "0") : !aten.tensor<[4, s0], f32>
  %bc_w = _c10d_functional.wait_tensor.default(%bc) : !aten.tensor<[4, s0], f32>
  func.return %ar_w, %ag_w, %rs_w, %a2a_w, %bc_w : !aten.tensor<[4, s0], f32>, !aten.tensor<[8, s0], f32>, !aten.tensor<[2, s0], f32>, !aten.tensor<[6, s0], f32>, !aten.tensor<[4, s0], f32>
}

// The autograd forms (what DTensor's differentiable collectives trace to).
// CHECK-LABEL: func.func @autograd_forms
func.func @autograd_forms(%x: !aten.tensor<[4, 3], f32>) -> (!aten.tensor<[8, 3], f32>, !aten.tensor<[2, 3], f32>) {
  // CHECK: _c10d_functional_autograd.all_gather_into_tensor.default(%x, group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[8, 3], f32>
  %ag = _c10d_functional_autograd.all_gather_into_tensor.default(%x, group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[8, 3], f32>
  %ag_w = _c10d_functional.wait_tensor.default(%ag) : !aten.tensor<[8, 3], f32>
  // CHECK: _c10d_functional_autograd.reduce_scatter_tensor.default(%x, reduce_op = "sum", group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[2, 3], f32>
  %rs = _c10d_functional_autograd.reduce_scatter_tensor.default(%x, reduce_op = "sum", group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[2, 3], f32>
  %rs_w = _c10d_functional.wait_tensor.default(%rs) : !aten.tensor<[2, 3], f32>
  func.return %ag_w, %rs_w : !aten.tensor<[8, 3], f32>, !aten.tensor<[2, 3], f32>
}

// KEEP-LABEL: func.func @not_pure
// KEEP-NEXT: %a = _c10d_functional.all_reduce.default(%x, reduce_op = "sum", group_name = "0")
// KEEP-NEXT: %b = _c10d_functional.all_reduce.default(%x, reduce_op = "sum", group_name = "0")
// KEEP-NEXT: %u = _c10d_functional.all_reduce.default(%x, reduce_op = "max", group_name = "0")
// KEEP-NEXT: %a_w = _c10d_functional.wait_tensor.default(%a)
// KEEP-NEXT: %b_w = _c10d_functional.wait_tensor.default(%b)
// KEEP-NEXT: %u_w = _c10d_functional.wait_tensor.default(%u)
// KEEP-NEXT: %s = aten.add.Tensor(%a_w, %b_w)
func.func @not_pure(%x: !aten.tensor<[4], f32>) -> !aten.tensor<[4], f32> {
  %a = _c10d_functional.all_reduce.default(%x, reduce_op = "sum", group_name = "0") : !aten.tensor<[4], f32>
  %b = _c10d_functional.all_reduce.default(%x, reduce_op = "sum", group_name = "0") : !aten.tensor<[4], f32>
  %u = _c10d_functional.all_reduce.default(%x, reduce_op = "max", group_name = "0") : !aten.tensor<[4], f32>
  %a_w = _c10d_functional.wait_tensor.default(%a) : !aten.tensor<[4], f32>
  %b_w = _c10d_functional.wait_tensor.default(%b) : !aten.tensor<[4], f32>
  %u_w = _c10d_functional.wait_tensor.default(%u) : !aten.tensor<[4], f32>
  %s = aten.add.Tensor(%a_w, %b_w) : !aten.tensor<[4], f32>
  func.return %s : !aten.tensor<[4], f32>
}
