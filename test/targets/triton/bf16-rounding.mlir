// RUN: fx-opt %s -p convert-loop-to-tt,convert-buffer-to-host -t triton --split-input-file | filecheck %s

// f32 -> bf16 rounds to nearest-even on both devices: a CUDA kernel casts (the
// GPU rounds), a CPU kernel rounds in integer arithmetic (the interpreter truncates).
// CHECK:      # cost:
// CHECK:      tl.load
// CHECK-NEXT: tmp{{[0-9]+}} = tmp{{[0-9]+}}.to(tl.bfloat16)
// CHECK:      tl.store
func.func @f(%x: !buffer.buffer<[64], f32, device "cuda:0">) -> !buffer.buffer<[64], bf16, device "cuda:0"> {
  %y = buffer.alloc : !buffer.buffer<[64], bf16, device "cuda:0">
  loop.pointwise [64] outs(%y : !buffer.buffer<[64], bf16, device "cuda:0">) {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[64], f32, device "cuda:0">
    %1 = arith.truncf %0 : f32 to bf16
    loop.yield %1 : bf16
  }
  func.return %y : !buffer.buffer<[64], bf16, device "cuda:0">
}

// -----

// CHECK:      # cost:
// CHECK:      tl.load
// CHECK-NEXT: tl.where({{.*}}.to(tl.uint32, bitcast=True) + 0x7FFF{{.*}}.to(tl.bfloat16)
func.func @g(%x: !buffer.buffer<[64], f32>) -> !buffer.buffer<[64], bf16> {
  %y = buffer.alloc : !buffer.buffer<[64], bf16>
  loop.pointwise [64] outs(%y : !buffer.buffer<[64], bf16>) {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[64], f32>
    %1 = arith.truncf %0 : f32 to bf16
    loop.yield %1 : bf16
  }
  func.return %y : !buffer.buffer<[64], bf16>
}
