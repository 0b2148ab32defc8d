// RUN: fx-opt %s -t python | filecheck %s

// host.variants: one comparison of the size against each bound, the launch of
// the first range that holds, the last launch past every bound.

// CHECK:      def call(args):
// CHECK:          total = empty_cpu((s0,), (1,), torch.float32)
// CHECK:          if s1 <= 1024:
// CHECK-NEXT:         coil_sum_0_r1024_launch.run((s0 + 3) // 4, 1, 1, stream, x, total, s0, s1)
// CHECK-NEXT:     elif s1 <= 4096:
// CHECK-NEXT:         coil_sum_0_r4096_launch.run(s0, 1, 1, stream, x, total, s0, s1)
// CHECK-NEXT:     else:
// CHECK-NEXT:         coil_sum_0_launch.run(s0, 1, 1, stream, x, total, s0, s1)
// CHECK-NEXT:     del x
// CHECK-NEXT:     return (total,)

!x = !buffer.buffer<[s0, s1], f32>
!r = !buffer.buffer<[s0], f32>
builtin.module {
  tt.func public @coil_sum_0_r1024(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %s0: i64, %s1: i64) {
    tt.return
  }
  tt.func public @coil_sum_0_r4096(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %s0: i64, %s1: i64) {
    tt.return
  }
  tt.func public @coil_sum_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %s0: i64, %s1: i64) {
    tt.return
  }
  host.func @forward(%x: !x) -> !r {
    %total = host.empty_strided : !r
    host.variants "coil_sum_0" size <s1> bounds <[1024, 4096]> {
      host.launch @coil_sum_0_r1024 grid [(s0 + 3) floordiv 4, 1, 1] (%x, %total : !x, !r) scalars [s0, s1]
      host.launch @coil_sum_0_r4096 grid [s0, 1, 1] (%x, %total : !x, !r) scalars [s0, s1]
      host.launch @coil_sum_0 grid [s0, 1, 1] (%x, %total : !x, !r) scalars [s0, s1]
    }
    host.return %total : !r
  }
}
