// RUN: not fx-opt %s -t python 2>&1 | filecheck %s

// -t python takes the host level: a buffer-level func.func is refused with a
// sentence saying which passes to run, never a traceback.

// CHECK: -t python expects a host.func and tt.func kernels; found func.func -- run convert-loop-to-tt and convert-buffer-to-host first
// CHECK-NOT: Traceback
func.func @forward(%x: !buffer.buffer<[4], f32>) -> !buffer.buffer<[4], f32> {
  func.return %x : !buffer.buffer<[4], f32>
}
