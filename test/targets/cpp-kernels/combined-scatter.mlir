// RUN: fx-opt %s -p convert-loop-to-cpp -t cpp-kernels | filecheck %s

// A pointwise nest, then a scatter reading its result, combined into one C++
// function: the scatter loads the pointwise nest's output from memory (an
// earlier group's values are not values inside the scatter's own loop; a
// distributed test's graph failed to print with "a group member read at 0").

// CHECK:       extern "C" int coil_cpp_y_o_0(float* buf0, float* buf1, float* buf2, int64_t* buf3) {
// CHECK:         buf0[i0 * 1L] = float(v2);
// CHECK:         for (int64_t x3 = 0; x3 < 6L; ++x3) {
// CHECK:           const float v5 = float(buf0[i0 * 1L]);
// CHECK:           buf2[ix6 * 1L] = float(float(buf2[ix6 * 1L]) + v5);
func.func @scale_then_index_add(%x: !buffer.buffer<[6], f32>, %k: !buffer.buffer<[6], i64>, %o: !buffer.buffer<[10], f32>) -> !buffer.buffer<[10], f32> {
  %y = buffer.alloc : !buffer.buffer<[6], f32>
  loop.pointwise [6] outs(%y : !buffer.buffer<[6], f32>) {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !buffer.buffer<[6], f32>
    %b = arith.addf %a, %a : f32
    loop.yield %b : f32
  }
  loop.scatter add [6] at [t0] outs(%o : !buffer.buffer<[10], f32>) {
  ^bb0(%i0: index):
    %i = loop.load %k[i0] : !buffer.buffer<[6], i64>
    %v = loop.load %y[i0] : !buffer.buffer<[6], f32>
    loop.yield %v, %i : f32, i64
  }
  func.return %o : !buffer.buffer<[10], f32>
}
