// An input for `coil reduce` (the README's example; test/fx-opt/reduce.mlir):
// one op (sort, which has no loop lowering) fails
// convert-aten-to-loop{fallback=error}; the rest is there to be cut.
func.func @helper(%a: !aten.tensor<[4, 8], f32>) -> !aten.tensor<[4, 8], f32> {
  %r = aten.relu.default(%a) : !aten.tensor<[4, 8], f32>
  func.return %r : !aten.tensor<[4, 8], f32>
}
func.func @forward(%x: !aten.tensor<[4, 8], f32>, %y: !aten.tensor<[8], f32>) -> (!aten.tensor<[4, 8], f32>, !aten.tensor<[4], f32>) {
  %a = aten.add.Tensor(%x, %y) : !aten.tensor<[4, 8], f32>
  %e = aten.exp.default(%a) : !aten.tensor<[4, 8], f32>
  %s = aten.sum.dim_IntList(%e, dim = [1]) : !aten.tensor<[4], f32>
  %m = aten.mul.Tensor(%e, %a) : !aten.tensor<[4, 8], f32>
  %c, %ci = aten.sort.default(%m, dim = 1) : (!aten.tensor<[4, 8], f32>, !aten.tensor<[4, 8], i64>)
  %t = aten.tanh.default(%c) : !aten.tensor<[4, 8], f32>
  %n = aten.neg.default(%t) : !aten.tensor<[4, 8], f32>
  %q = aten.amax.default(%n, dim = [1]) : !aten.tensor<[4], f32>
  %z = aten.add.Tensor(%s, %q) : !aten.tensor<[4], f32>
  func.return %n, %z : !aten.tensor<[4, 8], f32>, !aten.tensor<[4], f32>
}
