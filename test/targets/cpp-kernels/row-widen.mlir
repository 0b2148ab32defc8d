// RUN: fx-opt %s -t cpp-kernels | filecheck %s

// A bf16 LayerNorm over [2, 8]: the output pass (a row member) reads gamma and
// beta at the row index alone, so each is widened to f32 once, into an array
// before the group's parallel loop (its loops over the row, then the array
// indexed by the flat row index), not once per row. The input (indexed by the
// output point too) is read as bf16 by the mean's pass, which keeps it widened
// for the later passes (row-keep-narrow.mlir).

// CHECK-LABEL: extern "C" int coil_cpp_var_mean__to_copy_0(
// CHECK:         float wide0_0[16];
// CHECK-NEXT:    for (int64_t r0 = 0; r0 < 2L; ++r0) {
// CHECK-NEXT:      #pragma omp simd
// CHECK-NEXT:      for (int64_t r1 = 0; r1 < 8L; ++r1) {
// CHECK-NEXT:        wide0_0[(r0 * 8L + r1)] = bf16_load(buf2[r0 * 8L + r1 * 1L]);
// CHECK:         float wide1_0[16];
// CHECK:           wide1_0[(r0 * 8L + r1)] = bf16_load(buf3[r0 * 8L + r1 * 1L]);
// CHECK:         for (int64_t x1 = 0; x1 < 4L; ++x1) {
// CHECK:           bf16_load(buf1[i0 * 16L + r0 * 8L + r1 * 1L])
// CHECK:           = wide0_0[(r0 * 8L + r1)];
// CHECK:           = wide1_0[(r0 * 8L + r1)];
// CHECK:           buf0[i0 * 16L + r0 * 8L + r1 * 1L] = bf16_store(
// CHECK-NOT:     bf16_load(buf2
// CHECK-NOT:     bf16_load(buf3

builtin.module {
  cpu.func @coil_cpp_var_mean__to_copy_0(%_to_copy: !buffer.buffer<[4, 2, 8], bf16>, %arg2: !buffer.buffer<[4, 2, 8], bf16>, %arg0: !buffer.buffer<[2, 8], bf16>, %arg1: !buffer.buffer<[2, 8], bf16>) attributes {coil.cost = "reads 192 B, writes 128 B, 7 loads, 14 ops, 28 body ops"} {
    loop.fused [4] [2, 8] outs(%_to_copy : !buffer.buffer<[4, 2, 8], bf16>) {
      %var_mean, %0, %1 = loop.reduction welford [4] [2, 8] : !loop.tensor<[4], f32>, !loop.tensor<[4], f32>, !loop.tensor<[4], f32> {
      ^bb0(%i0: index, %r0: index, %r1: index):
        %2 = loop.load %arg2[i0, r0, r1] : !buffer.buffer<[4, 2, 8], bf16>
        %3 = arith.extf %2 : bf16 to f32
        loop.yield %3 : f32
      }
      %_to_copy_1 = loop.pointwise [4, 2, 8] : !loop.tensor<[4, 2, 8], bf16> {
      ^bb0(%i0_1: index, %i1: index, %i2: index):
        %4 = loop.load %arg2[i0, i1, i2] : !buffer.buffer<[4, 2, 8], bf16>
        %5 = arith.extf %4 : bf16 to f32
        %6 = loop.load %var_mean[i0] : !loop.tensor<[4], f32>
        %7 = arith.subf %5, %6 : f32
        %8 = loop.load %0[i0] : !loop.tensor<[4], f32>
        %9 = loop.load %1[i0] : !loop.tensor<[4], f32>
        %10 = arith.constant 0.000000e+00 : f32
        %11 = arith.subf %9, %10 : f32
        %12 = arith.maximumf %11, %10 : f32
        %13 = arith.divf %8, %12 : f32
        %14 = arith.constant 1.000000e-05 : f32
        %15 = arith.addf %13, %14 : f32
        %16 = math.rsqrt %15 : f32
        %17 = arith.mulf %7, %16 : f32
        %18 = loop.load %arg0[i1, i2] : !buffer.buffer<[2, 8], bf16>
        %19 = arith.extf %18 : bf16 to f32
        %20 = arith.mulf %17, %19 : f32
        %21 = loop.load %arg1[i1, i2] : !buffer.buffer<[2, 8], bf16>
        %22 = arith.extf %21 : bf16 to f32
        %23 = arith.addf %20, %22 : f32
        %24 = arith.truncf %23 : f32 to bf16
        loop.yield %24 : bf16
      }
      loop.yield %_to_copy_1 : !loop.tensor<[4, 2, 8], bf16>
    }
    cpu.return
  }
  func.func @forward(%arg0: !buffer.buffer<[2, 8], bf16> {coil.static, coil.aligned}, %arg1: !buffer.buffer<[2, 8], bf16> {coil.static, coil.aligned}, %arg2: !buffer.buffer<[4, 2, 8], bf16>) -> !buffer.buffer<[4, 2, 8], bf16> attributes {coil.peak_bytes = #coil.expr<128>} {
    %_to_copy = buffer.alloc : !buffer.buffer<[4, 2, 8], bf16>
    host.launch @coil_cpp_var_mean__to_copy_0 grid [1, 1, 1] (%_to_copy, %arg2, %arg0, %arg1 : !buffer.buffer<[4, 2, 8], bf16>, !buffer.buffer<[4, 2, 8], bf16>, !buffer.buffer<[2, 8], bf16>, !buffer.buffer<[2, 8], bf16>)
    func.return %_to_copy : !buffer.buffer<[4, 2, 8], bf16>
  }
}
