// RUN: fx-opt %s --device h100 --print-kernel-plans -p convert-loop-to-tt 2>&1 >/dev/null | filecheck %s --check-prefix=H100
// RUN: fx-opt %s --device a100 --print-kernel-plans -p convert-loop-to-tt 2>&1 >/dev/null | filecheck %s --check-prefix=A100
// RUN: fx-opt %s --device cpu-interpreter --print-kernel-plans -p convert-loop-to-tt 2>&1 >/dev/null | filecheck %s --check-prefix=CPU
// RUN: fx-opt %s --device a100 -p convert-loop-to-tt,convert-buffer-to-host -t triton | filecheck %s --check-prefix=PY
// RUN: fx-opt %s --device h100 -p convert-loop-to-tt | filecheck %s --check-prefix=IR

// Each kernel's plan and the estimate behind it (strategy/plan.py), for the
// device named. 64 rows of 1024 f32, summed: on the H100 four rows a program
// (16 programs; one a program would gain under 10 %); on the A100's slower
// clock a program's four rows of arithmetic weigh more, and one row a
// program wins; the interpreter never spreads rows over more programs. A
// transposing copy takes a 2-D tile on every device, estimated at each one's
// bandwidth.

// H100:      convert-loop-to-tt: plans for h100: 132 SMs, 3.35 TB/s, L2 50 MiB
// H100-NEXT:   @coil_s_0: reduction rows, persistent [XBLOCK 4, RBLOCK 1024], 8 warps: 0.262 MB, {{.*}} us latency-bound, 16 programs
// H100-NEXT:   @coil_t_1: pointwise 2-D [YBLOCK 32, XBLOCK 32], 4 warps: 0.524 MB, {{.*}} us {{.*}}-bound, 64 programs

// A100:      convert-loop-to-tt: plans for a100: 108 SMs, 2.00 TB/s, L2 40 MiB
// A100-NEXT:   @coil_s_0: reduction rows, persistent [XBLOCK 1, RBLOCK 1024], 4 warps: {{.*}}, 64 programs {{.*}}; 4 -> 1 rows a program
// A100-NEXT:   @coil_t_1: pointwise 2-D [YBLOCK 32, XBLOCK 32]

// CPU:       convert-loop-to-tt: plans for cpu-interpreter: 132 SMs, 3.35 TB/s, L2 50 MiB, serial
// CPU-NEXT:    @coil_s_0: reduction rows, persistent [XBLOCK 4, RBLOCK 1024]

// --device stamps the module with the target's properties; each kernel
// carries its plan.
// IR:        coil.target = {name = "h100"
// IR:        coil.plan = "reduction rows, persistent [XBLOCK 4, RBLOCK 1024]
// IR:        coil.plan = "pointwise 2-D [YBLOCK 32, XBLOCK 32]

// PY:        # plan: reduction rows, persistent [XBLOCK 1, RBLOCK 1024], 4 warps:
// PY-NEXT:   @triton.jit
// PY-NEXT:   def coil_s_0(

func.func @plans(%x: !buffer.buffer<[64, 1024], f32, device "cuda:0">, %y: !buffer.buffer<[256, 256], f32, device "cuda:0">) -> (!buffer.buffer<[64], f32, device "cuda:0">, !buffer.buffer<[256, 256], f32, device "cuda:0">) {
  %s = buffer.alloc : !buffer.buffer<[64], f32, device "cuda:0">
  loop.reduction sum [64] [1024] outs(%s : !buffer.buffer<[64], f32, device "cuda:0">) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[64, 1024], f32, device "cuda:0">
    loop.yield %0 : f32
  }
  %t = buffer.alloc : !buffer.buffer<[256, 256], f32, device "cuda:0">
  loop.pointwise [256, 256] outs(%t : !buffer.buffer<[256, 256], f32, device "cuda:0">) {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %y[i1, i0] : !buffer.buffer<[256, 256], f32, device "cuda:0">
    loop.yield %0 : f32
  }
  func.return %s, %t : !buffer.buffer<[64], f32, device "cuda:0">, !buffer.buffer<[256, 256], f32, device "cuda:0">
}
