// RUN: fx-opt %s -p 'buffer-hoist-constants{inference=true},memory-plan,convert-loop-to-tt,convert-buffer-to-host' -t python | filecheck %s
// RUN: not fx-opt %s -p 'buffer-hoist-constants{inference=true},memory-plan,convert-loop-to-tt,convert-buffer-to-host' -t cpp 2>&1 | filecheck %s --check-prefix=CPP

// A weight scaled before a product (a nest the product's extern reads, so it
// is stored on every call) reads the parameter alone: buffer-hoist-constants
// moves it into @forward_constants, printed as constants(args) with its own
// kernel launch and no input checks (call checks them first). A
// ConstantCache runs it once per version of the weight (call's input 0); call
// takes its result from the cache after checking its own three inputs.

// CHECK:      from coil.runtime.wrapper import ConstantCache
// CHECK:      def constants(args):
// CHECK-NEXT:     if len(args) != 1:
// CHECK-NEXT:         raise CoilInputError(f"constants takes 1 inputs, got {len(args)}")
// CHECK-NEXT:     w, = args
// CHECK-NEXT:     args.clear()
// CHECK-NEXT:     mul = empty_cpu((24, 16), (16, 1), torch.float32)
// CHECK:          coil_mul_1_launch.run(1, 1, 1, stream, w, mul)
// CHECK:          return (mul,)
// CHECK:      _constants = ConstantCache(constants, (0,))
// CHECK:      def call(args):
// CHECK-NEXT:     if len(args) != 3:
// CHECK-NEXT:         raise CoilInputError(f"call takes 3 inputs, got {len(args)}")
// CHECK-NEXT:     w_1, x, b = args
// CHECK:          _inputs.learn((), w_1, x, b)
// CHECK-NEXT:     mul_1, = _constants.get((w_1,))
// CHECK-NEXT:     del w_1
// CHECK-NEXT:     permute = reinterpret_tensor(mul_1, (16, 24), (1, 16), 0)
// CHECK:          torch.mm(x, permute, out=mm)

// CPP: -t cpp does not run a constants function (buffer-hoist-constants)

func.func @forward(%w: !buffer.buffer<[24, 16], f32> {coil.static, coil.aligned}, %x: !buffer.buffer<[5, 16], f32>, %b: !buffer.buffer<[24], f32> {coil.static, coil.aligned}) -> !buffer.buffer<[5, 24], f32> {
  %mul = buffer.alloc : !buffer.buffer<[24, 16], f32>
  loop.pointwise [24, 16] outs(%mul : !buffer.buffer<[24, 16], f32>) {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %w[i0, i1] : !buffer.buffer<[24, 16], f32>
    %1 = arith.constant 2.000000e+00 : f32
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  %permute = buffer.view %mul : !buffer.buffer<[24, 16], f32> -> !buffer.buffer<[16, 24], f32, strides [1, 16]>
  %mm = buffer.extern "aten.mm.default" (%x, %permute) : (!buffer.buffer<[5, 16], f32>, !buffer.buffer<[16, 24], f32, strides [1, 16]>) -> (!buffer.buffer<[5, 24], f32>) {
  ^bb0(%xa: !aten.tensor<[5, 16], f32>, %pa: !aten.tensor<[16, 24], f32, strides [1, 16]>):
    %m = aten.mm.default(%xa, %pa) : !aten.tensor<[5, 24], f32>
    buffer.yield %m : !aten.tensor<[5, 24], f32>
  }
  %relu = buffer.alloc : !buffer.buffer<[5, 24], f32>
  loop.pointwise [5, 24] outs(%relu : !buffer.buffer<[5, 24], f32>) {
  ^bb0(%i0: index, %i1: index):
    %3 = loop.load %mm[i0, i1] : !buffer.buffer<[5, 24], f32>
    %4 = loop.load %b[i1] : !buffer.buffer<[24], f32>
    %5 = arith.addf %3, %4 : f32
    loop.yield %5 : f32
  }
  func.return %relu : !buffer.buffer<[5, 24], f32>
}
