// RUN: fx-opt %s -p 'convert-aten-to-loop{gemm=triton},loop-inline,loop-fuse,bufferize,convert-loop-to-tt' -t triton | filecheck %s

// The emitted form of a large 16-bit Linear (GPT-2's c_attn: 4096 rows, 768
// in, 2304 out, bf16), the form of Triton's matmul tutorial (compiled offline
// for sm90 with Triton 3.9 both give warp-group dots and the same TTGIR op
// mix; this kernel's PTX has 75 64-bit integer ops, the previous form's 274):
// the default config of the large class; i32 index math
// (every buffer has fewer than 2^31 elements: the M x N x K points are no
// index); each operand's pointers built once before the K loop and carried
// through it, advanced by BLOCK_K times its K stride (64) each step; no mask
// anywhere (the extents divide the blocks); both tiles loaded as bf16 and
// given to tl.dot in bf16 (no f32 upcast, no input precision); the bias added
// and the result rounded on the accumulator, one unmasked store.
// CHECK: # plan: gemm template [BLOCK_M 128, BLOCK_N 128, BLOCK_K 64], 8 warps, 3 stages, GROUP_M 8, inputs bf16
// CHECK-NOT: tl.int64
// CHECK: = in_ptr0 + tl.zeros([128, 64], tl.int32)
// CHECK-NEXT: a_ptrs = 
// CHECK: = in_ptr1 + tl.zeros([64, 128], tl.int32)
// CHECK-NEXT: b_ptrs = 
// CHECK: acc = {{.*}}
// CHECK-NEXT: a_ptrs_1 = a_ptrs
// CHECK-NEXT: b_ptrs_1 = b_ptrs
// CHECK-NEXT: for k0 in range(0, 768, 64):
// CHECK-NEXT: [[A:tmp[0-9]+]] = tl.load(a_ptrs_1)
// CHECK-NEXT: [[B:tmp[0-9]+]] = tl.load(b_ptrs_1)
// CHECK-NEXT: [[D:tmp[0-9]+]] = tl.dot([[A]], [[B]], acc=acc)
// CHECK-NEXT: [[SA:tmp[0-9]+]] = tl.full([128, 64], 64, tl.int32)
// CHECK-NEXT: a_ptrs_2 = a_ptrs_1 + [[SA]]
// CHECK-NEXT: [[SB:tmp[0-9]+]] = tl.full([64, 128], 64, tl.int32)
// CHECK-NEXT: b_ptrs_2 = b_ptrs_1 + [[SB]]
// CHECK-NEXT: acc, a_ptrs_1, b_ptrs_1 = [[D]], a_ptrs_2, b_ptrs_2
// CHECK: .to(tl.float32)
// CHECK: .to(tl.bfloat16)
// CHECK: tl.store({{[^,]*}}, {{[^,]*}})
// CHECK-NOT: tl.store
// CHECK-NOT: tl.int64
func.func @linear(%x: !aten.tensor<[4096, 768], bf16, device "cuda:0">, %w: !aten.tensor<[2304, 768], bf16, device "cuda:0">, %b: !aten.tensor<[2304], bf16, device "cuda:0">) -> !aten.tensor<[4096, 2304], bf16, device "cuda:0"> {
  %t = aten.permute.default(%w, dims = [1, 0]) : !aten.tensor<[768, 2304], bf16, strides [1, 768], device "cuda:0">
  %0 = aten.addmm.default(%b, %x, %t) : !aten.tensor<[4096, 2304], bf16, device "cuda:0">
  func.return %0 : !aten.tensor<[4096, 2304], bf16, device "cuda:0">
}
