// RUN: fx-opt %s -p convert-aten-to-loop --split-input-file | filecheck %s

// add with alpha on integers; a broadcast operand loads at the trailing index.

// CHECK-LABEL: func.func @add_alpha
// CHECK: %[[V0:[^ ,]*]] = loop.pointwise [4, s0] : !loop.tensor<[4, s0], i64> {
// CHECK-NEXT: ^bb0(%i0: index, %i1: index):
// CHECK-NEXT: %[[V1:[^ ,]*]] = loop.load %x[i0, i1] : !buffer.buffer<[4, s0], i64>
// CHECK-NEXT: %[[V2:[^ ,]*]] = loop.load %y[i1] : !buffer.buffer<[s0], i64>
// CHECK-NEXT: %[[V3:[^ ,]*]] = arith.constant 3 : i64
// CHECK-NEXT: %[[V4:[^ ,]*]] = arith.muli %[[V2]], %[[V3]] : i64
// CHECK-NEXT: %[[V5:[^ ,]*]] = arith.addi %[[V1]], %[[V4]] : i64
// CHECK-NEXT: loop.yield %[[V5]] : i64
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]] : !loop.tensor<[4, s0], i64>
func.func @add_alpha(%x: !aten.tensor<[4, s0], i64>, %y: !aten.tensor<[s0], i64>) -> !aten.tensor<[4, s0], i64> {
  %0 = aten.add.Tensor(%x, %y, alpha = 3) : !aten.tensor<[4, s0], i64>
  func.return %0 : !aten.tensor<[4, s0], i64>
}

// -----

// f16 computes in f32 (extend, compute, truncate); the wrapped scalar is a constant of the compute type.

// CHECK-LABEL: func.func @half_mul
// CHECK: %[[V0:[^ ,]*]] = loop.pointwise [8] : !loop.tensor<[8], f16> {
// CHECK-NEXT: ^bb0(%i0: index):
// CHECK-NEXT: %[[V1:[^ ,]*]] = loop.load %x[i0] : !buffer.buffer<[8], f16>
// CHECK-NEXT: %[[V2:[^ ,]*]] = arith.extf %[[V1]] : f16 to f32
// CHECK-NEXT: %[[V3:[^ ,]*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: %[[V4:[^ ,]*]] = arith.mulf %[[V2]], %[[V3]] : f32
// CHECK-NEXT: %[[V5:[^ ,]*]] = arith.truncf %[[V4]] : f32 to f16
// CHECK-NEXT: loop.yield %[[V5]] : f16
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]] : !loop.tensor<[8], f16>
func.func @half_mul(%x: !aten.tensor<[8], f16>) -> !aten.tensor<[8], f16> {
  %k = aten.constant 0.5 : f64
  %0 = aten.mul.Tensor(%x, %k) : !aten.tensor<[8], f16>
  func.return %0 : !aten.tensor<[8], f16>
}

// -----

// Integer floor division (Python semantics).

// CHECK-LABEL: func.func @floor_div
// CHECK: %[[V0:[^ ,]*]] = loop.pointwise [8] : !loop.tensor<[8], i32> {
// CHECK-NEXT: ^bb0(%i0: index):
// CHECK-NEXT: %[[V1:[^ ,]*]] = loop.load %x[i0] : !buffer.buffer<[8], i32>
// CHECK-NEXT: %[[V2:[^ ,]*]] = loop.load %y[i0] : !buffer.buffer<[8], i32>
// CHECK-NEXT: %[[V3:[^ ,]*]] = arith.floordivsi %[[V1]], %[[V2]] : i32
// CHECK-NEXT: loop.yield %[[V3]] : i32
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]] : !loop.tensor<[8], i32>
func.func @floor_div(%x: !aten.tensor<[8], i32>, %y: !aten.tensor<[8], i32>) -> !aten.tensor<[8], i32> {
  %0 = aten.div.Tensor_mode(%x, %y, rounding_mode = "floor") : !aten.tensor<[8], i32>
  func.return %0 : !aten.tensor<[8], i32>
}

// -----

// remainder takes the divisor's sign: fmod, then add the divisor where the signs differ.

// CHECK-LABEL: func.func @remainder
// CHECK: %[[V0:[^ ,]*]] = loop.pointwise [8] : !loop.tensor<[8], i64> {
// CHECK-NEXT: ^bb0(%i0: index):
// CHECK-NEXT: %[[V1:[^ ,]*]] = loop.load %x[i0] : !buffer.buffer<[8], i64>
// CHECK-NEXT: %[[V2:[^ ,]*]] = arith.constant -3 : i64
// CHECK-NEXT: %[[V3:[^ ,]*]] = arith.remsi %[[V1]], %[[V2]] : i64
// CHECK-NEXT: %[[V4:[^ ,]*]] = arith.constant 0 : i64
// CHECK-NEXT: %[[V5:[^ ,]*]] = arith.cmpi ne, %[[V3]], %[[V4]] : i64
// CHECK-NEXT: %[[V6:[^ ,]*]] = arith.cmpi slt, %[[V2]], %[[V4]] : i64
// CHECK-NEXT: %[[V7:[^ ,]*]] = arith.cmpi slt, %[[V3]], %[[V4]] : i64
// CHECK-NEXT: %[[V8:[^ ,]*]] = arith.xori %[[V6]], %[[V7]] : i1
// CHECK-NEXT: %[[V9:[^ ,]*]] = arith.andi %[[V5]], %[[V8]] : i1
// CHECK-NEXT: %[[V10:[^ ,]*]] = arith.addi %[[V3]], %[[V2]] : i64
// CHECK-NEXT: %[[V11:[^ ,]*]] = arith.select %[[V9]], %[[V10]], %[[V3]] : i64
// CHECK-NEXT: loop.yield %[[V11]] : i64
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]] : !loop.tensor<[8], i64>
func.func @remainder(%x: !aten.tensor<[8], i64>) -> !aten.tensor<[8], i64> {
  %0 = aten.remainder.Scalar(%x, other = -3) : !aten.tensor<[8], i64>
  func.return %0 : !aten.tensor<[8], i64>
}

// -----

// Comparisons compute in the promoted dtype (int vs float scalar: f32).

// CHECK-LABEL: func.func @compare
// CHECK: %[[V0:[^ ,]*]] = loop.pointwise [8] : !loop.tensor<[8], i1> {
// CHECK-NEXT: ^bb0(%i0: index):
// CHECK-NEXT: %[[V1:[^ ,]*]] = loop.load %x[i0] : !buffer.buffer<[8], i64>
// CHECK-NEXT: %[[V2:[^ ,]*]] = arith.sitofp %[[V1]] : i64 to f32
// CHECK-NEXT: %[[V3:[^ ,]*]] = arith.constant 2.500000e+00 : f32
// CHECK-NEXT: %[[V4:[^ ,]*]] = arith.cmpf olt, %[[V2]], %[[V3]] : f32
// CHECK-NEXT: loop.yield %[[V4]] : i1
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]] : !loop.tensor<[8], i1>
func.func @compare(%x: !aten.tensor<[8], i64>) -> !aten.tensor<[8], i1> {
  %0 = aten.lt.Scalar(%x, other = 2.5) : !aten.tensor<[8], i1>
  func.return %0 : !aten.tensor<[8], i1>
}

// -----

// clamp propagates NaN (maximumf/minimumf).

// CHECK-LABEL: func.func @clamp
// CHECK: %[[V0:[^ ,]*]] = loop.pointwise [8] : !loop.tensor<[8], f32> {
// CHECK-NEXT: ^bb0(%i0: index):
// CHECK-NEXT: %[[V1:[^ ,]*]] = loop.load %x[i0] : !buffer.buffer<[8], f32>
// CHECK-NEXT: %[[V2:[^ ,]*]] = arith.constant -1.000000e+00 : f32
// CHECK-NEXT: %[[V3:[^ ,]*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[V4:[^ ,]*]] = arith.maximumf %[[V1]], %[[V2]] : f32
// CHECK-NEXT: %[[V5:[^ ,]*]] = arith.minimumf %[[V4]], %[[V3]] : f32
// CHECK-NEXT: loop.yield %[[V5]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]] : !loop.tensor<[8], f32>
func.func @clamp(%x: !aten.tensor<[8], f32>) -> !aten.tensor<[8], f32> {
  %0 = aten.clamp.default(%x, min = -1.0, max = 1.0) : !aten.tensor<[8], f32>
  func.return %0 : !aten.tensor<[8], f32>
}

// -----

// where: the 0-d operand broadcasts (empty index).

// CHECK-LABEL: func.func @where
// CHECK: %[[V0:[^ ,]*]] = loop.pointwise [4, 8] : !loop.tensor<[4, 8], f32> {
// CHECK-NEXT: ^bb0(%i0: index, %i1: index):
// CHECK-NEXT: %[[V1:[^ ,]*]] = loop.load %c[i0, i1] : !buffer.buffer<[4, 8], i1>
// CHECK-NEXT: %[[V2:[^ ,]*]] = loop.load %x[i0, i1] : !buffer.buffer<[4, 8], f32>
// CHECK-NEXT: %[[V3:[^ ,]*]] = loop.load %y[] : !buffer.buffer<[], f32>
// CHECK-NEXT: %[[V4:[^ ,]*]] = arith.select %[[V1]], %[[V2]], %[[V3]] : f32
// CHECK-NEXT: loop.yield %[[V4]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]] : !loop.tensor<[4, 8], f32>
func.func @where(%c: !aten.tensor<[4, 8], i1>, %x: !aten.tensor<[4, 8], f32>, %y: !aten.tensor<[], f32>) -> !aten.tensor<[4, 8], f32> {
  %0 = aten.where.self(%c, %x, %y) : !aten.tensor<[4, 8], f32>
  func.return %0 : !aten.tensor<[4, 8], f32>
}

// -----

// pow with exponent 2 is a multiplication.

// CHECK-LABEL: func.func @pow2
// CHECK: %[[V0:[^ ,]*]] = loop.pointwise [8] : !loop.tensor<[8], f32> {
// CHECK-NEXT: ^bb0(%i0: index):
// CHECK-NEXT: %[[V1:[^ ,]*]] = loop.load %x[i0] : !buffer.buffer<[8], f32>
// CHECK-NEXT: %[[V2:[^ ,]*]] = arith.mulf %[[V1]], %[[V1]] : f32
// CHECK-NEXT: loop.yield %[[V2]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]] : !loop.tensor<[8], f32>
func.func @pow2(%x: !aten.tensor<[8], f32>) -> !aten.tensor<[8], f32> {
  %0 = aten.pow.Tensor_Scalar(%x, exponent = 2) : !aten.tensor<[8], f32>
  func.return %0 : !aten.tensor<[8], f32>
}

// -----

// sigmoid = 1 / (1 + exp(-x)).

// CHECK-LABEL: func.func @sigmoid
// CHECK: %[[V0:[^ ,]*]] = loop.pointwise [8] : !loop.tensor<[8], f32> {
// CHECK-NEXT: ^bb0(%i0: index):
// CHECK-NEXT: %[[V1:[^ ,]*]] = loop.load %x[i0] : !buffer.buffer<[8], f32>
// CHECK-NEXT: %[[V2:[^ ,]*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[V3:[^ ,]*]] = arith.negf %[[V1]] : f32
// CHECK-NEXT: %[[V4:[^ ,]*]] = math.exp %[[V3]] : f32
// CHECK-NEXT: %[[V5:[^ ,]*]] = arith.addf %[[V2]], %[[V4]] : f32
// CHECK-NEXT: %[[V6:[^ ,]*]] = arith.divf %[[V2]], %[[V5]] : f32
// CHECK-NEXT: loop.yield %[[V6]] : f32
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]] : !loop.tensor<[8], f32>
func.func @sigmoid(%x: !aten.tensor<[8], f32>) -> !aten.tensor<[8], f32> {
  %0 = aten.sigmoid.default(%x) : !aten.tensor<[8], f32>
  func.return %0 : !aten.tensor<[8], f32>
}

// -----

// _to_copy with a dtype converts as .to() does (float -> int truncates).

// CHECK-LABEL: func.func @cast
// CHECK: %[[V0:[^ ,]*]] = loop.pointwise [8] : !loop.tensor<[8], i32> {
// CHECK-NEXT: ^bb0(%i0: index):
// CHECK-NEXT: %[[V1:[^ ,]*]] = loop.load %x[i0] : !buffer.buffer<[8], f32>
// CHECK-NEXT: %[[V2:[^ ,]*]] = arith.fptosi %[[V1]] : f32 to i32
// CHECK-NEXT: loop.yield %[[V2]] : i32
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]] : !loop.tensor<[8], i32>
func.func @cast(%x: !aten.tensor<[8], f32>) -> !aten.tensor<[8], i32> {
  %0 = aten._to_copy.default(%x, dtype = i32) : !aten.tensor<[8], i32>
  func.return %0 : !aten.tensor<[8], i32>
}

// -----

// Unsupported dtypes fall back to ATen.

// CHECK-LABEL: func.func @uint8_add
// CHECK: %[[V0:[^ ,]*]] = buffer.extern "aten.add.Tensor" (%x) : (!buffer.buffer<[8], ui8>) -> (!loop.tensor<[8], ui8>) {
// CHECK-NEXT: ^bb0(%x_1: !aten.tensor<[8], ui8>):
// CHECK-NEXT: %[[V1:[^ ,]*]] = aten.constant 1 : i64
// CHECK-NEXT: %[[V2:[^ ,]*]] = aten.add.Tensor(%x_1, %[[V1]]) : !aten.tensor<[8], ui8>
// CHECK-NEXT: buffer.yield %[[V2]] : !aten.tensor<[8], ui8>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]] : !loop.tensor<[8], ui8>
func.func @uint8_add(%x: !aten.tensor<[8], ui8>) -> !aten.tensor<[8], ui8> {
  %k = aten.constant 1 : i64
  %0 = aten.add.Tensor(%x, %k) : !aten.tensor<[8], ui8>
  func.return %0 : !aten.tensor<[8], ui8>
}

// -----

// float64 fmod has no exact loop form here: ATen.

// CHECK-LABEL: func.func @fmod_f64
// CHECK: %[[V0:[^ ,]*]] = buffer.extern "aten.fmod.Scalar" (%x) : (!buffer.buffer<[8], f64>) -> (!loop.tensor<[8], f64>) {
// CHECK-NEXT: ^bb0(%x_1: !aten.tensor<[8], f64>):
// CHECK-NEXT: %[[V1:[^ ,]*]] = aten.fmod.Scalar(%x_1, other = 0.7) : !aten.tensor<[8], f64>
// CHECK-NEXT: buffer.yield %[[V1]] : !aten.tensor<[8], f64>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[V0]] : !loop.tensor<[8], f64>
func.func @fmod_f64(%x: !aten.tensor<[8], f64>) -> !aten.tensor<[8], f64> {
  %0 = aten.fmod.Scalar(%x, other = 0.7) : !aten.tensor<[8], f64>
  func.return %0 : !aten.tensor<[8], f64>
}

// -----

// An operand size that is neither 1 nor provably the result's ((s0 + 1) // 3
// against s0: a slice of x) is one or the other at run time, as the trace
// guarded: its index is i * min(1, size - 1), element 0 where it is 1.
// CHECK-LABEL: func.func @symbolic_broadcast
// CHECK:       loop.load %x[i0, i1]
// CHECK-NEXT:  loop.load %y[i0, i1*min(1, (s0 + 1) floordiv 3 - 1)]
func.func @symbolic_broadcast(%x: !aten.tensor<[3, s0], f32>, %y: !aten.tensor<[3, (s0 + 1) floordiv 3], f32>) -> !aten.tensor<[3, s0], f32> {
  %m = aten.mul.Tensor(%x, %y) : !aten.tensor<[3, s0], f32>
  func.return %m : !aten.tensor<[3, s0], f32>
}

// -----

// prims.fma (what Dynamo traces addcmul_(value=) and add_(alpha=tensor) into: a
// compiled optimizer step) is math.fma in the compute dtype: bf16 operands and
// a broadcast 0-d f32 one (a tensor learning rate) computed in f32, rounded once.

// CHECK-LABEL: func.func @fma
// CHECK: %[[R:[^ ,]*]] = loop.pointwise [8] : !loop.tensor<[8], bf16> {
// CHECK-NEXT: ^bb0(%i0: index):
// CHECK-NEXT: %[[A:[^ ,]*]] = loop.load %a[i0] : !buffer.buffer<[8], bf16>
// CHECK-NEXT: %[[A32:[^ ,]*]] = arith.extf %[[A]] : bf16 to f32
// CHECK-NEXT: %[[B:[^ ,]*]] = loop.load %lr[] : !buffer.buffer<[], f32>
// CHECK-NEXT: %[[C:[^ ,]*]] = loop.load %c[i0] : !buffer.buffer<[8], bf16>
// CHECK-NEXT: %[[C32:[^ ,]*]] = arith.extf %[[C]] : bf16 to f32
// CHECK-NEXT: %[[F:[^ ,]*]] = math.fma %[[A32]], %[[B]], %[[C32]] : f32
// CHECK-NEXT: %[[T:[^ ,]*]] = arith.truncf %[[F]] : f32 to bf16
// CHECK-NEXT: loop.yield %[[T]] : bf16
func.func @fma(%a: !aten.tensor<[8], bf16>, %lr: !aten.tensor<[], f32>, %c: !aten.tensor<[8], bf16>) -> !aten.tensor<[8], bf16> {
  %0 = prims.fma.default(%a, %lr, %c) : !aten.tensor<[8], bf16>
  func.return %0 : !aten.tensor<[8], bf16>
}
