// RUN: fx-opt %s -p convert-aten-to-loop,loop-inline --split-input-file | filecheck %s

// Gathers (torch's decompositions of F.interpolate, as AOTAutograd traces
// them) computed inside the nests that read them, as Inductor computes an
// upsample inside the cat or the pointwise op after it.

// A bilinear upsample is four gathers and three lerps: the top row's lerp is
// read by the bottom-minus-top difference and by the final lerp, two nests
// until the final lerp absorbs the difference; the next round of decisions
// sees one reader at one index and inlines it. The whole upsample is then
// read once, by the cat: one nest, nothing stored, the gathers' index math
// computed once (the clones are merged).
// CHECK-LABEL: func.func @bilinear_into_cat
// CHECK-NEXT: %cat = loop.pointwise [1, 4, 4, 4]
// CHECK: loop.load %arg0[i0, i1, i2, i3]
// CHECK-COUNT-4: loop.load %arg1[i0, i1 - 2, t0, t1]
// CHECK-NOT: loop.load %arg1
// CHECK-NOT: loop.pointwise
// CHECK: func.return %cat
func.func @bilinear_into_cat(%arg0: !aten.tensor<[1, 2, 4, 4], f32>, %arg1: !aten.tensor<[1, 2, 2, 2], f32>) -> !aten.tensor<[1, 4, 4, 4], f32> {
  %arange = aten.arange.start_step(start = 0, end = 4, layout = strided, device = "cpu", pin_memory = false) : !aten.tensor<[4], i64>
  %_to_copy = aten._to_copy.default(%arange, dtype = f32) : !aten.tensor<[4], f32>
  %0 = aten.constant 0.5 : f64
  %add = aten.add.Tensor(%_to_copy, %0) : !aten.tensor<[4], f32>
  %mul = aten.mul.Tensor(%add, %0) : !aten.tensor<[4], f32>
  %sub = aten.sub.Tensor(%mul, %0) : !aten.tensor<[4], f32>
  %clamp = aten.clamp.default(%sub, min = 0.0) : !aten.tensor<[4], f32>
  %view = aten.view.default(%clamp, size = [4, 1]) : !aten.tensor<[4, 1], f32>
  %_to_copy_1 = aten._to_copy.default(%view, dtype = i64) : !aten.tensor<[4, 1], i64>
  %1 = aten.constant 1 : i64
  %add_1 = aten.add.Tensor(%_to_copy_1, %1) : !aten.tensor<[4, 1], i64>
  %clamp_1 = aten.clamp.default(%add_1, max = 1) : !aten.tensor<[4, 1], i64>
  %_to_copy_2 = aten._to_copy.default(%clamp, dtype = i64) : !aten.tensor<[4], i64>
  %add_2 = aten.add.Tensor(%_to_copy_2, %1) : !aten.tensor<[4], i64>
  %clamp_2 = aten.clamp.default(%add_2, max = 1) : !aten.tensor<[4], i64>
  %index = aten.index.Tensor(%arg1, [none, none, %_to_copy_1, %_to_copy_2]) : !aten.tensor<[1, 2, 4, 4], f32>
  %index_1 = aten.index.Tensor(%arg1, [none, none, %_to_copy_1, %clamp_2]) : !aten.tensor<[1, 2, 4, 4], f32>
  %index_2 = aten.index.Tensor(%arg1, [none, none, %clamp_1, %_to_copy_2]) : !aten.tensor<[1, 2, 4, 4], f32>
  %index_3 = aten.index.Tensor(%arg1, [none, none, %clamp_1, %clamp_2]) : !aten.tensor<[1, 2, 4, 4], f32>
  %sub_1 = aten.sub.Tensor(%clamp, %_to_copy_2) : !aten.tensor<[4], f32>
  %clamp_3 = aten.clamp.default(%sub_1, min = 0.0, max = 1.0) : !aten.tensor<[4], f32>
  %sub_2 = aten.sub.Tensor(%index_1, %index) : !aten.tensor<[1, 2, 4, 4], f32>
  %mul_1 = aten.mul.Tensor(%sub_2, %clamp_3) : !aten.tensor<[1, 2, 4, 4], f32>
  %add_3 = aten.add.Tensor(%index, %mul_1) : !aten.tensor<[1, 2, 4, 4], f32>
  %sub_3 = aten.sub.Tensor(%index_3, %index_2) : !aten.tensor<[1, 2, 4, 4], f32>
  %mul_2 = aten.mul.Tensor(%sub_3, %clamp_3) : !aten.tensor<[1, 2, 4, 4], f32>
  %add_4 = aten.add.Tensor(%index_2, %mul_2) : !aten.tensor<[1, 2, 4, 4], f32>
  %sub_4 = aten.sub.Tensor(%view, %_to_copy_1) : !aten.tensor<[4, 1], f32>
  %clamp_4 = aten.clamp.default(%sub_4, min = 0.0, max = 1.0) : !aten.tensor<[4, 1], f32>
  %sub_5 = aten.sub.Tensor(%add_4, %add_3) : !aten.tensor<[1, 2, 4, 4], f32>
  %mul_3 = aten.mul.Tensor(%sub_5, %clamp_4) : !aten.tensor<[1, 2, 4, 4], f32>
  %add_5 = aten.add.Tensor(%add_3, %mul_3) : !aten.tensor<[1, 2, 4, 4], f32>
  %cat = aten.cat.default([%arg0, %add_5], dim = 1) : !aten.tensor<[1, 4, 4, 4], f32>
  func.return %cat : !aten.tensor<[1, 4, 4, 4], f32>
}

// -----

// The same upsample read by two nests: recomputing it in both would repeat
// its ~45 ops (over max-cost): it is computed once and stored.
// CHECK-LABEL: func.func @bilinear_two_readers
// CHECK-NEXT: %[[U:.*]] = loop.pointwise [1, 2, 4, 4]
// CHECK-COUNT-4: loop.load %arg1[i0, i1, t0, t1]
// CHECK: loop.pointwise [1, 2, 4, 4]
// CHECK: loop.load %[[U]][i0, i1, i2, i3]
// CHECK: loop.pointwise [1, 2, 4, 4]
// CHECK: loop.load %[[U]][i0, i1, i2, i3]
func.func @bilinear_two_readers(%arg0: !aten.tensor<[1, 2, 4, 4], f32>, %arg1: !aten.tensor<[1, 2, 2, 2], f32>) -> (!aten.tensor<[1, 2, 4, 4], f32>, !aten.tensor<[1, 2, 4, 4], f32>) {
  %arange = aten.arange.start_step(start = 0, end = 4, layout = strided, device = "cpu", pin_memory = false) : !aten.tensor<[4], i64>
  %_to_copy = aten._to_copy.default(%arange, dtype = f32) : !aten.tensor<[4], f32>
  %0 = aten.constant 0.5 : f64
  %add = aten.add.Tensor(%_to_copy, %0) : !aten.tensor<[4], f32>
  %mul = aten.mul.Tensor(%add, %0) : !aten.tensor<[4], f32>
  %sub = aten.sub.Tensor(%mul, %0) : !aten.tensor<[4], f32>
  %clamp = aten.clamp.default(%sub, min = 0.0) : !aten.tensor<[4], f32>
  %view = aten.view.default(%clamp, size = [4, 1]) : !aten.tensor<[4, 1], f32>
  %_to_copy_1 = aten._to_copy.default(%view, dtype = i64) : !aten.tensor<[4, 1], i64>
  %1 = aten.constant 1 : i64
  %add_1 = aten.add.Tensor(%_to_copy_1, %1) : !aten.tensor<[4, 1], i64>
  %clamp_1 = aten.clamp.default(%add_1, max = 1) : !aten.tensor<[4, 1], i64>
  %_to_copy_2 = aten._to_copy.default(%clamp, dtype = i64) : !aten.tensor<[4], i64>
  %add_2 = aten.add.Tensor(%_to_copy_2, %1) : !aten.tensor<[4], i64>
  %clamp_2 = aten.clamp.default(%add_2, max = 1) : !aten.tensor<[4], i64>
  %index = aten.index.Tensor(%arg1, [none, none, %_to_copy_1, %_to_copy_2]) : !aten.tensor<[1, 2, 4, 4], f32>
  %index_1 = aten.index.Tensor(%arg1, [none, none, %_to_copy_1, %clamp_2]) : !aten.tensor<[1, 2, 4, 4], f32>
  %index_2 = aten.index.Tensor(%arg1, [none, none, %clamp_1, %_to_copy_2]) : !aten.tensor<[1, 2, 4, 4], f32>
  %index_3 = aten.index.Tensor(%arg1, [none, none, %clamp_1, %clamp_2]) : !aten.tensor<[1, 2, 4, 4], f32>
  %sub_1 = aten.sub.Tensor(%clamp, %_to_copy_2) : !aten.tensor<[4], f32>
  %clamp_3 = aten.clamp.default(%sub_1, min = 0.0, max = 1.0) : !aten.tensor<[4], f32>
  %sub_2 = aten.sub.Tensor(%index_1, %index) : !aten.tensor<[1, 2, 4, 4], f32>
  %mul_1 = aten.mul.Tensor(%sub_2, %clamp_3) : !aten.tensor<[1, 2, 4, 4], f32>
  %add_3 = aten.add.Tensor(%index, %mul_1) : !aten.tensor<[1, 2, 4, 4], f32>
  %sub_3 = aten.sub.Tensor(%index_3, %index_2) : !aten.tensor<[1, 2, 4, 4], f32>
  %mul_2 = aten.mul.Tensor(%sub_3, %clamp_3) : !aten.tensor<[1, 2, 4, 4], f32>
  %add_4 = aten.add.Tensor(%index_2, %mul_2) : !aten.tensor<[1, 2, 4, 4], f32>
  %sub_4 = aten.sub.Tensor(%view, %_to_copy_1) : !aten.tensor<[4, 1], f32>
  %clamp_4 = aten.clamp.default(%sub_4, min = 0.0, max = 1.0) : !aten.tensor<[4, 1], f32>
  %sub_5 = aten.sub.Tensor(%add_4, %add_3) : !aten.tensor<[1, 2, 4, 4], f32>
  %mul_3 = aten.mul.Tensor(%sub_5, %clamp_4) : !aten.tensor<[1, 2, 4, 4], f32>
  %add_5 = aten.add.Tensor(%add_3, %mul_3) : !aten.tensor<[1, 2, 4, 4], f32>
  %add_6 = aten.add.Tensor(%add_5, %arg0) : !aten.tensor<[1, 2, 4, 4], f32>
  %mul_4 = aten.mul.Tensor(%add_5, %arg0) : !aten.tensor<[1, 2, 4, 4], f32>
  func.return %add_6, %mul_4 : !aten.tensor<[1, 2, 4, 4], f32>, !aten.tensor<[1, 2, 4, 4], f32>
}

// -----

// A nearest upsample is one cheap gather: recomputed in each of its readers.
// CHECK-LABEL: func.func @nearest_two_readers
// CHECK-NEXT: %add = loop.pointwise [1, 2, 4, 4]
// CHECK: loop.load %arg1[i0, i1, t0, t1]
// CHECK: %mul = loop.pointwise [1, 2, 4, 4]
// CHECK: loop.load %arg1[i0, i1, t0, t1]
// CHECK: func.return %add, %mul
func.func @nearest_two_readers(%arg0: !aten.tensor<[1, 2, 4, 4], f32>, %arg1: !aten.tensor<[1, 2, 2, 2], f32>) -> (!aten.tensor<[1, 2, 4, 4], f32>, !aten.tensor<[1, 2, 4, 4], f32>) {
  %arange = aten.arange.start_step(start = 0, end = 4, dtype = f32, layout = strided, device = "cpu", pin_memory = false) : !aten.tensor<[4], f32>
  %0 = aten.constant 0.0 : f64
  %add = aten.add.Tensor(%arange, %0) : !aten.tensor<[4], f32>
  %1 = aten.constant 0.5 : f64
  %mul = aten.mul.Tensor(%add, %1) : !aten.tensor<[4], f32>
  %_to_copy = aten._to_copy.default(%mul, dtype = i64) : !aten.tensor<[4], i64>
  %unsqueeze = aten.unsqueeze.default(%_to_copy, dim = -1) : !aten.tensor<[4, 1], i64>
  %index = aten.index.Tensor(%arg1, [none, none, %unsqueeze, %_to_copy]) : !aten.tensor<[1, 2, 4, 4], f32>
  %add_1 = aten.add.Tensor(%index, %arg0) : !aten.tensor<[1, 2, 4, 4], f32>
  %mul_1 = aten.mul.Tensor(%index, %arg0) : !aten.tensor<[1, 2, 4, 4], f32>
  func.return %add_1, %mul_1 : !aten.tensor<[1, 2, 4, 4], f32>, !aten.tensor<[1, 2, 4, 4], f32>
}
