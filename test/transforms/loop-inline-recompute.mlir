// RUN: fx-opt %s --device h200 -p convert-aten-to-loop,loop-inline --split-input-file | filecheck %s
// RUN: fx-opt %s --device h200 -p "convert-aten-to-loop,loop-inline{recompute-margin=0}" --split-input-file | filecheck %s --check-prefix=NEVER

// A cheap producer (24 ops, under max-cost) broadcast into a larger nest is
// recomputed for every element of the reader unless that costs more than
// recompute-margin (4) times storing it once and loading it back
// (_recomputing_costs_more): over 96 heads, 95 extra evaluations of its
// [512, 512] elements take ~18 us of an H200's issue rate against ~2.5 us for
// a launch, a 1 MB write and a 1 MB read, so it is stored and the softmax
// loads it (DeBERTa's relative-position tables, MPT's ALiBi rows: 1.18x and
// 1.14x on the device). Over 8 heads the recomputation is ~1.3 us: inlined.
// recompute-margin=0 turns the rule off.

// CHECK-LABEL: func.func @bias_96_heads
// CHECK:       %[[B:.*]] = loop.pointwise [512, 512]
// CHECK:       math.sin
// CHECK:       loop.reduction
// CHECK-NOT:   math.sin
// CHECK:       loop.load %[[B]]
// NEVER-LABEL: func.func @bias_96_heads
// NEVER-NOT:   loop.pointwise [512, 512]
// NEVER:       math.sin
func.func @bias_96_heads(%arg0: !aten.tensor<[512, 512], f32>, %arg1: !aten.tensor<[96, 512, 512], f32>) -> !aten.tensor<[96, 512, 512], f32> {
  %0 = aten.constant 1.5 : f64
  %mul = aten.mul.Tensor(%arg0, %0) : !aten.tensor<[512, 512], f32>
  %1 = aten.constant 0.25 : f64
  %add = aten.add.Tensor(%mul, %1) : !aten.tensor<[512, 512], f32>
  %sin = aten.sin.default(%add) : !aten.tensor<[512, 512], f32>
  %mul_1 = aten.mul.Tensor(%sin, %arg0) : !aten.tensor<[512, 512], f32>
  %2 = aten.constant 1.5 : f64
  %mul_2 = aten.mul.Tensor(%mul_1, %2) : !aten.tensor<[512, 512], f32>
  %3 = aten.constant 0.25 : f64
  %add_1 = aten.add.Tensor(%mul_2, %3) : !aten.tensor<[512, 512], f32>
  %sin_1 = aten.sin.default(%add_1) : !aten.tensor<[512, 512], f32>
  %mul_3 = aten.mul.Tensor(%sin_1, %arg0) : !aten.tensor<[512, 512], f32>
  %4 = aten.constant 1.5 : f64
  %mul_4 = aten.mul.Tensor(%mul_3, %4) : !aten.tensor<[512, 512], f32>
  %5 = aten.constant 0.25 : f64
  %add_2 = aten.add.Tensor(%mul_4, %5) : !aten.tensor<[512, 512], f32>
  %sin_2 = aten.sin.default(%add_2) : !aten.tensor<[512, 512], f32>
  %mul_5 = aten.mul.Tensor(%sin_2, %arg0) : !aten.tensor<[512, 512], f32>
  %6 = aten.constant 1.5 : f64
  %mul_6 = aten.mul.Tensor(%mul_5, %6) : !aten.tensor<[512, 512], f32>
  %7 = aten.constant 0.25 : f64
  %add_3 = aten.add.Tensor(%mul_6, %7) : !aten.tensor<[512, 512], f32>
  %sin_3 = aten.sin.default(%add_3) : !aten.tensor<[512, 512], f32>
  %mul_7 = aten.mul.Tensor(%sin_3, %arg0) : !aten.tensor<[512, 512], f32>
  %8 = aten.constant 1.5 : f64
  %mul_8 = aten.mul.Tensor(%mul_7, %8) : !aten.tensor<[512, 512], f32>
  %9 = aten.constant 0.25 : f64
  %add_4 = aten.add.Tensor(%mul_8, %9) : !aten.tensor<[512, 512], f32>
  %sin_4 = aten.sin.default(%add_4) : !aten.tensor<[512, 512], f32>
  %mul_9 = aten.mul.Tensor(%sin_4, %arg0) : !aten.tensor<[512, 512], f32>
  %10 = aten.constant 1.5 : f64
  %mul_10 = aten.mul.Tensor(%mul_9, %10) : !aten.tensor<[512, 512], f32>
  %11 = aten.constant 0.25 : f64
  %add_5 = aten.add.Tensor(%mul_10, %11) : !aten.tensor<[512, 512], f32>
  %sin_5 = aten.sin.default(%add_5) : !aten.tensor<[512, 512], f32>
  %mul_11 = aten.mul.Tensor(%sin_5, %arg0) : !aten.tensor<[512, 512], f32>
  %add_6 = aten.add.Tensor(%arg1, %mul_11) : !aten.tensor<[96, 512, 512], f32>
  %_softmax = aten._softmax.default(%add_6, dim = -1, half_to_float = false) : !aten.tensor<[96, 512, 512], f32>
  func.return %_softmax : !aten.tensor<[96, 512, 512], f32>
}

// -----

// CHECK-LABEL: func.func @bias_8_heads
// CHECK-NOT:   loop.pointwise [512, 512]
// CHECK:       math.sin
// NEVER-LABEL: func.func @bias_8_heads
// NEVER-NOT:   loop.pointwise [512, 512]
func.func @bias_8_heads(%arg0: !aten.tensor<[512, 512], f32>, %arg1: !aten.tensor<[8, 512, 512], f32>) -> !aten.tensor<[8, 512, 512], f32> {
  %0 = aten.constant 1.5 : f64
  %mul = aten.mul.Tensor(%arg0, %0) : !aten.tensor<[512, 512], f32>
  %1 = aten.constant 0.25 : f64
  %add = aten.add.Tensor(%mul, %1) : !aten.tensor<[512, 512], f32>
  %sin = aten.sin.default(%add) : !aten.tensor<[512, 512], f32>
  %mul_1 = aten.mul.Tensor(%sin, %arg0) : !aten.tensor<[512, 512], f32>
  %2 = aten.constant 1.5 : f64
  %mul_2 = aten.mul.Tensor(%mul_1, %2) : !aten.tensor<[512, 512], f32>
  %3 = aten.constant 0.25 : f64
  %add_1 = aten.add.Tensor(%mul_2, %3) : !aten.tensor<[512, 512], f32>
  %sin_1 = aten.sin.default(%add_1) : !aten.tensor<[512, 512], f32>
  %mul_3 = aten.mul.Tensor(%sin_1, %arg0) : !aten.tensor<[512, 512], f32>
  %4 = aten.constant 1.5 : f64
  %mul_4 = aten.mul.Tensor(%mul_3, %4) : !aten.tensor<[512, 512], f32>
  %5 = aten.constant 0.25 : f64
  %add_2 = aten.add.Tensor(%mul_4, %5) : !aten.tensor<[512, 512], f32>
  %sin_2 = aten.sin.default(%add_2) : !aten.tensor<[512, 512], f32>
  %mul_5 = aten.mul.Tensor(%sin_2, %arg0) : !aten.tensor<[512, 512], f32>
  %6 = aten.constant 1.5 : f64
  %mul_6 = aten.mul.Tensor(%mul_5, %6) : !aten.tensor<[512, 512], f32>
  %7 = aten.constant 0.25 : f64
  %add_3 = aten.add.Tensor(%mul_6, %7) : !aten.tensor<[512, 512], f32>
  %sin_3 = aten.sin.default(%add_3) : !aten.tensor<[512, 512], f32>
  %mul_7 = aten.mul.Tensor(%sin_3, %arg0) : !aten.tensor<[512, 512], f32>
  %8 = aten.constant 1.5 : f64
  %mul_8 = aten.mul.Tensor(%mul_7, %8) : !aten.tensor<[512, 512], f32>
  %9 = aten.constant 0.25 : f64
  %add_4 = aten.add.Tensor(%mul_8, %9) : !aten.tensor<[512, 512], f32>
  %sin_4 = aten.sin.default(%add_4) : !aten.tensor<[512, 512], f32>
  %mul_9 = aten.mul.Tensor(%sin_4, %arg0) : !aten.tensor<[512, 512], f32>
  %10 = aten.constant 1.5 : f64
  %mul_10 = aten.mul.Tensor(%mul_9, %10) : !aten.tensor<[512, 512], f32>
  %11 = aten.constant 0.25 : f64
  %add_5 = aten.add.Tensor(%mul_10, %11) : !aten.tensor<[512, 512], f32>
  %sin_5 = aten.sin.default(%add_5) : !aten.tensor<[512, 512], f32>
  %mul_11 = aten.mul.Tensor(%sin_5, %arg0) : !aten.tensor<[512, 512], f32>
  %add_6 = aten.add.Tensor(%arg1, %mul_11) : !aten.tensor<[8, 512, 512], f32>
  %_softmax = aten._softmax.default(%add_6, dim = -1, half_to_float = false) : !aten.tensor<[8, 512, 512], f32>
  func.return %_softmax : !aten.tensor<[8, 512, 512], f32>
}
