// Input fx-opt cannot take: each is a located message (file:line:col, the line,
// a caret under the culprit) or one sentence naming the file, exit code 1, and
// never a Python traceback.
// RUN: not fx-opt %S/Inputs/unknown-op.mlir 2>&1 | filecheck %s --check-prefix=OP
// RUN: not fx-opt %S/Inputs/unknown-aten-op.mlir 2>&1 | filecheck %s --check-prefix=ATEN
// RUN: not fx-opt %S/Inputs/misspelled-aten-op.mlir 2>&1 | filecheck %s --check-prefix=MISSPELLED
// RUN: not fx-opt %S/Inputs/unknown-type.mlir 2>&1 | filecheck %s --check-prefix=TYPE
// RUN: not fx-opt %S/Inputs/return-type.mlir 2>&1 | filecheck %s --check-prefix=RETURN
// RUN: not fx-opt %S/Inputs/undefined-value.mlir 2>&1 | filecheck %s --check-prefix=UNDEF
// RUN: not fx-opt %S/Inputs/type-conflict.mlir 2>&1 | filecheck %s --check-prefix=CONFLICT
// RUN: not fx-opt %S/Inputs/aten-level.mlir -t triton 2>&1 | filecheck %s --check-prefix=LEVEL
// RUN: not fx-opt %S/Inputs 2>&1 | filecheck %s --check-prefix=DIR
// RUN: not fx-opt %S/Inputs/bisect-model.py 2>&1 | filecheck %s --check-prefix=EXT
// RUN: not fx-opt %S/Inputs/aten-level.mlir -p cse --print-kernel-plans 2>&1 | filecheck %s --check-prefix=PLANS
// RUN: not fx-opt %S/Inputs/aten-level.mlir -o %t.missing/out.mlir 2>&1 | filecheck %s --check-prefix=OUTPUT
// RUN: not fx-opt %S/Inputs/aten-level.mlir -p 'convert-loop-to-tt{xblock}' 2>&1 | filecheck %s --check-prefix=NOVALUE
// RUN: not fx-opt %S/Inputs/aten-level.mlir -p 'canonicalize,,cse' 2>&1 | filecheck %s --check-prefix=EMPTY

// OP: unknown-op.mlir:3:15
// OP-NEXT: %0 = foo.bar(%x)
// OP: Operation foo.bar is not registered
// OP-NOT: Traceback
// ATEN: unknown-aten-op.mlir:4:25
// An aten op that is not registered: the closest ones, else how to write an
// overload outside the generated set.
// ATEN: Operation aten.nope.default is not registered; an overload outside the generated set is written aten.operator "aten::nope.default"(...){{$}}
// MISSPELLED: misspelled-aten-op.mlir:3:25
// MISSPELLED: Operation aten.relu.defualt is not registered; did you mean aten.relu.default or aten.relu_.default?{{$}}
// TYPE: unknown-type.mlir:2:30
// TYPE: 'nope.tensor' is not registered
// RETURN: return-type.mlir:4:3
// RETURN-NEXT: func.return %x
// RETURN-NEXT: ^^^^^^^^^^^
// RETURN-NEXT: func.return: Expected arguments to have the same types as the function output types: expected [!aten.tensor<[4], i64>], got [!aten.tensor<[4], f32>]
// RETURN-NOT: Traceback
// UNDEF: undefined-value.mlir:3:26
// UNDEF: SSA value used before assignment
// CONFLICT: type-conflict.mlir:3:23
// CONFLICT: operand is used with type i32, but has been previously used or defined with type !aten.tensor<[4], f32>
// LEVEL: fx-opt: error: -t triton expects tt.func kernels; found aten.relu.default — run convert-loop-to-tt first
// DIR: fx-opt: error: {{.*}}Inputs: is a directory, not a file
// --print-kernel-plans with a pipeline that plans nothing printed nothing.
// PLANS: {{^}}fx-opt: error: --print-kernel-plans: the pipeline runs neither loop-split-reduction nor convert-loop-to-tt, which print the plans; add -p "$(coil pipeline)"{{$}}
// EXT: {{^}}fx-opt: error: {{.*}}bisect-model.py: unrecognized file extension '.py': fx-opt reads .mlir (MLIR text) and .pt2 (torch.export archives); -f mlir reads any file as MLIR text{{$}}
// OUTPUT: fx-opt: error: {{.*}}.missing/out.mlir: no such file or directory
// NOVALUE: fx-opt: error: convert-loop-to-tt: option 'xblock' must be an integer: 0 (heuristic) or a power of two from 1 to 65536; got no value
// EMPTY: fx-opt: error: invalid pass pipeline
// EMPTY: Expected pass name here
// EMPTY-NOT: Traceback
