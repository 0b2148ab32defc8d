// fx-opt must not import torch (seconds of start-up) for IR that does not need
// it: parsing, verifying and printing the aten dialect, and the aten and loop
// pipelines on affine index math, run without it.
// Each command runs in a child forked after `coil.cli` was imported, as a
// fresh fx-opt starts (run_without_torch.py; one interpreter start for all).
// 1-3: this file printed, through the aten and the loop pipeline.
// 4: --help lists every pass's options, read from the sources without importing them.
// 5-6: Loop- and buffer-level passes read an extern call's schema from the
// generated op classes, devices and element sizes from the types, not from
// torch (IR whose index expressions hold no floordiv/mod).
// 7: A pass that calls torch (a decomposition) or a floordiv in the text loads it.
// RUN: %python %S/Inputs/run_without_torch.py %s \
// RUN:   --- %s -p "%aten_pipeline" \
// RUN:   --- %s -p "%loop_pipeline" -o %t.loop.mlir \
// RUN:   --- --help \
// RUN:   --- %S/../transforms/memory-plan-collectives.mlir -p memory-plan --split-input-file \
// RUN:   --- %S/../transforms/aten-channels-last.mlir -p "aten-channels-last{mode=on},convert-aten-to-loop,bufferize" --split-input-file \
// RUN:   --- %S/Inputs/needs-torch.mlir -p aten-decompose \
// RUN:   2>&1 >/dev/null | filecheck %s --check-prefix=IMPORTS
// RUN: filecheck %s --check-prefix=LOOP < %t.loop.mlir

// IMPORTS: command 1: exit code 0, torch imported: False
// IMPORTS: command 2: exit code 0, torch imported: False
// IMPORTS: command 3: exit code 0, torch imported: False
// IMPORTS: command 4: exit code 0, torch imported: False
// IMPORTS: command 5: exit code 0, torch imported: False
// IMPORTS: command 6: exit code 0, torch imported: False
// IMPORTS: command 7: exit code 0, torch imported: True

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
