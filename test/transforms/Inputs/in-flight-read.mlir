// An op between a collective and its wait_tensor that the memory plan rejects
// (memory-plan-collectives.mlir checks the message).
func.func @read_before_wait(%x: !buffer.buffer<[4], f32>) -> !buffer.buffer<[2], f32> {
  %g = buffer.extern "_c10d_functional.reduce_scatter_tensor.default" (%x) : (!buffer.buffer<[4], f32>) -> (!buffer.buffer<[2], f32>) {
  ^bb0(%a: !aten.tensor<[4], f32>):
    %r = _c10d_functional.reduce_scatter_tensor.default(%a, reduce_op = "sum", group_size = 2, group_name = "0") : !aten.tensor<[2], f32>
    buffer.yield %r : !aten.tensor<[2], f32>
  }
  %e = buffer.alloc : !buffer.buffer<[2], f32>
  loop.pointwise [2] outs(%e : !buffer.buffer<[2], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %g[i0] : !buffer.buffer<[2], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %y = buffer.extern "_c10d_functional.wait_tensor.default" (%g) : (!buffer.buffer<[2], f32>) -> (!buffer.buffer<[2], f32>) {
  ^bb0(%a: !aten.tensor<[2], f32>):
    %r = _c10d_functional.wait_tensor.default(%a) : !aten.tensor<[2], f32>
    buffer.yield %r : !aten.tensor<[2], f32>
  }
  func.return %e : !buffer.buffer<[2], f32>
}
