// RUN: fx-opt %s -p "convert-loop-to-cpp{combine=false}" -t cpp-kernels | filecheck %s

// A scatter is a C++ kernel: its points in order on one thread (several may
// name one element: `add` accumulates them, as ATen's serial CPU kernels do),
// the data-dependent index checked as a gather's is (out of range: the `bad`
// flag, which the wrapper raises, and no write), the out updated in place.

// CHECK:       extern "C" int coil_cpp_o_0(float* buf0, int64_t* buf1, float* buf2) {
// CHECK-NOT:     #pragma omp
// CHECK:         for (int64_t x1 = 0; x1 < 6L * 3L; ++x1) {
// CHECK-NEXT:      const int64_t i1 = x1 % 3L;
// CHECK-NEXT:      const int64_t q2 = x1 / 3L;
// CHECK-NEXT:      const int64_t i0 = q2;
// CHECK:           const int64_t [[IX:ix[0-9]+]] = {{.*}};
// CHECK-NEXT:      if (!((uint64_t)[[IX]] < (uint64_t)5L)) { bad = 1; continue; }
// CHECK-NEXT:      const int64_t [[IY:ix[0-9]+]] = i1;
// CHECK-NEXT:      buf0[[[IX]] * 3L + [[IY]] * 1L] = float(float(buf0[[[IX]] * 3L + [[IY]] * 1L]) + v{{[0-9]+}});
func.func @index_add(%o: !buffer.buffer<[5, 3], f32>, %k: !buffer.buffer<[6], i64>, %v: !buffer.buffer<[6, 3], f32>) -> !buffer.buffer<[5, 3], f32> {
  loop.scatter add [6, 3] at [t0, i1] outs(%o : !buffer.buffer<[5, 3], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %k[i0] : !buffer.buffer<[6], i64>
    %b = loop.load %v[i0, i1] : !buffer.buffer<[6, 3], f32>
    loop.yield %b, %a : f32, i64
  }
  func.return %o : !buffer.buffer<[5, 3], f32>
}

// `max` keeps NaN as scatter_reduce(amax) does (max_prop); bf16 is read and
// combined as float, and stored rounded.

// CHECK:       extern "C" int coil_cpp_m_1(uint16_t* buf0, int64_t* buf1, uint16_t* buf2) {
// CHECK:         buf0[{{.*}}] = bf16_store(max_prop(bf16_load(buf0[{{.*}}]), float(v{{[0-9]+}})));
func.func @amax_bf16(%m: !buffer.buffer<[5], bf16>, %k: !buffer.buffer<[4], i64>, %v: !buffer.buffer<[4], bf16>) -> !buffer.buffer<[5], bf16> {
  loop.scatter max [4] at [t0] outs(%m : !buffer.buffer<[5], bf16>) {
  ^bb0(%i0: index):
    %a = loop.load %k[i0] : !buffer.buffer<[4], i64>
    %b = loop.load %v[i0] : !buffer.buffer<[4], bf16>
    loop.yield %b, %a : bf16, i64
  }
  func.return %m : !buffer.buffer<[5], bf16>
}
