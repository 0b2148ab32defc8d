// RUN: fx-opt %s -p convert-loop-to-tt --print-debuginfo | filecheck %s
// RUN: fx-opt %s -p convert-loop-to-tt,convert-buffer-to-host -t triton | filecheck %s --check-prefix=TRITON
// RUN: fx-opt %s -p convert-loop-to-tt,convert-buffer-to-host -t python | filecheck %s --check-prefix=PY

// Provenance: a kernel records the distinct user lines of its nest's ops in
// source order (coil.source_lines, paths as recorded) and the aten ops they
// came from in program order (coil.aten_ops) and its static cost (coil.cost:
// bytes read once per distinct input, bytes written, loads, ops); the launch
// keeps the nest's location. -t triton prints them above the kernel
// (basenames), -t python above the launch and the extern call.

// CHECK-LABEL: tt.func public @coil_y_0
// CHECK-SAME:    coil.source_lines = ["/src/model.py:12", "/src/model.py:13", "/src/other.py:3"]
// CHECK-SAME:    coil.aten_ops = ["aten.exp", "aten.mul"]
// CHECK-SAME:    coil.cost = "reads 2.0 KB, writes 2.0 KB, 1 loads, 2 ops, 4 body ops"
// CHECK:       func.func @provenance
// CHECK:         host.launch @coil_y_0 {{.*}} loc("aten.mul"("/src/model.py":13:0))

// TRITON:      # fused from: model.py:12, model.py:13, other.py:3
// TRITON-NEXT: # Original ATen: [aten.exp, aten.mul]
// TRITON-NEXT: # cost: reads 2.0 KB, writes 2.0 KB, 1 loads, 2 ops, 4 body ops
// TRITON-NEXT: # plan: pointwise 1-D [XBLOCK 512], 4 warps: {{.*}} us {{.*}}-bound, 1 programs
// TRITON-NEXT: @triton.jit
// TRITON-NEXT: def coil_y_0(

// PY-LABEL:   def call(args):
// PY:         # model.py:12, model.py:13, other.py:3
// PY-NEXT:    coil_y_0_launch.run(1, 1, 1, stream, 
// PY:         # model.py:20
// PY-NEXT:    mm = torch.mm(
!t = !buffer.buffer<[8, 64], f32>
!w = !buffer.buffer<[64, 64], f32>
func.func @provenance(%x: !t, %w: !w) -> !t {
  %y = buffer.alloc : !t
  loop.pointwise [8, 64] outs(%y : !t) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !t loc("aten.exp"("/src/model.py":12:0))
    %b = math.exp %a : f32 loc("aten.exp"("/src/model.py":12:0))
    %c = arith.mulf %b, %b : f32 loc("aten.mul"("/src/other.py":3:0))
    loop.yield %c : f32 loc("aten.mul"("/src/model.py":13:0))
  } loc("aten.mul"("/src/model.py":13:0))
  %mm = buffer.extern "aten.mm.default" (%y, %w) : (!t, !w) -> (!t) {
  ^bb0(%ya: !aten.tensor<[8, 64], f32>, %wa: !aten.tensor<[64, 64], f32>):
    %m = aten.mm.default(%ya, %wa) : !aten.tensor<[8, 64], f32> loc("/src/model.py":20:0)
    buffer.yield %m : !aten.tensor<[8, 64], f32>
  } loc("aten.mm"("/src/model.py":20:0))
  func.return %mm : !t
}
