// RUN: fx-opt %s -p convert-loop-to-tt --split-input-file | filecheck %s

// Kernel names come from the name hints of what a kernel writes
// (loop_to_tt/kernel.py: kernel_name). AOTAutograd's placeholder names say
// which input of one graph a value is, not what the kernel does: a copy of
// weight `arg16_1` into NHWC (bufferize names it `arg16_1_to_nhwc`) is
// `coil_to_nhwc_0`, the same copy of every layer's weight is the same name
// (and, deduplicated, one kernel); a nest writing only `primals_3` falls back
// to what it is.

// CHECK: tt.func public @coil_to_nhwc_0(
// CHECK: tt.func public @coil_pointwise_1(
// CHECK: tt.func public @coil_relu_2(

func.func @names(%arg16_1: !buffer.buffer<[8, 4, 3, 3], f32>, %primals_3: !buffer.buffer<[16], f32>) -> (!buffer.buffer<[8, 4, 3, 3], f32, strides [36, 1, 12, 4]>, !buffer.buffer<[16], f32>, !buffer.buffer<[16], f32>) {
  %arg16_1_to_nhwc = buffer.alloc : !buffer.buffer<[8, 4, 3, 3], f32, strides [36, 1, 12, 4]>
  loop.pointwise [8, 4, 3, 3] outs(%arg16_1_to_nhwc : !buffer.buffer<[8, 4, 3, 3], f32, strides [36, 1, 12, 4]>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %a = loop.load %arg16_1[i0, i1, i2, i3] : !buffer.buffer<[8, 4, 3, 3], f32>
    loop.yield %a : f32
  }
  %primals_3_1 = buffer.alloc : !buffer.buffer<[16], f32>
  loop.pointwise [16] outs(%primals_3_1 : !buffer.buffer<[16], f32>) {
  ^bb0(%i0: index):
    %b = loop.load %primals_3[i0] : !buffer.buffer<[16], f32>
    %c = arith.addf %b, %b : f32
    loop.yield %c : f32
  }
  %relu_4 = buffer.alloc : !buffer.buffer<[16], f32>
  loop.pointwise [16] outs(%relu_4 : !buffer.buffer<[16], f32>) {
  ^bb0(%i0: index):
    %d = loop.load %primals_3[i0] : !buffer.buffer<[16], f32>
    %e = arith.mulf %d, %d : f32
    loop.yield %e : f32
  }
  func.return %arg16_1_to_nhwc, %primals_3_1, %relu_4 : !buffer.buffer<[8, 4, 3, 3], f32, strides [36, 1, 12, 4]>, !buffer.buffer<[16], f32>, !buffer.buffer<[16], f32>
}
