// RUN: fx-opt %s -p %default_pipeline -t cpp | filecheck %s

// The whole pipeline from aten: an extern (mm, through the dispatcher, writing
// into a buffer the wrapper allocates: memory-plan's out= form), a
// row-softmax reduction kernel over a dynamic batch (its size symbol an i64
// kernel argument, the grid a ceiling division with Python rounding).

// CHECK:      // coil_amax_sum_div_0(in_ptr0: *fp32, out_ptr0: *fp32, s0: i64)
// CHECK-NEXT: coil::Kernel coil_amax_sum_div_0("coil_amax_sum_div_0", &kernel_dir);
// CHECK:      const c10::OperatorHandle& op_aten_mm_out() {
// CHECK-NEXT:   static const c10::OperatorHandle op = coil::find_op("aten::mm", "out");
// CHECK-LABEL: std::vector<c10::IValue> call(
// CHECK:        int64_t n = coil::int_input(args, 0, "n");
// CHECK:        int64_t s0 = n;
// CHECK-NEXT:   coil::check_input("x", x, {s0, 64}, {64, 1}, at::ScalarType::Float, at::Device(at::kCUDA, 0));
// CHECK:        at::Tensor m = coil::empty_strided({s0, 64}, {64, 1}, at::ScalarType::Float, at::Device(at::kCUDA, 0));
// CHECK-NEXT:   coil::call_op(op_aten_mm_out(), {x, w, m});
// CHECK-NEXT:   at::Tensor div = coil::empty_strided({s0, 64}, {64, 1}, at::ScalarType::Float, at::Device(at::kCUDA, 0));
// CHECK-NEXT:   coil_amax_sum_div_0.launch(at::Device(at::kCUDA, 0), coil::floordiv(s0 + 63, 64), 1, 1, {coil::ptr(m), coil::ptr(div), coil::i64(s0)});
// The product is freed at its last use (memory-plan).
// CHECK-NEXT:   m.reset();
// CHECK-NEXT:   return {c10::IValue(div)};

!t = !aten.tensor<[s0, 64], f32, device "cuda:0">
func.func @forward(%n: index {coil.symbol = #coil.expr<s0>}, %x: !t, %w: !aten.tensor<[64, 64], f32, device "cuda:0">) -> !t {
  %m = aten.mm.default(%x, %w) : !t
  %r = aten.relu.default(%m) : !t
  %y = aten._softmax.default(%r, dim = 1, half_to_float = false) : !t
  func.return %y : !t
}
