// RUN: fx-opt %s -t triton | filecheck %s

// Divisibility and contiguity hints print as Triton's tl.multiple_of and
// tl.max_contiguous, one value per dimension; a tl.dot of 16-bit blocks
// prints no input precision (Triton reads it for f32 operands only), one of
// f32 blocks does.

// CHECK-LABEL: def coil_hints_0(in_ptr0):
// CHECK:      m = tl.multiple_of(rm, [16, 1])
// CHECK-NEXT: c = tl.max_contiguous(m, [16, 1])
// CHECK:      d = tl.dot(a, b, acc=acc)
// CHECK:      e = tl.dot(f, g, acc=acc, input_precision="ieee")

builtin.module {
  tt.func public @coil_hints_0(%in_ptr0: !tt.ptr<f32>) {
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %rm = tt.expand_dims %r {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %m = tt.multiple_of %rm {values = array<i32: 16, 1>} : tensor<128x1xi32>
    %c = tt.max_contiguous %m {values = array<i32: 16, 1>} : tensor<128x1xi32>
    %a = arith.constant dense<1.0> : tensor<16x16xbf16>
    %b = arith.constant dense<2.0> : tensor<16x16xbf16>
    %acc = arith.constant dense<0.0> : tensor<16x16xf32>
    %d = tt.dot %a, %b, %acc : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
    %f = arith.constant dense<1.0> : tensor<16x16xf32>
    %g = arith.constant dense<2.0> : tensor<16x16xf32>
    %e = tt.dot %f, %g, %acc, inputPrecision = "ieee" : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
    tt.return
  }
}
