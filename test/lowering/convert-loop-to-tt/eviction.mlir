// RUN: fx-opt %s -p convert-loop-to-tt --split-input-file | filecheck %s
// RUN: fx-opt %s -p "convert-loop-to-tt{persistent-threshold=0 rblock=16 online-softmax=false}" --split-input-file | filecheck %s --check-prefix=LOOP
// RUN: fx-opt %s -p "convert-loop-to-tt{eviction=stream}" --split-input-file | filecheck %s --check-prefix=STREAM
// RUN: fx-opt %s -p "convert-loop-to-tt{eviction=off persistent-threshold=0 rblock=16}" --split-input-file | filecheck %s --check-prefix=OFF
// RUN: not fx-opt %s -p "convert-loop-to-tt{eviction=always}" 2>&1 | filecheck %s --check-prefix=ERR

// L2 eviction hints (loop_to_tt/eviction.py, Inductor's rules). A pointwise
// add of a bias row: the input is read once per element (no hint), the bias
// [64] by every row (evict_last). With eviction=stream the input's only read
// is evict_first.

// CHECK-LABEL: tt.func public @coil_add_0
// CHECK:         tt.load %{{[^ ]*}} : tensor<{{.*}}x!tt.ptr<f32>>
// CHECK:         tt.load %{{[^ ]*}} {evict = evict_last} : tensor<{{.*}}x!tt.ptr<f32>>

// STREAM-LABEL: tt.func public @coil_add_0
// STREAM:         tt.load %{{[^ ]*}} {evict = evict_first}
// STREAM:         tt.load %{{[^ ]*}} {evict = evict_last}

// OFF-LABEL: tt.func public @coil_add_0
// OFF-NOT:     evict
// OFF:         tt.return
func.func @bias_add(%x: !buffer.buffer<[32, 64], f32>, %b: !buffer.buffer<[64], f32>) -> !buffer.buffer<[32, 64], f32> {
  %add = buffer.alloc : !buffer.buffer<[32, 64], f32>
  loop.pointwise [32, 64] outs(%add : !buffer.buffer<[32, 64], f32>) {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[32, 64], f32>
    %1 = loop.load %b[i1] : !buffer.buffer<[64], f32>
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %add : !buffer.buffer<[32, 64], f32>
}

// -----

// Softmax with one loop per phase: the row is read in the max's loop, the
// sum's and the stores' loops. The first two reads are evict_last (the row
// is read again), the last one evict_first (it streams through once more).
// Persistent, the three members' reads of the same elements are one load
// with no hint.

// CHECK-LABEL: tt.func public @coil_amax_sum_div_0
// CHECK-COUNT-1: tt.load
// CHECK-NOT:     tt.load
// CHECK:         tt.return

// LOOP-LABEL: tt.func public @coil_amax_sum_div_0
// LOOP:         scf.for
// LOOP:           tt.load %{{.*}} {evict = evict_last}
// LOOP:         scf.for
// LOOP:           tt.load %{{.*}} {evict = evict_last}
// LOOP:         scf.for
// LOOP:           tt.load %{{.*}} {evict = evict_first}
// LOOP:         tt.return

// STREAM-LABEL: tt.func public @coil_amax_sum_div_0
// STREAM:         tt.load %{{[^ ]*}} {evict = evict_first}
// STREAM-NOT:     tt.load
// STREAM:         tt.return

// OFF-LABEL: tt.func public @coil_amax_sum_div_0
// OFF-NOT:     evict
// OFF:         tt.return
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

// A column gather (x[i1 * 32 + i0]: stride 32 along both indices, contiguous
// along neither) is evict_last: neighbouring programs read its sectors.

// CHECK-LABEL: tt.func public @coil_copy_0
// CHECK:         tt.load %{{[^ ]*}} {evict = evict_last}
// CHECK:         tt.store
func.func @gather(%x: !buffer.buffer<[64, 32], f32, strides [1, 64]>) -> !buffer.buffer<[64, 32], f32> {
  %copy = buffer.alloc : !buffer.buffer<[64, 32], f32>
  loop.pointwise [64, 32] outs(%copy : !buffer.buffer<[64, 32], f32>) {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0 * 2, i1] : !buffer.buffer<[64, 32], f32, strides [1, 64]>
    loop.yield %0 : f32
  }
  func.return %copy : !buffer.buffer<[64, 32], f32>
}

// -----

// A row sum held whole in registers (persistent) writes one value per row:
// its read of the row streams (evict_first), which Inductor's rules leave
// unhinted (see eviction.py for the measurement).

// CHECK-LABEL: tt.func public @coil_sum_0
// CHECK:         tt.load %{{[^ ]*}} {evict = evict_first}
// CHECK-NOT:     tt.load

// OFF-LABEL: tt.func public @coil_sum_0
// OFF-NOT:     evict
// OFF:         tt.return
func.func @row_sum(%x: !buffer.buffer<[32, 64], bf16>) -> !buffer.buffer<[32], f32> {
  %sum = buffer.alloc : !buffer.buffer<[32], f32>
  loop.reduction sum [32] [64] outs(%sum : !buffer.buffer<[32], f32>) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[32, 64], bf16>
    %1 = arith.extf %0 : bf16 to f32
    loop.yield %1 : f32
  }
  func.return %sum : !buffer.buffer<[32], f32>
}

// ERR: convert-loop-to-tt: option 'eviction' must be one of "auto", "stream", "off"; got always
