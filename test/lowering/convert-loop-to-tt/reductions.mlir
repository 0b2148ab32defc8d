// RUN: fx-opt %s -p convert-loop-to-tt --split-input-file | filecheck %s
// RUN: fx-opt %s -p "convert-loop-to-tt{persistent-threshold=0 rblock=16}" --split-input-file | filecheck %s --check-prefix=LOOP
// RUN: fx-opt %s -p "convert-loop-to-tt{persistent-threshold=0 rblock=16 online-softmax=false}" --split-input-file | filecheck %s --check-prefix=PHASES
// RUN: not fx-opt %S/Inputs/value-semantic.mlir -p convert-loop-to-tt 2>&1 | filecheck %s --check-prefix=ERR

// Softmax as a fused group. Persistent (a 64-wide row in registers): max, then
// the sum of exp, then the stores, each reduction a tt.reduce over axis 1.
// Looped: the sum of exp(x - max) accumulates in the max's loop, rescaled by
// exp(m_old - m_new) where the running max grows (the online softmax), then a
// loop of stores: two reads of the row. online-softmax=false: one scf.for per
// phase (max; sum; the stores).

// CHECK-LABEL: tt.func public @coil_amax_sum_div_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>)
// CHECK-SAME:    coil.kind = "fused"
// CHECK:         tt.expand_dims %{{.*}} {axis = 1 : i32} : tensor<8xi32> -> tensor<8x1xi32>
// CHECK:         %rbase = tt.expand_dims %{{.*}} {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
// CHECK:         "tt.reduce"
// CHECK:           arith.maximumf
// CHECK:         "tt.reduce"
// CHECK:           arith.addf
// CHECK:         arith.divf {{.*}} : tensor<8x64xf32>
// CHECK:         tt.store
// CHECK:       host.launch @coil_amax_sum_div_0 grid [1, 1, 1]

// LOOP-LABEL: tt.func public @coil_amax_sum_div_0
// LOOP:         scf.for
// LOOP:           %[[MAX:.*]] = arith.maximumf %[[OLD:[^ ,]*]],
// LOOP:           math.exp
// LOOP:           arith.cmpf oeq, %[[OLD]], %[[MAX]]
// LOOP:           %[[D:.*]] = arith.subf %[[OLD]], %[[MAX]]
// LOOP:           math.exp %[[D]]
// LOOP:           scf.yield
// LOOP:         "tt.reduce"
// LOOP:         arith.cmpf oeq
// LOOP:         "tt.reduce"
// LOOP:         scf.for
// LOOP-NOT:     scf.for
// LOOP:         tt.return

// PHASES-LABEL: tt.func public @coil_amax_sum_div_0
// PHASES-COUNT-3: scf.for
// PHASES-NOT:    scf.for
// PHASES:        tt.return
func.func @softmax(%arg0: !buffer.buffer<[8, 64], f32>) -> !buffer.buffer<[8, 64], f32> {
  %div = buffer.alloc : !buffer.buffer<[8, 64], f32>
  loop.fused [8] [64] outs(%div : !buffer.buffer<[8, 64], f32>) {
    %amax = loop.reduction max [8] [64] : !loop.tensor<[8], f32> {
    ^bb0(%i0: index, %r0: index):
      %0 = loop.load %arg0[i0, r0] : !buffer.buffer<[8, 64], f32>
      loop.yield %0 : f32
    }
    %sum = loop.reduction sum [8] [64] : !loop.tensor<[8], f32> {
    ^bb0(%i0: index, %r0: index):
      %1 = loop.load %arg0[i0, r0] : !buffer.buffer<[8, 64], f32>
      %2 = loop.load %amax[i0] : !loop.tensor<[8], f32>
      %3 = arith.subf %1, %2 : f32
      %4 = math.exp %3 : f32
      loop.yield %4 : f32
    }
    %div_1 = loop.pointwise [8, 64] : !loop.tensor<[8, 64], f32> {
    ^bb0(%i0: index, %i1: index):
      %5 = loop.load %arg0[i0, i1] : !buffer.buffer<[8, 64], f32>
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

// argmax: a two-operand tt.reduce over (value, index); first index on ties.

// CHECK-LABEL: tt.func public @coil_am_0
// CHECK:         "tt.reduce"(%{{.*}}, %{{.*}}) <{axis = 1 : i32}>
// CHECK:           arith.cmpi slt
// CHECK:           arith.cmpf ogt
// CHECK:         }) : (tensor<{{.*}}xf32>, tensor<{{.*}}xi64>) -> (tensor<{{.*}}xf32>, tensor<{{.*}}xi64>)
// CHECK:         tt.store %{{.*}} : tensor<{{.*}}x!tt.ptr<i64>>

// LOOP-LABEL: tt.func public @coil_am_0
// LOOP:         scf.for
// LOOP:         "tt.reduce"(%{{.*}}, %{{.*}}) <{axis = 1 : i32}>
func.func @argmax(%x: !buffer.buffer<[4, 100], f32>) -> !buffer.buffer<[4], i64> {
  %am = buffer.alloc : !buffer.buffer<[4], i64>
  loop.reduction argmax [4] [100] outs(%am : !buffer.buffer<[4], i64>) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[4, 100], f32>
    loop.yield %0 : f32
  }
  func.return %am : !buffer.buffer<[4], i64>
}

// -----

// welford (mean, m2, count): persistent rows reduce sums; looped rows keep
// per-lane (mean, m2, weight) and combine them with a three-operand tt.reduce.

// CHECK-LABEL: tt.func public @coil_mean_m2_n_0
// CHECK:         "tt.reduce"
// CHECK:         arith.divf
// CHECK:         "tt.reduce"
// CHECK-COUNT-3: tt.store

// LOOP-LABEL: tt.func public @coil_mean_m2_n_0
// LOOP:         scf.for
// LOOP:         "tt.reduce"(%{{.*}}, %{{.*}}, %{{.*}}) <{axis = 1 : i32}>
func.func @welford(%x: !buffer.buffer<[s0, 32], f32>) -> (!buffer.buffer<[s0], f32>, !buffer.buffer<[s0], f32>, !buffer.buffer<[s0], f32>) {
  %mean = buffer.alloc : !buffer.buffer<[s0], f32>
  %m2 = buffer.alloc : !buffer.buffer<[s0], f32>
  %n = buffer.alloc : !buffer.buffer<[s0], f32>
  loop.reduction welford [s0] [32] outs(%mean, %m2, %n : !buffer.buffer<[s0], f32>, !buffer.buffer<[s0], f32>, !buffer.buffer<[s0], f32>) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[s0, 32], f32>
    loop.yield %0 : f32
  }
  func.return %mean, %m2, %n : !buffer.buffer<[s0], f32>, !buffer.buffer<[s0], f32>, !buffer.buffer<[s0], f32>
}

// ERR: convert-loop-to-tt: loop.pointwise is left in @f
// ERR-SAME: run bufferize first
// ERR-NOT: Traceback

// -----

// Cross-entropy's backward: the row sum reads only per-row values (the
// target, a scale) and its epilogue reads each row of %x again. The loads that
// move along the row are the epilogue's, at stride 1: an inner looped
// reduction, one row per program (grid = rows) and RBLOCK 2048, not 32-row
// tiles on a handful of programs.
// CHECK-LABEL: tt.func public @coil_sum_sub_0
// CHECK:         scf.for
// CHECK:       host.launch @coil_sum_sub_0 grid [64, 1, 1]
func.func @ce_backward(%x: !buffer.buffer<[64, 50257], f32>, %t: !buffer.buffer<[64, 1], i64>, %w: !buffer.buffer<[64, 1], f32>) -> !buffer.buffer<[64, 50257], f32> {
  %sub = buffer.alloc : !buffer.buffer<[64, 50257], f32>
  loop.fused [64] [50257] outs(%sub : !buffer.buffer<[64, 50257], f32>) {
    %sum = loop.reduction sum [64] [50257] : !loop.tensor<[64], f32> {
    ^bb0(%i0: index, %r0: index):
      %0 = loop.load %t[i0, 0] : !buffer.buffer<[64, 1], i64>
      %1 = loop.index r0 : i64
      %2 = arith.cmpi eq, %0, %1 : i64
      %3 = arith.constant 0.000000e+00 : f32
      %4 = loop.load %w[i0, 0] : !buffer.buffer<[64, 1], f32>
      %5 = arith.select %2, %4, %3 : f32
      loop.yield %5 : f32
    }
    %sub_1 = loop.pointwise [64, 50257] : !loop.tensor<[64, 50257], f32> {
    ^bb0(%i0_1: index, %i1: index):
      %6 = loop.load %x[i0, i1] : !buffer.buffer<[64, 50257], f32>
      %7 = math.exp %6 : f32
      %8 = loop.load %sum[i0] : !loop.tensor<[64], f32>
      %9 = arith.mulf %7, %8 : f32
      loop.yield %9 : f32
    }
    loop.yield %sub_1 : !loop.tensor<[64, 50257], f32>
  }
  func.return %sub : !buffer.buffer<[64, 50257], f32>
}

// -----

// Few persistent rows on a GPU: how many rows a program takes is the cost
// model's (strategy/plan.py; plans.mlir prints the estimates). 256 rows of
// 1024 f32 stay 4 a program (64 programs: fewer would gain under 10 %); 256
// rows of 64 go from 64 a program to one (a program's 64 rows of bytes and
// arithmetic are most of its time). The CPU (the interpreter runs programs
// one by one) never spreads: plans.mlir.
// CHECK-LABEL: tt.func public @coil_s_0
// CHECK-SAME:    coil.device = "cuda:0"
// CHECK-SAME:    coil.plan = "reduction rows, persistent [XBLOCK 4, RBLOCK 1024]
// CHECK:         tt.make_range {start = 0 : i32, end = 4 : i32} : tensor<4xi32>
// CHECK-LABEL: tt.func public @coil_t_1
// CHECK-SAME:    coil.plan = "reduction rows, persistent [XBLOCK 1, RBLOCK 64]
// CHECK:       host.launch @coil_s_0 grid [64, 1, 1]
// CHECK:       host.launch @coil_t_1 grid [256, 1, 1]
func.func @few_rows_on_cuda(%x: !buffer.buffer<[256, 1024], f32, device "cuda:0">, %y: !buffer.buffer<[256, 64], f32, device "cuda:0">) -> (!buffer.buffer<[256], f32, device "cuda:0">, !buffer.buffer<[256], f32, device "cuda:0">) {
  %s = buffer.alloc : !buffer.buffer<[256], f32, device "cuda:0">
  loop.reduction sum [256] [1024] outs(%s : !buffer.buffer<[256], f32, device "cuda:0">) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[256, 1024], f32, device "cuda:0">
    loop.yield %0 : f32
  }
  %t = buffer.alloc : !buffer.buffer<[256], f32, device "cuda:0">
  loop.reduction sum [256] [64] outs(%t : !buffer.buffer<[256], f32, device "cuda:0">) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %y[i0, r0] : !buffer.buffer<[256, 64], f32, device "cuda:0">
    loop.yield %0 : f32
  }
  func.return %s, %t : !buffer.buffer<[256], f32, device "cuda:0">, !buffer.buffer<[256], f32, device "cuda:0">
}
