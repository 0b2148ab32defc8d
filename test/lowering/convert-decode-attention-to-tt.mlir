// RUN: fx-opt %s --device h200 -p 'convert-aten-to-loop,bufferize,convert-decode-attention-to-tt' | filecheck %s
// RUN: fx-opt %s --device h200 -p 'convert-aten-to-loop,bufferize,convert-decode-attention-to-tt{splits=4 all-devices=true}' | filecheck %s --check-prefix=FORCED
// RUN: fx-opt %s --device h200 -p 'convert-aten-to-loop,bufferize,convert-decode-attention-to-tt{splits=1}' | filecheck %s --check-prefix=ONE
// RUN: fx-opt %s --device h200 -p 'convert-aten-to-loop,bufferize,convert-decode-attention-to-tt,convert-loop-to-tt,convert-buffer-to-host' -t triton | filecheck %s --check-prefix=PY

// A decode step's attention (4 query heads of a group packed as rows over one
// key/value head, a static cache of 256 slots, transformers' additive mask):
// coil's kernel instead of ATen's. A step of the key loop costs ~7 DRAM
// latencies (measured, strategy/decode_attention.STEP_LATENCIES), so 16
// programs walking one block of 64 keys each plus the combine's launch are
// estimated faster than 4 walking all 4 blocks.
// CHECK: tt.func public @coil_decode_attention_0({{.*}}) attributes {coil.kind = "attention"
// CHECK-SAME: coil.plan = "decode attention: 4 split(s) of the keys
// CHECK-SAME: [4, 64, 64] tiles"
// CHECK-LABEL: func.func @decode_step
// CHECK: host.launch @coil_decode_attention_0 grid [4, 4, 1]
// CHECK: host.launch @coil_decode_attention_combine_0 grid [4, 4, 1]
// CHECK-NOT: buffer.extern
// CHECK: func.return
// The unsplit kernel ({splits=1}: one program a head walks the whole cache and
// writes the output itself).
// ONE: tt.func public @coil_decode_attention_0({{.*}}) attributes {coil.kind = "attention"
// ONE-SAME: coil.plan = "decode attention: 4 split(s) of the keys, {{.*}}; forced 1;
// ONE-SAME: [4, 64, 64] tiles"
// ONE: scf.for %k0 = {{.*}} iter_args(%m_i = {{.*}}, %l_i = {{.*}}, %acc = {{.*}}) -> (tensor<4x1x1xf32>, tensor<4x1x1xf32>, tensor<4x1x64xf32>)
// The mask is read first; keys no row keeps are not loaded.
// ONE: %[[BIAS:.*]] = tt.load {{.*}} : tensor<1x64x1x!tt.ptr<bf16>>
// ONE: tt.reduce
// ONE: %[[KEEP:.*]] = arith.cmpf ogt
// ONE: tt.load {{.*}} : tensor<1x64x64x!tt.ptr<bf16>>
// ONE: math.exp
// ONE: scf.yield
// ONE: arith.divf
// ONE: tt.store
// ONE-LABEL: func.func @decode_step
// ONE: %[[OUT:.*]] = buffer.alloc : !buffer.buffer<[1, 4, 4, 64], bf16, device "cuda:0">
// ONE: host.launch @coil_decode_attention_0 grid [4, 1, 1] ({{.*}}, %[[OUT]] :
// ONE-SAME: num_warps = 4 : i64, num_stages = 1 : i64
// ONE-NOT: buffer.extern
// ONE: func.return %[[OUT]]
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
