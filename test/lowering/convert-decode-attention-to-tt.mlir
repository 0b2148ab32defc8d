// RUN: fx-opt %s --device h200 -p 'convert-aten-to-loop,bufferize,convert-decode-attention-to-tt' | filecheck %s
// RUN: fx-opt %s --device h200 -p 'convert-aten-to-loop,bufferize,convert-decode-attention-to-tt{splits=4 all-devices=true}' | filecheck %s --check-prefix=FORCED
// RUN: fx-opt %s --device h200 -p 'convert-aten-to-loop,bufferize,convert-decode-attention-to-tt,convert-loop-to-tt,convert-buffer-to-host' -t triton | filecheck %s --check-prefix=PY

// A decode step's attention (4 query heads of a group packed as rows over one
// key/value head, a static cache of 256 slots, transformers' additive mask):
// coil's kernel instead of ATen's. 4 (batch x head) programs walking 4 blocks
// of 64 keys are estimated faster than a split plus the combine's launch.
// CHECK: tt.func public @coil_decode_attention_0({{.*}}) attributes {coil.kind = "attention"
// CHECK-SAME: coil.plan = "decode attention: 1 split(s) of the keys
// CHECK-SAME: [4, 64, 64] tiles"
// CHECK: scf.for %k0 = {{.*}} iter_args(%m_i = {{.*}}, %l_i = {{.*}}, %acc = {{.*}}) -> (tensor<4x1x1xf32>, tensor<4x1x1xf32>, tensor<4x1x64xf32>)
// The mask is read first; keys no row keeps are not loaded.
// CHECK: %[[BIAS:.*]] = tt.load {{.*}} : tensor<1x64x1x!tt.ptr<bf16>>
// CHECK: tt.reduce
// CHECK: %[[KEEP:.*]] = arith.cmpf ogt
// CHECK: tt.load {{.*}} : tensor<1x64x64x!tt.ptr<bf16>>
// CHECK: math.exp
// CHECK: scf.yield
// CHECK: arith.divf
// CHECK: tt.store
// CHECK-LABEL: func.func @decode_step
// CHECK: %[[OUT:.*]] = buffer.alloc : !buffer.buffer<[1, 4, 4, 64], bf16, device "cuda:0">
// CHECK: host.launch @coil_decode_attention_0 grid [4, 1, 1] ({{.*}}, %[[OUT]] :
// CHECK-SAME: num_warps = 4 : i64, num_stages = 1 : i64
// CHECK-NOT: buffer.extern
// CHECK: func.return %[[OUT]]
// FORCED-LABEL: func.func @decode_step
// FORCED: buffer.alloc : !buffer.buffer<[1, 4, 4, 64], bf16, device "cuda:0">
// FORCED: %attn_acc = buffer.alloc : !buffer.buffer<[4, 4, 4, 64], f32, device "cuda:0">
// FORCED: %attn_max = buffer.alloc : !buffer.buffer<[4, 4, 4], f32, device "cuda:0">
// FORCED: %attn_sum = buffer.alloc : !buffer.buffer<[4, 4, 4], f32, device "cuda:0">
// FORCED: host.launch @coil_decode_attention_{{.*}} grid [4, 4, 1]
// FORCED: host.launch @coil_decode_attention_combine_{{.*}} grid [4, 4, 1]
// FORCED: buffer.dealloc %attn_acc
// PY: # kind: attention
// PY: for k0 in range(
// PY: tl.load({{.*}}, other=
// PY: tl.exp(
func.func @decode_step(%q: !aten.tensor<[1, 4, 4, 64], bf16, device "cuda:0">, %k: !aten.tensor<[1, 4, 256, 64], bf16, device "cuda:0">, %v: !aten.tensor<[1, 4, 256, 64], bf16, device "cuda:0">, %mask: !aten.tensor<[1, 1, 1, 256], bf16, device "cuda:0">) -> !aten.tensor<[1, 4, 4, 64], bf16, device "cuda:0"> {
  %o, %lse, %seed, %offset = aten.operator "aten::_scaled_dot_product_efficient_attention"(%q, %k, %v, %mask, false, scale = 0.125) : (!aten.tensor<[1, 4, 4, 64], bf16, device "cuda:0">, !aten.tensor<[1, 4, 0], f32, device "cuda:0">, !aten.tensor<[], i64, device "cuda:0">, !aten.tensor<[], i64, device "cuda:0">)
  func.return %o : !aten.tensor<[1, 4, 4, 64], bf16, device "cuda:0">
}

// A cache of 4096 slots: 4 programs would walk 64 blocks each; 64 runs of
// keys per head and the combine are estimated 4x faster.
// CHECK: tt.func public @coil_decode_attention_1({{.*}}) attributes {coil.kind = "attention"
// CHECK-SAME: coil.plan = "decode attention: 64 split(s) of the keys
// CHECK: tt.func public @coil_decode_attention_combine_1
// CHECK-LABEL: func.func @long_cache
// CHECK: host.launch @coil_decode_attention_1 grid [4, 64, 1]
// CHECK: host.launch @coil_decode_attention_combine_1 grid [4, 4, 1]
func.func @long_cache(%q: !aten.tensor<[1, 4, 4, 64], bf16, device "cuda:0">, %k: !aten.tensor<[1, 4, 4096, 64], bf16, device "cuda:0">, %v: !aten.tensor<[1, 4, 4096, 64], bf16, device "cuda:0">, %mask: !aten.tensor<[1, 1, 1, 4096], bf16, device "cuda:0">) -> !aten.tensor<[1, 4, 4, 64], bf16, device "cuda:0"> {
  %o, %lse, %seed, %offset = aten.operator "aten::_scaled_dot_product_efficient_attention"(%q, %k, %v, %mask, false, scale = 0.125) : (!aten.tensor<[1, 4, 4, 64], bf16, device "cuda:0">, !aten.tensor<[1, 4, 0], f32, device "cuda:0">, !aten.tensor<[], i64, device "cuda:0">, !aten.tensor<[], i64, device "cuda:0">)
  func.return %o : !aten.tensor<[1, 4, 4, 64], bf16, device "cuda:0">
}

// Negatives: a prompt's 32 query rows (prefill), dropout, the log-sum-exp
// returned (a backward needs it), and (without all-devices) CPU buffers stay ATen's.
// CHECK-LABEL: func.func @prefill
// CHECK: buffer.extern "aten._scaled_dot_product_efficient_attention"
// CHECK-LABEL: func.func @dropout
// CHECK: buffer.extern "aten._scaled_dot_product_efficient_attention"
// CHECK-LABEL: func.func @lse_used
// CHECK: buffer.extern "aten._scaled_dot_product_efficient_attention"
// CHECK-LABEL: func.func @on_cpu
// CHECK: buffer.extern "aten._scaled_dot_product_flash_attention_for_cpu"
// FORCED-LABEL: func.func @on_cpu
// FORCED-NOT: buffer.extern
// FORCED: host.launch @coil_decode_attention_combine_{{.*}} grid [2, 1, 1]
func.func @prefill(%q: !aten.tensor<[1, 4, 32, 64], bf16, device "cuda:0">, %k: !aten.tensor<[1, 4, 256, 64], bf16, device "cuda:0">, %v: !aten.tensor<[1, 4, 256, 64], bf16, device "cuda:0">) -> !aten.tensor<[1, 4, 32, 64], bf16, device "cuda:0"> {
  %o, %lse, %seed, %offset = aten.operator "aten::_scaled_dot_product_efficient_attention"(%q, %k, %v, none, false) : (!aten.tensor<[1, 4, 32, 64], bf16, device "cuda:0">, !aten.tensor<[1, 4, 0], f32, device "cuda:0">, !aten.tensor<[], i64, device "cuda:0">, !aten.tensor<[], i64, device "cuda:0">)
  func.return %o : !aten.tensor<[1, 4, 32, 64], bf16, device "cuda:0">
}
func.func @dropout(%q: !aten.tensor<[1, 4, 1, 64], bf16, device "cuda:0">, %k: !aten.tensor<[1, 4, 256, 64], bf16, device "cuda:0">, %v: !aten.tensor<[1, 4, 256, 64], bf16, device "cuda:0">) -> !aten.tensor<[1, 4, 1, 64], bf16, device "cuda:0"> {
  %o, %lse, %seed, %offset = aten.operator "aten::_scaled_dot_product_efficient_attention"(%q, %k, %v, none, false, 0.1) : (!aten.tensor<[1, 4, 1, 64], bf16, device "cuda:0">, !aten.tensor<[1, 4, 0], f32, device "cuda:0">, !aten.tensor<[], i64, device "cuda:0">, !aten.tensor<[], i64, device "cuda:0">)
  func.return %o : !aten.tensor<[1, 4, 1, 64], bf16, device "cuda:0">
}
func.func @lse_used(%q: !aten.tensor<[1, 4, 1, 64], bf16, device "cuda:0">, %k: !aten.tensor<[1, 4, 256, 64], bf16, device "cuda:0">, %v: !aten.tensor<[1, 4, 256, 64], bf16, device "cuda:0">) -> (!aten.tensor<[1, 4, 1, 64], bf16, device "cuda:0">, !aten.tensor<[1, 4, 32], f32, device "cuda:0">) {
  %o, %lse, %seed, %offset = aten.operator "aten::_scaled_dot_product_efficient_attention"(%q, %k, %v, none, true) : (!aten.tensor<[1, 4, 1, 64], bf16, device "cuda:0">, !aten.tensor<[1, 4, 32], f32, device "cuda:0">, !aten.tensor<[], i64, device "cuda:0">, !aten.tensor<[], i64, device "cuda:0">)
  func.return %o, %lse : !aten.tensor<[1, 4, 1, 64], bf16, device "cuda:0">, !aten.tensor<[1, 4, 32], f32, device "cuda:0">
}
func.func @on_cpu(%q: !aten.tensor<[1, 2, 1, 16], f32>, %k: !aten.tensor<[1, 2, 64, 16], f32>, %v: !aten.tensor<[1, 2, 64, 16], f32>) -> !aten.tensor<[1, 2, 1, 16], f32> {
  %o, %lse = aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%q, %k, %v) : (!aten.tensor<[1, 2, 1, 16], f32>, !aten.tensor<[1, 2, 1], f32>)
  func.return %o : !aten.tensor<[1, 2, 1, 16], f32>
}
