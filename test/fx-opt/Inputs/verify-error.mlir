// An op whose result type the aten verifier rejects.
func.func @f(%x: !aten.tensor<[4], f32>) -> i64 {
  %c = aten.constant 1 : i64
  %0 = aten.add.Tensor(%x, %c) : i64
  func.return %0 : i64
}
