// A type of no registered dialect.
func.func @f(%x: !nope.tensor<[4], f32>) {
  func.return
}
