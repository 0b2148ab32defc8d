// RUN: fx-opt %s -p convert-aten-to-loop --print-debuginfo | filecheck %s
// RUN: fx-opt %s -p convert-aten-to-loop --print-debuginfo | fx-opt --print-debuginfo | filecheck %s

// Provenance: every op built for an aten op (the nest, its body ops, an extern)
// carries the aten op's name (overload dropped) around its user line; the aten
// op cloned into an extern keeps its own location. Locations parse back.

// CHECK-LABEL: func.func @provenance
// CHECK:       buffer.extern "aten.mm.default"
// CHECK:         aten.mm.default({{.*}} loc("/src/model.py":11:0)
// CHECK:         buffer.yield {{.*}} loc("aten.mm"("/src/model.py":11:0))
// CHECK:       } loc("aten.mm"("/src/model.py":11:0))
// CHECK:       loop.pointwise [8, 64]
// CHECK:         loop.load {{.*}} loc("aten.exp"("/src/model.py":12:0))
// CHECK:         math.exp {{.*}} loc("aten.exp"("/src/model.py":12:0))
// CHECK:         loop.yield {{.*}} loc("aten.exp"("/src/model.py":12:0))
// CHECK:       } loc("aten.exp"("/src/model.py":12:0))
// CHECK:       loop.reduction sum
// CHECK:       } loc("aten.sum"("/src/model.py":13:0))
// CHECK:       loop.view {{.*}} loc("aten.view"("/src/model.py":14:0))
// An op with no user line still names its aten op.
// CHECK:       loop.pointwise [8]
// CHECK:         arith.divf {{.*}} loc("aten.div")
// CHECK:       } loc("aten.div")
func.func @provenance(%x: !aten.tensor<[8, 64], f32>, %w: !aten.tensor<[64, 64], f32>) -> !aten.tensor<[8], f32> {
  %mm = aten.mm.default(%x, %w) : !aten.tensor<[8, 64], f32> loc("/src/model.py":11:0)
  %e = aten.exp.default(%mm) : !aten.tensor<[8, 64], f32> loc("/src/model.py":12:0)
  %s = aten.sum.dim_IntList(%e, dim = [1], keepdim = true) : !aten.tensor<[8, 1], f32> loc("/src/model.py":13:0)
  %v = aten.view.default(%s, size = [8]) : !aten.tensor<[8], f32> loc("/src/model.py":14:0)
  %d = aten.div.Tensor(%v, %v) : !aten.tensor<[8], f32>
  func.return %d : !aten.tensor<[8], f32>
}
