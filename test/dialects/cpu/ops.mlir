// RUN: fx-opt %s | filecheck %s
// RUN: COIL_ROUNDTRIP | filecheck %s
// RUN: COIL_GENERIC_ROUNDTRIP | fx-opt | filecheck %s

// A C++ kernel: buffers and size symbols as arguments, the nest it runs, cpu.return.

// CHECK-LABEL: cpu.func @coil_cpp_neg_0(%out: !buffer.buffer<[s0], f32>, %x: !buffer.buffer<[s0], f32>, %s0: index {coil.symbol = #coil.expr<s0>}) {
// CHECK-NEXT:    loop.pointwise [s0] outs(%out : !buffer.buffer<[s0], f32>) {
// CHECK:           arith.negf
// CHECK:         cpu.return
// CHECK-NEXT:  }
cpu.func @coil_cpp_neg_0(%out: !buffer.buffer<[s0], f32>, %x: !buffer.buffer<[s0], f32>, %s0: index {coil.symbol = #coil.expr<s0>}) {
  loop.pointwise [s0] outs(%out : !buffer.buffer<[s0], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[s0], f32>
    %1 = arith.negf %0 : f32
    loop.yield %1 : f32
  }
  cpu.return
}
