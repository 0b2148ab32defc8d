// RUN: fx-opt %s -p 'loop-split-reduction,loop-fuse,loop-simplify-indexing,cse,dce,bufferize,memory-plan,convert-loop-to-tt,convert-buffer-to-host' -t python | filecheck %s

// x.sum(0) of a 32768 x 2048 matrix: unsplit, one kernel of 64 programs, each
// looping over all 32768 rows. Split: 128 chunks of 256 rows in 4096 programs
// of the outer-reduction tile [64 columns, 8 rows] (consecutive columns,
// looping over the chunk's rows), then 256 programs finish the [128, 2048]
// partials.

// CHECK-LABEL: def coil_s_part_0(in_ptr0, out_ptr0):
// CHECK:           xoffset = pid * 64
// CHECK:           rbase = tl.expand_dims(tmp{{[0-9]+}}, 0)
// CHECK:           for roffset in range(0, 256, 8):
// CHECK:           tl.sum(
// CHECK-LABEL: def coil_s_1(in_ptr0, out_ptr0):
// CHECK:           for roffset in range(0, 128, 64):
// CHECK-LABEL: def call(args):
// CHECK:           s_part = empty_cpu((128, 2048), (2048, 1), torch.float32)
// CHECK:           coil_s_part_0_launch.run(4096, 1, 1, stream, x, s_part)
// CHECK:           coil_s_1_launch.run(256, 1, 1, stream, s_part, s)
func.func @column(%x: !buffer.buffer<[32768, 2048], f32>) -> !loop.tensor<[2048], f32> {
  %s = loop.reduction sum [2048] [32768] : !loop.tensor<[2048], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[32768, 2048], f32>
    loop.yield %0 : f32
  }
  func.return %s : !loop.tensor<[2048], f32>
}
