// RUN: fx-opt %s -p "convert-loop-to-cpp{combine=false}" -t cpp-kernels | filecheck %s

// A scan is a C++ kernel: the other dimensions in one flattened loop (parallel
// from PARALLEL_MIN_POINTS points; 4 x s0 is decided at run time), the scanned
// dimension walked in order, the first element starting the running value,
// every step stored (a bf16 result rounded once; the sum runs in f32).

// CHECK:       template <typename T> inline T coil_log_add_exp(T x, T y) {

// CHECK:       extern "C" int coil_cpp_c_0(uint16_t* buf0, uint16_t* buf1, int64_t s0) {
// CHECK:         #pragma omp parallel for if((4L * s0) >= 16384L)
// CHECK-NEXT:    for (int64_t x1 = 0; x1 < 4L; ++x1) {
// CHECK-NEXT:      const int64_t i0 = x1;
// CHECK-NEXT:      float acc2 = float(0);
// CHECK-NEXT:      for (int64_t i1 = 0; i1 < s0; ++i1) {
// CHECK:             acc2 = i1 == 0 ? float([[V:v[0-9]+]]) : float(acc2 + [[V]]);
// CHECK-NEXT:        buf0[i0 * s0 + i1 * 1L] = bf16_store(acc2);
func.func @cumsum_bf16(%n: index {coil.symbol = #coil.expr<s0>}, %x: !buffer.buffer<[4, s0], bf16>) -> !buffer.buffer<[4, s0], bf16> {
  %c = buffer.alloc : !buffer.buffer<[4, s0], bf16>
  loop.scan sum dim 1 [4, s0] outs(%c : !buffer.buffer<[4, s0], bf16>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !buffer.buffer<[4, s0], bf16>
    %b = arith.extf %a : bf16 to f32
    loop.yield %b : f32
  }
  func.return %c : !buffer.buffer<[4, s0], bf16>
}

// cummax: the value and its position; a NaN takes over (and stays), a tie
// moves the position to the later element (ATen's cummax_cummin_helper).

// CHECK:       extern "C" int coil_cpp_v_k_1(float* buf0, int64_t* buf1, float* buf2) {
// CHECK:         for (int64_t x{{[0-9]+}} = 0; x{{[0-9]+}} < 3L; ++x{{[0-9]+}}) {
// CHECK-NEXT:      const int64_t i1 = x{{[0-9]+}};
// CHECK:           int64_t [[P:pos[0-9]+]] = 0;
// CHECK-NEXT:      for (int64_t i0 = 0; i0 < 8L; ++i0) {
// CHECK:             if (i0 == 0 || [[V:v[0-9]+]] != [[V]] || ([[A:acc[0-9]+]] == [[A]] && [[V]] >= [[A]])) {
// CHECK-NEXT:          [[A]] = [[V]]; [[P]] = i0;
// CHECK:             buf0[i0 * 3L + i1 * 1L] = float([[A]]);
// CHECK-NEXT:        buf1[i0 * 3L + i1 * 1L] = int64_t([[P]]);
func.func @cummax(%y: !buffer.buffer<[8, 3], f32>) -> (!buffer.buffer<[8, 3], f32>, !buffer.buffer<[8, 3], i64>) {
  %v = buffer.alloc : !buffer.buffer<[8, 3], f32>
  %k = buffer.alloc : !buffer.buffer<[8, 3], i64>
  loop.scan argmax dim 0 [8, 3] outs(%v, %k : !buffer.buffer<[8, 3], f32>, !buffer.buffer<[8, 3], i64>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %y[i0, i1] : !buffer.buffer<[8, 3], f32>
    loop.yield %a : f32
  }
  func.return %v, %k : !buffer.buffer<[8, 3], f32>, !buffer.buffer<[8, 3], i64>
}

// logcumsumexp combines through coil_log_add_exp (ATen's _log_add_exp_helper;
// the helper is printed with the others, at the top).

// CHECK:       extern "C" int coil_cpp_l_2(
// CHECK:           coil_log_add_exp(acc
func.func @logcumsumexp(%y: !buffer.buffer<[8], f32>) -> !buffer.buffer<[8], f32> {
  %l = buffer.alloc : !buffer.buffer<[8], f32>
  loop.scan logsumexp dim 0 [8] outs(%l : !buffer.buffer<[8], f32>) {
  ^bb0(%i0: index):
    %a = loop.load %y[i0] : !buffer.buffer<[8], f32>
    loop.yield %a : f32
  }
  func.return %l : !buffer.buffer<[8], f32>
}
