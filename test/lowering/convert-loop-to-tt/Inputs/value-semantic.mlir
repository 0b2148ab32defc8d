func.func @f(%x: !buffer.buffer<[4], f32>) -> !loop.tensor<[4], f32> {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !buffer.buffer<[4], f32>
    loop.yield %a : f32
  }
  func.return %y : !loop.tensor<[4], f32>
}
