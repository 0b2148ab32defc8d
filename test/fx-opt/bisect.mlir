// coil bisect runs a model through a pipeline pass by pass on the reference
// executors and names the first pass whose output differs from eager: here a
// deliberately broken pass (loaded with --pass-plugin) inserted after loop-fuse.
// It writes the IR the pass was given and a line that replays it; fx-opt loads
// the same plugin. After convert-loop-to-tt the IR runs on no executor: a
// difference first seen after convert-buffer-to-host blames every pass between.
// RUN: not coil bisect %S/Inputs/bisect-model.py --pass-plugin %S/Inputs/break-addf.py -o %t -p "canonicalize,aten-decompose,convert-aten-to-loop,loop-inline,loop-fuse,test-break-addf,bufferize,memory-plan,convert-loop-to-tt,convert-buffer-to-host" | filecheck %s
// RUN: fx-opt %t/graph0-before.mlir -p test-break-addf --pass-plugin %S/Inputs/break-addf.py | filecheck %s --check-prefix=REPLAY
// RUN: coil bisect %S/Inputs/bisect-model.py -o %t.ok | filecheck %s --check-prefix=OK
// RUN: not coil bisect %S/Inputs/bisect-model.py --pass-plugin %S/Inputs/break-addf.py -o %t.late -p "%buffer_pipeline,convert-loop-to-tt,test-break-addf,convert-buffer-to-host" | filecheck %s --check-prefix=LATE

// CHECK:      graph 0:
// CHECK-NEXT:   import {{ +}}ok
// CHECK:        loop-fuse {{ +}}ok
// CHECK-NEXT:   test-break-addf {{ +}}differs: output 0: values differ
// CHECK-NEXT:   first stage whose output differs from eager: test-break-addf
// CHECK-NEXT:   the IR it was given: {{.*}}graph0-before.mlir
// CHECK-NEXT:   replay: fx-opt {{.*}}graph0-before.mlir -p 'test-break-addf' --pass-plugin {{.*}}break-addf.py
// CHECK-NEXT:   what it made of it: {{.*}}graph0-after.mlir
// REPLAY: arith.subf
// REPLAY-NOT: arith.addf
// OK:      convert-loop-to-tt {{ +}}skipped: does not run on the reference executors
// OK-NEXT: host-combine-launches {{ +}}skipped: does not run on the reference executors
// OK-NEXT: convert-buffer-to-host {{ +}}ok
// OK-NEXT: every stage matches eager
// LATE: memory-plan {{ +}}ok
// LATE: first stage whose output differs from eager: convert-loop-to-tt or test-break-addf or convert-buffer-to-host
