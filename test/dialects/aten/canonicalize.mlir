// RUN: fx-opt %s -p canonicalize --split-input-file | filecheck %s

// CHECK-LABEL: func.func @view_chain
func.func @view_chain(%x: !aten.tensor<[4, 6], f32>) -> !aten.tensor<[3, 8], f32> {
  // CHECK-NEXT: %[[V:.*]] = aten.view.default(%x, size = [3, 8]) : !aten.tensor<[3, 8], f32>
  // CHECK-NEXT: func.return %[[V]]
  %a = aten.view.default(%x, size = [24]) : !aten.tensor<[24], f32>
  %b = aten._unsafe_view.default(%a, size = [2, 12]) : !aten.tensor<[2, 12], f32>
  %c = aten.view.default(%b, size = [3, 8]) : !aten.tensor<[3, 8], f32>
  func.return %c : !aten.tensor<[3, 8], f32>
}

// -----

// A view to the source's own type is the source.
// CHECK-LABEL: func.func @identity_view
func.func @identity_view(%x: !aten.tensor<[s0, 8], f32>) -> !aten.tensor<[s0, 8], f32> {
  // CHECK-NEXT: %[[R:.*]] = aten.relu.default(%x)
  // CHECK-NEXT: func.return %[[R]]
  %v = aten.view.default(%x, size = [s0, 8]) : !aten.tensor<[s0, 8], f32>
  %r = aten.relu.default(%v) : !aten.tensor<[s0, 8], f32>
  func.return %r : !aten.tensor<[s0, 8], f32>
}

// -----

// view(view(x)) of a non-contiguous x is not folded (the direct view may not
// exist); reshape chains are.
// CHECK-LABEL: func.func @noncontiguous_views
func.func @noncontiguous_views(%x: !aten.tensor<[4, 6], f32, strides [1, 4]>) -> (!aten.tensor<[4, 6], f32>, !aten.tensor<[2, 12], f32>) {
  // CHECK-NEXT: %a = aten.view.default(%x, size = [4, 6, 1])
  // CHECK-NEXT: %b = aten.view.default(%a, size = [4, 6])
  // CHECK-NEXT: %d = aten.reshape.default(%x, shape = [2, 12])
  %a = aten.view.default(%x, size = [4, 6, 1]) : !aten.tensor<[4, 6, 1], f32, strides [1, 4, 1]>
  %b = aten.view.default(%a, size = [4, 6]) : !aten.tensor<[4, 6], f32>
  %c = aten.reshape.default(%x, shape = [24]) : !aten.tensor<[24], f32>
  %d = aten.reshape.default(%c, shape = [2, 12]) : !aten.tensor<[2, 12], f32>
  func.return %b, %d : !aten.tensor<[4, 6], f32>, !aten.tensor<[2, 12], f32>
}

// -----

// CHECK-LABEL: func.func @noop_conversions
func.func @noop_conversions(%x: !aten.tensor<[4], f32>) -> !aten.tensor<[4], f32> {
  // CHECK-NEXT: %[[R:.*]] = aten.relu.default(%x)
  // CHECK-NEXT: func.return %[[R]]
  %a = aten._to_copy.default(%x, dtype = f32) : !aten.tensor<[4], f32>
  %b = aten.clone.default(%a) : !aten.tensor<[4], f32>
  %c = aten.alias.default(%b) : !aten.tensor<[4], f32>
  %d = prims.convert_element_type.default(%c, dtype = f32) : !aten.tensor<[4], f32>
  %r = aten.relu.default(%d) : !aten.tensor<[4], f32>
  func.return %r : !aten.tensor<[4], f32>
}

// -----

// Negative cases: a real conversion, a clone to another layout, a clone
// returned directly (the output would alias the input), and the same in a
// function that writes in place.
// CHECK-LABEL: func.func @conversions_kept
func.func @conversions_kept(%x: !aten.tensor<[4, 2], f32>) -> (!aten.tensor<[4, 2], f16>, !aten.tensor<[4, 2], f32>, !aten.tensor<[4, 2], f32>) {
  // CHECK-NEXT: aten._to_copy.default(%x, dtype = f16)
  // CHECK-NEXT: aten.clone.default(%x, memory_format = channels_last)
  // CHECK-NEXT: aten.clone.default(%x)
  %h = aten._to_copy.default(%x, dtype = f16) : !aten.tensor<[4, 2], f16>
  %cl = aten.clone.default(%x, memory_format = channels_last) : !aten.tensor<[4, 2], f32>
  %c = aten.clone.default(%x) : !aten.tensor<[4, 2], f32>
  func.return %h, %c, %cl : !aten.tensor<[4, 2], f16>, !aten.tensor<[4, 2], f32>, !aten.tensor<[4, 2], f32>
}

// -----

// Returning r and clone(r): two outputs must not share storage. A clone of a
// view of the input, returned: the output must not alias the input.
// CHECK-LABEL: func.func @fresh_outputs_stay_fresh
func.func @fresh_outputs_stay_fresh(%x: !aten.tensor<[4, 2], f32>) -> (!aten.tensor<[4, 2], f32>, !aten.tensor<[4, 2], f32>, !aten.tensor<[8], f32>) {
  // CHECK: %[[R:.*]] = aten.relu.default(%x)
  // CHECK-NEXT: aten.clone.default(%[[R]])
  // CHECK: aten.view.default(%x, size = [8])
  // CHECK-NEXT: aten.clone.default
  %r = aten.relu.default(%x) : !aten.tensor<[4, 2], f32>
  %c = aten.clone.default(%r) : !aten.tensor<[4, 2], f32>
  %v = aten.view.default(%x, size = [8]) : !aten.tensor<[8], f32>
  %cv = aten.clone.default(%v) : !aten.tensor<[8], f32>
  func.return %r, %c, %cv : !aten.tensor<[4, 2], f32>, !aten.tensor<[4, 2], f32>, !aten.tensor<[8], f32>
}

// -----

// A function that writes in place: a clone read after the write keeps its
// snapshot, so nothing is forwarded.
// CHECK-LABEL: func.func @mutation_blocks_forwarding
func.func @mutation_blocks_forwarding(%x: !aten.tensor<[4], f32>, %y: !aten.tensor<[4], f32>) -> !aten.tensor<[4], f32> {
  // CHECK: %[[C:.*]] = aten.clone.default(%x)
  // CHECK: aten.copy_.default(%x, %y)
  // CHECK: aten.relu.default(%[[C]])
  %c = aten.clone.default(%x) : !aten.tensor<[4], f32>
  %w = aten.copy_.default(%x, %y) : !aten.tensor<[4], f32>
  %r = aten.relu.default(%c) : !aten.tensor<[4], f32>
  func.return %r : !aten.tensor<[4], f32>
}

// -----

// CHECK-LABEL: func.func @identities
func.func @identities(%x: !aten.tensor<[4], f32>, %i: !aten.tensor<[4], i64>) -> (!aten.tensor<[4], f32>, !aten.tensor<[4], i64>, !aten.tensor<[4], f32>) {
  // CHECK-NEXT: %[[ONE:.*]] = aten.constant 1.0 : f64
  // CHECK-NEXT: %[[R:.*]] = aten.relu.default(%x)
  // CHECK-NEXT: %[[N:.*]] = aten.neg.default(%i)
  // CHECK-NEXT: %[[F:.*]] = aten.mul.Tensor(%i, %[[ONE]]) : !aten.tensor<[4], f32>
  // CHECK-NEXT: func.return %[[R]], %[[N]], %[[F]]
  %one = aten.constant 1.0 : f64
  %zero = aten.constant 0 : i64
  %nzero = aten.constant -0.0 : f64
  %a = aten.mul.Tensor(%x, %one) : !aten.tensor<[4], f32>
  %b = aten.add.Tensor(%nzero, %a) : !aten.tensor<[4], f32>
  %c = aten.mul.Scalar(%b, other = 1) : !aten.tensor<[4], f32>
  %e = aten.sub.Tensor(%c, %zero) : !aten.tensor<[4], f32>
  %r = aten.relu.default(%e) : !aten.tensor<[4], f32>
  // Integer x + 0 is x.
  %j = aten.add.Tensor(%i, %zero) : !aten.tensor<[4], i64>
  %k = aten.add.Scalar(%j, other = 0) : !aten.tensor<[4], i64>
  %n = aten.neg.default(%k) : !aten.tensor<[4], i64>
  // An int tensor times 1.0 is a float tensor: not an identity.
  %f = aten.mul.Tensor(%i, %one) : !aten.tensor<[4], f32>
  func.return %r, %n, %f : !aten.tensor<[4], f32>, !aten.tensor<[4], i64>, !aten.tensor<[4], f32>
}

// -----

// A float x + 0 is not x: -0.0 + 0 is +0.0. x - (-0.0) likewise.
// CHECK-LABEL: func.func @float_add_zero_kept
func.func @float_add_zero_kept(%x: !aten.tensor<[4], f32>) -> !aten.tensor<[4], f32> {
  // CHECK: aten.add.Tensor(%x, %{{.*}})
  // CHECK: aten.add.Scalar(%{{.*}}, other = 0)
  // CHECK: aten.sub.Tensor(%{{.*}}, %{{.*}})
  %zero = aten.constant 0 : i64
  %nzero = aten.constant -0.0 : f64
  %a = aten.add.Tensor(%x, %zero) : !aten.tensor<[4], f32>
  %b = aten.add.Scalar(%a, other = 0) : !aten.tensor<[4], f32>
  %c = aten.sub.Tensor(%b, %nzero) : !aten.tensor<[4], f32>
  %r = aten.relu.default(%c) : !aten.tensor<[4], f32>
  func.return %r : !aten.tensor<[4], f32>
}

// -----

// x + 0 with alpha != 1 is still x; alpha = 2 on a non-zero operand is not.
// CHECK-LABEL: func.func @add_alpha
func.func @add_alpha(%x: !aten.tensor<[4], f32>, %y: !aten.tensor<[4], f32>) -> !aten.tensor<[4], f32> {
  // CHECK-NEXT: aten.add.Tensor(%x, %y, alpha = 2)
  %a = aten.add.Tensor(%x, %y, alpha = 2) : !aten.tensor<[4], f32>
  func.return %a : !aten.tensor<[4], f32>
}

// -----

// CHECK-LABEL: func.func @scalar_tensor_operands
func.func @scalar_tensor_operands(%x: !aten.tensor<[4], f32>, %i: !aten.tensor<[4], i32>, %h: !aten.tensor<[4], bf16>) -> (!aten.tensor<[4], f32>, !aten.tensor<[4], f32>, !aten.tensor<[4], f32>, !aten.tensor<[4], bf16>, !aten.tensor<[4], i1>) {
  // CHECK: %[[C:.*]] = aten.constant 2.0 : f64
  // CHECK-NEXT: %[[M:.*]] = aten.mul.Tensor(%x, %[[C]]) : !aten.tensor<[4], f32>
  %s = aten.scalar_tensor.default(s = 2, dtype = f32) : !aten.tensor<[], f32>
  %m = aten.mul.Tensor(%x, %s) : !aten.tensor<[4], f32>
  // Different dtype (i32 tensor, f32 0-d): promotion could differ, kept.
  // CHECK: %[[S2:.*]] = aten.scalar_tensor.default(s = 2, dtype = f32)
  // CHECK-NEXT: aten.add.Tensor(%i, %[[S2]])
  %s2 = aten.scalar_tensor.default(s = 2, dtype = f32) : !aten.tensor<[], f32>
  %a = aten.add.Tensor(%i, %s2) : !aten.tensor<[4], f32>
  // maximum needs a tensor for both operands: kept.
  // CHECK: %[[F:.*]] = aten.full.default(size = [], fill_value = 3.0, dtype = f32)
  // CHECK-NEXT: aten.maximum.default(%[[F]], %x)
  %f = aten.full.default(size = [], fill_value = 3.0, dtype = f32) : !aten.tensor<[], f32>
  %mx = aten.maximum.default(%f, %x) : !aten.tensor<[4], f32>
  // The scalar is the value the bf16 0-d tensor held, rounded to bf16.
  // CHECK: %[[B:.*]] = aten.constant 0.00099945068359375 : f64
  // CHECK-NEXT: aten.div.Tensor(%h, %[[B]]) : !aten.tensor<[4], bf16>
  %t = aten.full.default(size = [], fill_value = 0.001, dtype = bf16) : !aten.tensor<[], bf16>
  %d = aten.div.Tensor(%h, %t) : !aten.tensor<[4], bf16>
  // lt.Tensor needs a tensor: kept.
  // CHECK: aten.lt.Tensor(%x, %{{.*}}) : !aten.tensor<[4], i1>
  %l = aten.lt.Tensor(%x, %f) : !aten.tensor<[4], i1>
  func.return %m, %a, %mx, %d, %l : !aten.tensor<[4], f32>, !aten.tensor<[4], f32>, !aten.tensor<[4], f32>, !aten.tensor<[4], bf16>, !aten.tensor<[4], i1>
}

// -----

// A symbolic size in an f64 (or i64) 0-d tensor is exact as a scalar: the
// divisor folds; a size in an f32 tensor may round, kept.
// CHECK-LABEL: func.func @symbolic_scalar_tensor_operands
func.func @symbolic_scalar_tensor_operands(%n: index {coil.symbol = #coil.expr<s0>}, %x: !aten.tensor<[s0], f32>) -> (!aten.tensor<[], f64>, !aten.tensor<[s0], f32>) {
  // CHECK: %[[N:.*]] = aten.scalar_tensor.default(s = s0, dtype = f64)
  // CHECK: %[[C:.*]] = aten.constant 2*s0 : index
  // CHECK-NEXT: aten.div.Tensor(%[[N]], %[[C]]) : !aten.tensor<[], f64>
  %a = aten.scalar_tensor.default(s = s0, dtype = f64) : !aten.tensor<[], f64>
  %b = aten.scalar_tensor.default(s = 2*s0, dtype = f64) : !aten.tensor<[], f64>
  %q = aten.div.Tensor(%a, %b) : !aten.tensor<[], f64>
  // CHECK: %[[F:.*]] = aten.scalar_tensor.default(s = s0, dtype = f32)
  // CHECK-NEXT: aten.mul.Tensor(%x, %[[F]])
  %f = aten.scalar_tensor.default(s = s0, dtype = f32) : !aten.tensor<[], f32>
  %m = aten.mul.Tensor(%x, %f) : !aten.tensor<[s0], f32>
  func.return %q, %m : !aten.tensor<[], f64>, !aten.tensor<[s0], f32>
}

// -----

// A full reduction reduces a partial reduction of the same tensor the
// function makes anyway (the one with the fewest elements), reading it
// instead of x again: sum and mean in f32 (the partial moves before the
// mean, which came first), amax in any dtype.
// CHECK-LABEL: func.func @full_from_partial
// CHECK-NEXT: %[[COLS:.*]] = aten.sum.dim_IntList(%x, dim = [0]) : !aten.tensor<[64], f32>
// CHECK-NEXT: %[[S:.*]] = aten.sum.default(%[[COLS]]) : !aten.tensor<[], f32>
// CHECK-NEXT: %[[MEAN:.*]] = aten.div.Scalar(%[[S]], other = 16384) : !aten.tensor<[], f32>
// CHECK-NEXT: %[[ROWS:.*]] = aten.sum.dim_IntList(%x, dim = [-1], keepdim = true) : !aten.tensor<[256, 1], f32>
// CHECK-NEXT: %[[ALL:.*]] = aten.sum.default(%[[COLS]]) : !aten.tensor<[], f32>
// CHECK-NEXT: %[[RMAX:.*]] = aten.amax.default(%h, dim = [1]) : !aten.tensor<[256], bf16>
// CHECK-NEXT: %[[MAX:.*]] = aten.amax.default(%[[RMAX]]) : !aten.tensor<[], bf16>
// A bf16 partial sum is rounded: the full sum still reads h.
// CHECK-NEXT: aten.sum.dim_IntList(%h, dim = [0])
// CHECK-NEXT: aten.sum.default(%h) : !aten.tensor<[], bf16>
func.func @full_from_partial(%x: !aten.tensor<[256, 64], f32>, %h: !aten.tensor<[256, 64], bf16>) -> (!aten.tensor<[], f32>, !aten.tensor<[256, 1], f32>, !aten.tensor<[64], f32>, !aten.tensor<[], f32>, !aten.tensor<[256], bf16>, !aten.tensor<[], bf16>, !aten.tensor<[64], bf16>, !aten.tensor<[], bf16>) {
  %mean = aten.mean.default(%x) : !aten.tensor<[], f32>
  %rows = aten.sum.dim_IntList(%x, dim = [-1], keepdim = true) : !aten.tensor<[256, 1], f32>
  %cols = aten.sum.dim_IntList(%x, dim = [0]) : !aten.tensor<[64], f32>
  %all = aten.sum.default(%x) : !aten.tensor<[], f32>
  %rmax = aten.amax.default(%h, dim = [1]) : !aten.tensor<[256], bf16>
  %max = aten.amax.default(%h) : !aten.tensor<[], bf16>
  %hcols = aten.sum.dim_IntList(%h, dim = [0]) : !aten.tensor<[64], bf16>
  %hall = aten.sum.default(%h) : !aten.tensor<[], bf16>
  func.return %mean, %rows, %cols, %all, %rmax, %max, %hcols, %hall : !aten.tensor<[], f32>, !aten.tensor<[256, 1], f32>, !aten.tensor<[64], f32>, !aten.tensor<[], f32>, !aten.tensor<[256], bf16>, !aten.tensor<[], bf16>, !aten.tensor<[64], bf16>, !aten.tensor<[], bf16>
}
