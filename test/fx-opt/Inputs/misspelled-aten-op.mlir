// A misspelled aten overload.
func.func @f(%x: !aten.tensor<[4, 8], f32>) {
  %a = aten.relu.defualt(%x) : !aten.tensor<[4, 8], f32>
  func.return
}
