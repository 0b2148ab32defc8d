// RUN: fx-opt %s --device h200 --print-kernel-plans -p convert-loop-to-tt 2>&1 >/dev/null | filecheck %s --check-prefix=H200
// RUN: fx-opt %s --device h100 --print-kernel-plans -p convert-loop-to-tt 2>&1 >/dev/null | filecheck %s --check-prefix=H100
// RUN: fx-opt %s --device a100 --print-kernel-plans -p convert-loop-to-tt 2>&1 >/dev/null | filecheck %s --check-prefix=A100
// RUN: fx-opt %s --device cpu-interpreter --print-kernel-plans -p convert-loop-to-tt 2>&1 >/dev/null | filecheck %s --check-prefix=CPU
// RUN: fx-opt %s --device h200 -p convert-loop-to-tt,convert-buffer-to-host -t triton | filecheck %s --check-prefix=PY

// Matrix-vector products of one token (bf16 weights, f32 sums: a ~1B Llama's
// gate, lm_head and down projection) stream every weight row once. The
// default tiles (one or two persistent rows a program, or one looped row)
// run several rounds of short programs, each waiting a whole load latency
// and its stores; the streamed tiles (plan.stream_tile) take the cost
// model's best of more rows a program, shorter unmasked steps and fewer
// warps, so one round of programs keeps enough bytes in flight on every SM.
// The choice is the target's: on the H100 and H200 (132 SMs) the gate's rows
// go two a program in steps of 512 and the lm_head's 32000 rows sixteen a
// program in steps of 128, one round of programs each; on the A100 (108
// SMs, 2.0 TB/s) the gate's go four a program, and the lm_head keeps the
// default, already bandwidth-bound there (streaming gains under 10 %). The
// down projection's 5632-long rows stay one looped row a program everywhere
// (RBLOCK 2048 does not divide them; the steps that do gain under 10 %).
// The interpreter never spreads rows for SMs, so it keeps the default tiles.

// H200:      plans for h200: 132 SMs, 4.80 TB/s
// H200-NEXT:   @coil_gate_0: reduction rows, looped [XBLOCK 2, RBLOCK 512], 2 warps: 23.1 MB, {{.*}} us bandwidth-bound, 2816 programs (0.85 waves{{.*}}; streamed rows, {{.*}} us persistent [XBLOCK 2, RBLOCK 2048] 8 warps
// H200-NEXT:   @coil_logits_1: reduction rows, looped [XBLOCK 16, RBLOCK 128], 2 warps: 131 MB, {{.*}} us bandwidth-bound, 2000 programs (0.84 waves{{.*}}; streamed rows
// H200-NEXT:   @coil_down_2: reduction inner rows, looped [XBLOCK 1, RBLOCK 2048], 8 warps
// H200-NOT:    streamed rows

// H100:      plans for h100: 132 SMs, 3.35 TB/s
// H100-NEXT:   @coil_gate_0: reduction rows, looped [XBLOCK 2, RBLOCK 512], 2 warps: {{.*}} bandwidth-bound{{.*}}; streamed rows
// H100-NEXT:   @coil_logits_1: reduction rows, looped [XBLOCK 16, RBLOCK 128], 2 warps: {{.*}} bandwidth-bound{{.*}}; streamed rows

// A100:      plans for a100: 108 SMs, 2.00 TB/s
// A100-NEXT:   @coil_gate_0: reduction rows, looped [XBLOCK 4, RBLOCK 512], 2 warps: {{.*}}; streamed rows
// A100-NEXT:   @coil_logits_1: reduction rows, persistent [XBLOCK 2, RBLOCK 2048], 8 warps: {{.*}} bandwidth-bound
// A100-NOT:    streamed rows

// CPU:       plans for cpu-interpreter
// CPU-NEXT:    @coil_gate_0: reduction rows, persistent [XBLOCK 2, RBLOCK 2048], 8 warps
// CPU-NOT:     streamed rows

// The streamed gate kernel: two rows a program, a loop of 4 unmasked steps of
// 512, the accumulator [2, 512] summed once after it.
// PY:          # plan: reduction rows, looped [XBLOCK 2, RBLOCK 512], 2 warps
// PY:          def coil_gate_0(
// PY:          tl.full([2, 512], 0.0, tl.float32)
// PY:          for roffset in range(0, 2048, 512):
// PY-NOT:      mask
// PY:          tl.sum(

func.func @gate(%x: !buffer.buffer<[1, 2048], bf16, device "cuda:0">, %w: !buffer.buffer<[5632, 2048], bf16, device "cuda:0">) -> !buffer.buffer<[1, 5632], f32, device "cuda:0"> {
  %gate = buffer.alloc : !buffer.buffer<[1, 5632], f32, device "cuda:0">
  loop.reduction sum [1, 5632] [2048] outs(%gate : !buffer.buffer<[1, 5632], f32, device "cuda:0">) {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[1, 2048], bf16, device "cuda:0">
    %1 = arith.extf %0 : bf16 to f32
    %2 = loop.load %w[i1, r0] : !buffer.buffer<[5632, 2048], bf16, device "cuda:0">
    %3 = arith.extf %2 : bf16 to f32
    %4 = arith.mulf %1, %3 : f32
    loop.yield %4 : f32
  }
  func.return %gate : !buffer.buffer<[1, 5632], f32, device "cuda:0">
}

func.func @lm_head(%x: !buffer.buffer<[1, 2048], bf16, device "cuda:0">, %w: !buffer.buffer<[32000, 2048], bf16, device "cuda:0">) -> !buffer.buffer<[1, 32000], f32, device "cuda:0"> {
  %logits = buffer.alloc : !buffer.buffer<[1, 32000], f32, device "cuda:0">
  loop.reduction sum [1, 32000] [2048] outs(%logits : !buffer.buffer<[1, 32000], f32, device "cuda:0">) {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[1, 2048], bf16, device "cuda:0">
    %1 = arith.extf %0 : bf16 to f32
    %2 = loop.load %w[i1, r0] : !buffer.buffer<[32000, 2048], bf16, device "cuda:0">
    %3 = arith.extf %2 : bf16 to f32
    %4 = arith.mulf %1, %3 : f32
    loop.yield %4 : f32
  }
  func.return %logits : !buffer.buffer<[1, 32000], f32, device "cuda:0">
}

func.func @down(%x: !buffer.buffer<[1, 5632], bf16, device "cuda:0">, %w: !buffer.buffer<[2048, 5632], bf16, device "cuda:0">) -> !buffer.buffer<[1, 2048], f32, device "cuda:0"> {
  %down = buffer.alloc : !buffer.buffer<[1, 2048], f32, device "cuda:0">
  loop.reduction sum [1, 2048] [5632] outs(%down : !buffer.buffer<[1, 2048], f32, device "cuda:0">) {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[1, 5632], bf16, device "cuda:0">
    %1 = arith.extf %0 : bf16 to f32
    %2 = loop.load %w[i1, r0] : !buffer.buffer<[2048, 5632], bf16, device "cuda:0">
    %3 = arith.extf %2 : bf16 to f32
    %4 = arith.mulf %1, %3 : f32
    loop.yield %4 : f32
  }
  func.return %down : !buffer.buffer<[1, 2048], f32, device "cuda:0">
}
