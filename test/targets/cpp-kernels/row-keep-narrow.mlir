// RUN: fx-opt %s -t cpp-kernels | filecheck %s

// A bf16 LayerNorm over rows of 64 (long enough for the blocked streams): the
// mean's pass widens each element of x once and keeps it in the row cache
// (row0); the variance's pass and the output pass read the kept floats, not
// bf16 again. gamma and beta are still widened once per call (wide0_0,
// wide1_0). The same kernel in f32 keeps nothing: its loads are plain float
// reads, as cheap as reading a kept copy.

// CHECK-LABEL: extern "C" int coil_cpp_ln_bf16(
// CHECK:         float wide0_0[64];
// CHECK:         float wide1_0[64];
// CHECK:         for (int64_t x1 = 0; x1 < 4L; ++x1) {
// CHECK:           float [[ROW:row[0-9]+]][64];
// CHECK:           #pragma omp simd reduction(+:
// CHECK:             {  // stream 0
// CHECK-NEXT:          const int64_t r0 = j;
// CHECK-NEXT:          const float [[X:v[0-9]+]] = bf16_load(buf1[i0 * 64L + r0 * 1L]);
// CHECK-NEXT:          [[ROW]][r0] = [[X]];
// CHECK:             {  // stream 3
// CHECK-NEXT:          const int64_t r0 = j + 3 * 16L;
// CHECK-NEXT:          const float [[X3:v[0-9]+]] = bf16_load(buf1[i0 * 64L + r0 * 1L]);
// CHECK-NEXT:          [[ROW]][r0] = [[X3]];
// CHECK:           for (int64_t jb = 0; jb < 16L; jb += 8) {
// CHECK:             #pragma omp simd
// CHECK-NEXT:        for (int64_t jl = 0; jl < 8; ++jl) {
// CHECK-NOT:           bf16_load(buf1
// CHECK:               = [[ROW]][r0];
// CHECK:           #pragma omp simd
// CHECK-NEXT:      for (int64_t r0 = 0; r0 < 64L; ++r0) {
// CHECK-NEXT:        const float {{v[0-9]+}} = [[ROW]][r0];
// CHECK-NOT:         bf16_load(buf1
// CHECK:             buf0[i0 * 64L + r0 * 1L] = bf16_store(
// CHECK:       return bad;

// CHECK-LABEL: extern "C" int coil_cpp_ln_f32(
// CHECK-NOT:     row{{[0-9]+}}[
// CHECK:         buf0[i0 * 64L + r0 * 1L] = float(
// CHECK:       return bad;

builtin.module {
  cpu.func @coil_cpp_ln_bf16(%out: !buffer.buffer<[4, 64], bf16>, %x: !buffer.buffer<[4, 64], bf16>, %w: !buffer.buffer<[64], bf16>, %b: !buffer.buffer<[64], bf16>) {
    loop.fused [4] [64] outs(%out : !buffer.buffer<[4, 64], bf16>) {
      %mean, %m2, %n = loop.reduction welford [4] [64] : !loop.tensor<[4], f32>, !loop.tensor<[4], f32>, !loop.tensor<[4], f32> {
      ^bb0(%i0: index, %r0: index):
        %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, 64], bf16>
        %1 = arith.extf %0 : bf16 to f32
        loop.yield %1 : f32
      }
      %y = loop.pointwise [4, 64] : !loop.tensor<[4, 64], bf16> {
      ^bb0(%i0_1: index, %i1: index):
        %2 = loop.load %x[i0, i1] : !buffer.buffer<[4, 64], bf16>
        %3 = arith.extf %2 : bf16 to f32
        %4 = loop.load %mean[i0] : !loop.tensor<[4], f32>
        %5 = arith.subf %3, %4 : f32
        %6 = loop.load %m2[i0] : !loop.tensor<[4], f32>
        %7 = loop.load %n[i0] : !loop.tensor<[4], f32>
        %8 = arith.divf %6, %7 : f32
        %9 = arith.constant 1.000000e-05 : f32
        %10 = arith.addf %8, %9 : f32
        %11 = math.rsqrt %10 : f32
        %12 = arith.mulf %5, %11 : f32
        %13 = loop.load %w[i1] : !buffer.buffer<[64], bf16>
        %14 = arith.extf %13 : bf16 to f32
        %15 = arith.mulf %12, %14 : f32
        %16 = loop.load %b[i1] : !buffer.buffer<[64], bf16>
        %17 = arith.extf %16 : bf16 to f32
        %18 = arith.addf %15, %17 : f32
        %19 = arith.truncf %18 : f32 to bf16
        loop.yield %19 : bf16
      }
      loop.yield %y : !loop.tensor<[4, 64], bf16>
    }
    cpu.return
  }
  cpu.func @coil_cpp_ln_f32(%out: !buffer.buffer<[4, 64], f32>, %x: !buffer.buffer<[4, 64], f32>, %w: !buffer.buffer<[64], f32>, %b: !buffer.buffer<[64], f32>) {
    loop.fused [4] [64] outs(%out : !buffer.buffer<[4, 64], f32>) {
      %mean, %m2, %n = loop.reduction welford [4] [64] : !loop.tensor<[4], f32>, !loop.tensor<[4], f32>, !loop.tensor<[4], f32> {
      ^bb0(%i0: index, %r0: index):
        %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, 64], f32>
        loop.yield %0 : f32
      }
      %y = loop.pointwise [4, 64] : !loop.tensor<[4, 64], f32> {
      ^bb0(%i0_1: index, %i1: index):
        %2 = loop.load %x[i0, i1] : !buffer.buffer<[4, 64], f32>
        %4 = loop.load %mean[i0] : !loop.tensor<[4], f32>
        %5 = arith.subf %2, %4 : f32
        %6 = loop.load %m2[i0] : !loop.tensor<[4], f32>
        %7 = loop.load %n[i0] : !loop.tensor<[4], f32>
        %8 = arith.divf %6, %7 : f32
        %9 = arith.constant 1.000000e-05 : f32
        %10 = arith.addf %8, %9 : f32
        %11 = math.rsqrt %10 : f32
        %12 = arith.mulf %5, %11 : f32
        %13 = loop.load %w[i1] : !buffer.buffer<[64], f32>
        %15 = arith.mulf %12, %13 : f32
        %16 = loop.load %b[i1] : !buffer.buffer<[64], f32>
        %18 = arith.addf %15, %16 : f32
        loop.yield %18 : f32
      }
      loop.yield %y : !loop.tensor<[4, 64], f32>
    }
    cpu.return
  }
}
