// RUN: fx-opt %s -t cpp | filecheck %s

// Size symbols are bound as in -t python: an index argument with coil.symbol,
// a size or stride that is exactly the symbol, a linear size solved (with
// floor division), an unbacked size right after the extern that makes it.
// Views keep an input's storage offset; an allocation with an offset gets its
// whole storage; a seed is drawn from torch's CPU generator; scalar kernel
// arguments are i64 values of the size expressions; outputs are returned flat.

// CHECK-LABEL: std::vector<c10::IValue> call(
// CHECK:        int64_t n = coil::int_input(args, 0, "n");
// CHECK-NEXT:   at::Tensor x = coil::tensor_input(args, 1, "x");
// CHECK:        args.clear();
// CHECK-NEXT:   int64_t s0 = n;
// CHECK-NEXT:   int64_t s1 = x.size(1);
// CHECK-NEXT:   int64_t s3 = y.stride(0);
// CHECK-NEXT:   int64_t s2 = coil::floordiv(z.size(0) - 1, 2);
// CHECK-NEXT:   coil::check_input("x", x, {s0, s1}, {s1, 1}, at::ScalarType::Float, at::Device(at::kCPU));
// CHECK-NEXT:   coil::check_input("y", y, {s0, 4}, {s3, 1}, at::ScalarType::Float, at::Device(at::kCPU));
// CHECK-NEXT:   coil::check_input("z", z, {2*s2 + 1}, {1}, at::ScalarType::Long, at::Device(at::kCPU));
// CHECK-NEXT:   at::NoGradGuard no_grad;
// CHECK-NEXT:   at::Tensor row = y.as_strided({4}, {1}, y.storage_offset() + s3);
// CHECK-NEXT:   at::Tensor nz = coil::call_op(op_aten_nonzero_default(), {z})[0].toTensor();
// CHECK-NEXT:   int64_t u0 = nz.size(0);
// CHECK-NEXT:   at::Tensor buf0 = coil::empty_with_offset(s0*s1 + 3, {s0, s1}, {s1, 1}, 3, at::ScalarType::Float, at::Device(at::kCPU));
// CHECK-NEXT:   at::Tensor tail = buf0.as_strided({u0}, {1}, coil::mod(std::max({int64_t(s1), int64_t(u0)}), 5));
// CHECK-NEXT:   int64_t seed = coil::draw_seed();
// CHECK-NEXT:   coil_k_0.launch(at::Device(at::kCPU), 1, 1, 1, {coil::ptr(x), coil::ptr(buf0), coil::i64(seed), coil::i64(s0*s1), coil::i64(coil::floordiv(u0, 2))});
// CHECK-NEXT:   return {c10::IValue(buf0), c10::IValue(row), c10::IValue(nz), c10::IValue(tail)};
// CHECK:      COIL_DEFINE_ENTRY(call, 4, kernel_dir)

!x = !buffer.buffer<[s0, s1], f32>
!y = !buffer.buffer<[s0, 4], f32, strides [s3, 1]>
!z = !buffer.buffer<[2*s2 + 1], i64>
!nz = !buffer.buffer<[u0, 1], i64>
!b = !buffer.buffer<[s0, s1], f32, offset 3>
builtin.module {
  tt.func public @coil_k_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %seed0: i64, %a: i64, %b: i64) {
    tt.return
  }
  host.func @forward(%n: index {coil.symbol = #coil.expr<s0>}, %x: !x, %y: !y, %z: !z) -> (!b, !buffer.buffer<[4], f32, offset s3>, !nz, !buffer.buffer<[u0], f32, offset max(s1, u0) mod 5>) attributes {coil.output_tree = "((0, [1]), {'nz': 2, 'tail': 3}, 'tag')"} {
    %row = host.reinterpret %y : !y -> !buffer.buffer<[4], f32, offset s3>
    %nz = host.extern "aten.nonzero.default" (%z) : (!z) -> (!nz) {
    ^bb0(%za: !aten.tensor<[2*s2 + 1], i64>):
      %r = aten.nonzero.default(%za) : !aten.tensor<[u0, 1], i64>
      host.yield %r : !aten.tensor<[u0, 1], i64>
    }
    %0 = host.empty_strided : !b
    %tail = host.reinterpret %0 : !b -> !buffer.buffer<[u0], f32, offset max(s1, u0) mod 5>
    %seed = host.seed : i64
    host.launch @coil_k_0 grid [1, 1, 1] (%x, %0, %seed : !x, !b, i64) scalars [s0*s1, u0 floordiv 2]
    host.return %0, %row, %nz, %tail : !b, !buffer.buffer<[4], f32, offset s3>, !nz, !buffer.buffer<[u0], f32, offset max(s1, u0) mod 5>
  }
}
