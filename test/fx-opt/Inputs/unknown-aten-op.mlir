// An aten overload that does not exist (ops outside the generated set are
// written aten.operator "ns::op.overload"(...)).
func.func @f(%x: !aten.tensor<[4], f32>) {
  %0 = aten.nope.default(%x) : !aten.tensor<[4], f32>
  func.return
}
