// RUN: fx-opt %s -p memory-plan,convert-loop-to-tt,convert-buffer-to-host -t python | filecheck %s
// RUN: fx-opt %s -p memory-plan,convert-loop-to-tt,convert-buffer-to-host -t cpp | filecheck %s --check-prefix=CPP

// memory-plan's reuse is a host.reinterpret of a dead buffer (here the matmul's
// product mm, which ATen writes into a planned buffer and the relu overwrites
// in place): the wrapper drops the dead name at its last read, or it would
// hold the storage until the call returns (on the H100, ViT kept 12 attention
// products of 18.5 MB each alive so). A reuse with the dead buffer's own
// layout is the tensor itself, no new view.
// CHECK:      mm = empty_cpu((16, 16), (16, 1), torch.float32)
// CHECK-NEXT: torch.mm(x, x, out=mm)
// CHECK:      r = mm{{$}}
// CHECK:      coil_r_0_launch.run(1, 1, 1, stream, mm, r)
// CHECK-NEXT: del mm
// CPP:        coil::call_op(op_aten_mm_out(), {x, x, mm});
// CPP:        at::Tensor r = mm.as_strided({16, 16}, {16, 1}, 0);
// CPP-NEXT:   coil_r_0.launch(
// CPP-NEXT:   mm.reset();
func.func @extern_results(%x: !buffer.buffer<[16, 16], f32>) -> !buffer.buffer<[16, 16], f32> {
  %mm = buffer.extern "aten.mm.default" (%x, %x) : (!buffer.buffer<[16, 16], f32>, !buffer.buffer<[16, 16], f32>) -> (!buffer.buffer<[16, 16], f32>) {
  ^bb0(%a: !aten.tensor<[16, 16], f32>, %b: !aten.tensor<[16, 16], f32>):
    %m = aten.mm.default(%a, %b) : !aten.tensor<[16, 16], f32>
    buffer.yield %m : !aten.tensor<[16, 16], f32>
  }
  %r = buffer.alloc : !buffer.buffer<[16, 16], f32>
  loop.pointwise [16, 16] outs(%r : !buffer.buffer<[16, 16], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %mm[i0, i1] : !buffer.buffer<[16, 16], f32>
    %z = arith.constant 0.0 : f32
    %w = arith.maximumf %v, %z : f32
    loop.yield %w : f32
  }
  %e = buffer.alloc : !buffer.buffer<[16, 16], f32>
  loop.pointwise [16, 16] outs(%e : !buffer.buffer<[16, 16], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %r[i1, i0] : !buffer.buffer<[16, 16], f32>
    %w = math.exp %v : f32
    loop.yield %w : f32
  }
  func.return %e : !buffer.buffer<[16, 16], f32>
}
