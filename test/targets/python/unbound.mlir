// RUN: not fx-opt %s -t python 2>&1 | filecheck %s

// A size symbol nothing binds (no index argument, input size or extern
// result has it) is an error naming it.

// CHECK: -t python: size symbol(s) s7 of @forward are not bound by its inputs (nor by an extern's result)
// CHECK-NOT: Traceback
host.func @forward(%x: !buffer.buffer<[4], f32>) -> !buffer.buffer<[s7], f32> {
  %0 = host.empty_strided : !buffer.buffer<[s7], f32>
  host.return %0 : !buffer.buffer<[s7], f32>
}
