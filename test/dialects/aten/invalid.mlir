// RUN: fx-opt %s --parsing-diagnostics --verify-diagnostics --split-input-file | filecheck %s

// Every user-facing parse and verification error of the aten dialect.

func.func @unknown_argument(%x: !aten.tensor<[4], f32>) {
  %0 = aten.sum.dim_IntList(%x, dims = [0]) : !aten.tensor<[], f32>
  func.return
}
// CHECK: aten.sum.dim_IntList has no non-tensor argument 'dims'

// -----

func.func @wrong_literal_kind(%x: !aten.tensor<[4], f32>) {
  %0 = aten.sum.dim_IntList(%x, dim = [0], keepdim = 1) : !aten.tensor<[1], f32>
  func.return
}
// CHECK: expected true or false

// -----

func.func @missing_tensor(%x: !aten.tensor<[4], f32>) {
  %0 = aten.add.Tensor(%x, alpha = 2) : !aten.tensor<[4], f32>
  func.return
}
// CHECK: aten.add.Tensor expects tensor argument 'other'

// -----

func.func @too_many_tensors(%x: !aten.tensor<[4], f32>) {
  %0 = aten.relu.default(%x, %x) : !aten.tensor<[4], f32>
  func.return
}
// CHECK: too many tensor arguments for aten.relu.default

// -----

func.func @missing_required_value(%x: !aten.tensor<[4], f32>) {
  %0 = aten.view.default(%x) : !aten.tensor<[4], f32>
  func.return
}
// CHECK: aten.view.default: missing argument 'size'

// -----

func.func @list_of_scalars(%x: !aten.tensor<[4], f32>, %n: index) {
  %0 = aten.cat.default([%x, %n], dim = 0) : !aten.tensor<[5], f32>
  func.return
}
// CHECK: aten.cat.default: operand 'tensors' must be a tensor, got index

// -----

func.func @mutated_result_type(%x: !aten.tensor<[4], f32>, %y: !aten.tensor<[4], f16>) {
  %0 = aten.copy_.default(%x, %y) : !aten.tensor<[4], f16>
  func.return
}
// CHECK: aten.copy_.default: result aliases 'self' and must have its type !aten.tensor<[4], f32>, got !aten.tensor<[4], f16>

// -----

func.func @bad_element_type(%x: !aten.tensor<[4], index>) {
  func.return
}
// CHECK: index is not a torch element type

// -----

func.func @stride_count(%x: !aten.tensor<[4, 4], f32, strides [1]>) {
  func.return
}
// CHECK: expected 2 strides, got 1

// -----

func.func @bad_expression(%x: !aten.tensor<[s0 + ], f32>) {
  func.return
}
// CHECK: expected a symbolic integer expression

// -----

func.func @floordiv_without_lhs(%x: !aten.tensor<[floordiv 2], f32>) {
  func.return
}
// CHECK: 'floordiv' needs a left operand

// -----

func.func @bad_dtype_literal(%x: !aten.tensor<[4], f32>) {
  %0 = prims.convert_element_type.default(%x, dtype = index) : !aten.tensor<[4], f32>
  func.return
}
// CHECK: expected a dtype (an element type such as f32, i64, i1)

// -----

func.func @bad_enum(%x: !aten.tensor<[4], f32>) {
  %0 = aten.clone.default(%x, memory_format = sideways) : !aten.tensor<[4], f32>
  func.return
}
// CHECK: expected one of contiguous_format, preserve_format, channels_last, channels_last_3d

// -----

func.func @constant_type() {
  %0 = aten.constant 1.5 : i64
  func.return
}
// CHECK: aten.constant: value 1.5 cannot have type i64

// -----

func.func @tensor_constant_shape() {
  %0 = aten.tensor_constant dense<[1.0, 2.0]> : tensor<2xf32> -> !aten.tensor<[3], f32>
  func.return
}
// CHECK: aten.tensor_constant: value shape [2] does not match result type !aten.tensor<[3], f32>

// -----

func.func @result_not_tensor(%x: !aten.tensor<[4], f32>) {
  %0 = aten.relu.default(%x) : f32
  func.return
}
// CHECK: aten.relu.default: result must be a tensor, got f32

// -----

func.func @argument_twice(%x: !aten.tensor<[4], f32>) {
  %0 = aten.sum.dim_IntList(%x, dim = [0], dim = [0]) : !aten.tensor<[], f32>
  func.return
}
// CHECK: argument 'dim' given twice

// -----

func.func @too_many_result_types(%x: !aten.tensor<[4], f32>) {
  %0, %1 = aten.view.default(%x, size = [4]) : (!aten.tensor<[4], f32>, !aten.tensor<[4], f32>)
  func.return
}
// CHECK: aten.view.default has 1 result(s), got 2 result type(s)

// -----

func.func @missing_result_type(%x: !aten.tensor<[4], f32>) {
  %0 = aten.relu.default(%x)
  func.return
}
// CHECK: aten.relu.default has 1 result(s), got 0 result type(s)

// -----

func.func @constant_int_as_bool() {
  %0 = aten.constant 5 : i1
  func.return
}
// CHECK: aten.constant: value 5 cannot have type i1

// -----

func.func @constant_symbol_as_i64() {
  %0 = aten.constant s0 : i64
  func.return
}
// CHECK: aten.constant: value s0 cannot have type i64

// -----

func.func @zero_divisor(%x: !aten.tensor<[s0 floordiv 0], f32>) {
  func.return
}
// CHECK: division by zero in a symbolic expression

// -----

func.func @bad_device(%x: !aten.tensor<[4], f32>) {
  %0 = aten._to_copy.default(%x, device = "nodevice") : !aten.tensor<[4], f32>
  func.return
}
// CHECK: argument 'device': expected Device, got "nodevice"

// -----

// Result types are checked against torch's shape and dtype rules.
func.func @relu_result_shape(%x: !aten.tensor<[4], f32>) {
  %0 = aten.relu.default(%x) : !aten.tensor<[5], f32>
  func.return
}
// CHECK: aten.relu.default: result type !aten.tensor<[5], f32> does not match the type inferred from its operands: !aten.tensor<[4], f32>

// -----

func.func @relu_result_dtype(%x: !aten.tensor<[4], f32>) {
  %0 = aten.relu.default(%x) : !aten.tensor<[4], i64>
  func.return
}
// CHECK: aten.relu.default: result type !aten.tensor<[4], i64> does not match the type inferred from its operands: !aten.tensor<[4], f32>

// -----

func.func @mm_inner_sizes(%a: !aten.tensor<[4, 8], f32>, %b: !aten.tensor<[3, 5], f32>) {
  %0 = aten.mm.default(%a, %b) : !aten.tensor<[4, 5], f32>
  func.return
}
// CHECK: aten.mm.default: cannot multiply [4, 8] by [3, 5] (8 != 3)

// -----

func.func @mm_dtypes(%a: !aten.tensor<[4, 8], f32>, %b: !aten.tensor<[8, 5], f16>) {
  %0 = aten.mm.default(%a, %b) : !aten.tensor<[4, 5], f32>
  func.return
}
// CHECK: aten.mm.default: operands must have one dtype, got f32 and f16

// -----

// Symbolic sizes: broadcasting [s0, 8] with [8] gives [s0, 8], not [s1, 8].
func.func @symbolic_broadcast(%x: !aten.tensor<[s0, 8], f32>, %y: !aten.tensor<[8], f32>) {
  %0 = aten.add.Tensor(%x, %y) : !aten.tensor<[s1, 8], f32>
  func.return
}
// CHECK: aten.add.Tensor: result type !aten.tensor<[s1, 8], f32> does not match the type inferred from its operands: !aten.tensor<[s0, 8], f32>

// -----

// Two different compound expressions, and a symbol against an expression of
// itself, are contradictions too (only a symbol against an expression of other
// symbols may be equal under a guard the IR does not carry: ops.mlir).
func.func @symbolic_compound(%x: !aten.tensor<[s0 + 1, 8], f32>) {
  %0 = aten.relu.default(%x) : !aten.tensor<[s1 + 1, 8], f32>
  func.return
}
// CHECK: aten.relu.default: result type !aten.tensor<[s1 + 1, 8], f32> does not match the type inferred from its operands: !aten.tensor<[s0 + 1, 8], f32>

// -----

func.func @symbol_of_itself(%x: !aten.tensor<[s0, 8], f32>) {
  %0 = aten.relu.default(%x) : !aten.tensor<[s0 floordiv 2, 8], f32>
  func.return
}
// CHECK: aten.relu.default: result type !aten.tensor<[s0 floordiv 2, 8], f32> does not match the type inferred from its operands: !aten.tensor<[s0, 8], f32>

// -----

// Type promotion: an int64 tensor plus a float wrapped number is float32.
func.func @promotion(%x: !aten.tensor<[s0], i64>) {
  %c = aten.constant 0.5 : f64
  %0 = aten.add.Tensor(%x, %c) : !aten.tensor<[s0], i64>
  func.return
}
// CHECK: aten.add.Tensor: result type !aten.tensor<[s0], i64> does not match the type inferred from its operands: !aten.tensor<[s0], f32>

// -----

func.func @broadcast_mismatch(%x: !aten.tensor<[4, 3], f32>, %y: !aten.tensor<[5], f32>) {
  %0 = aten.mul.Tensor(%x, %y) : !aten.tensor<[4, 5], f32>
  func.return
}
// CHECK: aten.mul.Tensor: shapes [4, 3] and [5] do not broadcast (3 vs 5)

// -----

func.func @view_element_count(%x: !aten.tensor<[s0, 8], f32>) {
  %0 = aten.view.default(%x, size = [s0, 4]) : !aten.tensor<[s0, 4], f32>
  func.return
}
// CHECK: aten.view.default: cannot view [s0, 8] (8*s0 elements) as size [s0, 4]

// -----

func.func @reduction_keepdim(%x: !aten.tensor<[s0, 8], i32>) {
  %0 = aten.sum.dim_IntList(%x, dim = [1], keepdim = true) : !aten.tensor<[s0], i64>
  func.return
}
// CHECK: aten.sum.dim_IntList: result type !aten.tensor<[s0], i64> does not match the type inferred from its operands: !aten.tensor<[s0, 1], i64>

// -----

// A number against an expression that cannot equal it (backed sizes are >= 2:
// torch specializes 0 and 1).
func.func @impossible_size(%x: !aten.tensor<[s0, s0], f32>) {
  %0 = aten.relu.default(%x) : !aten.tensor<[1, s0], f32>
  func.return
}
// CHECK: aten.relu.default: result type !aten.tensor<[1, s0], f32> does not match the type inferred from its operands: !aten.tensor<[s0, s0], f32>
