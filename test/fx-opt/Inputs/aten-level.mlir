// A module still at the aten level: no kernels for -t triton yet.
func.func @f(%x: !aten.tensor<[4], f32>) -> !aten.tensor<[4], f32> {
  %0 = aten.relu.default(%x) : !aten.tensor<[4], f32>
  func.return %0 : !aten.tensor<[4], f32>
}
