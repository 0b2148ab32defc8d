// RUN: fx-opt %s --device h200 --print-kernel-plans -p convert-loop-to-tt 2>&1 >/dev/null | filecheck %s
// RUN: fx-opt %s --device h200 --print-kernel-plans -p 'convert-loop-to-tt{xblock=64}' 2>&1 >/dev/null | filecheck %s --check-prefix=X64
// RUN: fx-opt %s --device h200 --print-kernel-plans -p 'convert-loop-to-tt{xblock=1}' 2>&1 >/dev/null | filecheck %s --check-prefix=X1

// A window reduced in registers, one output a lane (kernel_group's unrolled
// windows): the partials of a split mean over 2000 x 3000, 25 chunks, when its
// finish is a launch of its own. Inductor's 1024 outputs a program would be 3
// programs each reading 1024 windows; plan.window_tile takes 64 (47
// programs), estimated faster by more than the margin: the shape sweep
// (devlogs/30, H200) ran the mean 14.0 us with the finish at 1024, 11.6 at 64.
// CHECK: @coil_m_0: window of 25 unrolled, [XBLOCK 64], 4 warps: {{.*}}, 47 programs {{.*}}; 1024 -> 64 outputs a program ({{.*}} us at 1024)

// A given XBLOCK is kept (a merged split finish takes its stage 1's).
// X64: @coil_m_0: window of 25 unrolled, [XBLOCK 64], 4 warps: {{.*}}, 47 programs {{.*}}){{$}}

// One output a program (XBLOCK 1), the window is read across
// the lanes of a [XBLOCK, RBLOCK] tile instead of one after another in one
// lane: a row sum of 8 x 100003 f32 in 25 chunks ran 9.0 us with its finish
// unrolled at XBLOCK 1, 8.5 as a [1, 32] tile (devlogs/30, H200).
// X1: @coil_m_0: reduction outer, persistent [XBLOCK 1, RBLOCK 32], 4 warps
func.func @finish(%p: !buffer.buffer<[25, 3000], f32, device "cuda:0">) -> !buffer.buffer<[3000], f32, device "cuda:0"> {
  %m = buffer.alloc : !buffer.buffer<[3000], f32, device "cuda:0">
  loop.reduction sum [3000] [25] outs(%m : !buffer.buffer<[3000], f32, device "cuda:0">) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %p[r0, i0] : !buffer.buffer<[25, 3000], f32, device "cuda:0">
    loop.yield %0 : f32
  }
  func.return %m : !buffer.buffer<[3000], f32, device "cuda:0">
}
