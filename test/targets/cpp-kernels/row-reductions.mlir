// RUN: fx-opt %s -p "convert-loop-to-cpp{combine=false}" -t cpp-kernels | filecheck %s

// Row reductions keep four accumulators per result (STREAMS): the innermost
// row loop's whole blocks (PARTIAL_BYTES, 128 bytes: 32 floats) split into four
// contiguous streams that one `omp simd reduction` loop walks together, element
// j of stream s into accumulator s, so the adds of four vectors are in flight
// at once (one accumulator waits on each add's latency) and each accumulator
// is a register (an array of partials indexed by the lane was a load and a
// store per block); the streams are then combined pairwise. A float sum adds
// its streams into a double total every SUM_CHUNK (4096) elements of a longer
// or unknown row.

// A float sum (or product) keeps each stream's accumulator as a vector
// (coil_vf, 32 bytes: VECTOR_BYTES): the loop steps 8 elements per stream, an
// inner `omp simd` loop writes each stream's terms into a vector, the step
// adds them in, and the lanes are added as a tree at the end (lanes_sum):
// under `omp simd reduction` GCC added the lanes one after another.

// A row of unknown length: the blocks up to the last multiple of 32, in chunks
// of 4096 (four streams of a quarter chunk each) flushed into the double
// total, then the remainder into a scalar.

// CHECK-LABEL: extern "C" int coil_cpp_s_0(float* buf0, float* buf1, int64_t s0) {
// CHECK:         float [[ACC:acc[0-9]+]];
// CHECK-NEXT:    {
// CHECK-NEXT:      coil_vf [[ACC]]_s0 = splat(float(0)), [[ACC]]_s1 = splat(float(0)), [[ACC]]_s2 = splat(float(0)), [[ACC]]_s3 = splat(float(0));
// CHECK-NEXT:      float [[ACC]]_r = 0;
// CHECK-NEXT:      double [[ACC]]_t = 0;
// CHECK:           const int64_t [[FULL:nfull[0-9]+]] = s0 / 32 * 32;
// CHECK-NEXT:      for (int64_t rc = 0; rc < [[FULL]]; rc += 4096) {
// CHECK-NEXT:        const int64_t re = imin(rc + 4096L, [[FULL]]);
// CHECK-NEXT:        const int64_t rq = (re - rc) / 4;
// CHECK-NEXT:        for (int64_t jb = 0; jb < rq; jb += 8) {
// CHECK-NEXT:          coil_vf [[ACC]]_t0, [[ACC]]_t1, [[ACC]]_t2, [[ACC]]_t3;
// CHECK-NEXT:          #pragma omp simd
// CHECK-NEXT:          for (int64_t jl = 0; jl < 8; ++jl) {
// CHECK-NEXT:            const int64_t j = jb + jl;
// CHECK-NEXT:            {  // stream 0
// CHECK-NEXT:              const int64_t r0 = rc + j;
// CHECK-NEXT:              const float [[X:v[0-9]+]] = float(buf1[i0 * s0 + r0 * 1L]);
// CHECK-NEXT:              [[ACC]]_t0[jl] = [[X]];
// CHECK-NEXT:            }
// CHECK-NEXT:            {  // stream 1
// CHECK-NEXT:              const int64_t r0 = rc + j + 1 * rq;
// CHECK-NEXT:              const float [[X]] = float(buf1[i0 * s0 + r0 * 1L]);
// CHECK-NEXT:              [[ACC]]_t1[jl] = [[X]];
// CHECK:                 {  // stream 3
// CHECK-NEXT:              const int64_t r0 = rc + j + 3 * rq;
// CHECK:                 [[ACC]]_s0 += [[ACC]]_t0; [[ACC]]_s1 += [[ACC]]_t1; [[ACC]]_s2 += [[ACC]]_t2; [[ACC]]_s3 += [[ACC]]_t3;
// CHECK-NEXT:        }
// CHECK-NEXT:        [[ACC]]_s0 += [[ACC]]_s2; [[ACC]]_s1 += [[ACC]]_s3;
// CHECK-NEXT:        [[ACC]]_s0 += [[ACC]]_s1;
// CHECK-NEXT:        [[ACC]]_t += double((lanes_sum([[ACC]]_s0) + [[ACC]]_r));
// CHECK-NEXT:        [[ACC]]_r = 0;
// CHECK-NEXT:        [[ACC]]_s0 = splat(float(0)); [[ACC]]_s1 = splat(float(0)); [[ACC]]_s2 = splat(float(0)); [[ACC]]_s3 = splat(float(0));
// CHECK-NEXT:      }
// CHECK-NEXT:      for (int64_t j = 0; j < s0 - [[FULL]]; ++j) {
// CHECK-NEXT:        const int64_t r0 = [[FULL]] + j;
// CHECK-NEXT:        const float [[X]] = float(buf1[i0 * s0 + r0 * 1L]);
// CHECK-NEXT:        [[ACC]]_r += [[X]];
// CHECK-NEXT:      }
// CHECK:           [[ACC]]_t += double((lanes_sum([[ACC]]_s0) + [[ACC]]_r));
// CHECK-NEXT:      [[ACC]] = float([[ACC]]_t);
// CHECK-NEXT:    }
// CHECK-NEXT:    buf0[i0 * 1L] = float([[ACC]]);
func.func @sum_rows(%n: index {coil.symbol = #coil.expr<s0>}, %x: !buffer.buffer<[4, s0], f32>) -> !buffer.buffer<[4], f32> {
  %s = buffer.alloc : !buffer.buffer<[4], f32>
  loop.reduction sum [4] [s0] outs(%s : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, s0], f32>
    loop.yield %0 : f32
  }
  func.return %s : !buffer.buffer<[4], f32>
}

// Two reduction dimensions (a channel's statistics over [N, HW]): the outer
// row loop is plain, the streams' accumulators live across it; int64 blocks
// are 16 elements (128 bytes, streams of 16 here), and an exact multiple of
// the block has no remainder loop. 384 points, static: no OpenMP region.

// CHECK-LABEL: extern "C" int coil_cpp_s_1(int64_t* buf0, int64_t* buf1) {
// CHECK-NOT:     #pragma omp parallel
// CHECK:         for (int64_t x{{[0-9]+}} = 0; x{{[0-9]+}} < 3L; ++x{{[0-9]+}}) {
// CHECK:         int64_t [[ACC:acc[0-9]+]];
// CHECK:           int64_t [[ACC]]_s0 = 0, [[ACC]]_s1 = 0, [[ACC]]_s2 = 0, [[ACC]]_s3 = 0;
// CHECK-NOT:       _t = 0
// CHECK:           for (int64_t r0 = 0; r0 < 2L; ++r0) {
// CHECK-NEXT:        #pragma omp simd reduction(+:[[ACC]]_s0, [[ACC]]_s1, [[ACC]]_s2, [[ACC]]_s3)
// CHECK-NEXT:        for (int64_t j = 0; j < 16L; ++j) {
// CHECK-NEXT:          {  // stream 0
// CHECK-NEXT:            const int64_t r1 = j;
// CHECK-NEXT:            const int64_t [[X:v[0-9]+]] = int64_t(buf1[r0 * 192L + i0 * 64L + r1 * 1L]);
// CHECK-NEXT:            [[ACC]]_s0 += [[X]];
// CHECK:               {  // stream 3
// CHECK-NEXT:            const int64_t r1 = j + 3 * 16L;
// CHECK-NOT:         for (int64_t j = 0; j <
// CHECK:           [[ACC]]_s0 += [[ACC]]_s1;
// CHECK-NEXT:      [[ACC]] = int64_t([[ACC]]_s0);
func.func @channel_sum(%x: !buffer.buffer<[2, 3, 64], i64>) -> !buffer.buffer<[3], i64> {
  %s = buffer.alloc : !buffer.buffer<[3], i64>
  loop.reduction sum [3] [2, 64] outs(%s : !buffer.buffer<[3], i64>) {
  ^bb0(%i0: index, %r0: index, %r1: index):
    %0 = loop.load %x[r0, i0, r1] : !buffer.buffer<[2, 3, 64], i64>
    loop.yield %0 : i64
  }
  func.return %s : !buffer.buffer<[3], i64>
}

// A short static row (under two blocks) keeps one accumulator.

// CHECK-LABEL: extern "C" int coil_cpp_p_2(float* buf0, float* buf1) {
// CHECK:         float [[ACC:acc[0-9]+]] = 1;
// CHECK-NEXT:    #pragma omp simd reduction(*:[[ACC]])
// CHECK-NEXT:    for (int64_t r0 = 0; r0 < 40L; ++r0) {
// CHECK-NOT:     _s0
func.func @short_prod(%x: !buffer.buffer<[5, 40], f32>) -> !buffer.buffer<[5], f32> {
  %p = buffer.alloc : !buffer.buffer<[5], f32>
  loop.reduction prod [5] [40] outs(%p : !buffer.buffer<[5], f32>) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[5, 40], f32>
    loop.yield %0 : f32
  }
  func.return %p : !buffer.buffer<[5], f32>
}

// Dividing by a value that is the same for the whole row (a member's scalar)
// multiplies by its reciprocal; a division by a row element stays one; a
// division of row-invariant values stays a division. The f16 store rounds
// the truncf's float once.

// CHECK-LABEL: extern "C" int coil_cpp_sum_n_o_3(_Float16* buf0, float* buf1, float* buf2) {
// CHECK:         float [[ACC:acc[0-9]+]];
// CHECK:         [[ACC]] = float((lanes_sum([[ACC]]_s0) + [[ACC]]_r));
// CHECK:         #pragma omp simd
// CHECK-NEXT:    for (int64_t r0 = 0; r0 < 128L; ++r0) {
// CHECK:           const float [[A:v[0-9]+]] = ({{v[0-9]+}} * (1.0f / [[ACC]]));
// CHECK:           const float [[B:v[0-9]+]] = ([[A]] / {{v[0-9]+}});
// CHECK:           const float [[MAX:v[0-9]+]] = max_prop([[ACC]], {{v[0-9]+}});
// CHECK-NEXT:      const float [[Q:v[0-9]+]] = ([[MAX]] / [[ACC]]);
// CHECK-NEXT:      const float [[C:v[0-9]+]] = ([[B]] + [[Q]]);
// CHECK-NEXT:      const float {{v[0-9]+}} = f16_round(float([[C]]));
// CHECK-NEXT:      buf0[i0 * 128L + r0 * 1L] = _Float16(float([[C]]));
func.func @normalize(%x: !buffer.buffer<[4, 128], f32>, %y: !buffer.buffer<[4, 128], f32>) -> !buffer.buffer<[4, 128], f16> {
  %o = buffer.alloc : !buffer.buffer<[4, 128], f16>
  loop.fused [4] [128] outs(%o : !buffer.buffer<[4, 128], f16>) {
    %sum = loop.reduction sum [4] [128] : !loop.tensor<[4], f32> {
    ^bb0(%i0: index, %r0: index):
      %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, 128], f32>
      loop.yield %0 : f32
    }
    %n = loop.pointwise [4, 128] : !loop.tensor<[4, 128], f16> {
    ^bb0(%i0: index, %i1: index):
      %1 = loop.load %x[i0, i1] : !buffer.buffer<[4, 128], f32>
      %2 = loop.load %sum[i0] : !loop.tensor<[4], f32>
      %3 = arith.divf %1, %2 : f32
      %4 = loop.load %y[i0, i1] : !buffer.buffer<[4, 128], f32>
      %5 = arith.divf %3, %4 : f32
      %c = arith.constant 1.0 : f32
      %6 = arith.maximumf %2, %c : f32
      %7 = arith.divf %6, %2 : f32
      %8 = arith.addf %5, %7 : f32
      %9 = arith.truncf %8 : f32 to f16
      loop.yield %9 : f16
    }
    loop.yield %n : !loop.tensor<[4, 128], f16>
  }
  func.return %o : !buffer.buffer<[4, 128], f16>
}

// A row that compares 64-bit indices (a causal mask: key r0 <= query i0) keeps
// one stream: g++ 12 at -O3 with 256-bit vectors summed four such streams
// wrong (a causal softmax's rows from the 25th of 64 on); one stream and
// 32-bit compares were right.

// CHECK-LABEL: extern "C" int coil_cpp_s_4(float* buf0, float* buf1) {
// CHECK:         float [[ACC:acc[0-9]+]];
// CHECK-NEXT:    {
// CHECK-NEXT:      float [[ACC]]_s0 = 0;
// CHECK-NEXT:      #pragma omp simd reduction(+:[[ACC]]_s0)
// CHECK-NEXT:      for (int64_t j = 0; j < 64L; ++j) {
// CHECK-NEXT:        {  // stream 0
// CHECK-NEXT:          const int64_t r0 = j;
// CHECK:               const bool {{v[0-9]+}} = ({{v[0-9]+}} <= {{v[0-9]+}});
// CHECK-NOT:         stream 1
// CHECK:             [[ACC]] = float([[ACC]]_s0);
// CHECK:         return bad;
func.func @causal_sum(%x: !buffer.buffer<[64, 64], f32>) -> !buffer.buffer<[64], f32> {
  %s = buffer.alloc : !buffer.buffer<[64], f32>
  loop.reduction sum [64] [64] outs(%s : !buffer.buffer<[64], f32>) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[64, 64], f32>
    %1 = loop.index r0 : i64
    %2 = loop.index i0 : i64
    %3 = arith.cmpi sle, %1, %2 : i64
    %4 = arith.constant 0.000000e+00 : f32
    %5 = arith.select %3, %0, %4 : f32
    loop.yield %5 : f32
  }
  func.return %s : !buffer.buffer<[64], f32>
}
