// RUN: fx-opt %s --split-input-file -p 'loop-split-reduction,loop-fuse,loop-simplify-indexing,cse,dce,bufferize,memory-plan,convert-loop-to-tt,convert-buffer-to-host' -t python | filecheck %s

// The split-reduction finish (lowering/loop_to_tt/split_finish.py) where it
// applies and where it does not; split-reduction.mlir has the column sum.

// A full sum of 4096 x 1024: 256 programs each reduce a chunk of 16 x 1024
// elements (the strategy's chunk: fewer chunks queue less on the one counter,
// plan.ATOMIC_S); one counter (every program counts), and the last to arrive
// reduces the 256 partials in a persistent row.
// CHECK-LABEL: def coil_s_0(in_ptr0, out_ptr0, out_ptr1, sem_ptr):
// CHECK:           sem = sem_ptr + 0
// CHECK-NEXT:      arrived = tl.atomic_add(sem, tl.full([], 1, tl.int32), sem="acq_rel", scope="gpu")
// CHECK:           if {{tmp[0-9]+}}:
// CHECK-NEXT:          tl.debug_barrier()
// CHECK:               tl.load({{.*}}, cache_modifier=".cg")
// CHECK:               tl.sum(
// CHECK:               tl.store(sem, tl.full([], 0, tl.int32))
// CHECK:           _sems = Semaphores("cpu", 1)
// CHECK:           coil_s_0_launch.run(256, 1, 1, stream, x, s_part, s, sem)
// CHECK-NOT:       _launch.run(
func.func @full(%x: !buffer.buffer<[4096, 1024], f32>) -> !loop.tensor<[], f32> {
  %s = loop.reduction sum [] [4096, 1024] : !loop.tensor<[], f32> {
  ^bb0(%r0: index, %r1: index):
    %0 = loop.load %x[r0, r1] : !buffer.buffer<[4096, 1024], f32>
    loop.yield %0 : f32
  }
  func.return %s : !loop.tensor<[], f32>
}

// -----

// 2000 columns are not a whole number of stage 1's 32-column tiles: a tile
// would hold the ends of two chunks, so stage 2 stays a kernel of its own
// (32 chunks of 1024 rows: 2000 programs).
// CHECK-LABEL: def coil_s_part_0(in_ptr0, out_ptr0):
// CHECK-LABEL: def coil_s_1(in_ptr0, out_ptr0):
// CHECK-NOT:   Semaphores(
// CHECK:       coil_s_part_0_launch.run(2000, 1, 1, stream, x, s_part)
// CHECK:       coil_s_1_launch.run(32, 1, 1, stream, s_part, s)
func.func @ragged(%x: !buffer.buffer<[32768, 2000], f32>) -> !loop.tensor<[2000], f32> {
  %s = loop.reduction sum [2000] [32768] : !loop.tensor<[2000], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[32768, 2000], f32>
    loop.yield %0 : f32
  }
  func.return %s : !loop.tensor<[2000], f32>
}
