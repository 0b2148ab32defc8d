// RUN: not fx-opt %s -p convert-loop-to-tt,convert-buffer-to-host -t python 2>&1 | filecheck %s

// A GPU kernel that writes the CPU 0-d input is an error (the write would go
// to a device copy and be lost), not a silent wrong result.
// CHECK: -t python: GPU kernel @coil_n_0 writes the CPU tensor n; a GPU kernel can only read CPU scalars
func.func @written(%x: !buffer.buffer<[4], f32, device "cuda:0">, %n: !buffer.buffer<[], f32>) {
  loop.pointwise [] outs(%n : !buffer.buffer<[], f32>) {
  ^bb0:
    %0 = loop.load %n[] : !buffer.buffer<[], f32>
    %1 = loop.load %x[0] : !buffer.buffer<[4], f32, device "cuda:0">
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return
}
