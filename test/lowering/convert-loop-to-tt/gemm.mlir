// RUN: fx-opt %s -p 'convert-aten-to-loop{gemm=triton},loop-inline,loop-fuse,bufferize,convert-loop-to-tt' | filecheck %s
// RUN: fx-opt %s -p 'convert-aten-to-loop{gemm=triton},loop-inline,loop-fuse,bufferize,convert-loop-to-tt{gemm-config="32x32x16w2s3g4"}' | filecheck %s --check-prefix=FORCED
// RUN: fx-opt %s -p 'convert-aten-to-loop{gemm=triton},loop-inline,loop-fuse,bufferize,convert-loop-to-tt' -t triton | filecheck %s --check-prefix=PY

// A Linear + bias + GELU as one gemm template (loop_to_tt/gemm.py): group-M
// swizzled tiles, an scf.for over K with tt.dot on 16-bit operands, the
// epilogue on the f32 accumulator, one masked store. The odd extents (M 13 of
// BLOCK_M 16, N 40 of 32, K 48 of 32) show the edges: the operands read rows
// and columns wrapped into range (rm % 13, rn % 40, the latter in runs of
// gcd(40, 32) = 8, which the hints say), so their loads mask only the lanes
// past what is left of K; the pointers are built before the loop and carried
// through it, advanced by BLOCK_K each step; the store masks M and N.
// CHECK: tt.func public @coil_{{.*}} attributes {coil.kind = "gemm"
// CHECK-SAME: coil.plan = "gemm template [BLOCK_M 16, BLOCK_N 32, BLOCK_K 32]
// CHECK: tt.get_program_id x
// CHECK: %[[AP:a_ptrs]] = tt.addptr {{.*}} : tensor<16x32x!tt.ptr<bf16>>, tensor<16x32xi32>
// CHECK: %[[BP:b_ptrs]] = tt.addptr {{.*}} : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
// CHECK: %[[ACC:.*]], %{{.*}}, %{{.*}} = scf.for %k0 = {{.*}} iter_args(%[[A:.*]] = {{.*}}, %[[PA:.*]] = %[[AP]], %[[PB:.*]] = %[[BP]]) -> (tensor<16x32xf32>, tensor<16x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>) : i32
// CHECK: tt.load %[[PA]], {{.*}} : tensor<16x32x!tt.ptr<bf16>>
// CHECK: tt.load %[[PB]], {{.*}} : tensor<32x32x!tt.ptr<bf16>>
// CHECK: tt.dot {{.*}}, %[[A]] : tensor<16x32xbf16> * tensor<32x32xbf16> -> tensor<16x32xf32>
// CHECK: tt.addptr %[[PA]]
// CHECK: tt.addptr %[[PB]]
// CHECK: scf.yield
// CHECK: math.erf
// CHECK: arith.truncf
// CHECK: tt.store
// CHECK-NOT: tt.store
// CHECK: host.launch @coil_{{.*}} grid [2, 1, 1]
// CHECK-SAME: num_warps = 2 : i64, num_stages = 2 : i64
// FORCED: coil.plan = "gemm template [BLOCK_M 32, BLOCK_N 32, BLOCK_K 16], 2 warps, 3 stages, GROUP_M 4
// FORCED: host.launch @coil_{{.*}} grid [2, 1, 1]
// PY: # kind: gemm
// PY: rm = tl.expand_dims([[RM:tmp[0-9]+]], 1)
// PY: [[W:tmp[0-9]+]] = [[RM]] % {{.*}}
// PY-NEXT: rm_wrapped = tl.expand_dims([[W]], 1)
// PY: rn = tl.expand_dims([[RN:tmp[0-9]+]], 0)
// PY: [[WN:tmp[0-9]+]] = [[RN]] % {{.*}}
// PY-NEXT: [[H:tmp[0-9]+]] = tl.multiple_of([[WN]], [8])
// PY-NEXT: [[C:tmp[0-9]+]] = tl.max_contiguous([[H]], [8])
// PY-NEXT: rn_wrapped = tl.expand_dims([[C]], 0)
// PY: = in_ptr0 + tl.zeros([16, 32], tl.int32)
// PY-NEXT: a_ptrs = 
// PY: = in_ptr1 + tl.zeros([32, 32], tl.int32)
// PY-NEXT: b_ptrs = 
// PY: for k0 in range(0, 48, 32):
// PY-NEXT: [[LEFT:tmp[0-9]+]] = 48 - k0
// PY: kmask = {{.*}} < {{.*}}
// PY: tl.load(a_ptrs_1, {{.*}}, other=
// PY: tl.load(b_ptrs_1, {{.*}}, other=
// PY-NEXT: tl.dot({{.*}}, acc=acc)
// PY: a_ptrs_2 = a_ptrs_1 + {{.*}}
// PY: b_ptrs_2 = b_ptrs_1 + {{.*}}
// PY-NEXT: acc, a_ptrs_1, b_ptrs_1 = {{.*}}, a_ptrs_2, b_ptrs_2
// PY: tl.erf(
// PY: tl.store({{.*}}, {{.*}}, {{.*}})
func.func @linear_gelu(%x: !aten.tensor<[13, 48], bf16, device "cuda:0">, %w: !aten.tensor<[40, 48], bf16, device "cuda:0">, %b: !aten.tensor<[40], bf16, device "cuda:0">) -> !aten.tensor<[13, 40], bf16, device "cuda:0"> {
  %t = aten.permute.default(%w, dims = [1, 0]) : !aten.tensor<[48, 40], bf16, strides [1, 48], device "cuda:0">
  %0 = aten.addmm.default(%b, %x, %t) : !aten.tensor<[13, 40], bf16, device "cuda:0">
  %1 = aten.gelu.default(%0) : !aten.tensor<[13, 40], bf16, device "cuda:0">
  func.return %1 : !aten.tensor<[13, 40], bf16, device "cuda:0">
}
