// RUN: fx-opt %s -p convert-loop-to-tt --split-input-file | filecheck %s
// RUN: fx-opt %s -p "convert-loop-to-tt{persistent-threshold=0 rblock=16}" --split-input-file | filecheck %s --check-prefix=LOOP

// A scan is a [XBLOCK, RBLOCK] tile: rows over the other ranges, lanes along
// the scanned dimension. A short static row is scanned whole by one tt.scan
// along axis 1 and stored; a long or dynamic one (LOOP) by an scf.for over
// chunks carrying each row's running prefix ([XBLOCK, 1]): the chunk's scan is
// combined with the carry, stored, and its last lane (picked by rbase ==
// RBLOCK - 1 and summed) is the next carry.

// CHECK-LABEL: tt.func public @coil_c_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>)
// CHECK-SAME:    coil.kind = "scan"
// CHECK:         %rbase = tt.expand_dims %{{.*}} {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
// CHECK:         %[[A:.*]] = tt.load %{{.*}} : tensor<8x64x!tt.ptr<f32>>
// CHECK-NEXT:    %[[S:.*]] = "tt.scan"(%[[A]]) <{axis = 1 : i32, reverse = false}> ({
// CHECK-NEXT:    ^bb0(%[[L:.*]]: f32, %[[R:.*]]: f32):
// CHECK-NEXT:      %[[ADD:.*]] = arith.addf %[[L]], %[[R]] : f32
// CHECK-NEXT:      tt.scan.return %[[ADD]] : f32
// CHECK-NEXT:    }) : (tensor<8x64xf32>) -> tensor<8x64xf32>
// CHECK:         tt.store %{{.*}}, %[[S]] : tensor<8x64x!tt.ptr<f32>>
// CHECK:       host.launch @coil_c_0 grid [1, 1, 1]

// LOOP-LABEL: tt.func public @coil_c_0
// LOOP:         %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<8x1xf32>
// LOOP:         scf.for %roffset = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[CARRY:.*]] = %[[ZERO]]) -> (tensor<8x1xf32>)
// LOOP:           %[[S:.*]] = "tt.scan"
// LOOP:           %[[B:.*]] = tt.broadcast %[[CARRY]] : tensor<8x1xf32> -> tensor<8x16xf32>
// LOOP:           %[[OUT:.*]] = arith.addf %[[B]], %[[S]] : tensor<8x16xf32>
// LOOP:           tt.store %{{.*}}, %[[OUT]]
// LOOP:           %[[LAST:.*]] = arith.cmpi eq, %rbase, %{{.*}} : tensor<1x16xi32>
// LOOP:           arith.select %{{.*}}, %[[OUT]], %{{.*}} : tensor<8x16xi1>, tensor<8x16xf32>
// LOOP:           "tt.reduce"
// LOOP:           %[[NEXT:.*]] = tt.expand_dims %{{.*}} {axis = 1 : i32} : tensor<8xf32> -> tensor<8x1xf32>
// LOOP:           scf.yield %[[NEXT]] : tensor<8x1xf32>
func.func @cumsum(%x: !buffer.buffer<[8, 64], f32>) -> !buffer.buffer<[8, 64], f32> {
  %c = buffer.alloc : !buffer.buffer<[8, 64], f32>
  loop.scan sum dim 1 [8, 64] outs(%c : !buffer.buffer<[8, 64], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !buffer.buffer<[8, 64], f32>
    loop.yield %a : f32
  }
  func.return %c : !buffer.buffer<[8, 64], f32>
}

// -----

// A scan along dim 0 of a dynamic length loops even by default: rows are the
// 6 columns, lanes walk dim 0 (stride 6). An outer scan (the output contiguous
// along a row index) takes the outer reductions' tile: all 6 columns (8 lanes)
// per program, chunks of 64. A bf16 result accumulated in f32 is rounded at
// the store.

// CHECK-LABEL: tt.func public @coil_c_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<bf16>, %s0: i64)
// CHECK:         scf.for
// CHECK:           arith.muli %rindex, %{{.*}} : tensor<1x64xi64>
// CHECK:           "tt.scan"
// CHECK:           %[[T:.*]] = arith.truncf %{{.*}} : tensor<8x64xf32> to tensor<8x64xbf16>
// CHECK:           tt.store %{{.*}}, %[[T]], %{{.*}} : tensor<8x64x!tt.ptr<bf16>>
// CHECK:       host.launch @coil_c_0 grid [1, 1, 1]
func.func @cumsum_dim0(%x: !buffer.buffer<[s0, 6], f32>) -> !buffer.buffer<[s0, 6], bf16> {
  %c = buffer.alloc : !buffer.buffer<[s0, 6], bf16>
  loop.scan sum dim 0 [s0, 6] outs(%c : !buffer.buffer<[s0, 6], bf16>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !buffer.buffer<[s0, 6], f32>
    loop.yield %a : f32
  }
  func.return %c : !buffer.buffer<[s0, 6], bf16>
}

// -----

// cummax: (value, position) pairs, positions from rindex; the later pair wins
// where its value is NaN or (neither is NaN) at least as large. Two stores.
// Looped, the carry is a pair, starting at (-inf, 0).

// CHECK-LABEL: tt.func public @coil_v_i_0
// CHECK:         %[[P:.*]] = arith.extsi %{{.*}} : tensor<1x32xi32> to tensor<1x32xi64>
// CHECK:         "tt.scan"(%{{.*}}, %{{.*}}) <{axis = 1 : i32, reverse = false}> ({
// CHECK-NEXT:    ^bb0(%[[AV:.*]]: f32, %[[AI:.*]]: i64, %[[BV:.*]]: f32, %[[BI:.*]]: i64):
// CHECK-NEXT:      %[[GE:.*]] = arith.cmpf oge, %[[BV]], %[[AV]] : f32
// CHECK-NEXT:      %[[NUM:.*]] = arith.cmpf ord, %[[AV]], %[[AV]] : f32
// CHECK-NEXT:      %[[NAN:.*]] = arith.cmpf uno, %[[BV]], %[[BV]] : f32
// CHECK-NEXT:      %[[BOTH:.*]] = arith.andi %[[NUM]], %[[GE]] : i1
// CHECK-NEXT:      %[[LATER:.*]] = arith.ori %[[NAN]], %[[BOTH]] : i1
// CHECK-NEXT:      %[[V:.*]] = arith.select %[[LATER]], %[[BV]], %[[AV]] : f32
// CHECK-NEXT:      %[[I:.*]] = arith.select %[[LATER]], %[[BI]], %[[AI]] : i64
// CHECK-NEXT:      tt.scan.return %[[V]], %[[I]] : f32, i64
// CHECK:         tt.store
// CHECK:         tt.store

// LOOP-LABEL: tt.func public @coil_v_i_0
// LOOP-DAG:     arith.constant dense<0xff800000> : tensor<4x1xf32>
// LOOP-DAG:     arith.constant dense<0> : tensor<4x1xi64>
// LOOP:         scf.for {{.*}} -> (tensor<4x1xf32>, tensor<4x1xi64>)
func.func @cummax(%x: !buffer.buffer<[4, 32], f32>) -> (!buffer.buffer<[4, 32], f32>, !buffer.buffer<[4, 32], i64>) {
  %v = buffer.alloc : !buffer.buffer<[4, 32], f32>
  %i = buffer.alloc : !buffer.buffer<[4, 32], i64>
  loop.scan argmax dim 1 [4, 32] outs(%v, %i : !buffer.buffer<[4, 32], f32>, !buffer.buffer<[4, 32], i64>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !buffer.buffer<[4, 32], f32>
    loop.yield %a : f32
  }
  func.return %v, %i : !buffer.buffer<[4, 32], f32>, !buffer.buffer<[4, 32], i64>
}

// -----

// logcumsumexp: max + log1p(exp(min - max)), the earlier value where both
// are the same infinity (log1p through the math lowering: core ops on the CPU).

// CHECK-LABEL: tt.func public @coil_l_0
// CHECK:         "tt.scan"
// CHECK:           arith.minimumf
// CHECK:           arith.maximumf
// CHECK:           arith.cmpf une
// CHECK:           math.absf
// CHECK:           math.exp
// CHECK:           tt.scan.return
func.func @logcumsumexp(%x: !buffer.buffer<[4, 32], f32>) -> !buffer.buffer<[4, 32], f32> {
  %l = buffer.alloc : !buffer.buffer<[4, 32], f32>
  loop.scan logsumexp dim 1 [4, 32] outs(%l : !buffer.buffer<[4, 32], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !buffer.buffer<[4, 32], f32>
    loop.yield %a : f32
  }
  func.return %l : !buffer.buffer<[4, 32], f32>
}
