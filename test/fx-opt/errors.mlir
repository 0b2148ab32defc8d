// Malformed input: a located message and exit code 1, never a traceback. A
// failure with no place in the input is one line, "fx-opt: error: ..." (the
// exit codes are checked in test/python/test_cli_and_backend.py).
// RUN: not fx-opt %s 2> %t.err
// RUN: filecheck %s --check-prefix=PARSE < %t.err
// RUN: not fx-opt %S/Inputs/does-not-exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not fx-opt %S/Inputs/verify-error.mlir 2>&1 | filecheck %s --check-prefix=VERIFY
// RUN: not fx-opt %S/Inputs/verify-error.mlir -p no-such-pass 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not fx-opt %S/Inputs/verify-error.mlir -p 'cse,loop-fusion' 2>&1 | filecheck %s --check-prefix=SUGGEST
// RUN: not fx-opt %S/Inputs/verify-error.mlir -p "canonicalize{" 2>&1 | filecheck %s --check-prefix=PIPELINE
// RUN: env PYTHONWARNINGS=default not fx-opt %S/Inputs/not-an-archive.pt2 2>&1 | filecheck %s --check-prefix=PT2
// RUN: %python -c "open(r'%t.bin.mlir', 'wb').write(bytes([0x66, 0x00, 0xff, 0x10]))"
// RUN: not fx-opt %t.bin.mlir 2>&1 | filecheck %s --check-prefix=BINARY

// PARSE: errors.mlir:[[# @LINE + 4]]:{{[0-9]+}}
// PARSE: expected a symbolic integer expression
// PARSE-NOT: Traceback
func.func @f(%x: !aten.tensor<[4], f32>) {
  %0 = aten.view.default(%x, size = [4 +]) : !aten.tensor<[4], f32>
  func.return
}

// MISSING: fx-opt: error: {{.*}}does-not-exist.mlir: no such file or directory
// VERIFY: verify-error.mlir:4:{{[0-9]+}}
// VERIFY: aten.add.Tensor: result must be a tensor, got i64
// VERIFY-NOT: Traceback
// PASS: fx-opt: error: unknown pass 'no-such-pass' (coil's passes, closest first: {{.*}}; fx-opt --help-all lists xDSL's others)
// SUGGEST: fx-opt: error: unknown pass 'loop-fusion'; did you mean 'loop-fuse' or 'loop-inline'? (coil's passes, closest first: loop-fuse, loop-inline, {{.*}}; fx-opt --help-all lists xDSL's others)
// PIPELINE: fx-opt: error: invalid pass pipeline
// The torch.export archive that does not load, in a fresh process with warnings
// on: one line naming the file and nothing else (not torch's logged traceback,
// "Ran into ...", nor a FutureWarning).
// PT2-NOT: {{Ran into|Warning|Traceback}}
// PT2: {{^}}fx-opt: error: {{.*}}not-an-archive.pt2: cannot load the torch.export archive: File is not a zip file{{$}}
// PT2-NOT: {{.}}
// BINARY: fx-opt: error: {{.*}}.bin.mlir: not a text file (byte 0xff at offset 2 is not UTF-8)
// BINARY-NOT: Traceback
