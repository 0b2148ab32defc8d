// RUN: fx-opt %s -p "convert-loop-to-cpp{combine=false}" -t cpp-kernels | filecheck %s

// The build asks for 256-bit vectors (512 where ATen's own kernels run
// AVX-512: runtime/cpp_kernels.py); on CPUs that run them as two 128-bit
// halves (GCC's Zen 1 / Bulldozer tunings, COIL_HALF_WIDTH_BF16) a kernel that
// narrows floats to bf16 and calls no vector math is compiled for 128-bit
// vectors (its packs across the halves and split stores cost more than the
// width gains); one calling exp (libmvec's 8-wide variant) or storing f32
// keeps 256. (64 x 256 points, static: PARALLEL_MIN_POINTS exactly, so the
// outer loop is parallel with no `if` clause.)

// CHECK:       #define COIL_HALF_WIDTH_BF16 1

// CHECK:       #ifdef COIL_HALF_WIDTH_BF16
// CHECK-NEXT:  #pragma GCC push_options
// CHECK-NEXT:  #pragma GCC target("prefer-vector-width=128")
// CHECK-NEXT:  #endif
// CHECK-NEXT:  // cost:
// CHECK-NEXT:  extern "C" int coil_cpp_o_0(uint16_t* buf0, uint16_t* buf1) {
// CHECK:         #pragma omp parallel for{{$}}
// CHECK:         buf0[{{.*}}] = bf16_store(
// CHECK:       #ifdef COIL_HALF_WIDTH_BF16
// CHECK-NEXT:  #pragma GCC pop_options
// CHECK-NEXT:  #endif
func.func @scale_bf16(%x: !buffer.buffer<[64, 256], bf16>) -> !buffer.buffer<[64, 256], bf16> {
  %o = buffer.alloc : !buffer.buffer<[64, 256], bf16>
  loop.pointwise [64, 256] outs(%o : !buffer.buffer<[64, 256], bf16>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !buffer.buffer<[64, 256], bf16>
    %b = arith.extf %a : bf16 to f32
    %c = arith.addf %b, %b : f32
    %d = arith.truncf %c : f32 to bf16
    loop.yield %d : bf16
  }
  func.return %o : !buffer.buffer<[64, 256], bf16>
}

// CHECK:       // cost:
// CHECK-NEXT:  extern "C" int coil_cpp_o_1(uint16_t* buf0, uint16_t* buf1) {
// CHECK:         std::exp(
// CHECK:         return bad;
// CHECK-NEXT:  }
// CHECK-NOT:   #pragma GCC
// CHECK:       extern "C" int coil_cpp_o_2(float* buf0, float* buf1) {
// CHECK-NOT:   #pragma GCC
func.func @exp_bf16(%x: !buffer.buffer<[64, 256], bf16>) -> !buffer.buffer<[64, 256], bf16> {
  %o = buffer.alloc : !buffer.buffer<[64, 256], bf16>
  loop.pointwise [64, 256] outs(%o : !buffer.buffer<[64, 256], bf16>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !buffer.buffer<[64, 256], bf16>
    %b = arith.extf %a : bf16 to f32
    %c = math.exp %b : f32
    %d = arith.truncf %c : f32 to bf16
    loop.yield %d : bf16
  }
  func.return %o : !buffer.buffer<[64, 256], bf16>
}

func.func @scale_f32(%x: !buffer.buffer<[64, 256], f32>) -> !buffer.buffer<[64, 256], f32> {
  %o = buffer.alloc : !buffer.buffer<[64, 256], f32>
  loop.pointwise [64, 256] outs(%o : !buffer.buffer<[64, 256], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !buffer.buffer<[64, 256], f32>
    %c = arith.addf %a, %a : f32
    loop.yield %c : f32
  }
  func.return %o : !buffer.buffer<[64, 256], f32>
}
