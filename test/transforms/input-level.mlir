// Every pass after convert-aten-to-loop, given a function still at the aten
// level, stops with one sentence naming the pass, the function and the op,
// and exit code 1 (transforms/input_level.py); it used to print its input back
// (convert-buffer-to-host: a host.func of aten ops) and exit 0.
// RUN: not fx-opt %s -p bufferize 2>&1 | filecheck %s -DPASS=bufferize
// RUN: not fx-opt %s -p memory-plan 2>&1 | filecheck %s -DPASS=memory-plan
// RUN: not fx-opt %s -p convert-loop-to-tt 2>&1 | filecheck %s -DPASS=convert-loop-to-tt
// RUN: not fx-opt %s -p convert-loop-to-cpp 2>&1 | filecheck %s -DPASS=convert-loop-to-cpp
// RUN: not fx-opt %s -p convert-decode-attention-to-tt 2>&1 | filecheck %s -DPASS=convert-decode-attention-to-tt
// RUN: not fx-opt %s -p convert-buffer-to-host 2>&1 | filecheck %s -DPASS=convert-buffer-to-host
// RUN: not fx-opt %S/Inputs/aten-signature-only.mlir -p bufferize 2>&1 | filecheck %s --check-prefix=SIG
// The whole pipeline, and a pass after convert-aten-to-loop, take it.
// RUN: fx-opt %s -p convert-aten-to-loop,bufferize,memory-plan | filecheck %s --check-prefix=LOWERED

// CHECK: {{^}}fx-opt: error: [[PASS]]: @f is still at the aten level (it holds aten.relu.default); run convert-aten-to-loop first (-p "$(coil pipeline)" runs every stage){{$}}
// CHECK-NOT: Traceback
// SIG: fx-opt: error: bufferize: @g is still at the aten level (its signature has !aten.tensor types); run convert-aten-to-loop first
// LOWERED-LABEL: func.func @f
// LOWERED: buffer.alloc
// LOWERED: loop.reduction sum

func.func @f(%x: !aten.tensor<[4, 8], f32>) -> !aten.tensor<[4], f32> {
  %a = aten.relu.default(%x) : !aten.tensor<[4, 8], f32>
  %s = aten.sum.dim_IntList(%a, dim = [1]) : !aten.tensor<[4], f32>
  func.return %s : !aten.tensor<[4], f32>
}
