// RUN: fx-opt %s -p memory-plan,convert-loop-to-tt,convert-buffer-to-host -t python | filecheck %s

// An ATen call passes no keyword argument that is its callee's default
// (addmm's beta and alpha: parsing them costs host time on every call); one
// that differs is passed.
// CHECK-LABEL: def call(args):
// CHECK:      torch.addmm(b, x, x, out=a){{$}}
// CHECK:      torch.addmm(b, x, a, beta=2, out=c){{$}}
func.func @other_layout(%x: !buffer.buffer<[16, 16], f32>, %b: !buffer.buffer<[16], f32>) -> !buffer.buffer<[256], f32> {
  %a = buffer.extern "aten.addmm.default" (%b, %x, %x) : (!buffer.buffer<[16], f32>, !buffer.buffer<[16, 16], f32>, !buffer.buffer<[16, 16], f32>) -> (!buffer.buffer<[16, 16], f32>) {
  ^bb0(%bb: !aten.tensor<[16], f32>, %p: !aten.tensor<[16, 16], f32>, %q: !aten.tensor<[16, 16], f32>):
    %m = aten.addmm.default(%bb, %p, %q, beta = 1, alpha = 1) : !aten.tensor<[16, 16], f32>
    buffer.yield %m : !aten.tensor<[16, 16], f32>
  }
  %c = buffer.extern "aten.addmm.default" (%b, %x, %a) : (!buffer.buffer<[16], f32>, !buffer.buffer<[16, 16], f32>, !buffer.buffer<[16, 16], f32>) -> (!buffer.buffer<[16, 16], f32>) {
  ^bb0(%bb: !aten.tensor<[16], f32>, %p: !aten.tensor<[16, 16], f32>, %q: !aten.tensor<[16, 16], f32>):
    %m = aten.addmm.default(%bb, %p, %q, beta = 2, alpha = 1) : !aten.tensor<[16, 16], f32>
    buffer.yield %m : !aten.tensor<[16, 16], f32>
  }
  %s = buffer.alloc : !buffer.buffer<[256], f32>
  loop.pointwise [256] outs(%s : !buffer.buffer<[256], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %c[i0 floordiv 16, i0 mod 16] : !buffer.buffer<[16, 16], f32>
    %z = arith.constant 0.0 : f32
    %w = arith.maximumf %v, %z : f32
    loop.yield %w : f32
  }
  func.return %s : !buffer.buffer<[256], f32>
}
