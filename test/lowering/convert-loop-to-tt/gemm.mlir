// RUN: fx-opt %s -p 'convert-aten-to-loop{gemm=triton},loop-inline,loop-fuse,bufferize,convert-loop-to-tt' | filecheck %s
// RUN: fx-opt %s -p 'convert-aten-to-loop{gemm=triton},loop-inline,loop-fuse,bufferize,convert-loop-to-tt{gemm-config="32x32x16w2s3g4"}' | filecheck %s --check-prefix=FORCED
// RUN: fx-opt %s -p 'convert-aten-to-loop{gemm=triton},loop-inline,loop-fuse,bufferize,convert-loop-to-tt' -t triton | filecheck %s --check-prefix=PY

// A Linear + bias + GELU as one gemm template (loop_to_tt/gemm.py): group-M
// swizzled tiles, an scf.for over K with tt.dot on 16-bit operands, the
// epilogue on the f32 accumulator, one masked store.
// CHECK: tt.func public @coil_{{.*}} attributes {coil.kind = "gemm"
// CHECK-SAME: coil.plan = "gemm template [BLOCK_M 16, BLOCK_N 32, BLOCK_K 32]
// CHECK: tt.get_program_id x
// CHECK: %[[ACC:.*]] = scf.for %k0 = {{.*}} iter_args(%[[A:.*]] = {{.*}}) -> (tensor<16x32xf32>)
// CHECK: tt.load {{.*}} : tensor<16x32x!tt.ptr<bf16>>
// CHECK: tt.load {{.*}} : tensor<32x32x!tt.ptr<bf16>>
// CHECK: tt.dot {{.*}}, %[[A]] : tensor<16x32xbf16> * tensor<32x32xbf16> -> tensor<16x32xf32>
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
// PY: for k0 in range(0, 48, 32):
// PY: tl.dot({{.*}}, acc=acc, input_precision="tf32")
// PY: tl.erf(
func.func @linear_gelu(%x: !aten.tensor<[13, 48], bf16, device "cuda:0">, %w: !aten.tensor<[40, 48], bf16, device "cuda:0">, %b: !aten.tensor<[40], bf16, device "cuda:0">) -> !aten.tensor<[13, 40], bf16, device "cuda:0"> {
  %t = aten.permute.default(%w, dims = [1, 0]) : !aten.tensor<[48, 40], bf16, strides [1, 48], device "cuda:0">
  %0 = aten.addmm.default(%b, %x, %t) : !aten.tensor<[13, 40], bf16, device "cuda:0">
  %1 = aten.gelu.default(%0) : !aten.tensor<[13, 40], bf16, device "cuda:0">
  func.return %1 : !aten.tensor<[13, 40], bf16, device "cuda:0">
}
