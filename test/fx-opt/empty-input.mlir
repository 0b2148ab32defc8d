// An input with no ops -- an empty file, or one of comments and whitespace
// like this one -- is an empty module, as mlir-opt and xdsl-opt take it; the
// default pipeline runs on it.
// RUN: %python -c "open(r'%t.empty.mlir', 'w').close()"
// RUN: fx-opt %t.empty.mlir | filecheck %s
// RUN: fx-opt %s | filecheck %s
// RUN: fx-opt - < %t.empty.mlir | filecheck %s
// RUN: fx-opt %s -p "%default_pipeline" | filecheck %s
// RUN: fx-opt %t.empty.mlir --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK:      {{^}}builtin.module {
// CHECK-NEXT: {{^}}}
// GENERIC: "builtin.module"() ({

   
