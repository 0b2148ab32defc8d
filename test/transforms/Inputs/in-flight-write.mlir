// An op between a collective and its wait_tensor that the memory plan rejects
// (memory-plan-collectives.mlir checks the message).
func.func @write_in_flight(%x: !buffer.buffer<[4], f32>) -> !buffer.buffer<[8], f32> {
  %m = buffer.alloc : !buffer.buffer<[4], f32>
  loop.pointwise [4] outs(%m : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[4], f32>
    loop.yield %0 : f32
  }
  %g = buffer.extern "_c10d_functional.all_gather_into_tensor.default" (%m) : (!buffer.buffer<[4], f32>) -> (!buffer.buffer<[8], f32>) {
  ^bb0(%a: !aten.tensor<[4], f32>):
    %r = _c10d_functional.all_gather_into_tensor.default(%a, group_size = 2, group_name = "0") : !aten.tensor<[8], f32>
    buffer.yield %r : !aten.tensor<[8], f32>
  }
  loop.pointwise [4] outs(%m : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[4], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %y = buffer.extern "_c10d_functional.wait_tensor.default" (%g) : (!buffer.buffer<[8], f32>) -> (!buffer.buffer<[8], f32>) {
  ^bb0(%a: !aten.tensor<[8], f32>):
    %r = _c10d_functional.wait_tensor.default(%a) : !aten.tensor<[8], f32>
    buffer.yield %r : !aten.tensor<[8], f32>
  }
  func.return %y : !buffer.buffer<[8], f32>
}
