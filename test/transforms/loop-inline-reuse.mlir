// RUN: fx-opt %s -p aten-decompose,canonicalize,cse,dce,convert-aten-to-loop,loop-inline --split-input-file | filecheck %s

// A producer whose elements its readers would compute more than once is
// inlined only when cheap (max-cost, max-reads), however few loads read it:
// a pooling window reads each element up to kh*kw times through one load, a
// broadcast or an upsample's taps likewise (Inductor's realize_hint: "elements
// are reused"). A concatenation's masked, shifted loads each read their
// branch once, so a concatenation read once still absorbs its branches.

// The concatenation of two batch norms + ReLU (ten tensors read) is stored;
// the 3x3 window loads it, and computes no batch norm nine times.
// CHECK-LABEL: func.func @pool_of_cat
// CHECK: %cat = loop.pointwise [1, 4, 4, 4]
// CHECK: loop.load %x[i0, i1, i2, i3]
// CHECK: %max_pool2d_with_indices = loop.reduction max [1, 4, 4, 4] [3, 3]
// CHECK-NOT: math.sqrt
// CHECK: loop.load %cat[i0, i1, i2 + r0 - 1, i3 + r1 - 1]
// CHECK-NOT: math.sqrt
// CHECK: func.return %max_pool2d_with_indices
func.func @pool_of_cat(%x: !aten.tensor<[1, 2, 4, 4], f32>, %y: !aten.tensor<[1, 2, 4, 4], f32>, %m: !aten.tensor<[2], f32>, %v: !aten.tensor<[2], f32>, %w: !aten.tensor<[2], f32>, %b: !aten.tensor<[2], f32>) -> !aten.tensor<[1, 4, 4, 4], f32> attributes {coil.output_tree = "0"} {
  %empty = aten.empty.memory_format(size = [0], dtype = ui8, layout = strided, device = "cpu") : !aten.tensor<[0], ui8>
  %native_batch_norm, %native_batch_norm_1, %native_batch_norm_2 = aten.native_batch_norm.default(%x, %w, %b, %m, %v, training = false, momentum = 0.1, eps = 0.001) : (!aten.tensor<[1, 2, 4, 4], f32>, !aten.tensor<[0], f32>, !aten.tensor<[0], f32>)
  %relu = aten.relu.default(%native_batch_norm) : !aten.tensor<[1, 2, 4, 4], f32>
  %empty_1 = aten.empty.memory_format(size = [0], dtype = ui8, layout = strided, device = "cpu") : !aten.tensor<[0], ui8>
  %native_batch_norm_3, %native_batch_norm_4, %native_batch_norm_5 = aten.native_batch_norm.default(%y, %w, %b, %m, %v, training = false, momentum = 0.1, eps = 0.001) : (!aten.tensor<[1, 2, 4, 4], f32>, !aten.tensor<[0], f32>, !aten.tensor<[0], f32>)
  %relu_1 = aten.relu.default(%native_batch_norm_3) : !aten.tensor<[1, 2, 4, 4], f32>
  %cat = aten.cat.default([%relu, %relu_1], dim = 1) : !aten.tensor<[1, 4, 4, 4], f32>
  %max_pool2d_with_indices, %max_pool2d_with_indices_1 = aten.max_pool2d_with_indices.default(%cat, kernel_size = [3, 3], stride = [1, 1], padding = [1, 1]) : (!aten.tensor<[1, 4, 4, 4], f32>, !aten.tensor<[1, 4, 4, 4], i64>)
  func.return %max_pool2d_with_indices : !aten.tensor<[1, 4, 4, 4], f32>
}

// -----

// A ReLU is cheap: recomputed in each window tap.
// CHECK-LABEL: func.func @pool_of_relu
// CHECK-NOT: loop.pointwise
// CHECK: loop.reduction max [1, 2, 4, 4] [3, 3]
// CHECK: loop.load %x[i0, i1, i2 + r0 - 1, i3 + r1 - 1]
func.func @pool_of_relu(%x: !aten.tensor<[1, 2, 4, 4], f32>, %y: !aten.tensor<[1, 2, 4, 4], f32>, %m: !aten.tensor<[2], f32>, %v: !aten.tensor<[2], f32>, %w: !aten.tensor<[2], f32>, %b: !aten.tensor<[2], f32>) -> !aten.tensor<[1, 2, 4, 4], f32> attributes {coil.output_tree = "0"} {
  %relu = aten.relu.default(%x) : !aten.tensor<[1, 2, 4, 4], f32>
  %max_pool2d_with_indices, %max_pool2d_with_indices_1 = aten.max_pool2d_with_indices.default(%relu, kernel_size = [3, 3], stride = [1, 1], padding = [1, 1]) : (!aten.tensor<[1, 2, 4, 4], f32>, !aten.tensor<[1, 2, 4, 4], i64>)
  func.return %max_pool2d_with_indices : !aten.tensor<[1, 2, 4, 4], f32>
}

// -----

// Read once (each branch at its own channels): one nest.
// CHECK-LABEL: func.func @cat_read_once
// CHECK: %mul = loop.pointwise [1, 4, 4, 4]
// CHECK: loop.load %x[i0, i1, i2, i3]
// CHECK: loop.load %y[i0, i1 - 2, i2, i3]
// CHECK-NOT: loop.pointwise
// CHECK: func.return %mul
func.func @cat_read_once(%x: !aten.tensor<[1, 2, 4, 4], f32>, %y: !aten.tensor<[1, 2, 4, 4], f32>, %m: !aten.tensor<[2], f32>, %v: !aten.tensor<[2], f32>, %w: !aten.tensor<[2], f32>, %b: !aten.tensor<[2], f32>) -> !aten.tensor<[1, 4, 4, 4], f32> attributes {coil.output_tree = "0"} {
  %empty = aten.empty.memory_format(size = [0], dtype = ui8, layout = strided, device = "cpu") : !aten.tensor<[0], ui8>
  %native_batch_norm, %native_batch_norm_1, %native_batch_norm_2 = aten.native_batch_norm.default(%x, %w, %b, %m, %v, training = false, momentum = 0.1, eps = 0.001) : (!aten.tensor<[1, 2, 4, 4], f32>, !aten.tensor<[0], f32>, !aten.tensor<[0], f32>)
  %relu = aten.relu.default(%native_batch_norm) : !aten.tensor<[1, 2, 4, 4], f32>
  %empty_1 = aten.empty.memory_format(size = [0], dtype = ui8, layout = strided, device = "cpu") : !aten.tensor<[0], ui8>
  %native_batch_norm_3, %native_batch_norm_4, %native_batch_norm_5 = aten.native_batch_norm.default(%y, %w, %b, %m, %v, training = false, momentum = 0.1, eps = 0.001) : (!aten.tensor<[1, 2, 4, 4], f32>, !aten.tensor<[0], f32>, !aten.tensor<[0], f32>)
  %relu_1 = aten.relu.default(%native_batch_norm_3) : !aten.tensor<[1, 2, 4, 4], f32>
  %cat = aten.cat.default([%relu, %relu_1], dim = 1) : !aten.tensor<[1, 4, 4, 4], f32>
  %0 = aten.constant 2 : i64
  %mul = aten.mul.Tensor(%cat, %0) : !aten.tensor<[1, 4, 4, 4], f32>
  func.return %mul : !aten.tensor<[1, 4, 4, 4], f32>
}

