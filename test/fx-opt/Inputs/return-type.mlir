// The returned value's type is not the function's result type: found when the
// module is verified after parsing, still reported at the op.
func.func @f(%x: !aten.tensor<[4], f32>) -> !aten.tensor<[4], i64> {
  func.return %x : !aten.tensor<[4], f32>
}
