// RUN: fx-opt %s | filecheck %s
// RUN: COIL_ROUNDTRIP | filecheck %s
// RUN: COIL_GENERIC_ROUNDTRIP | fx-opt | filecheck %s

// Round trips of every buffer op and of the buffer type: static and symbolic
// sizes, strides, offsets and devices; the memory plan's reuse/dealloc; ATen
// extern calls at the tensor and at the buffer level.

// Row-major strides, offset 0 and the cpu device are defaults and not printed.
// CHECK-LABEL: func.func @types
// CHECK-SAME: (%a: !buffer.buffer<[4, 8], f32>, %b: !buffer.buffer<[s0, 2*s1 + 1], f16>, %c: !buffer.buffer<[], i64>, %d: !buffer.buffer<[8, 4], f32, strides [1, 8], offset 2, device "cuda:0">, %e: !buffer.buffer<[s0, s1], bf16, strides [1, s0], offset s0*s1>, %f: !buffer.buffer<[3], i1, device "cuda:1">, %g: !buffer.buffer<[4, 8], f32>, %h: !buffer.buffer<[4, 1], f32>)
func.func @types(%a: !buffer.buffer<[4, 8], f32>, %b: !buffer.buffer<[s0, 2*s1 + 1], f16>,
                 %c: !buffer.buffer<[], i64>,
                 %d: !buffer.buffer<[8, 4], f32, strides [1, 8], offset 2, device "cuda:0">,
                 %e: !buffer.buffer<[s0, s1], bf16, strides [1, s0], offset s0*s1>,
                 %f: !buffer.buffer<[3], i1, device "cuda:1">,
                 %g: !buffer.buffer<[4, 8], f32, strides [8, 1], offset 0, device "cpu">,
                 %h: !buffer.buffer<[4, 1], f32, strides [1, 1]>) {
  func.return
}

// CHECK-LABEL: func.func @memory
func.func @memory(%x: !buffer.buffer<[s0, 8], f32, device "cuda:0">) -> !buffer.buffer<[8, s0], f32, strides [1, 8], device "cuda:0"> {
  // CHECK:      %a = buffer.alloc : !buffer.buffer<[s0, 8], f32, device "cuda:0">
  // CHECK-NEXT: %b = buffer.alloc : !buffer.buffer<[4, s0 + 1], i64, strides [1, 4], offset 3>
  // CHECK-NEXT: %t = buffer.view %x : !buffer.buffer<[s0, 8], f32, device "cuda:0"> -> !buffer.buffer<[8, s0], f32, strides [1, 8], device "cuda:0">
  // CHECK-NEXT: %row = buffer.view %x : !buffer.buffer<[s0, 8], f32, device "cuda:0"> -> !buffer.buffer<[8], f32, offset 8, device "cuda:0">
  // CHECK-NEXT: buffer.dealloc %a : !buffer.buffer<[s0, 8], f32, device "cuda:0">
  // CHECK-NEXT: %c = buffer.reuse %b : !buffer.buffer<[4, s0 + 1], i64, strides [1, 4], offset 3> -> !buffer.buffer<[s0 + 1, 4], i64>
  // CHECK-NEXT: buffer.dealloc %c : !buffer.buffer<[s0 + 1, 4], i64>
  %a = buffer.alloc : !buffer.buffer<[s0, 8], f32, device "cuda:0">
  %b = buffer.alloc : !buffer.buffer<[4, s0 + 1], i64, strides [1, 4], offset 3>
  %t = buffer.view %x : !buffer.buffer<[s0, 8], f32, device "cuda:0"> -> !buffer.buffer<[8, s0], f32, strides [1, 8], device "cuda:0">
  %row = buffer.view %x : !buffer.buffer<[s0, 8], f32, device "cuda:0"> -> !buffer.buffer<[8], f32, offset 8, device "cuda:0">
  buffer.dealloc %a : !buffer.buffer<[s0, 8], f32, device "cuda:0">
  %c = buffer.reuse %b : !buffer.buffer<[4, s0 + 1], i64, strides [1, 4], offset 3> -> !buffer.buffer<[s0 + 1, 4], i64>
  buffer.dealloc %c : !buffer.buffer<[s0 + 1, 4], i64>
  func.return %t : !buffer.buffer<[8, s0], f32, strides [1, 8], device "cuda:0">
}

// The ATen fallback: the region is the aten op over block arguments typed as
// ATen sees them; the quoted name is the called overload.
// CHECK-LABEL: func.func @extern
func.func @extern(%a: !buffer.buffer<[s0, 8], f32>, %b: !buffer.buffer<[8, 2], f32, strides [1, 8]>, %v: !loop.tensor<[s0, 8], f32>) {
  // CHECK:      %mm = buffer.extern "aten.mm.default" (%a, %b) : (!buffer.buffer<[s0, 8], f32>, !buffer.buffer<[8, 2], f32, strides [1, 8]>) -> (!buffer.buffer<[s0, 2], f32>) {
  // CHECK-NEXT: ^bb0(%x: !aten.tensor<[s0, 8], f32>, %y: !aten.tensor<[8, 2], f32, strides [1, 8]>):
  // CHECK-NEXT:   %r = aten.mm.default(%x, %y) : !aten.tensor<[s0, 2], f32>
  // CHECK-NEXT:   buffer.yield %r : !aten.tensor<[s0, 2], f32>
  // CHECK-NEXT: }
  %mm = buffer.extern "aten.mm.default" (%a, %b) : (!buffer.buffer<[s0, 8], f32>, !buffer.buffer<[8, 2], f32, strides [1, 8]>) -> (!buffer.buffer<[s0, 2], f32>) {
  ^bb0(%x: !aten.tensor<[s0, 8], f32>, %y: !aten.tensor<[8, 2], f32, strides [1, 8]>):
    %r = aten.mm.default(%x, %y) : !aten.tensor<[s0, 2], f32>
    buffer.yield %r : !aten.tensor<[s0, 2], f32>
  }
  // Before bufferize: loop tensors in and out. Scalar constants live in the
  // region; the printed name is the region's (first non-constant) op.
  // CHECK:      %mul = buffer.extern "aten.mul.Tensor" (%v) : (!loop.tensor<[s0, 8], f32>) -> (!loop.tensor<[s0, 8], f32>) {
  // CHECK-NEXT: ^bb0(%[[X:.*]]: !aten.tensor<[s0, 8], f32>):
  // CHECK-NEXT:   %k = aten.constant 2.0 : f64
  // CHECK-NEXT:   %[[M:.*]] = aten.mul.Tensor(%[[X]], %k) : !aten.tensor<[s0, 8], f32>
  // CHECK-NEXT:   buffer.yield %[[M]] : !aten.tensor<[s0, 8], f32>
  // CHECK-NEXT: }
  %mul = buffer.extern "aten.mul.Tensor" (%v) : (!loop.tensor<[s0, 8], f32>) -> (!loop.tensor<[s0, 8], f32>) {
  ^bb0(%x: !aten.tensor<[s0, 8], f32>):
    %k = aten.constant 2.0 : f64
    %m = aten.mul.Tensor(%x, %k) : !aten.tensor<[s0, 8], f32>
    buffer.yield %m : !aten.tensor<[s0, 8], f32>
  }
  // Several results.
  // CHECK:      %s, %i = buffer.extern "aten.sort.default" (%mul) : (!loop.tensor<[s0, 8], f32>) -> (!loop.tensor<[s0, 8], f32>, !loop.tensor<[s0, 8], i64>) {
  // CHECK-NEXT: ^bb0(%[[X:.*]]: !aten.tensor<[s0, 8], f32>):
  // CHECK-NEXT:   %values, %indices = aten.sort.default(%[[X]], dim = 1, descending = true) : (!aten.tensor<[s0, 8], f32>, !aten.tensor<[s0, 8], i64>)
  // CHECK-NEXT:   buffer.yield %values, %indices : !aten.tensor<[s0, 8], f32>, !aten.tensor<[s0, 8], i64>
  // CHECK-NEXT: }
  %s, %i = buffer.extern "aten.sort.default" (%mul) : (!loop.tensor<[s0, 8], f32>) -> (!loop.tensor<[s0, 8], f32>, !loop.tensor<[s0, 8], i64>) {
  ^bb0(%x: !aten.tensor<[s0, 8], f32>):
    %values, %indices = aten.sort.default(%x, dim = 1, descending = true) : (!aten.tensor<[s0, 8], f32>, !aten.tensor<[s0, 8], i64>)
    buffer.yield %values, %indices : !aten.tensor<[s0, 8], f32>, !aten.tensor<[s0, 8], i64>
  }
  // A call with no tensor result (an in-place op), printed with its name.
  // CHECK:      buffer.extern "aten.copy_.default" (%a, %v) : (!buffer.buffer<[s0, 8], f32>, !loop.tensor<[s0, 8], f32>) -> () {
  // CHECK-NEXT: ^bb0(%{{.*}}: !aten.tensor<[s0, 8], f32>, %{{.*}}: !aten.tensor<[s0, 8], f32>):
  // CHECK-NEXT:   %{{.*}} = aten.copy_.default(%{{.*}}, %{{.*}}) : !aten.tensor<[s0, 8], f32>
  // CHECK-NEXT:   buffer.yield
  // CHECK-NEXT: }
  buffer.extern "aten.copy_.default" (%a, %v) : (!buffer.buffer<[s0, 8], f32>, !loop.tensor<[s0, 8], f32>) -> () {
  ^bb0(%x: !aten.tensor<[s0, 8], f32>, %y: !aten.tensor<[s0, 8], f32>):
    %z = aten.copy_.default(%x, %y) : !aten.tensor<[s0, 8], f32>
    buffer.yield
  }
  func.return
}
