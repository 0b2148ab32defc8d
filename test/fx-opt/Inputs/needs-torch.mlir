func.func @f(%x: !aten.tensor<[4, 8], f32>) -> !aten.tensor<[4, 8], f32> {
  %y = aten._softmax.default(%x, dim = 1, half_to_float = false) : !aten.tensor<[4, 8], f32>
  func.return %y : !aten.tensor<[4, 8], f32>
}
