// RUN: fx-opt %s -p convert-loop-to-tt --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'convert-loop-to-tt{bounds-check=false}' --split-input-file | filecheck %s --check-prefix=OFF
// RUN: fx-opt %s -p convert-loop-to-tt --split-input-file -t triton | filecheck %s --check-prefix=TRITON

// An indirect index is asserted in range on the device before the load reads
// through it (eager raises on an out-of-range index; an unchecked load reads
// whatever lies there). The index is compared as loaded (i64), before its cast
// to the kernel's i32 index type could wrap it into range; lanes the mask turns
// off may hold any index. The message names the aten op and the user line.

// CHECK-LABEL: tt.func public @coil_gather_0
// CHECK:         %[[IX:.*]] = tt.load %{{.*}} : tensor<32x!tt.ptr<i64>>
// CHECK:         %[[LO:.*]] = arith.cmpi sge, %[[IX]], %{{.*}} : tensor<32xi64>
// CHECK:         %[[HI:.*]] = arith.cmpi slt, %[[IX]], %{{.*}} : tensor<32xi64>
// CHECK:         %[[OK:.*]] = arith.andi %[[LO]], %[[HI]] : tensor<32xi1>
// CHECK:         tt.assert %[[OK]], "index out of bounds: 0 <= index < 10 (dim 0) in aten.embedding at model.py:7" : tensor<32xi1>
// CHECK:         tt.load %{{.*}} : tensor<32x!tt.ptr<f32>>
// OFF-NOT:     tt.assert
// OFF:         func.func @embedding
// OFF-NOT:     tt.assert
// OFF:         func.func @dynamic
// TRITON:      @triton.jit(debug=True)
// TRITON-NEXT: def coil_gather_0(
// TRITON:        tl.device_assert({{.*}}, 'index out of bounds: 0 <= index < 10 (dim 0) in aten.embedding at model.py:7')
func.func @embedding(%w: !buffer.buffer<[10, 8], f32>, %ix: !buffer.buffer<[32], i64>) -> !buffer.buffer<[32], f32> {
  %gather = buffer.alloc : !buffer.buffer<[32], f32>
  loop.pointwise [32] outs(%gather : !buffer.buffer<[32], f32>) {
  ^bb0(%i0: index):
    %t = loop.load %ix[i0] : !buffer.buffer<[32], i64>
    %v = loop.load %w[t0, 3] indirect(%t : i64) : !buffer.buffer<[10, 8], f32> loc("aten.embedding"("model.py":7:0))
    loop.yield %v : f32
  }
  func.return %gather : !buffer.buffer<[32], f32>
}

// -----

// A dynamic size bounds the index (the size symbol becomes a kernel argument
// even where no other index names it), and lanes past the end (the mask) pass.

// CHECK-LABEL: tt.func public @coil_gather_0(%in_ptr0: !tt.ptr<i64>, %in_ptr1: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %s0: i64)
// CHECK:         %[[XMASK:xmask]] = arith.cmpi slt
// CHECK:         %[[OK:.*]] = arith.andi
// CHECK:         %[[IDLE:.*]] = arith.xori %[[XMASK]], %{{.*}} : tensor<64xi1>
// CHECK:         %[[ANY:.*]] = arith.ori %[[OK]], %[[IDLE]] : tensor<64xi1>
// CHECK:         tt.assert %[[ANY]], "index out of bounds: 0 <= index < s0 (dim 0)" : tensor<64xi1>
// TRITON:      @triton.jit(do_not_specialize=["s0"], debug=True)
func.func @dynamic(%n: index {coil.symbol = #coil.expr<s0>}, %w: !buffer.buffer<[s0, 8], f32>, %ix: !buffer.buffer<[37], i64>) -> !buffer.buffer<[37], f32> {
  %gather = buffer.alloc : !buffer.buffer<[37], f32>
  loop.pointwise [37] outs(%gather : !buffer.buffer<[37], f32>) {
  ^bb0(%i0: index):
    %t = loop.load %ix[i0] : !buffer.buffer<[37], i64>
    %v = loop.load %w[t0, 3] indirect(%t : i64) : !buffer.buffer<[s0, 8], f32>
    loop.yield %v : f32
  }
  func.return %gather : !buffer.buffer<[37], f32>
}

// -----

// An index in range by construction needs no assert (value_range.py): DeBERTa's
// relative-position buckets, clamped by the model to [0, size - 1] before the
// gather. The kernel then compiles without debug=True. A clamp that can reach
// the size keeps its assert.

// CHECK-LABEL: tt.func public @coil_in_0
// CHECK-NOT:     tt.assert
// CHECK:         tt.return
// CHECK-LABEL: tt.func public @coil_out_1
// CHECK:         tt.assert {{.*}} "index out of bounds: 0 <= index < 10 (dim 0)"
// OFF-LABEL:   func.func @clamped
// TRITON:      @triton.jit
// TRITON-NEXT: def coil_in_0(
// TRITON:      @triton.jit(debug=True)
// TRITON-NEXT: def coil_out_1(
func.func @clamped(%w: !buffer.buffer<[10, 8], f32>, %ix: !buffer.buffer<[32], i64>) -> (!buffer.buffer<[32], f32>, !buffer.buffer<[32], f32>) {
  %in = buffer.alloc : !buffer.buffer<[32], f32>
  loop.pointwise [32] outs(%in : !buffer.buffer<[32], f32>) {
  ^bb0(%i0: index):
    %t = loop.load %ix[i0] : !buffer.buffer<[32], i64>
    %zero = arith.constant 0 : i64
    %nine = arith.constant 9 : i64
    %lo = arith.maxsi %t, %zero : i64
    %c = arith.minsi %lo, %nine : i64
    %v = loop.load %w[t0, 3] indirect(%c : i64) : !buffer.buffer<[10, 8], f32>
    loop.yield %v : f32
  }
  %out = buffer.alloc : !buffer.buffer<[32], f32>
  loop.pointwise [32] outs(%out : !buffer.buffer<[32], f32>) {
  ^bb0(%i0: index):
    %t = loop.load %ix[i0] : !buffer.buffer<[32], i64>
    %zero = arith.constant 0 : i64
    %ten = arith.constant 10 : i64
    %lo = arith.maxsi %t, %zero : i64
    %c = arith.minsi %lo, %ten : i64
    %v = loop.load %w[t0, 3] indirect(%c : i64) : !buffer.buffer<[10, 8], f32>
    loop.yield %v : f32
  }
  func.return %in, %out : !buffer.buffer<[32], f32>, !buffer.buffer<[32], f32>
}

// -----

// An index computed from the tile's own position: xindex lies in [0, 32) on
// every lane the check looks at, so (xindex mod 10) is within 10 rows (no
// assert) and (xindex mod 11) is not.

// CHECK-LABEL: tt.func public @coil_in_0
// CHECK-NOT:     tt.assert
// CHECK:         tt.return
// CHECK-LABEL: tt.func public @coil_out_1
// CHECK:         tt.assert {{.*}} "index out of bounds: 0 <= index < 10 (dim 0)"
func.func @positional(%w: !buffer.buffer<[10, 8], f32>) -> (!buffer.buffer<[32], f32>, !buffer.buffer<[32], f32>) {
  %in = buffer.alloc : !buffer.buffer<[32], f32>
  loop.pointwise [32] outs(%in : !buffer.buffer<[32], f32>) {
  ^bb0(%i0: index):
    %t = loop.index i0 : i64
    %ten = arith.constant 10 : i64
    %r = arith.remsi %t, %ten : i64
    %v = loop.load %w[t0, 3] indirect(%r : i64) : !buffer.buffer<[10, 8], f32>
    loop.yield %v : f32
  }
  %out = buffer.alloc : !buffer.buffer<[32], f32>
  loop.pointwise [32] outs(%out : !buffer.buffer<[32], f32>) {
  ^bb0(%i0: index):
    %t = loop.index i0 : i64
    %eleven = arith.constant 11 : i64
    %r = arith.remsi %t, %eleven : i64
    %v = loop.load %w[t0, 3] indirect(%r : i64) : !buffer.buffer<[10, 8], f32>
    loop.yield %v : f32
  }
  func.return %in, %out : !buffer.buffer<[32], f32>, !buffer.buffer<[32], f32>
}
