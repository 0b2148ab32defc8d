// coil reduce shrinks an input that fails an fx-opt command to the op that makes
// it fail: the helper function, the returned values and every other op are cut,
// and the sort's operand (computed by cut ops) became a function argument.
// RUN: coil reduce -q -o %t.mlir %S/../../examples/big.mlir fx-opt -p 'convert-aten-to-loop{fallback=error}'
// RUN: filecheck %s --input-file %t.mlir
// RUN: not fx-opt %t.mlir -p 'convert-aten-to-loop{fallback=error}' 2>&1 | filecheck %s --check-prefix=STILL
// Reduced again (printed, without -o), the reduced input stays as it is: a
// fixed point, reached in a few runs of the command rather than a second
// reduction of big.mlir.
// RUN: coil reduce -q %t.mlir fx-opt -p 'convert-aten-to-loop{fallback=error}' | filecheck %s
// RUN: not coil reduce %S/../../examples/big.mlir fx-opt -p canonicalize 2>&1 | filecheck %s --check-prefix=PASSES
// RUN: not coil reduce %S/../../examples/big.mlir 2>&1 | filecheck %s --check-prefix=NOCOMMAND

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @forward(%[[M:.*]]: !aten.tensor<[4, 8], f32>) {
// CHECK-NEXT:     %{{.*}}, %{{.*}} = aten.sort.default(%[[M]], dim = 1) : (!aten.tensor<[4, 8], f32>, !aten.tensor<[4, 8], i64>)
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
// STILL: no loop lowering for aten.sort.default
// PASSES: coil reduce: error: the command does not fail on {{.*}}big.mlir: nothing to reduce
// NOCOMMAND: coil reduce: error: give the command that fails
