// RUN: not fx-opt %s -t cpp-kernels 2>&1 | filecheck %s

// Nothing lowered yet: the target says which pass to run.
// CHECK: -t cpp-kernels expects cpu.func kernels; found none -- run convert-loop-to-cpp first
func.func @f(%x: !buffer.buffer<[4], f32>) -> !buffer.buffer<[4], f32> {
  func.return %x : !buffer.buffer<[4], f32>
}
