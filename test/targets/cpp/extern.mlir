// RUN: fx-opt %s -t cpp | filecheck %s

// host.extern regions are boxed calls through the dispatcher, one operator
// handle per overload (found once): every schema argument in order (defaults
// from the schema), IValues of the schema's kinds (Scalar, int[], ScalarType,
// Layout, Device, MemoryFormat, inf), a folded number where the schema has a
// Tensor as a wrapped number, multi-result ops and list results unpacked.

// CHECK:      const c10::OperatorHandle& op_aten_addmm_default() {
// CHECK-NEXT:   static const c10::OperatorHandle op = coil::find_op("aten::addmm", "");
// CHECK:      const c10::OperatorHandle& op_aten_mul_Tensor() {
// CHECK-NEXT:   static const c10::OperatorHandle op = coil::find_op("aten::mul", "Tensor");
// CHECK-LABEL: std::vector<c10::IValue> call(
// CHECK:        at::Tensor addmm = coil::call_op(op_aten_addmm_default(), {b, x, w, c10::IValue(0.5), c10::IValue(2.0)})[0].toTensor();
// CHECK-NEXT:   at::Tensor full = coil::call_op(op_aten_full_default(), {c10::IValue(std::vector<int64_t>{4, 3}), c10::IValue(-std::numeric_limits<double>::infinity()), c10::IValue(at::ScalarType::Float), c10::IValue(c10::Layout::Strided), c10::IValue(at::Device(at::kCPU)), c10::IValue(false)})[0].toTensor();
// CHECK-NEXT:   at::Tensor c = coil::call_op(op_aten_clone_default(), {full, c10::IValue(c10::MemoryFormat::Contiguous)})[0].toTensor();
// CHECK-NEXT:   at::Tensor mul = coil::call_op(op_aten_mul_Tensor(), {addmm, coil::wrapped_number(c10::IValue(int64_t(3)))})[0].toTensor();
// CHECK-NEXT:   auto values_out = coil::call_op(op_aten_sort_default(), {mul, c10::IValue(int64_t(1)), c10::IValue(true)});
// CHECK-NEXT:   at::Tensor values = values_out[0].toTensor();
// CHECK-NEXT:   at::Tensor i = values_out[1].toTensor();
// CHECK-NEXT:   auto chunk_out = coil::call_op(op_aten_split_with_sizes_default(), {values, c10::IValue(std::vector<int64_t>{3}), c10::IValue(int64_t(1))});
// CHECK-NEXT:   auto chunk_list = chunk_out[0].toTensorVector();
// CHECK-NEXT:   at::Tensor chunk = chunk_list[0];
// CHECK-NEXT:   at::Tensor n = coil::call_op(op_aten_linalg_vector_norm_default(), {chunk, c10::IValue(2.0), c10::IValue(std::vector<int64_t>{1}), c10::IValue(false), c10::IValue()})[0].toTensor();
// CHECK-NEXT:   return {c10::IValue(c), c10::IValue(i), c10::IValue(n)};

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
