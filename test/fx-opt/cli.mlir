// RUN: fx-opt --help | filecheck %s --check-prefix=HELP
// RUN: fx-opt --version | filecheck %s --check-prefix=VERSION
// RUN: fx-opt %s -p canonicalize,cse,dce --print-between-passes | filecheck %s --check-prefix=BETWEEN
// RUN: fx-opt %s -p "%default_pipeline" | filecheck %s --check-prefix=DEFAULT
// RUN: coil pipeline | filecheck %s --check-prefix=PIPELINE -DPIPE="%default_pipeline"
// RUN: coil --help | filecheck %s --check-prefix=COIL

// HELP: -p PASSES
// HELP: aten-decompose
// VERSION: fx-opt (coil {{[0-9.]+}}) on xDSL 0.74
// PIPELINE: {{^}}[[PIPE]]{{$}}
// COIL: {import,demo,pipeline}

func.func @f(%x: !aten.tensor<[4, 8], f32>) -> !aten.tensor<[4, 8], f32> {
  %a = aten.clone.default(%x) : !aten.tensor<[4, 8], f32>
  %b = aten._softmax.default(%a, dim = 1, half_to_float = false) : !aten.tensor<[4, 8], f32>
  %c = aten.relu.default(%b) : !aten.tensor<[4, 8], f32>
  %d = aten.relu.default(%b) : !aten.tensor<[4, 8], f32>
  %e = aten.add.Tensor(%c, %d) : !aten.tensor<[4, 8], f32>
  func.return %e : !aten.tensor<[4, 8], f32>
}

// BETWEEN: IR after canonicalize:
// BETWEEN-NOT: aten.clone
// BETWEEN: IR after cse:
// BETWEEN: %[[R:.*]] = aten.relu.default
// BETWEEN-NOT: aten.relu.default
// BETWEEN: aten.add.Tensor(%[[R]], %[[R]])

// DEFAULT-LABEL: func.func @f
// DEFAULT-NOT: aten.clone
// DEFAULT-NOT: aten._softmax
// DEFAULT: aten.amax.default(%x, dim = [1], keepdim = true)
// DEFAULT: %[[R:.*]] = aten.relu.default
// DEFAULT-NEXT: aten.add.Tensor(%[[R]], %[[R]])
