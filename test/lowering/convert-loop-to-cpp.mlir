// RUN: fx-opt %s -p "convert-loop-to-cpp{combine=false}" --split-input-file | filecheck %s

// A pointwise nest over CPU buffers: a cpu.func holding the nest (its buffers
// the arguments, outs first in order of use, its static cost as a tt.func's),
// and a launch in its place.

// CHECK-LABEL: cpu.func @coil_cpp_exp_0(%exp: !buffer.buffer<[64, 64], f32>, %x: !buffer.buffer<[64, 64], f32>)
// CHECK-SAME:    attributes {coil.cost = "reads 16.0 KB, writes 16.0 KB, 1 loads, 1 ops, 3 body ops"}
// CHECK-NEXT:    loop.pointwise [64, 64] outs(%exp : !buffer.buffer<[64, 64], f32>)
// CHECK:           %[[A:.*]] = loop.load %x[i0, i1] : !buffer.buffer<[64, 64], f32>
// CHECK:           math.exp %[[A]] : f32
// CHECK:         cpu.return
// CHECK:       func.func @static
// CHECK-NEXT:    %[[OUT:.*]] = buffer.alloc
// CHECK-NEXT:    host.launch @coil_cpp_exp_0 grid [1, 1, 1] (%[[OUT]], %x : !buffer.buffer<[64, 64], f32>, !buffer.buffer<[64, 64], f32>)
// CHECK-NEXT:    func.return
func.func @static(%x: !buffer.buffer<[64, 64], f32>) -> !buffer.buffer<[64, 64], f32> {
  %exp = buffer.alloc : !buffer.buffer<[64, 64], f32>
  loop.pointwise [64, 64] outs(%exp : !buffer.buffer<[64, 64], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !buffer.buffer<[64, 64], f32>
    %b = math.exp %a : f32
    loop.yield %b : f32
  }
  func.return %exp : !buffer.buffer<[64, 64], f32>
}

// -----

// Size symbols (from ranges and strides) become index arguments with
// coil.symbol, sorted by name, and the launch's scalars.

// CHECK-LABEL: cpu.func @coil_cpp_add_0(%add: !buffer.buffer<[s0, s1], f32>, %x: !buffer.buffer<[s0, s1], f32, strides [2*s1, 1]>, %s0: index {coil.symbol = #coil.expr<s0>}, %s1: index {coil.symbol = #coil.expr<s1>})
// CHECK:       host.launch @coil_cpp_add_0 grid [1, 1, 1] (%{{.*}}, %x : {{.*}}) scalars [s0, s1]
func.func @dynamic(%x: !buffer.buffer<[s0, s1], f32, strides [2*s1, 1]>) -> !buffer.buffer<[s0, s1], f32> {
  %add = buffer.alloc : !buffer.buffer<[s0, s1], f32>
  loop.pointwise [s0, s1] outs(%add : !buffer.buffer<[s0, s1], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !buffer.buffer<[s0, s1], f32, strides [2*s1, 1]>
    %b = arith.addf %a, %a : f32
    loop.yield %b : f32
  }
  func.return %add : !buffer.buffer<[s0, s1], f32>
}

// -----

// A fusion group moves in whole (members, their reads of each other); two
// nests with the same body are one kernel launched twice.

// CHECK-LABEL: cpu.func @coil_cpp_amax_sub_o1_0
// CHECK-NEXT:    loop.fused [8] [32] outs
// CHECK:           %[[M:.*]] = loop.reduction max [8] [32]
// CHECK:           loop.load %[[M]][i0] : !loop.tensor<[8], f32>
// CHECK-NOT:   cpu.func
// CHECK:       func.func @twice
// CHECK:         host.launch @coil_cpp_amax_sub_o1_0
// CHECK:         host.launch @coil_cpp_amax_sub_o1_0
func.func @twice(%x: !buffer.buffer<[8, 32], f32>, %y: !buffer.buffer<[8, 32], f32>) -> (!buffer.buffer<[8, 32], f32>, !buffer.buffer<[8, 32], f32>) {
  %o1 = buffer.alloc : !buffer.buffer<[8, 32], f32>
  loop.fused [8] [32] outs(%o1 : !buffer.buffer<[8, 32], f32>) {
    %amax = loop.reduction max [8] [32] : !loop.tensor<[8], f32> {
    ^bb0(%i0: index, %r0: index):
      %0 = loop.load %x[i0, r0] : !buffer.buffer<[8, 32], f32>
      loop.yield %0 : f32
    }
    %sub = loop.pointwise [8, 32] : !loop.tensor<[8, 32], f32> {
    ^bb0(%i0: index, %i1: index):
      %1 = loop.load %x[i0, i1] : !buffer.buffer<[8, 32], f32>
      %2 = loop.load %amax[i0] : !loop.tensor<[8], f32>
      %3 = arith.subf %1, %2 : f32
      loop.yield %3 : f32
    }
    loop.yield %sub : !loop.tensor<[8, 32], f32>
  }
  %o2 = buffer.alloc : !buffer.buffer<[8, 32], f32>
  loop.fused [8] [32] outs(%o2 : !buffer.buffer<[8, 32], f32>) {
    %amax = loop.reduction max [8] [32] : !loop.tensor<[8], f32> {
    ^bb0(%i0: index, %r0: index):
      %0 = loop.load %y[i0, r0] : !buffer.buffer<[8, 32], f32>
      loop.yield %0 : f32
    }
    %sub = loop.pointwise [8, 32] : !loop.tensor<[8, 32], f32> {
    ^bb0(%i0: index, %i1: index):
      %1 = loop.load %y[i0, i1] : !buffer.buffer<[8, 32], f32>
      %2 = loop.load %amax[i0] : !loop.tensor<[8], f32>
      %3 = arith.subf %1, %2 : f32
      loop.yield %3 : f32
    }
    loop.yield %sub : !loop.tensor<[8, 32], f32>
  }
  func.return %o1, %o2 : !buffer.buffer<[8, 32], f32>, !buffer.buffer<[8, 32], f32>
}

// -----

// A nest drawing random numbers takes the function's seed as an i64 argument
// ({coil.seed}, passed by the launch as to a Triton kernel); a nest over GPU
// buffers stays for convert-loop-to-tt; a loop.copy is the pointwise nest it is.

// CHECK-LABEL: cpu.func @coil_cpp_cs_0(%cs: !buffer.buffer<[4], f32>, %seed: i64 {coil.seed})
// CHECK:         loop.rand %seed[i0] : f32
// CHECK-LABEL: cpu.func @coil_cpp_copy_out_1
// CHECK:       func.func @rest
// CHECK:         host.launch @coil_cpp_cs_0 grid [1, 1, 1] (%cs, %seed : !buffer.buffer<[4], f32>, i64)
// CHECK:         loop.pointwise [4] outs(%{{.*}} : !buffer.buffer<[4], f32, device "cuda:0">)
// CHECK:         host.launch @coil_cpp_copy_out_1
func.func @rest(%x: !buffer.buffer<[4], f32>, %g: !buffer.buffer<[4], f32, device "cuda:0">) -> (!buffer.buffer<[4], f32>, !buffer.buffer<[4], f32, device "cuda:0">, !buffer.buffer<[4], f32>) {
  %seed = loop.seed : i64
  %cs = buffer.alloc : !buffer.buffer<[4], f32>
  loop.pointwise [4] outs(%cs : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index):
    %0 = loop.rand %seed[i0] : f32
    loop.yield %0 : f32
  }
  %neg = buffer.alloc : !buffer.buffer<[4], f32, device "cuda:0">
  loop.pointwise [4] outs(%neg : !buffer.buffer<[4], f32, device "cuda:0">) {
  ^bb0(%i0: index):
    %1 = loop.load %g[i0] : !buffer.buffer<[4], f32, device "cuda:0">
    %2 = arith.negf %1 : f32
    loop.yield %2 : f32
  }
  %out = buffer.alloc : !buffer.buffer<[4], f32>
  loop.copy %x, %out : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>
  func.return %cs, %neg, %out : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32, device "cuda:0">, !buffer.buffer<[4], f32>
}
