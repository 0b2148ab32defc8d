// RUN: fx-opt %s -t python | filecheck %s

// Inputs marked coil.aligned (parameters, buffers and large constants whose
// storage offset was 16-byte aligned when traced: see the importer) need no
// alignment check at launch, nor do views of them moved by whole 16 bytes;
// the other inputs and a view moved by 4 bytes are still checked (Triton's
// kernels assume aligned pointers: a misaligned one takes the specializing
// launch instead).

// CHECK:      coil_add_0_launch = Launcher(globals(), "coil_add_0", ("*float32", "*float32", "*float32", "*float32"), "cuda:0", 4, 1, checked=(1, 2))
// CHECK-NOT:  Launcher(
// CHECK:      def call(args):
// CHECK:          w4 = reinterpret_tensor(arg1, (64,), (1,), 4)
// CHECK-NEXT:     w1 = reinterpret_tensor(arg1, (64,), (1,), 1)
// CHECK:          coil_add_0_launch.run(1, 1, 1, stream, arg1, arg0, w1, buf0)
// CHECK:          coil_add_0_launch.run(1, 1, 1, stream, w4, arg0, arg0, buf1)

!x = !buffer.buffer<[64], f32, device "cuda:0">
!w = !buffer.buffer<[128], f32, device "cuda:0">
!v = !buffer.buffer<[64], f32, device "cuda:0">
!v4 = !buffer.buffer<[64], f32, offset 4, device "cuda:0">
!v1 = !buffer.buffer<[64], f32, offset 1, device "cuda:0">
builtin.module {
  tt.func public @coil_add_0(%a: !tt.ptr<f32>, %b: !tt.ptr<f32>, %c: !tt.ptr<f32>, %out: !tt.ptr<f32>) {
    tt.return
  }
  host.func @forward(%arg0: !x, %arg1: !w {coil.aligned}) -> (!v, !v) {
    %w4 = host.reinterpret %arg1 : !w -> !v4
    %w1 = host.reinterpret %arg1 : !w -> !v1
    %0 = host.empty_strided : !v
    host.launch @coil_add_0 grid [1, 1, 1] (%arg1, %arg0, %w1, %0 : !w, !x, !v1, !v)
    %1 = host.empty_strided : !v
    host.launch @coil_add_0 grid [1, 1, 1] (%w4, %arg0, %arg0, %1 : !v4, !x, !x, !v)
    host.return %0, %1 : !v, !v
  }
}
