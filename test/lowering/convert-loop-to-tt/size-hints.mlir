// RUN: fx-opt %s -p convert-loop-to-tt --split-input-file | filecheck %s

// The plan of a kernel over symbolic sizes is estimated at the example sizes
// the function carries (coil.size_hints, from Dynamo's ShapeEnv): 64 rows of
// 100000 points are 64 programs, latency-bound.

// CHECK-LABEL: tt.func public @coil_out_0(
// CHECK-SAME: coil.plan = "reduction inner rows, looped [XBLOCK 1, RBLOCK 2048], 8 warps: 25.6 MB, {{.*}} 64 programs
func.func @hinted(%x: !buffer.buffer<[s0, s1], f32>) -> !buffer.buffer<[s0], f32> attributes {coil.size_hints = {s0 = 64 : i64, s1 = 100000 : i64}} {
  %out = buffer.alloc : !buffer.buffer<[s0], f32>
  loop.reduction sum [s0] [s1] outs(%out : !buffer.buffer<[s0], f32>) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[s0, s1], f32>
    loop.yield %0 : f32
  }
  func.return %out : !buffer.buffer<[s0], f32>
}

// -----

// Without hints (IR written by hand) a symbol counts as plan.SIZE_HINT (4096).

// CHECK-LABEL: tt.func public @coil_out_0(
// CHECK-SAME: coil.plan = "reduction inner rows, looped [XBLOCK 1, RBLOCK 2048], 8 warps: 67.1 MB, {{.*}} 4096 programs
func.func @unhinted(%x: !buffer.buffer<[s0, s1], f32>) -> !buffer.buffer<[s0], f32> {
  %out = buffer.alloc : !buffer.buffer<[s0], f32>
  loop.reduction sum [s0] [s1] outs(%out : !buffer.buffer<[s0], f32>) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[s0, s1], f32>
    loop.yield %0 : f32
  }
  func.return %out : !buffer.buffer<[s0], f32>
}
