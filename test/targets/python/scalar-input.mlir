// RUN: fx-opt %s -p convert-loop-to-tt,convert-buffer-to-host -t python | filecheck %s
// RUN: fx-opt %s -p convert-loop-to-tt,convert-buffer-to-host -t cpp | filecheck %s --check-prefix=CPP

// A 0-d input traced on CUDA may arrive as a CPU tensor (cuDNN attention saves
// its philox seed and offset so for the backward): check_input accepts it and the
// wrapper moves it to the device before any kernel reads it.
// CHECK:      check_input("s", s, (), (), torch.int64, "cuda:0")
// CHECK:      _inputs.learn
// CHECK-NEXT: s = s.to("cuda:0")
// CHECK:      .run(1, 1, 1, stream, x, s, y)
// CPP:        coil::check_input("s", s, {}, {}, at::ScalarType::Long, at::Device(at::kCUDA, 0));
// CPP-NEXT:   s = s.to(at::Device(at::kCUDA, 0));
func.func @f(%x: !buffer.buffer<[4], f32, device "cuda:0">, %s: !buffer.buffer<[], i64, device "cuda:0">) -> !buffer.buffer<[4], f32, device "cuda:0"> {
  %y = buffer.alloc : !buffer.buffer<[4], f32, device "cuda:0">
  loop.pointwise [4] outs(%y : !buffer.buffer<[4], f32, device "cuda:0">) {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[4], f32, device "cuda:0">
    %1 = loop.load %s[] : !buffer.buffer<[], i64, device "cuda:0">
    %2 = arith.sitofp %1 : i64 to f32
    %3 = arith.addf %0, %2 : f32
    loop.yield %3 : f32
  }
  func.return %y : !buffer.buffer<[4], f32, device "cuda:0">
}
