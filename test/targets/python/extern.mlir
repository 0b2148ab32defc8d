// RUN: fx-opt %s -t python | filecheck %s

// host.extern regions print one torch.ops call per aten op (a matmul or a
// convolution: its public binding, torch.mm / torch.convolution ...), with the
// arguments the reference executor passes: schema-driven positionals and
// keyword-only arguments, enums as torch objects, floats with inf/nan,
// scalar constants inlined, multi-result ops unpacked, a one-tensor list
// result unpacked to the tensor, aten.operator by its overload. A yielded
// value takes the name of the extern result; the region's temporaries are
// deleted right after it.

// CHECK-LABEL: def call(args):
// CHECK:      addmm = torch.addmm(b, x, w, beta=0.5, alpha=2.0)
// CHECK-NEXT: full = torch.ops.aten.full.default([4, 3], -float("inf"), dtype=torch.float32, layout=torch.strided, device=torch.device("cpu"), pin_memory=False)
// CHECK-NEXT: c = torch.ops.aten.clone.default(full, memory_format=torch.contiguous_format)
// CHECK-NEXT: mul = torch.ops.aten.mul.Tensor(addmm, 3)
// CHECK-NEXT: values, i = torch.ops.aten.sort.default(mul, 1, True)
// CHECK-NEXT: chunk, = torch.ops.aten.split_with_sizes.default(values, [3], 1)
// CHECK-NEXT: n = torch.ops.aten.linalg_vector_norm.default(chunk, 2.0, [1], False)
// CHECK-NEXT: del addmm, full, mul, values, chunk
// CHECK-NEXT: del x, w, b
// CHECK-NEXT: return (c, i, n)

!x = !buffer.buffer<[4, 8], f32>
!w = !buffer.buffer<[8, 3], f32>
!b = !buffer.buffer<[3], f32>
!o = !buffer.buffer<[4, 3], f32>
!i = !buffer.buffer<[4, 3], i64>
!n = !buffer.buffer<[4], f32>
builtin.module {
  host.func @forward(%x: !x, %w: !w, %b: !b) -> (!o, !i, !n) {
    %c, %i, %n = host.extern "aten.addmm.default" (%x, %w, %b) : (!x, !w, !b) -> (!o, !i, !n) {
    ^bb0(%xa: !aten.tensor<[4, 8], f32>, %wa: !aten.tensor<[8, 3], f32>, %ba: !aten.tensor<[3], f32>):
      %addmm = aten.addmm.default(%ba, %xa, %wa, beta = 0.5, alpha = 2.0) : !aten.tensor<[4, 3], f32>
      %full = aten.full.default(size = [4, 3], fill_value = -inf, dtype = f32, layout = strided, device = "cpu", pin_memory = false) : !aten.tensor<[4, 3], f32>
      %clone = aten.clone.default(%full, memory_format = contiguous_format) : !aten.tensor<[4, 3], f32>
      %three = aten.constant 3 : i64
      %mul = aten.mul.Tensor(%addmm, %three) : !aten.tensor<[4, 3], f32>
      %values, %indices = aten.sort.default(%mul, dim = 1, descending = true) : (!aten.tensor<[4, 3], f32>, !aten.tensor<[4, 3], i64>)
      %chunk = aten.split_with_sizes.default(%values, split_sizes = [3], dim = 1) : !aten.tensor<[4, 3], f32>
      %out = aten.operator "aten::linalg_vector_norm"(%chunk, 2.0, [1], false) : !aten.tensor<[4], f32>
      host.yield %clone, %indices, %out : !aten.tensor<[4, 3], f32>, !aten.tensor<[4, 3], i64>, !aten.tensor<[4], f32>
    }
    host.return %c, %i, %n : !o, !i, !n
  }
}
