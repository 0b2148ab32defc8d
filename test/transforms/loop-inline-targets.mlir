// RUN: fx-opt %s --device h100 -p convert-aten-to-loop,loop-inline | filecheck %s --check-prefix=H100
// RUN: fx-opt %s --device h200 -p convert-aten-to-loop,loop-inline | filecheck %s --check-prefix=H200

// Inlined into a concatenation, a producer's arithmetic runs on every lane of
// the concatenation, masked off or not: here 36 ops on three times its
// elements, 72 wasted per element. loop-inline weighs that against the
// arithmetic the target runs while its DRAM moves a store and a load of the
// element (cost.ops_per_byte, from coil.target): 89 ops for f32 on an H100,
// 62 on an H200 (the same SMs, 1.4x the bandwidth). The H100 computes the
// branch in the concatenation; the H200 stores it and loads it.
// H100-LABEL: func.func @cat_of_costly
// H100-NOT:   loop.pointwise [8]
// H100:       loop.pointwise [24]
// H100-COUNT-36: math.sin
// H200-LABEL: func.func @cat_of_costly
// H200:       %[[P:.*]] = loop.pointwise [8]
// H200-COUNT-36: math.sin
// H200:       loop.pointwise [24]
// H200-NOT:   math.sin
// H200:       loop.load %[[P]]

func.func @cat_of_costly(%x: !aten.tensor<[8], f32, device "cuda:0">, %y: !aten.tensor<[8], f32, device "cuda:0">, %z: !aten.tensor<[8], f32, device "cuda:0">) -> !aten.tensor<[24], f32, device "cuda:0"> {
  %s0 = aten.sin.default(%x) : !aten.tensor<[8], f32, device "cuda:0">
  %s1 = aten.sin.default(%s0) : !aten.tensor<[8], f32, device "cuda:0">
  %s2 = aten.sin.default(%s1) : !aten.tensor<[8], f32, device "cuda:0">
  %s3 = aten.sin.default(%s2) : !aten.tensor<[8], f32, device "cuda:0">
  %s4 = aten.sin.default(%s3) : !aten.tensor<[8], f32, device "cuda:0">
  %s5 = aten.sin.default(%s4) : !aten.tensor<[8], f32, device "cuda:0">
  %s6 = aten.sin.default(%s5) : !aten.tensor<[8], f32, device "cuda:0">
  %s7 = aten.sin.default(%s6) : !aten.tensor<[8], f32, device "cuda:0">
  %s8 = aten.sin.default(%s7) : !aten.tensor<[8], f32, device "cuda:0">
  %s9 = aten.sin.default(%s8) : !aten.tensor<[8], f32, device "cuda:0">
  %s10 = aten.sin.default(%s9) : !aten.tensor<[8], f32, device "cuda:0">
  %s11 = aten.sin.default(%s10) : !aten.tensor<[8], f32, device "cuda:0">
  %s12 = aten.sin.default(%s11) : !aten.tensor<[8], f32, device "cuda:0">
  %s13 = aten.sin.default(%s12) : !aten.tensor<[8], f32, device "cuda:0">
  %s14 = aten.sin.default(%s13) : !aten.tensor<[8], f32, device "cuda:0">
  %s15 = aten.sin.default(%s14) : !aten.tensor<[8], f32, device "cuda:0">
  %s16 = aten.sin.default(%s15) : !aten.tensor<[8], f32, device "cuda:0">
  %s17 = aten.sin.default(%s16) : !aten.tensor<[8], f32, device "cuda:0">
  %s18 = aten.sin.default(%s17) : !aten.tensor<[8], f32, device "cuda:0">
  %s19 = aten.sin.default(%s18) : !aten.tensor<[8], f32, device "cuda:0">
  %s20 = aten.sin.default(%s19) : !aten.tensor<[8], f32, device "cuda:0">
  %s21 = aten.sin.default(%s20) : !aten.tensor<[8], f32, device "cuda:0">
  %s22 = aten.sin.default(%s21) : !aten.tensor<[8], f32, device "cuda:0">
  %s23 = aten.sin.default(%s22) : !aten.tensor<[8], f32, device "cuda:0">
  %s24 = aten.sin.default(%s23) : !aten.tensor<[8], f32, device "cuda:0">
  %s25 = aten.sin.default(%s24) : !aten.tensor<[8], f32, device "cuda:0">
  %s26 = aten.sin.default(%s25) : !aten.tensor<[8], f32, device "cuda:0">
  %s27 = aten.sin.default(%s26) : !aten.tensor<[8], f32, device "cuda:0">
  %s28 = aten.sin.default(%s27) : !aten.tensor<[8], f32, device "cuda:0">
  %s29 = aten.sin.default(%s28) : !aten.tensor<[8], f32, device "cuda:0">
  %s30 = aten.sin.default(%s29) : !aten.tensor<[8], f32, device "cuda:0">
  %s31 = aten.sin.default(%s30) : !aten.tensor<[8], f32, device "cuda:0">
  %s32 = aten.sin.default(%s31) : !aten.tensor<[8], f32, device "cuda:0">
  %s33 = aten.sin.default(%s32) : !aten.tensor<[8], f32, device "cuda:0">
  %s34 = aten.sin.default(%s33) : !aten.tensor<[8], f32, device "cuda:0">
  %s35 = aten.sin.default(%s34) : !aten.tensor<[8], f32, device "cuda:0">
  %cat = aten.cat.default([%s35, %y, %z], dim = 0) : !aten.tensor<[24], f32, device "cuda:0">
  func.return %cat : !aten.tensor<[24], f32, device "cuda:0">
}
