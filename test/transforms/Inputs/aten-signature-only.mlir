// An aten function with no ops: its signature alone says it is at the aten level.
func.func @g(%x: !aten.tensor<[4], f32>) -> !aten.tensor<[4], f32> {
  func.return %x : !aten.tensor<[4], f32>
}
