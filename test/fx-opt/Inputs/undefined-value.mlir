// %y is never defined.
func.func @f(%x: !aten.tensor<[4], f32>) {
  %0 = aten.relu.default(%y) : !aten.tensor<[4], f32>
  func.return
}
