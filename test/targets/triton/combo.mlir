// RUN: fx-opt %s -p convert-loop-to-tt,host-combine-launches -t triton | filecheck %s
// RUN: fx-opt %s -p convert-loop-to-tt,host-combine-launches,convert-buffer-to-host -t python | filecheck %s --check-prefix=PY

// A combo kernel (host-combine-launches) prints as one @triton.jit function:
// each sub-kernel under an `if` on its range of program ids, its program id
// shifted to start at 0; the wrapper launches it once over both grids.

// CHECK:      # kind: combo
// CHECK:      def coil_combo_0(in_ptr0, out_ptr1, in_ptr2, out_ptr3):
// CHECK-NEXT:     pid = tl.program_id(0)
// CHECK-NEXT:     tmp0 = pid < 1
// CHECK-NEXT:     if tmp0:
// CHECK-NEXT:         xoffset = pid * 64
// CHECK:              tl.store
// CHECK:          tmp{{[0-9]+}} = pid >= 1
// CHECK-NEXT:     if tmp{{[0-9]+}}:
// CHECK-NEXT:         pid1 = pid - 1
// CHECK-NEXT:         xoffset_1 = pid1 * 1024
// CHECK:              tl.store
// CHECK-NOT:  def coil_

// PY:         coil_combo_0_launch.run(3, 1, 1, stream, a, exp, b, sqrt)
// PY-NOT:     _launch.run(
func.func @forward(%a: !buffer.buffer<[64], f32>, %b: !buffer.buffer<[2048], f32>) -> (!buffer.buffer<[64], f32>, !buffer.buffer<[2048], f32>) {
  %exp = buffer.alloc : !buffer.buffer<[64], f32>
  loop.pointwise [64] outs(%exp : !buffer.buffer<[64], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %a[i0] : !buffer.buffer<[64], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %sqrt = buffer.alloc : !buffer.buffer<[2048], f32>
  loop.pointwise [2048] outs(%sqrt : !buffer.buffer<[2048], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %b[i0] : !buffer.buffer<[2048], f32>
    %1 = math.sqrt %0 : f32
    loop.yield %1 : f32
  }
  func.return %exp, %sqrt : !buffer.buffer<[64], f32>, !buffer.buffer<[2048], f32>
}
