// RUN: fx-opt %s -p 'convert-loop-to-tt{autotune=3}' --split-input-file | filecheck %s

// autotune=3: up to three kernels per nest, the heuristic config first (_c0),
// launched from one host.autotune keyed by the kernel's base name.

// Pointwise over 4096 points: XBLOCK 1024 / 4 warps (the heuristic), then
// 512 / 4 warps, then 2048 / 8 warps; every candidate launches the same buffers.

// CHECK-LABEL: tt.func public @coil_exp_0_c0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>)
// CHECK:         tt.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
// CHECK-LABEL: tt.func public @coil_exp_0_c1(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>)
// CHECK:         tt.make_range {start = 0 : i32, end = 512 : i32} : tensor<512xi32>
// CHECK-LABEL: tt.func public @coil_exp_0_c2(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>)
// CHECK:         tt.make_range {start = 0 : i32, end = 2048 : i32} : tensor<2048xi32>
// CHECK-LABEL: func.func @pointwise
// CHECK-NEXT:    %[[EXP:.*]] = buffer.alloc
// CHECK-NEXT:    host.autotune "coil_exp_0" {
// CHECK-NEXT:      host.launch @coil_exp_0_c0 grid [4, 1, 1] (%x, %[[EXP]] : {{.*}}) {num_warps = 4 : i64, num_stages = 1 : i64}
// CHECK-NEXT:      host.launch @coil_exp_0_c1 grid [8, 1, 1] (%x, %[[EXP]] : {{.*}}) {num_warps = 4 : i64, num_stages = 1 : i64}
// CHECK-NEXT:      host.launch @coil_exp_0_c2 grid [2, 1, 1] (%x, %[[EXP]] : {{.*}}) {num_warps = 8 : i64, num_stages = 1 : i64}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[EXP]]
func.func @pointwise(%x: !buffer.buffer<[64, 64], f32>) -> !buffer.buffer<[64, 64], f32> {
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

// Softmax over 8 rows of 64: the persistent heuristic (all 8 rows, no loop),
// the same tile with looped rows (scf.for over RBLOCK 64), then a persistent
// tile of 4 rows.

// CHECK-LABEL: tt.func public @coil_amax_sum_div_0_c0
// CHECK-SAME:    coil.kind = "fused"
// CHECK-NOT:     scf.for
// CHECK:         tt.return
// CHECK-LABEL: tt.func public @coil_amax_sum_div_0_c1
// CHECK:         tt.make_range {start = 0 : i32, end = 8 : i32}
// CHECK:         scf.for %roffset
// CHECK:         tt.return
// CHECK-LABEL: tt.func public @coil_amax_sum_div_0_c2
// CHECK:         tt.make_range {start = 0 : i32, end = 4 : i32}
// CHECK-NOT:     scf.for
// CHECK:         tt.return
// CHECK-LABEL: func.func @softmax
// CHECK:         host.autotune "coil_amax_sum_div_0" {
// CHECK-NEXT:      host.launch @coil_amax_sum_div_0_c0 grid [1, 1, 1] (%x, %[[DIV:.*]] : {{.*}}) {num_warps = 4 : i64, num_stages = 1 : i64}
// CHECK-NEXT:      host.launch @coil_amax_sum_div_0_c1 grid [1, 1, 1] (%x, %[[DIV]] : {{.*}}) {num_warps = 4 : i64, num_stages = 1 : i64}
// CHECK-NEXT:      host.launch @coil_amax_sum_div_0_c2 grid [2, 1, 1] (%x, %[[DIV]] : {{.*}}) {num_warps = 4 : i64, num_stages = 1 : i64}
// CHECK-NEXT:    }
func.func @softmax(%x: !buffer.buffer<[8, 64], f32>) -> !buffer.buffer<[8, 64], f32> {
  %div = buffer.alloc : !buffer.buffer<[8, 64], f32>
  loop.fused [8] [64] outs(%div : !buffer.buffer<[8, 64], f32>) {
    %amax = loop.reduction max [8] [64] : !loop.tensor<[8], f32> {
    ^bb0(%i0: index, %r0: index):
      %0 = loop.load %x[i0, r0] : !buffer.buffer<[8, 64], f32>
      loop.yield %0 : f32
    }
    %sum = loop.reduction sum [8] [64] : !loop.tensor<[8], f32> {
    ^bb0(%i0_1: index, %r0_1: index):
      %1 = loop.load %x[i0, r0] : !buffer.buffer<[8, 64], f32>
      %2 = loop.load %amax[i0] : !loop.tensor<[8], f32>
      %3 = arith.subf %1, %2 : f32
      %4 = math.exp %3 : f32
      loop.yield %4 : f32
    }
    %div_1 = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
    ^bb0(%i0_2: index, %i1: index):
      %5 = loop.load %x[i0, i1] : !buffer.buffer<[8, 64], f32>
      %6 = loop.load %amax[i0] : !loop.tensor<[8], f32>
      %7 = arith.subf %5, %6 : f32
      %8 = math.exp %7 : f32
      %9 = loop.load %sum[i0] : !loop.tensor<[8], f32>
      %10 = arith.divf %8, %9 : f32
      loop.yield %10 : f32
    }
    loop.yield %div_1 : !loop.tensor<[8, 64], f32>
  }
  func.return %div : !buffer.buffer<[8, 64], f32>
}

// -----

// Dynamic rows: looped only (the heuristic's row per program, RBLOCK 2048 and
// 8 warps, then 1024 and 256); the key is the base name, the scalars are the
// size symbols.

// CHECK-LABEL: func.func @dynamic_sum
// CHECK:         host.autotune "coil_sum_0" {
// CHECK-NEXT:      host.launch @coil_sum_0_c0 grid [s0, 1, 1] ({{.*}}) scalars [s0, s1] {num_warps = 8
// CHECK-NEXT:      host.launch @coil_sum_0_c1 grid [s0, 1, 1] ({{.*}}) scalars [s0, s1] {num_warps = 4
// CHECK-NEXT:      host.launch @coil_sum_0_c2 grid [(s0 + 3) floordiv 4, 1, 1] ({{.*}}) scalars [s0, s1]
// CHECK-NEXT:    }
func.func @dynamic_sum(%x: !buffer.buffer<[s0, s1], f32>) -> !buffer.buffer<[s0], f32> {
  %sum = buffer.alloc : !buffer.buffer<[s0], f32>
  loop.reduction sum [s0] [s1] outs(%sum : !buffer.buffer<[s0], f32>) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[s0, s1], f32>
    loop.yield %0 : f32
  }
  func.return %sum : !buffer.buffer<[s0], f32>
}

// -----

// A nest that loads and stores one buffer (an in_out pointer) is not
// autotuned: timing would run it more than once.

// CHECK-LABEL: tt.func public @coil_x_0(%in_out_ptr0: !tt.ptr<f32>)
// CHECK-LABEL: func.func @in_place
// CHECK-NOT:     host.autotune
// CHECK:         host.launch @coil_x_0 grid [1, 1, 1]
func.func @in_place(%x: !buffer.buffer<[64], f32>) {
  loop.pointwise [64] outs(%x : !buffer.buffer<[64], f32>) {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !buffer.buffer<[64], f32>
    %b = arith.addf %a, %a : f32
    loop.yield %b : f32
  }
  func.return
}

// -----

// Nor one whose out shares storage with what it reads (a view of the input;
// a buffer reusing the input's storage).

// CHECK-LABEL: func.func @through_views
// CHECK-NOT:     host.autotune
// CHECK:         host.launch @coil_t_0
// CHECK-NOT:     host.autotune
// CHECK:         host.launch @coil_r_1
func.func @through_views(%x: !buffer.buffer<[8, 8], f32>) {
  %t = buffer.view %x : !buffer.buffer<[8, 8], f32> -> !buffer.buffer<[8, 8], f32, strides [1, 8]>
  loop.pointwise [8, 8] outs(%t : !buffer.buffer<[8, 8], f32, strides [1, 8]>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !buffer.buffer<[8, 8], f32>
    loop.yield %a : f32
  }
  %y = buffer.alloc : !buffer.buffer<[8, 8], f32>
  %r = buffer.reuse %y : !buffer.buffer<[8, 8], f32> -> !buffer.buffer<[64], f32>
  %v = buffer.view %y : !buffer.buffer<[8, 8], f32> -> !buffer.buffer<[64], f32>
  loop.pointwise [64] outs(%r : !buffer.buffer<[64], f32>) {
  ^bb0(%i0: index):
    %a = loop.load %v[i0] : !buffer.buffer<[64], f32>
    loop.yield %a : f32
  }
  func.return
}
