// RUN: fx-opt %s -p "convert-loop-to-cpp{combine=false vector-bytes=64}" | filecheck %s --check-prefix=IR
// RUN: fx-opt %s -p "convert-loop-to-cpp{combine=false vector-bytes=64}" -t cpp-kernels | filecheck %s --check-prefix=W64
// RUN: fx-opt %s -p "convert-loop-to-cpp{combine=false}" -t cpp-kernels | filecheck %s --check-prefix=W32
// RUN: not fx-opt %s -p "convert-loop-to-cpp{vector-bytes=48}" 2>&1 | filecheck %s --check-prefix=BAD

// convert-loop-to-cpp{vector-bytes=64} (the backend's choice where the kernels
// compile for 512-bit vectors: runtime/cpp_kernels.vector_bytes) marks each
// cpu.func, and a float sum's stream accumulators are 64-byte vectors
// (coil_vf16, coil_vd8 for doubles) stepped 16 floats (8 doubles) at a time:
// the step's exp is then one 16-wide libmvec call, not 8-wide ones (a
// 256x1024 f32 softmax kernel on an AVX-512 Xeon, one thread: 300 -> 200 us).
// Blocks are four such vectors (256 bytes: 64 floats). The default stays 32
// bytes (AVX2), as every other test here prints.

// IR:      cpu.func @coil_cpp_s_0
// IR-SAME: coil.vector_bytes = 64 : i64

// W64-LABEL: extern "C" int coil_cpp_s_0(float* buf0, float* buf1) {
// W64:         coil_vf16 [[ACC:acc[0-9]+]]_s0 = splat16(float(0)), {{.*}}_s3 = splat16(float(0));
// W64:         for (int64_t jb = 0; jb < 256L; jb += 16) {
// W64-NEXT:      coil_vf16 [[ACC]]_t0, [[ACC]]_t1, [[ACC]]_t2, [[ACC]]_t3;
// W64-NEXT:      #pragma omp simd
// W64-NEXT:      for (int64_t jl = 0; jl < 16; ++jl) {
// W64:           std::exp(
// W64:         lanes_sum([[ACC]]_s0)
// W32-LABEL: extern "C" int coil_cpp_s_0(float* buf0, float* buf1) {
// W32:         coil_vf [[ACC:acc[0-9]+]]_s0 = splat(float(0)),
// W32:         for (int64_t jb = 0; jb < 256L; jb += 8) {
// W32:           for (int64_t jl = 0; jl < 8; ++jl) {
func.func @sum_exp(%x: !buffer.buffer<[4, 1024], f32>) -> !buffer.buffer<[4], f32> {
  %s = buffer.alloc : !buffer.buffer<[4], f32>
  loop.reduction sum [4] [1024] outs(%s : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, 1024], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  func.return %s : !buffer.buffer<[4], f32>
}

// Doubles: 8 a vector, blocks of 32: a row of 100 is three blocks (four
// streams of 24) and a remainder of 4.
// W64-LABEL: extern "C" int coil_cpp_s_1(double* buf0, double* buf1) {
// W64:         coil_vd8 [[ACC:acc[0-9]+]]_s0 = splat8(double(0)),
// W64:         for (int64_t jb = 0; jb < 24L; jb += 8) {
// W64:         for (int64_t j = 0; j < 4L; ++j) {
func.func @sum_f64(%x: !buffer.buffer<[4, 100], f64>) -> !buffer.buffer<[4], f64> {
  %s = buffer.alloc : !buffer.buffer<[4], f64>
  loop.reduction sum [4] [100] outs(%s : !buffer.buffer<[4], f64>) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, 100], f64>
    loop.yield %0 : f64
  }
  func.return %s : !buffer.buffer<[4], f64>
}

// BAD: fx-opt: error: convert-loop-to-cpp: option 'vector-bytes' must be 32 or 64; got 48
