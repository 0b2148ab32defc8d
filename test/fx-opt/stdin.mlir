// `-` reads standard input, as for mlir-opt and xdsl-opt: a generic-form print
// piped back into fx-opt gives the custom form.
// RUN: fx-opt --print-op-generic %s | fx-opt - | filecheck %s
// RUN: fx-opt %s -p canonicalize | fx-opt - -p "%loop_pipeline" | filecheck %s --check-prefix=LOOP
// A parse error on stdin is located in "stdin".
// RUN: not fx-opt - < %S/Inputs/verify-error.mlir 2>&1 | filecheck %s --check-prefix=ERR

// CHECK-LABEL: func.func @f
// CHECK: aten.relu.default(%x) : !aten.tensor<[4], f32>
// LOOP: loop.pointwise [4]
// ERR: stdin:4:{{[0-9]+}}

func.func @f(%x: !aten.tensor<[4], f32>) -> !aten.tensor<[4], f32> {
  %y = aten.relu.default(%x) : !aten.tensor<[4], f32>
  func.return %y : !aten.tensor<[4], f32>
}
