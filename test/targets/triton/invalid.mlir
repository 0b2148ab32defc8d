// RUN: not fx-opt %s -t triton 2>&1 | filecheck %s

// Before convert-loop-to-tt there are no kernels to print: the target says so.

// CHECK: -t triton expects tt.func kernels; found loop.pointwise — run convert-loop-to-tt first

builtin.module {
  func.func @f(%x: !loop.tensor<[4], f32>) -> !loop.tensor<[4], f32> {
    %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
    ^bb0(%i0: index):
      %v = loop.load %x[i0] : !loop.tensor<[4], f32>
      %e = math.exp %v : f32
      loop.yield %e : f32
    }
    func.return %y : !loop.tensor<[4], f32>
  }
}
