// RUN: fx-opt %s -p convert-loop-to-tt --split-input-file | filecheck %s

// A static pointwise nest: a 1-D tile of 1024 (the mask is dropped: 4096 divides),
// i32 indices, and a launch over cdiv(4096, 1024) programs.

// CHECK-LABEL: tt.func public @coil_exp_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>)
// CHECK-SAME:    coil.kind = "pointwise"
// CHECK:         %[[PID:.*]] = tt.get_program_id x : i32
// CHECK:         tt.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
// CHECK-NOT:     arith.cmpi
// CHECK:         %[[V:.*]] = tt.load %{{.*}} : tensor<1024x!tt.ptr<f32>>
// CHECK:         %[[E:.*]] = math.exp %[[V]] : tensor<1024xf32>
// CHECK:         tt.store %{{.*}}, %[[E]] : tensor<1024x!tt.ptr<f32>>
// CHECK:       func.func @static
// CHECK:         host.launch @coil_exp_0 grid [4, 1, 1] (%{{.*}}, %{{.*}} : !buffer.buffer<[64, 64], f32>, !buffer.buffer<[64, 64], f32>) {num_warps = 4 : i64, num_stages = 1 : i64}
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

// Dynamic sizes: i64 indices, a mask, size symbols as trailing i64 arguments
// (sorted by name), a read of a column slice through the source's strides (a
// transposed read gets a 2-D tile: tile2d.mlir).

// CHECK-LABEL: tt.func public @coil_add_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %s0: i64, %s1: i64)
// CHECK:         %[[PID:.*]] = tt.get_program_id x : i32
// CHECK:         arith.extsi %[[PID]] : i32 to i64
// CHECK:         %[[XMASK:xmask]] = arith.cmpi slt, %xindex, %{{.*}} : tensor<1024xi64>
// CHECK:         arith.divsi
// CHECK:         arith.remsi
// CHECK:         tt.load %{{.*}}, %[[XMASK]], %{{.*}} : tensor<1024x!tt.ptr<f32>>
// CHECK:         arith.addf %{{.*}} : tensor<1024xf32>
// CHECK:         tt.store %{{.*}}, %{{.*}}, %[[XMASK]] : tensor<1024x!tt.ptr<f32>>
// CHECK:       host.launch @coil_add_0 grid [(s0*s1 + 1023) floordiv 1024, 1, 1]
// CHECK-SAME:    scalars [s0, s1]
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

// A 1000-element nest: the tile is 1024 and the lanes past 1000 are masked;
// loads of masked lanes read 0.

// CHECK-LABEL: tt.func public @coil_neg_0
// CHECK:         %[[N:.*]] = arith.constant dense<1000> : tensor<1024xi32>
// CHECK:         %xmask = arith.cmpi slt, %xindex, %[[N]] : tensor<1024xi32>
// CHECK:         %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<1024xf32>
// CHECK:         tt.load %{{.*}}, %xmask, %[[Z]]
// CHECK:       host.launch @coil_neg_0 grid [1, 1, 1]
func.func @masked(%x: !buffer.buffer<[1000], f32>) -> !buffer.buffer<[1000], f32> {
  %neg = buffer.alloc : !buffer.buffer<[1000], f32>
  loop.pointwise [1000] outs(%neg : !buffer.buffer<[1000], f32>) {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !buffer.buffer<[1000], f32>
    %b = arith.negf %a : f32
    loop.yield %b : f32
  }
  func.return %neg : !buffer.buffer<[1000], f32>
}

// -----

// Indirect loads: the index operand (i64) becomes part of the address; random
// numbers call tl.rand with the seed argument and the offset block.

// CHECK-LABEL: tt.func public @coil_gather_0(%in_ptr0: !tt.ptr<i64>, %in_ptr1: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %seed0: i64)
// CHECK:         %[[IX:.*]] = tt.load %{{.*}} : tensor<32x!tt.ptr<i64>>
// CHECK:         %[[IX32:.*]] = arith.trunci %[[IX]] : tensor<32xi64> to tensor<32xi32>
// CHECK:         %[[OFF:.*]] = arith.addi %{{.*}} : tensor<32xi32>
// CHECK:         tt.addptr %{{.*}}, %[[OFF]]
// CHECK:         tt.call @tl.rand(%seed0, %{{.*}}) : (i64, tensor<32xi32>) -> tensor<32xf32>
// CHECK:       func.func @indirect_and_rand
// CHECK:         %[[SEED:.*]] = loop.seed : i64
// CHECK:         host.launch @coil_gather_0 grid [1, 1, 1] (%{{.*}}, %{{.*}}, %{{.*}}, %[[SEED]] : !buffer.buffer<[32], i64>, !buffer.buffer<[10, 8], f32>, !buffer.buffer<[32], f32>, i64)
func.func @indirect_and_rand(%w: !buffer.buffer<[10, 8], f32>, %ix: !buffer.buffer<[32], i64>) -> !buffer.buffer<[32], f32> {
  %seed = loop.seed : i64
  %gather = buffer.alloc : !buffer.buffer<[32], f32>
  loop.pointwise [32] outs(%gather : !buffer.buffer<[32], f32>) {
  ^bb0(%i0: index):
    %t = loop.load %ix[i0] : !buffer.buffer<[32], i64>
    %v = loop.load %w[t0, 3] indirect(%t : i64) : !buffer.buffer<[10, 8], f32>
    %r = loop.rand %seed[i0] : f32
    %m = arith.mulf %v, %r : f32
    loop.yield %m : f32
  }
  func.return %gather : !buffer.buffer<[32], f32>
}

// -----

// loop.copy (an input mutation) is a pointwise kernel storing into the input.

// CHECK-LABEL: tt.func public @coil_copy_x_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>)
// CHECK:         tt.store
// CHECK:       func.func @copy
// CHECK-NEXT:    host.launch @coil_copy_x_0 grid [1, 1, 1] (%y, %x : !buffer.buffer<[4, 8], f32>, !buffer.buffer<[4, 8], f32>)
// CHECK-NOT:     loop.copy
func.func @copy(%x: !buffer.buffer<[4, 8], f32>, %y: !buffer.buffer<[4, 8], f32>) {
  loop.copy %y, %x : !buffer.buffer<[4, 8], f32>, !buffer.buffer<[4, 8], f32>
  func.return
}

// -----

// A group of pointwise nests (loop-fuse's siblings: no reduction ranges) gets a
// pointwise nest's tile, XBLOCK 1024 (not a reduction's rows), and stores each
// result where its member yields it.

// Both members read %x: one load, as the store into %a (a buffer of its
// own) cannot have changed it.

// CHECK-LABEL: tt.func public @coil_e_s_a_b_0
// CHECK-SAME:    coil.kind = "fused"
// CHECK:         tt.make_range {start = 0 : i32, end = 1024 : i32}
// CHECK:         tt.load
// CHECK:         math.exp
// CHECK:         tt.store
// CHECK-NOT:     tt.load
// CHECK:         math.sqrt
// CHECK:         tt.store
// CHECK:       func.func @pointwise_group
// CHECK:         host.launch @coil_e_s_a_b_0 grid [4, 1, 1] (%x, %a, %b : {{.*}}) {num_warps = 4 : i64, num_stages = 1 : i64}
func.func @pointwise_group(%x: !buffer.buffer<[4096], f32>) -> (!buffer.buffer<[4096], f32>, !buffer.buffer<[4096], f32>) {
  %a = buffer.alloc : !buffer.buffer<[4096], f32>
  %b = buffer.alloc : !buffer.buffer<[4096], f32>
  loop.fused [4096] [] outs(%a, %b : !buffer.buffer<[4096], f32>, !buffer.buffer<[4096], f32>) {
    %e = loop.pointwise [4096] : !loop.tensor<[4096], f32> {
    ^bb0(%i0: index):
      %0 = loop.load %x[i0] : !buffer.buffer<[4096], f32>
      %1 = math.exp %0 : f32
      loop.yield %1 : f32
    }
    %s = loop.pointwise [4096] : !loop.tensor<[4096], f32> {
    ^bb0(%i0: index):
      %0 = loop.load %x[i0] : !buffer.buffer<[4096], f32>
      %1 = math.sqrt %0 : f32
      loop.yield %1 : f32
    }
    loop.yield %e, %s : !loop.tensor<[4096], f32>, !loop.tensor<[4096], f32>
  }
  func.return %a, %b : !buffer.buffer<[4096], f32>, !buffer.buffer<[4096], f32>
}

// -----

// The same group storing into an argument: the caller may pass views of one
// tensor as %x and %a, so the second member reads %x again after the store.

// CHECK-LABEL: tt.func public @coil_e_s_a_b_0
// CHECK:         tt.load
// CHECK:         math.exp
// CHECK:         tt.store
// CHECK:         tt.load
// CHECK:         math.sqrt
// CHECK:         tt.store
func.func @pointwise_group_into_argument(%x: !buffer.buffer<[4096], f32>, %a: !buffer.buffer<[4096], f32>) -> !buffer.buffer<[4096], f32> {
  %b = buffer.alloc : !buffer.buffer<[4096], f32>
  loop.fused [4096] [] outs(%a, %b : !buffer.buffer<[4096], f32>, !buffer.buffer<[4096], f32>) {
    %e = loop.pointwise [4096] : !loop.tensor<[4096], f32> {
    ^bb0(%i0: index):
      %0 = loop.load %x[i0] : !buffer.buffer<[4096], f32>
      %1 = math.exp %0 : f32
      loop.yield %1 : f32
    }
    %s = loop.pointwise [4096] : !loop.tensor<[4096], f32> {
    ^bb0(%i0: index):
      %0 = loop.load %x[i0] : !buffer.buffer<[4096], f32>
      %1 = math.sqrt %0 : f32
      loop.yield %1 : f32
    }
    loop.yield %e, %s : !loop.tensor<[4096], f32>, !loop.tensor<[4096], f32>
  }
  func.return %b : !buffer.buffer<[4096], f32>
}
