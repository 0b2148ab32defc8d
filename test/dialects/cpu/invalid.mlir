// RUN: fx-opt %s --verify-diagnostics --split-input-file

// cpu.return ends a cpu.func only.
func.func @f() {
  // expected-error @+1 {{'cpu.return' expects parent op 'cpu.func'}}
  cpu.return
}
