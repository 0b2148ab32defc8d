// RUN: fx-opt %s -p 'loop-split-reduction,loop-fuse,loop-simplify-indexing,cse,dce,bufferize,memory-plan,convert-loop-to-tt,convert-buffer-to-host' -t python | filecheck %s
// RUN: fx-opt %s -p 'loop-split-reduction,loop-fuse,loop-simplify-indexing,cse,dce,bufferize,memory-plan,convert-loop-to-tt{split-finish=false},convert-buffer-to-host' -t python | filecheck %s --check-prefix=TWO

// x.sum(0) of a 32768 x 2048 matrix: unsplit, one kernel of 64 programs, each
// looping over all 32768 rows. Split (the strategy's estimate; the shape sweep
// measured 16, 64 and 128 chunks within 3 % on an H200): 32 chunks of 1024
// rows in 2048 programs of the outer-reduction tile [32 columns, 16 rows]
// (consecutive columns, looping over the chunk's rows), each writing its
// partials; the last of the 32 programs of each of the 64 column tiles to
// arrive (a counter per tile in the module's semaphores) then reduces that
// tile's [32, 32] partials, read past L1 whole, and resets its counter: one
// launch.
// CHECK-LABEL: def coil_s_0(in_ptr0, out_ptr0, out_ptr1, sem_ptr):
// CHECK:           xoffset = pid * 32
// CHECK:           for roffset in range(0, 1024, 16):
// CHECK:           tl.store(
// CHECK:           tile = {{.*}} % 64
// CHECK-NEXT:      [[N:tmp[0-9]+]] = tl.num_programs(0)
// CHECK-NEXT:      [[ARRIVALS:tmp[0-9]+]] = [[N]] // 64
// CHECK-NEXT:      tl.debug_barrier()
// CHECK-NEXT:      sem = sem_ptr + tile
// CHECK-NEXT:      arrived = tl.atomic_add(sem, tl.full([], 1, tl.int32), sem="acq_rel", scope="gpu")
// CHECK-NEXT:      [[LAST:tmp[0-9]+]] = [[ARRIVALS]] - 1
// CHECK-NEXT:      [[IS_LAST:tmp[0-9]+]] = arrived == [[LAST]]
// CHECK-NEXT:      if [[IS_LAST]]:
// CHECK-NEXT:          tl.debug_barrier()
// CHECK-NEXT:          xoffset_1 = tile * 32
// CHECK-NOT:           for roffset_1
// CHECK:               tl.load({{.*}}, cache_modifier=".cg")
// CHECK:               tl.sum(
// CHECK:               tl.store(
// CHECK-NEXT:          tl.store(sem, tl.full([], 0, tl.int32))
// CHECK-NOT:       @triton.jit
// CHECK:           _sems = Semaphores("cpu", 64)
// CHECK-LABEL: def call(args):
// CHECK:           s_part = empty_cpu((32, 2048), (2048, 1), torch.float32)
// CHECK-NEXT:      stream = raw_stream("cpu")
// CHECK-NEXT:      sem = _sems.on(stream)
// CHECK-NEXT:      s = empty_cpu((2048,), (1,), torch.float32)
// CHECK-NEXT:      coil_s_0_launch.run(2048, 1, 1, stream, x, s_part, s, sem)
// CHECK-NOT:       _launch.run(

// Without split-finish: stage 2 is its own kernel of 32 programs, each
// reading its 64 columns' 32 partials whole.
// TWO-LABEL: def coil_s_part_0(in_ptr0, out_ptr0):
// TWO:           xoffset = pid * 32
// TWO:           for roffset in range(0, 1024, 16):
// TWO:           tl.sum(
// TWO-LABEL: def coil_s_1(in_ptr0, out_ptr0):
// TWO:           xoffset = pid * 64
// TWO-NOT:       for roffset
// TWO-LABEL: def call(args):
// TWO:           s_part = empty_cpu((32, 2048), (2048, 1), torch.float32)
// TWO:           coil_s_part_0_launch.run(2048, 1, 1, stream, x, s_part)
// TWO:           coil_s_1_launch.run(32, 1, 1, stream, s_part, s)
func.func @column(%x: !buffer.buffer<[32768, 2048], f32>) -> !loop.tensor<[2048], f32> {
  %s = loop.reduction sum [2048] [32768] : !loop.tensor<[2048], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[32768, 2048], f32>
    loop.yield %0 : f32
  }
  func.return %s : !loop.tensor<[2048], f32>
}
