// RUN: fx-opt %s -t python | filecheck %s

// A fused attention kernel's output (result 0 of the _scaled_dot_product_*
// overloads, called as aten.operator) is a tensor ATen allocates (storage
// offset 0): like a matmul's, kernels reading it, or a view of it at an
// aligned offset, launch without the per-launch alignment check. Its other
// results (here the log-sum-exp) keep the check, as does a view moved by 4
// bytes.

// CHECK:      coil_add_0_launch = Launcher(globals(), "coil_add_0", ("*bfloat16", "*bfloat16", "*float32", "*bfloat16"), "cuda:0", 4, 1, checked=(1, 2))
// CHECK-NOT:  Launcher(
// CHECK:      def call(args):
// CHECK:      attn, lse, seed, offset = torch.ops.aten._scaled_dot_product_efficient_attention.default(q, k, v, None, True)
// CHECK:      rows = reinterpret_tensor(attn, (256, 64), (64, 1), 0)
// CHECK-NEXT: odd = reinterpret_tensor(attn, (255, 64), (64, 1), 2)
// CHECK:      coil_add_0_launch.run(1, 1, 1, stream, rows, odd, lse, buf0)

!q = !buffer.buffer<[2, 2, 64, 64], bf16, device "cuda:0">
!lse = !buffer.buffer<[2, 2, 64], f32, device "cuda:0">
!s = !buffer.buffer<[], i64, device "cuda:0">
!rows = !buffer.buffer<[256, 64], bf16, device "cuda:0">
!odd = !buffer.buffer<[255, 64], bf16, offset 2, device "cuda:0">
!out = !buffer.buffer<[255, 64], bf16, device "cuda:0">
!qa = !aten.tensor<[2, 2, 64, 64], bf16, device "cuda:0">
builtin.module {
  tt.func public @coil_add_0(%a: !tt.ptr<bf16>, %b: !tt.ptr<bf16>, %c: !tt.ptr<f32>, %out: !tt.ptr<bf16>) {
    tt.return
  }
  host.func @forward(%q: !q, %k: !q, %v: !q) -> !out {
    %attn, %lse, %seed, %offset = host.extern "aten._scaled_dot_product_efficient_attention" (%q, %k, %v) : (!q, !q, !q) -> (!q, !lse, !s, !s) {
    ^bb0(%qa: !qa, %ka: !qa, %va: !qa):
      %o, %l, %ps, %po = aten.operator "aten::_scaled_dot_product_efficient_attention"(%qa, %ka, %va, none, true) : (!qa, !aten.tensor<[2, 2, 64], f32, device "cuda:0">, !aten.tensor<[], i64, device "cuda:0">, !aten.tensor<[], i64, device "cuda:0">)
      host.yield %o, %l, %ps, %po : !qa, !aten.tensor<[2, 2, 64], f32, device "cuda:0">, !aten.tensor<[], i64, device "cuda:0">, !aten.tensor<[], i64, device "cuda:0">
    }
    %rows = host.reinterpret %attn : !q -> !rows
    %odd = host.reinterpret %attn : !q -> !odd
    %0 = host.empty_strided : !out
    host.launch @coil_add_0 grid [1, 1, 1] (%rows, %odd, %lse, %0 : !rows, !odd, !lse, !out)
    host.return %0 : !out
  }
}
