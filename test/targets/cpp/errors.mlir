// RUN: not fx-opt %s -t cpp 2>&1 | filecheck %s

// -t cpp takes the host level and fails with a sentence, never a traceback.

// CHECK: -t cpp expects a host.func and tt.func or cpu.func kernels; found func.func -- run convert-loop-to-tt and convert-buffer-to-host first
// CHECK-NOT: Traceback
func.func @forward(%x: !buffer.buffer<[4], f32>) -> !buffer.buffer<[4], f32> {
  func.return %x : !buffer.buffer<[4], f32>
}
