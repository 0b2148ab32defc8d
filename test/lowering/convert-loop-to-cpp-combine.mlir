// RUN: fx-opt %s -p convert-loop-to-cpp --split-input-file | filecheck %s
// RUN: fx-opt %s -p convert-loop-to-cpp --split-input-file -t cpp-kernels | filecheck %s --check-prefix=CPP

// Kernels with only allocations, views, reuses and frees between them run as
// one C++ function: its arguments are the members' buffers and sizes (each
// once), its body their nests in order; one launch takes the last one's
// place, and a free between them moves after it.

// CHECK-LABEL: cpu.func @coil_cpp_a_b_0(%a: !buffer.buffer<[s0], f32>, %x: !buffer.buffer<[s0], f32>, %b: !buffer.buffer<[s0], f32>, %s0: index {coil.symbol = #coil.expr<s0>})
// CHECK-SAME:    coil.cost = "2 nests: reads
// CHECK-NEXT:    loop.pointwise [s0] outs(%a : !buffer.buffer<[s0], f32>)
// CHECK:           math.exp
// CHECK:         loop.pointwise [s0] outs(%b : !buffer.buffer<[s0], f32>)
// CHECK:           loop.load %a[i0]
// CHECK:           arith.mulf
// CHECK:         cpu.return
// CHECK-NOT:   cpu.func
// CHECK:       func.func @chain
// CHECK-NEXT:    %[[A:.*]] = buffer.alloc
// CHECK-NEXT:    %[[B:.*]] = buffer.alloc
// CHECK-NEXT:    host.launch @coil_cpp_a_b_0 grid [1, 1, 1] (%[[A]], %x, %[[B]] : {{.*}}) scalars [s0]
// CHECK-NEXT:    buffer.dealloc %[[A]]
// CHECK-NEXT:    func.return %[[B]]

// CPP-LABEL: extern "C" int coil_cpp_a_b_0(float* buf0, float* buf1, float* buf2, int64_t s0) {
// CPP:         std::exp
// CPP:         buf0[
// CPP:         for (int64_t i0 = 0; i0 < s0; ++i0) {
// CPP:           buf2[
// CPP:         return bad;
func.func @chain(%n: index {coil.symbol = #coil.expr<s0>}, %x: !buffer.buffer<[s0], f32>) -> !buffer.buffer<[s0], f32> {
  %a = buffer.alloc : !buffer.buffer<[s0], f32>
  loop.pointwise [s0] outs(%a : !buffer.buffer<[s0], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[s0], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %b = buffer.alloc : !buffer.buffer<[s0], f32>
  loop.pointwise [s0] outs(%b : !buffer.buffer<[s0], f32>) {
  ^bb0(%i0: index):
    %2 = loop.load %a[i0] : !buffer.buffer<[s0], f32>
    %3 = arith.mulf %2, %2 : f32
    loop.yield %3 : f32
  }
  buffer.dealloc %a : !buffer.buffer<[s0], f32>
  func.return %b : !buffer.buffer<[s0], f32>
}

// -----

// Anything else between two kernels (an ATen call, a nest left to Triton: here
// one over GPU buffers)
// ends the run: each side keeps its own launch; identical sides stay one kernel.

// CHECK-LABEL: cpu.func @coil_cpp_a_0(
// CHECK-NOT:   cpu.func
// CHECK:       func.func @split
// CHECK:         host.launch @coil_cpp_a_0
// CHECK:         loop.pointwise [4] outs(%cs : !buffer.buffer<[4], f32, device "cuda:0">)
// CHECK:         host.launch @coil_cpp_a_0
func.func @split(%x: !buffer.buffer<[4], f32>, %y: !buffer.buffer<[4], f32>, %g: !buffer.buffer<[4], f32, device "cuda:0">) -> (!buffer.buffer<[4], f32>, !buffer.buffer<[4], f32, device "cuda:0">, !buffer.buffer<[4], f32>) {
  %a = buffer.alloc : !buffer.buffer<[4], f32>
  loop.pointwise [4] outs(%a : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[4], f32>
    %1 = arith.negf %0 : f32
    loop.yield %1 : f32
  }
  %cs = buffer.alloc : !buffer.buffer<[4], f32, device "cuda:0">
  loop.pointwise [4] outs(%cs : !buffer.buffer<[4], f32, device "cuda:0">) {
  ^bb0(%i0: index):
    %2 = loop.load %g[i0] : !buffer.buffer<[4], f32, device "cuda:0">
    loop.yield %2 : f32
  }
  %c = buffer.alloc : !buffer.buffer<[4], f32>
  loop.pointwise [4] outs(%c : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index):
    %3 = loop.load %y[i0] : !buffer.buffer<[4], f32>
    %4 = arith.negf %3 : f32
    loop.yield %4 : f32
  }
  func.return %a, %cs, %c : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32, device "cuda:0">, !buffer.buffer<[4], f32>
}

// -----

// A combined kernel's name never takes one a single kernel has: here both
// would be coil_cpp_x_0 (a launch then called the other's function with the
// wrong arguments); numbered apart, dedupe names them _0 and _1.

// CHECK-LABEL: cpu.func @coil_cpp_x_0(%x: !buffer.buffer<[4], f32>, %a: !buffer.buffer<[4], f32>)
// CHECK:       func.func @lone
// CHECK:         host.launch @coil_cpp_x_0 grid [1, 1, 1] (%{{.*}}, %a :
// CHECK:       cpu.func @coil_cpp_x_1(%x: !buffer.buffer<[4], f32>, %b: !buffer.buffer<[4], f32>, %x_1: !buffer.buffer<[4], f32>)
// CHECK:       func.func @pair
// CHECK:         host.launch @coil_cpp_x_1 grid [1, 1, 1] (%{{.*}}, %b, %{{.*}} :
func.func @lone(%a: !buffer.buffer<[4], f32>) -> !buffer.buffer<[4], f32> {
  %x = buffer.alloc : !buffer.buffer<[4], f32>
  loop.pointwise [4] outs(%x : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %a[i0] : !buffer.buffer<[4], f32>
    %1 = arith.negf %0 : f32
    loop.yield %1 : f32
  }
  func.return %x : !buffer.buffer<[4], f32>
}
func.func @pair(%b: !buffer.buffer<[4], f32>) -> (!buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>) {
  %x = buffer.alloc : !buffer.buffer<[4], f32>
  loop.pointwise [4] outs(%x : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %b[i0] : !buffer.buffer<[4], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %x_1 = buffer.alloc : !buffer.buffer<[4], f32>
  loop.pointwise [4] outs(%x_1 : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index):
    %2 = loop.load %x[i0] : !buffer.buffer<[4], f32>
    %3 = math.log %2 : f32
    loop.yield %3 : f32
  }
  func.return %x, %x_1 : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>
}
