// RUN: fx-opt %s -p convert-loop-to-cpp -t cpp-kernels | filecheck %s

// softmax as the loop fusion leaves it: exp(x - max) inlined into the sum and
// into the output. The sum pass keeps each exp in a per-row array (the row is
// 64 elements, static) and the output pass reads it instead of calling exp
// again; the max pass has nothing costly to keep. The division by the row's
// sum multiplies by its reciprocal (computed once per row, as ATen's softmax).

// CHECK-LABEL: extern "C" int coil_cpp_amax_sum_div_0(float* buf0, float* buf1) {
// CHECK:         for (int64_t x{{[0-9]+}} = 0; x{{[0-9]+}} < 8L; ++x{{[0-9]+}}) {
// CHECK:           float [[ROW:row[0-9]+]][64];
// CHECK:           std::max(
// CHECK-NOT:       std::exp
// CHECK:           float [[ACC:acc[0-9]+]];
// CHECK:             const float [[E:v[0-9]+]] = float(std::exp(
// CHECK-NEXT:        [[ROW]][r0] = [[E]];
// CHECK-NEXT:        [[ACC]]_t0[jl] = [[E]];
// CHECK:           #pragma omp simd
// CHECK-NOT:       std::exp
// CHECK:             const float [[K:v[0-9]+]] = [[ROW]][r0];
// CHECK-NEXT:        const float {{v[0-9]+}} = ([[K]] * (1.0f / [[ACC]]));
// CHECK-NOT:   std::exp
func.func @softmax(%x: !buffer.buffer<[8, 64], f32>) -> !buffer.buffer<[8, 64], f32> {
  %div = buffer.alloc : !buffer.buffer<[8, 64], f32>
  loop.fused [8] [64] outs(%div : !buffer.buffer<[8, 64], f32>) {
    %amax = loop.reduction max [8] [64] : !loop.tensor<[8], f32> {
    ^bb0(%i0: index, %r0: index):
      %0 = loop.load %x[i0, r0] : !buffer.buffer<[8, 64], f32>
      loop.yield %0 : f32
    }
    %sum = loop.reduction sum [8] [64] : !loop.tensor<[8], f32> {
    ^bb0(%i0_1: index, %r0_1: index):
      %1 = loop.load %x[i0, r0] : !buffer.buffer<[8, 64], f32>
      %2 = loop.load %amax[i0] : !loop.tensor<[8], f32>
      %3 = arith.subf %1, %2 : f32
      %4 = math.exp %3 : f32
      loop.yield %4 : f32
    }
    %div_1 = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
    ^bb0(%i0_2: index, %i1: index):
      %5 = loop.load %x[i0, i1] : !buffer.buffer<[8, 64], f32>
      %6 = loop.load %amax[i0] : !loop.tensor<[8], f32>
      %7 = arith.subf %5, %6 : f32
      %8 = math.exp %7 : f32
      %9 = loop.load %sum[i0] : !loop.tensor<[8], f32>
      %10 = arith.divf %8, %9 : f32
      loop.yield %10 : f32
    }
    loop.yield %div_1 : !loop.tensor<[8, 64], f32>
  }
  func.return %div : !buffer.buffer<[8, 64], f32>
}
