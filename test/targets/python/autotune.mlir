// RUN: fx-opt %s -t python --split-input-file | filecheck %s

// host.autotune: one runtime call with the key (the base kernel name and the
// launches' size symbols, evaluated), one lambda per candidate launch (the
// heuristic first), the device and a digest of the candidates (launches and
// kernels, for the on-disk choice cache); the runtime runs exactly one of them.

// CHECK:      from coil.runtime.wrapper import cdiv, check_input, CoilInputError
// CHECK-NEXT: from coil.runtime.autotune import autotune
// CHECK:      def coil_sum_0_c0(in_ptr0, out_ptr0, s0, s1):
// CHECK:      def coil_sum_0_c1(in_ptr0, out_ptr0, s0, s1):
// CHECK:      def call(args):
// CHECK:          total = empty_cpu((s0,), (1,), torch.float32)
// CHECK-NEXT:     autotune("coil_sum_0", (s0, s1), [
// CHECK-NEXT:         lambda: coil_sum_0_c0[((s0 + 31) // 32, 1, 1)](x, total, s0, s1, num_warps=4, num_stages=1),
// CHECK-NEXT:         lambda: coil_sum_0_c1[(s0, 1, 1)](x, total, s0, s1, num_warps=8, num_stages=1),
// CHECK-NEXT:     ], device="cpu", digest="{{[0-9a-f]+}}")
// CHECK-NEXT:     del x
// CHECK-NEXT:     return (total,)

!x = !buffer.buffer<[s0, s1], f32>
!r = !buffer.buffer<[s0], f32>
builtin.module {
  tt.func public @coil_sum_0_c0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %s0: i64, %s1: i64) {
    tt.return
  }
  tt.func public @coil_sum_0_c1(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %s0: i64, %s1: i64) {
    tt.return
  }
  host.func @forward(%x: !x) -> !r {
    %total = host.empty_strided : !r
    host.autotune "coil_sum_0" {
      host.launch @coil_sum_0_c0 grid [(s0 + 31) floordiv 32, 1, 1] (%x, %total : !x, !r) scalars [s0, s1] {num_warps = 4 : i64, num_stages = 1 : i64}
      host.launch @coil_sum_0_c1 grid [s0, 1, 1] (%x, %total : !x, !r) scalars [s0, s1] {num_warps = 8 : i64, num_stages = 1 : i64}
    }
    host.return %total : !r
  }
}

// -----

// Static sizes on a GPU: the key has no sizes; the device is the buffers'.

// CHECK:      def call(args):
// CHECK:          autotune("coil_exp_0", (), [
// CHECK-NEXT:         lambda: coil_exp_0_c0[(4, 1, 1)](x, exp, num_warps=4, num_stages=1),
// CHECK-NEXT:         lambda: coil_exp_0_c1[(8, 1, 1)](x, exp, num_warps=4, num_stages=1),
// CHECK-NEXT:     ], device="cuda:0", digest="{{[0-9a-f]+}}")

!y = !buffer.buffer<[4096], f32, device "cuda:0">
builtin.module {
  tt.func public @coil_exp_0_c0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>) {
    tt.return
  }
  tt.func public @coil_exp_0_c1(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>) {
    tt.return
  }
  host.func @forward(%x: !y) -> !y {
    %exp = host.empty_strided : !y
    host.autotune "coil_exp_0" {
      host.launch @coil_exp_0_c0 grid [4, 1, 1] (%x, %exp : !y, !y) {num_warps = 4 : i64, num_stages = 1 : i64}
      host.launch @coil_exp_0_c1 grid [8, 1, 1] (%x, %exp : !y, !y) {num_warps = 4 : i64, num_stages = 1 : i64}
    }
    host.return %exp : !y
  }
}
