// The last case fails on purpose (exit code 1): check its message apart.
// RUN: not fx-opt %s -p convert-buffer-to-host --split-input-file > %t 2> %t.err
// RUN: filecheck %s < %t
// RUN: filecheck %s --check-prefix=ERR < %t.err

// The buffer-level function, its nests already launched by convert-loop-to-tt,
// becomes the host wrapper: same name, arguments (with their attributes),
// results and function attributes; each buffer op becomes its host op in
// place; launches and the kernels stay.

// CHECK:       tt.func public @coil_exp_0
// CHECK-LABEL: host.func @forward
// CHECK-SAME:  (%n: index {coil.symbol = #coil.expr<s0>}, %x: !buffer.buffer<[s0, 8], f32>, %w: !buffer.buffer<[8, 4], f32>, %k: !buffer.buffer<[], i64> {coil.constant})
// CHECK-SAME:  -> (!buffer.buffer<[s0, 4], f32>, !buffer.buffer<[8, s0], f32, strides [1, 8]>)
// CHECK-SAME:  attributes {coil.output_tree = "(0, [1])", coil.peak_bytes = #coil.expr<64*s0>}
// CHECK-NEXT:  %[[E:.*]] = host.empty_strided : !buffer.buffer<[s0, 8], f32>
// CHECK-NEXT:  %[[SEED:.*]] = host.seed : i64
// CHECK-NEXT:  host.launch @coil_exp_0 grid [s0, 1, 1] (%x, %[[E]], %[[SEED]] : !buffer.buffer<[s0, 8], f32>, !buffer.buffer<[s0, 8], f32>, i64) scalars [s0] {num_warps = 4 : i64, num_stages = 1 : i64}
// CHECK-NEXT:  %[[T:.*]] = host.reinterpret %[[E]] : !buffer.buffer<[s0, 8], f32> -> !buffer.buffer<[8, s0], f32, strides [1, 8]>
// CHECK-NEXT:  %[[MM:.*]] = host.extern "aten.mm.default" (%[[E]], %w) : (!buffer.buffer<[s0, 8], f32>, !buffer.buffer<[8, 4], f32>) -> (!buffer.buffer<[s0, 4], f32>) {
// CHECK-NEXT:  ^bb0(%a: !aten.tensor<[s0, 8], f32>, %b: !aten.tensor<[8, 4], f32>):
// CHECK-NEXT:    %c = aten.mm.default(%a, %b) : !aten.tensor<[s0, 4], f32>
// CHECK-NEXT:    host.yield %c : !aten.tensor<[s0, 4], f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  %[[R:.*]] = host.empty_strided : !buffer.buffer<[8, s0], f32, strides [1, 8]>
// CHECK-NEXT:  host.launch @coil_exp_0 grid [s0, 1, 1] (%[[T]], %[[R]], %[[SEED]] : !buffer.buffer<[8, s0], f32, strides [1, 8]>, !buffer.buffer<[8, s0], f32, strides [1, 8]>, i64) scalars [s0]
// CHECK-NEXT:  %[[U:.*]] = host.reinterpret %[[E]] : !buffer.buffer<[s0, 8], f32> -> !buffer.buffer<[4, s0], f32>
// CHECK-NEXT:  host.free %[[U]] : !buffer.buffer<[4, s0], f32>
// CHECK-NEXT:  host.return %[[MM]], %[[R]] : !buffer.buffer<[s0, 4], f32>, !buffer.buffer<[8, s0], f32, strides [1, 8]>
// CHECK-NOT:   func.
// CHECK-NOT:   buffer.alloc
// CHECK-NOT:   loop.
tt.func public @coil_exp_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %seed0: i64, %s0: i64) {
  tt.return
}
func.func @forward(%n: index {coil.symbol = #coil.expr<s0>}, %x: !buffer.buffer<[s0, 8], f32>, %w: !buffer.buffer<[8, 4], f32>, %k: !buffer.buffer<[], i64> {coil.constant}) -> (!buffer.buffer<[s0, 4], f32>, !buffer.buffer<[8, s0], f32, strides [1, 8]>) attributes {coil.output_tree = "(0, [1])", coil.peak_bytes = #coil.expr<64*s0>} {
  %e = buffer.alloc : !buffer.buffer<[s0, 8], f32>
  %seed = loop.seed : i64
  host.launch @coil_exp_0 grid [s0, 1, 1] (%x, %e, %seed : !buffer.buffer<[s0, 8], f32>, !buffer.buffer<[s0, 8], f32>, i64) scalars [s0] {num_warps = 4 : i64, num_stages = 1 : i64}
  %t = buffer.view %e : !buffer.buffer<[s0, 8], f32> -> !buffer.buffer<[8, s0], f32, strides [1, 8]>
  %mm = buffer.extern "aten.mm.default" (%e, %w) : (!buffer.buffer<[s0, 8], f32>, !buffer.buffer<[8, 4], f32>) -> (!buffer.buffer<[s0, 4], f32>) {
  ^bb0(%a: !aten.tensor<[s0, 8], f32>, %b: !aten.tensor<[8, 4], f32>):
    %c = aten.mm.default(%a, %b) : !aten.tensor<[s0, 4], f32>
    buffer.yield %c : !aten.tensor<[s0, 4], f32>
  }
  %r = buffer.alloc : !buffer.buffer<[8, s0], f32, strides [1, 8]>
  host.launch @coil_exp_0 grid [s0, 1, 1] (%t, %r, %seed : !buffer.buffer<[8, s0], f32, strides [1, 8]>, !buffer.buffer<[8, s0], f32, strides [1, 8]>, i64) scalars [s0]
  %u = buffer.reuse %e : !buffer.buffer<[s0, 8], f32> -> !buffer.buffer<[4, s0], f32>
  buffer.dealloc %u : !buffer.buffer<[4, s0], f32>
  func.return %mm, %r : !buffer.buffer<[s0, 4], f32>, !buffer.buffer<[8, s0], f32, strides [1, 8]>
}

// -----

// A view of a view is one view of the first's source (offsets in types count
// from the storage root, so the layout is unchanged), and the intermediate
// view, read by nothing else, is dropped; a view something else reads stays.

// CHECK-LABEL: host.func @view_chain
// CHECK-NEXT:  %[[V1:.*]] = host.reinterpret %x : !buffer.buffer<[2, 8], f32> -> !buffer.buffer<[4, 4], f32>
// CHECK-NEXT:  %[[V3:.*]] = host.reinterpret %x : !buffer.buffer<[2, 8], f32> -> !buffer.buffer<[4], f32, offset 4>
// CHECK-NEXT:  host.return %[[V1]], %[[V3]]
func.func @view_chain(%x: !buffer.buffer<[2, 8], f32>) -> (!buffer.buffer<[4, 4], f32>, !buffer.buffer<[4], f32, offset 4>) {
  %v1 = buffer.view %x : !buffer.buffer<[2, 8], f32> -> !buffer.buffer<[4, 4], f32>
  %v2 = buffer.view %v1 : !buffer.buffer<[4, 4], f32> -> !buffer.buffer<[1, 16], f32>
  %v3 = buffer.view %v2 : !buffer.buffer<[1, 16], f32> -> !buffer.buffer<[4], f32, offset 4>
  func.return %v1, %v3 : !buffer.buffer<[4, 4], f32>, !buffer.buffer<[4], f32, offset 4>
}

// -----

// A nest convert-loop-to-tt has not lowered is an error that names it.
// ERR: convert-buffer-to-host: loop.pointwise remains in @not_launched; run convert-loop-to-tt first
// ERR-NOT: Traceback
func.func @not_launched(%x: !buffer.buffer<[4], f32>) -> !buffer.buffer<[4], f32> {
  %y = buffer.alloc : !buffer.buffer<[4], f32>
  loop.pointwise [4] outs(%y : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !buffer.buffer<[4], f32>
    %b = math.exp %a : f32
    loop.yield %b : f32
  }
  func.return %y : !buffer.buffer<[4], f32>
}
