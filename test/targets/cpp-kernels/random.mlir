// RUN: fx-opt %s -p "convert-loop-to-cpp{combine=false}" -t cpp-kernels | filecheck %s

// Random numbers: the function's seed is an int64_t argument; loop.rand /
// loop.randn call coil_rand / coil_randn, Triton's tl.rand / tl.randn (Philox
// 4x32, 10 rounds, counter (offset, 0, 0, 0), key (seed low, seed high)), so a
// CPU kernel draws what the GPU kernel draws.

// CHECK:       inline void coil_philox(int64_t seed, int64_t offset, uint32_t c[4]) {
// CHECK:       inline float coil_rand(int64_t seed, int64_t offset) {
// CHECK:       inline float coil_randn(int64_t seed, int64_t offset) {
// CHECK:       extern "C" int coil_cpp_d_0(float* buf0, float* buf1, int64_t seed2) {
// CHECK:           = float(coil_rand(seed2, (i1 + (64L * i0))));
// CHECK:       extern "C" int coil_cpp_n_1(double* buf0, int64_t seed1) {
// CHECK:           = double(coil_randn(seed1, (256L + i0)));
func.func @dropout(%x: !buffer.buffer<[4, 64], f32>) -> !buffer.buffer<[4, 64], f32> {
  %seed = loop.seed : i64
  %d = buffer.alloc : !buffer.buffer<[4, 64], f32>
  loop.pointwise [4, 64] outs(%d : !buffer.buffer<[4, 64], f32>) {
  ^bb0(%i0: index, %i1: index):
    %u = loop.rand %seed[i0*64 + i1] : f32
    %p = arith.constant 0.25 : f32
    %keep = arith.cmpf ogt, %u, %p : f32
    %a = loop.load %x[i0, i1] : !buffer.buffer<[4, 64], f32>
    %z = arith.constant 0.0 : f32
    %y = arith.select %keep, %a, %z : f32
    loop.yield %y : f32
  }
  func.return %d : !buffer.buffer<[4, 64], f32>
}

func.func @normal() -> !buffer.buffer<[8], f64> {
  %seed = loop.seed : i64
  %n = buffer.alloc : !buffer.buffer<[8], f64>
  loop.pointwise [8] outs(%n : !buffer.buffer<[8], f64>) {
  ^bb0(%i0: index):
    %g = loop.randn %seed[256 + i0] : f64
    loop.yield %g : f64
  }
  func.return %n : !buffer.buffer<[8], f64>
}
