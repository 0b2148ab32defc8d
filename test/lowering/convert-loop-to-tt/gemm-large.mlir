// RUN: fx-opt %s -p 'convert-aten-to-loop{gemm=triton},loop-inline,loop-fuse,bufferize,convert-loop-to-tt' -t triton | filecheck %s

// The emitted form of a large 16-bit Linear (GPT-2's c_attn: 4096 rows, 768
// in, 2304 out, bf16), the form Triton pipelines on Hopper (cp.async stages
// and asynchronous wgmma, checked offline for sm90): the default config of
// the large class, the K loop over the constant extent with no masks (the
// extents divide the blocks), both operand tiles loaded as bf16 and given to
// tl.dot in bf16 (no f32 upcast before the product), accumulated in f32; the
// bias added and the result rounded on the accumulator, one unmasked store.
// CHECK: # plan: gemm template [BLOCK_M 128, BLOCK_N 128, BLOCK_K 64], 8 warps, 3 stages, GROUP_M 8, inputs bf16
// CHECK: acc = {{.*}}
// CHECK-NEXT: for k0 in range({{.*}}):
// CHECK-NOT: .to(tl.float32)
// CHECK-NOT: mask
// CHECK: [[A:tmp[0-9]+]] = tl.load({{[^,]*}}, eviction_policy="evict_last")
// CHECK-NOT: .to(tl.float32)
// CHECK: [[B:tmp[0-9]+]] = tl.load({{[^,]*}}, eviction_policy="evict_last")
// CHECK-NEXT: tl.dot([[A]], [[B]], acc=acc
// CHECK-NEXT: acc = tmp
// CHECK: .to(tl.float32)
// CHECK: .to(tl.bfloat16)
// CHECK: tl.store({{[^,]*}}, {{[^,]*}})
// CHECK-NOT: tl.store
func.func @linear(%x: !aten.tensor<[4096, 768], bf16, device "cuda:0">, %w: !aten.tensor<[2304, 768], bf16, device "cuda:0">, %b: !aten.tensor<[2304], bf16, device "cuda:0">) -> !aten.tensor<[4096, 2304], bf16, device "cuda:0"> {
  %t = aten.permute.default(%w, dims = [1, 0]) : !aten.tensor<[768, 2304], bf16, strides [1, 768], device "cuda:0">
  %0 = aten.addmm.default(%b, %x, %t) : !aten.tensor<[4096, 2304], bf16, device "cuda:0">
  func.return %0 : !aten.tensor<[4096, 2304], bf16, device "cuda:0">
}
