// RUN: fx-opt %s -t python | filecheck %s
// RUN: fx-opt %s -t cpp | filecheck %s --check-prefix=CPP

// A view's name is dropped after its last read (targets/lifetimes.py): q, a
// view of the ATen result qkv, would otherwise hold qkv's storage after
// `del qkv` until the call returns (GPT-2 on the H100 kept every layer's QKV
// product alive so). A returned view keeps its name; one never read is
// dropped where it is made.
// CHECK-LABEL: def call(args):
// CHECK:      qkv = torch.mm(x, w)
// CHECK-NEXT: del w
// CHECK-NEXT: q = reinterpret_tensor(qkv, (4, 8), (24, 1), 0)
// CHECK-NEXT: unused = reinterpret_tensor(qkv, (4, 8), (24, 1), 16)
// CHECK-NEXT: del unused
// CHECK-NEXT: r = reinterpret_tensor(x, (8, 4), (1, 8), 0)
// CHECK-NEXT: del x
// CHECK-NEXT: s = torch.ops.aten.relu.default(q)
// CHECK-NEXT: del q
// CHECK-NEXT: del qkv
// CHECK-NEXT: return (s, r)
// CPP-LABEL: call(
// CPP:        at::Tensor q = qkv.as_strided(
// CPP-NEXT:   at::Tensor unused = qkv.as_strided(
// CPP-NEXT:   unused.reset();
// CPP:        q.reset();
// CPP-NEXT:   qkv.reset();
// CPP-NOT:    r.reset();

!x = !buffer.buffer<[4, 8], f32>
!w = !buffer.buffer<[8, 24], f32>
!qkv = !buffer.buffer<[4, 24], f32>
!q = !buffer.buffer<[4, 8], f32, strides [24, 1]>
!u = !buffer.buffer<[4, 8], f32, strides [24, 1], offset 16>
!r = !buffer.buffer<[8, 4], f32, strides [1, 8]>
!s = !buffer.buffer<[4, 8], f32>
builtin.module {
  host.func @forward(%x: !x, %w: !w) -> (!s, !r) {
    %qkv = host.extern "aten.mm.default" (%x, %w) : (!x, !w) -> (!qkv) {
    ^bb0(%xa: !aten.tensor<[4, 8], f32>, %wa: !aten.tensor<[8, 24], f32>):
      %m = aten.mm.default(%xa, %wa) : !aten.tensor<[4, 24], f32>
      host.yield %m : !aten.tensor<[4, 24], f32>
    }
    %q = host.reinterpret %qkv : !qkv -> !q
    %unused = host.reinterpret %qkv : !qkv -> !u
    %r = host.reinterpret %x : !x -> !r
    %s = host.extern "aten.relu.default" (%q) : (!q) -> (!s) {
    ^bb0(%qa: !aten.tensor<[4, 8], f32, strides [24, 1]>):
      %v = aten.relu.default(%qa) : !aten.tensor<[4, 8], f32>
      host.yield %v : !aten.tensor<[4, 8], f32>
    }
    host.free %qkv : !qkv
    host.return %s, %r : !s, !r
  }
}
