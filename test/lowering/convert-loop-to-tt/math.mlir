// RUN: fx-opt %s -p convert-loop-to-tt --split-input-file | filecheck %s

// Core math ops stay math ops on blocks, on any device.

// CHECK-LABEL: tt.func public @coil_r_0
// CHECK:         %[[V:.*]] = tt.load
// CHECK-NEXT:    %[[S:.*]] = math.sqrt %[[V]] : tensor<1024xf32>
// CHECK-NEXT:    %{{.*}} = math.erf %[[S]] : tensor<1024xf32>
// CHECK:       func.func @core
func.func @core(%x: !buffer.buffer<[4096], f32>) -> !buffer.buffer<[4096], f32> {
  %r = buffer.alloc : !buffer.buffer<[4096], f32>
  loop.pointwise [4096] outs(%r : !buffer.buffer<[4096], f32>) {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !buffer.buffer<[4096], f32>
    %b = math.sqrt %a : f32
    %c = math.erf %b : f32
    loop.yield %c : f32
  }
  func.return %r : !buffer.buffer<[4096], f32>
}

// -----

// On CPU (Triton's interpreter, no libdevice) tanh is expanded into core ops,
// computed in f64 and rounded back to f32.

// CHECK-LABEL: tt.func public @coil_r_0
// CHECK:         %[[V:.*]] = tt.load
// CHECK-NEXT:    %[[W:.*]] = arith.extf %[[V]] : tensor<1024xf32> to tensor<1024xf64>
// CHECK-NOT:     tt.extern_elementwise
// CHECK:         math.exp %{{.*}} : tensor<1024xf64>
// CHECK:         tt.bitcast %[[W]] : tensor<1024xf64> -> tensor<1024xi64>
// CHECK:         %[[R:.*]] = arith.truncf %{{.*}} : tensor<1024xf64> to tensor<1024xf32>
// CHECK-NEXT:    tt.splat %out_ptr0
// CHECK:         tt.store %{{.*}}, %[[R]]
// CHECK:       func.func @tanh_cpu
func.func @tanh_cpu(%x: !buffer.buffer<[4096], f32>) -> !buffer.buffer<[4096], f32> {
  %r = buffer.alloc : !buffer.buffer<[4096], f32>
  loop.pointwise [4096] outs(%r : !buffer.buffer<[4096], f32>) {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !buffer.buffer<[4096], f32>
    %b = math.tanh %a : f32
    loop.yield %b : f32
  }
  func.return %r : !buffer.buffer<[4096], f32>
}

// -----

// On CUDA the same ops call libdevice, named as triton.language.extra.libdevice
// names them (math.powf is libdevice.pow, math.roundeven libdevice.rint).

// CHECK-LABEL: tt.func public @coil_r_0
// CHECK:         %[[X:.*]] = tt.load
// CHECK:         %[[Y:.*]] = tt.load
// CHECK:         %[[T:.*]] = tt.extern_elementwise %[[X]] {libname = "libdevice", symbol = "tanh"} : (tensor<1024xf32>) -> tensor<1024xf32>
// CHECK:         %[[P:.*]] = tt.extern_elementwise %[[T]], %[[Y]] {libname = "libdevice", symbol = "pow"} : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
// CHECK:         tt.extern_elementwise %[[P]] {libname = "libdevice", symbol = "rint"} : (tensor<1024xf32>) -> tensor<1024xf32>
// CHECK-NOT:     arith.extf
// CHECK:       func.func @cuda
func.func @cuda(%x: !buffer.buffer<[4096], f32, device "cuda:0">, %y: !buffer.buffer<[4096], f32, device "cuda:0">) -> !buffer.buffer<[4096], f32, device "cuda:0"> {
  %r = buffer.alloc : !buffer.buffer<[4096], f32, device "cuda:0">
  loop.pointwise [4096] outs(%r : !buffer.buffer<[4096], f32, device "cuda:0">) {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !buffer.buffer<[4096], f32, device "cuda:0">
    %e = loop.load %y[i0] : !buffer.buffer<[4096], f32, device "cuda:0">
    %b = math.tanh %a : f32
    %c = math.powf %b, %e : f32
    %d = math.roundeven %c : f32
    loop.yield %d : f32
  }
  func.return %r : !buffer.buffer<[4096], f32, device "cuda:0">
}

// -----

// math.ipowi has no libdevice function: square-and-multiply on every device.

// CHECK-LABEL: tt.func public @coil_r_0
// CHECK-NOT:     tt.extern_elementwise
// CHECK:         arith.shrsi %{{.*}} : tensor<1024xi32>
// CHECK:         arith.muli %{{.*}} : tensor<1024xi32>
// CHECK:       func.func @ipowi_cuda
func.func @ipowi_cuda(%x: !buffer.buffer<[4096], i32, device "cuda:0">, %y: !buffer.buffer<[4096], i32, device "cuda:0">) -> !buffer.buffer<[4096], i32, device "cuda:0"> {
  %r = buffer.alloc : !buffer.buffer<[4096], i32, device "cuda:0">
  loop.pointwise [4096] outs(%r : !buffer.buffer<[4096], i32, device "cuda:0">) {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !buffer.buffer<[4096], i32, device "cuda:0">
    %n = loop.load %y[i0] : !buffer.buffer<[4096], i32, device "cuda:0">
    %b = math.ipowi %a, %n : i32
    loop.yield %b : i32
  }
  func.return %r : !buffer.buffer<[4096], i32, device "cuda:0">
}
