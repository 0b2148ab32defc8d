// RUN: fx-opt %s --parsing-diagnostics --verify-diagnostics --split-input-file | filecheck %s

// Every user-facing verification error of the c10d collectives.

func.func @gather_type(%x: !aten.tensor<[4, 3], f32>) {
  %0 = _c10d_functional.all_gather_into_tensor.default(%x, group_size = 2, group_name = "0") : !aten.tensor<[4, 3], f32>
  func.return
}
// CHECK: _c10d_functional.all_gather_into_tensor.default: result type !aten.tensor<[4, 3], f32> does not match the type inferred from its operands: !aten.tensor<[8, 3], f32>

// -----

func.func @scatter_not_divisible(%x: !aten.tensor<[5, 3], f32>) {
  %0 = _c10d_functional.reduce_scatter_tensor.default(%x, reduce_op = "sum", group_size = 2, group_name = "0") : !aten.tensor<[2, 3], f32>
  func.return
}
// CHECK: _c10d_functional.reduce_scatter_tensor.default: dim 0 (5) is not divisible by group_size (2)

// -----

func.func @group_size_vs_ranks(%x: !aten.tensor<[4, 3], f32>) {
  %0 = _c10d_functional.all_gather_into_tensor.default(%x, group_size = 2, group_name = "0") ranks [0, 1, 2] : !aten.tensor<[8, 3], f32>
  func.return
}
// CHECK: _c10d_functional.all_gather_into_tensor.default: group_size = 2, but group '0' has 3 rank(s) [0, 1, 2]

// -----

func.func @repeated_rank(%x: !aten.tensor<[4, 3], f32>) {
  %0 = _c10d_functional.broadcast.default(%x, src = 0, group_name = "0") ranks [1, 1] : !aten.tensor<[4, 3], f32>
  func.return
}
// CHECK: _c10d_functional.broadcast.default: the ranks of a group are distinct non-negative integers, got [1, 1]

// -----

func.func @splits_vs_ranks(%x: !aten.tensor<[4, 3], f32>) {
  %0 = _c10d_functional.all_to_all_single.default(%x, output_split_sizes = [1, 1, 2], input_split_sizes = [2, 2], group_name = "0") ranks [0, 1] : !aten.tensor<[4, 3], f32>
  func.return
}
// CHECK: _c10d_functional.all_to_all_single.default: output_split_sizes has 3 entries, one per rank of group '0' (2 rank(s) [0, 1])

// -----

func.func @missing_group(%x: !aten.tensor<[4, 3], f32>) {
  %0 = _c10d_functional.all_reduce.default(%x, reduce_op = "sum") : !aten.tensor<[4, 3], f32>
  func.return
}
// CHECK: _c10d_functional.all_reduce.default: missing argument 'group_name'

// -----

func.func @bad_ranks(%x: !aten.tensor<[4, 3], f32>) {
  %0 = _c10d_functional.all_reduce.default(%x, reduce_op = "sum", group_name = "0") ranks 0 : !aten.tensor<[4, 3], f32>
  func.return
}
// CHECK: expected the group's ranks after 'ranks', e.g. ranks [0, 1]
