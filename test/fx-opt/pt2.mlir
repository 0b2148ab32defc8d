// RUN: %served_python %S/Inputs/make_pt2.py %t.pt2
// RUN: fx-opt %t.pt2 | filecheck %s
// RUN: fx-opt %t.pt2 -p "%aten_pipeline" | filecheck %s --check-prefix=PIPE
// RUN: fx-opt %t.pt2 -p "%buffer_pipeline" | filecheck %s --check-prefix=DEFAULT
// RUN: fx-opt %t.pt2 -p "%default_pipeline" | filecheck %s --check-prefix=HOST
// RUN: coil import %t.pt2 | filecheck %s
// --dynamic traces a .py file; for an archive it is an error, not ignored.
// RUN: not coil import %t.pt2 --dynamic 2>&1 | filecheck %s --check-prefix=DYNAMIC
// DYNAMIC: {{^}}coil import: error: {{.*}}.pt2: --dynamic traces a .py model file; a .pt2 archive has the shapes it was exported with (torch.export's dynamic_shapes){{$}}
// Loading prints nothing on stderr: no torch FutureWarning (lit sets
// PYTHONWARNINGS=ignore; this line turns warnings back on).
// RUN: env PYTHONWARNINGS=default fx-opt %t.pt2 -o %t.out.mlir 2>&1 | filecheck %s --check-prefix=QUIET --allow-empty
// QUIET-NOT: {{.}}

// A torch.export archive is decomposed and imported; parameters are named
// arguments, as the exported program lifts them.

// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%p_fc_weight: !aten.tensor<[4, 8], f32>, %p_fc_bias: !aten.tensor<[4], f32>, %x: !aten.tensor<[2, 8], f32>)
// CHECK: aten.addmm.default(%p_fc_bias, %x, %{{.*}})
// CHECK: aten._softmax.default

// PIPE-LABEL: func.func @forward
// PIPE-NOT: _softmax
// PIPE: aten.amax.default
// PIPE: aten.exp.default

// DEFAULT-LABEL: func.func @forward
// DEFAULT: %[[OUT:.*]] = buffer.alloc : !buffer.buffer<[2, 4], f32>
// DEFAULT: buffer.extern "aten.addmm.out" ({{.*}}, %[[OUT]])
// DEFAULT: loop.fused
// DEFAULT: loop.reduction max

// HOST: tt.func public @coil_
// HOST-LABEL: host.func @forward
// HOST: host.extern "aten.addmm.out"
// HOST: host.launch @coil_
// HOST: host.return
