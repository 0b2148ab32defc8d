// RUN: fx-opt %s -t cpp-kernels | filecheck %s

// Which blocked row reductions keep vector accumulators (coil_vf / coil_vd,
// 32 bytes, the lanes added as a tree by lanes_sum / lanes_prod) and which
// keep `omp simd reduction` over scalar streams: a float or double sum or
// product whose body reads arrays of the accumulator's type only gets vectors
// (8 float lanes, 4 double lanes); a sum of bf16 reads (GCC would vectorize
// the 8-lane loop 16 lanes wide and give up) and a max keep the clause.

// CHECK-LABEL: extern "C" int coil_cpp_sum_f32(
// CHECK:         coil_vf [[A:acc[0-9]+]]_s0 = splat(float(0)),
// CHECK:         for (int64_t jb = 0; jb < 16L; jb += 8) {
// CHECK:           #pragma omp simd
// CHECK-NEXT:      for (int64_t jl = 0; jl < 8; ++jl) {
// CHECK:             [[A]]_t3[jl] = {{v[0-9]+}};
// CHECK:           [[A]]_s0 += [[A]]_t0; [[A]]_s1 += [[A]]_t1; [[A]]_s2 += [[A]]_t2; [[A]]_s3 += [[A]]_t3;
// CHECK:         [[A]] = float((lanes_sum([[A]]_s0) + [[A]]_r));
// CHECK-NOT:     reduction(

// CHECK-LABEL: extern "C" int coil_cpp_prod_f64(
// CHECK:         coil_vd [[P:acc[0-9]+]]_s0 = splat(double(1)),
// CHECK:         double [[P]]_r = 1;
// CHECK:         for (int64_t jb = 0; jb < 16L; jb += 4) {
// CHECK:           for (int64_t jl = 0; jl < 4; ++jl) {
// CHECK:           [[P]]_s0 *= [[P]]_t0;
// CHECK:         [[P]] = double((lanes_prod([[P]]_s0) * [[P]]_r));

// CHECK-LABEL: extern "C" int coil_cpp_sum_bf16(
// CHECK-NOT:     coil_vf {{acc}}
// CHECK:         #pragma omp simd reduction(+:{{acc[0-9]+}}_s0,
// CHECK:         bf16_load(buf1[

// CHECK-LABEL: extern "C" int coil_cpp_max_f32(
// CHECK-NOT:     coil_vf {{acc}}
// CHECK:         #pragma omp simd reduction(max:

builtin.module {
  cpu.func @coil_cpp_sum_f32(%out: !buffer.buffer<[4], f32>, %x: !buffer.buffer<[4, 64], f32>) {
    loop.reduction sum [4] [64] outs(%out : !buffer.buffer<[4], f32>) {
    ^bb0(%i0: index, %r0: index):
      %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, 64], f32>
      loop.yield %0 : f32
    }
    cpu.return
  }
  cpu.func @coil_cpp_prod_f64(%out: !buffer.buffer<[4], f64>, %x: !buffer.buffer<[4, 64], f64>) {
    loop.reduction prod [4] [64] outs(%out : !buffer.buffer<[4], f64>) {
    ^bb0(%i0: index, %r0: index):
      %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, 64], f64>
      loop.yield %0 : f64
    }
    cpu.return
  }
  cpu.func @coil_cpp_sum_bf16(%out: !buffer.buffer<[4], f32>, %x: !buffer.buffer<[4, 64], bf16>) {
    loop.reduction sum [4] [64] outs(%out : !buffer.buffer<[4], f32>) {
    ^bb0(%i0: index, %r0: index):
      %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, 64], bf16>
      %1 = arith.extf %0 : bf16 to f32
      loop.yield %1 : f32
    }
    cpu.return
  }
  cpu.func @coil_cpp_max_f32(%out: !buffer.buffer<[4], f32>, %x: !buffer.buffer<[4, 64], f32>) {
    loop.reduction max [4] [64] outs(%out : !buffer.buffer<[4], f32>) {
    ^bb0(%i0: index, %r0: index):
      %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, 64], f32>
      loop.yield %0 : f32
    }
    cpu.return
  }
}
