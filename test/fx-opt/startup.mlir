// fx-opt must not import torch (seconds of start-up) for IR that does not need
// it: parsing, verifying and printing the aten dialect, and the aten and loop
// pipelines on affine index math, run without it.
// RUN: %python %S/Inputs/run_without_torch.py %s 2>&1 >/dev/null | filecheck %s --check-prefix=NOTORCH
// RUN: %python %S/Inputs/run_without_torch.py %s -p "%aten_pipeline" 2>&1 >/dev/null | filecheck %s --check-prefix=NOTORCH
// RUN: %python %S/Inputs/run_without_torch.py %s -p "%loop_pipeline" 2>&1 >/dev/null | filecheck %s --check-prefix=NOTORCH
// RUN: %python %S/Inputs/run_without_torch.py %s -p "%loop_pipeline" | filecheck %s --check-prefix=LOOP
// --help lists every pass's options, read from the sources without importing them.
// RUN: %python %S/Inputs/run_without_torch.py --help 2>&1 >/dev/null | filecheck %s --check-prefix=NOTORCH
// Loop- and buffer-level passes read an extern call's schema from the
// generated op classes, devices and element sizes from the types, not from
// torch (IR whose index expressions hold no floordiv/mod).
// RUN: %python %S/Inputs/run_without_torch.py %S/../transforms/memory-plan-collectives.mlir -p memory-plan --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=NOTORCH
// RUN: %python %S/Inputs/run_without_torch.py %S/../transforms/aten-channels-last.mlir -p "aten-channels-last{mode=on},convert-aten-to-loop,bufferize" --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=NOTORCH
// A pass that calls torch (a decomposition) or a floordiv in the text loads it.
// RUN: %python %S/Inputs/run_without_torch.py %S/Inputs/needs-torch.mlir -p aten-decompose 2>&1 >/dev/null | filecheck %s --check-prefix=TORCH

// NOTORCH: exit code 0, torch imported: False
// TORCH: exit code 0, torch imported: True

// LOOP-LABEL: func.func @f
// LOOP: loop.reduction sum [s0] [8]
// LOOP: arith.maximumf
// LOOP-NOT: aten.

func.func @f(%n: index {coil.symbol = #coil.expr<s0>}, %x: !aten.tensor<[s0, 8], f32>,
             %y: !aten.tensor<[8], f32>) -> !aten.tensor<[s0], f32> {
  %a = aten.clone.default(%x) : !aten.tensor<[s0, 8], f32>
  %b = aten.add.Tensor(%a, %y, alpha = 2) : !aten.tensor<[s0, 8], f32>
  %c = aten.relu.default(%b) : !aten.tensor<[s0, 8], f32>
  %d = aten._to_copy.default(%c, dtype = f64) : !aten.tensor<[s0, 8], f64>
  %e = aten.mul.Tensor(%d, %c) : !aten.tensor<[s0, 8], f64>
  %f = aten._to_copy.default(%e, dtype = f32, memory_format = preserve_format) : !aten.tensor<[s0, 8], f32>
  %s = aten.sum.dim_IntList(%f, dim = [1]) : !aten.tensor<[s0], f32>
  func.return %s : !aten.tensor<[s0], f32>
}
