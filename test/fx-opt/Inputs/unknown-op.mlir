// An op of no registered dialect.
func.func @f(%x: !aten.tensor<[4], f32>) {
  %0 = foo.bar(%x) : !aten.tensor<[4], f32>
  func.return
}
