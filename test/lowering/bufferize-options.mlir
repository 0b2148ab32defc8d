// RUN: fx-opt %s -p 'bufferize{tf32=true}' --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'bufferize{align-gemms=false}' --split-input-file | filecheck %s --check-prefix=NOPAD
// RUN: fx-opt %s -p 'bufferize{padded-results=true tf32=true}' --split-input-file | filecheck %s --check-prefix=PADDED
// RUN: fx-opt %s -p bufferize --split-input-file | filecheck %s --check-prefix=NOTF32
// RUN: fx-opt %s -p 'bufferize{pad-constants=true}' --split-input-file | filecheck %s --check-prefix=CONST

// bufferize's options, each on the cases it changes: align-gemms (pad_mm),
// padded-results, tf32 (the FFMA operand layouts), pad-constants. The cases of
// bufferize.mlir run once, under tf32=true (they check nothing per option).

// A large CUDA matrix product whose width (50 f32 = 200 bytes) is not a
// multiple of 16 bytes runs on B padded to 52 columns by an extern of its own
// (Inductor's pad_mm: zero columns joined to it, not a zero-filled copy), so
// cuBLAS runs its aligned kernels; readers see the [1024, 50] view with row
// stride 52, and the returned product is copied to eager's row-major layout;
// with padded-results (the backend's choice for inference graphs) it is
// returned as that view, as Inductor returns its padded mm.
// CHECK-LABEL: func.func @padded_gemm
// CHECK:      %[[WP:.*]] = buffer.extern "aten.new_zeros.default" (%w) : {{.*}} -> (!buffer.buffer<[64, 52], f32, device "cuda:0">)
// CHECK:      %[[Z:.*]] = aten.new_zeros.default(%[[W:.*]], size = [64, 2]) : !aten.tensor<[64, 2], f32, device "cuda:0">
// CHECK:      aten.cat.default([%[[W]], %[[Z]]], dim = 1) : !aten.tensor<[64, 52], f32, device "cuda:0">
// CHECK:      %[[P:.*]] = buffer.extern "aten.mm.default" (%x, %[[WP]]) : {{.*}} -> (!buffer.buffer<[1024, 52], f32, device "cuda:0">)
// CHECK:      aten.mm.default(%{{.*}}, %{{.*}}) : !aten.tensor<[1024, 52], f32, device "cuda:0">
// CHECK:      %[[MM:.*]] = buffer.view %[[P]] : {{.*}} -> !buffer.buffer<[1024, 50], f32, strides [52, 1], device "cuda:0">
// CHECK:      loop.load %[[MM]][i0, i1] : !buffer.buffer<[1024, 50], f32, strides [52, 1], device "cuda:0">
// CHECK:      %[[C:.*]] = buffer.alloc : !buffer.buffer<[1024, 50], f32, device "cuda:0">
// CHECK-NEXT: loop.pointwise [1024, 50] outs(%[[C]]
// CHECK:      func.return %{{.*}}, %[[C]]
// PADDED-LABEL: func.func @padded_gemm
// PADDED:      %[[MM:.*]] = buffer.view %{{.*}} : {{.*}} -> !buffer.buffer<[1024, 50], f32, strides [52, 1], device "cuda:0">
// PADDED:      func.return %{{.*}}, %[[MM]]
// NOPAD-LABEL: func.func @padded_gemm
// NOPAD-NOT:  new_zeros
// Without TF32 an f32 product is not padded (FFMA kernels need no alignment).
// NOTF32-LABEL: func.func @padded_gemm
// NOTF32-NOT:  new_zeros
// NOTF32:      buffer.extern "aten.mm.default"
// NOTF32-NOT:  new_zeros
// NOTF32-LABEL: func.func @small_gemm_of_a_weight
// NOPAD:      buffer.extern "aten.mm.default"
func.func @padded_gemm(%x: !buffer.buffer<[1024, 64], f32, device "cuda:0">, %w: !buffer.buffer<[64, 50], f32, device "cuda:0">) -> (!loop.tensor<[1024, 50], f32>, !loop.tensor<[1024, 50], f32>) attributes {coil.result_types = [!aten.tensor<[1024, 50], f32, device "cuda:0">, !aten.tensor<[1024, 50], f32, device "cuda:0">]} {
  %mm = buffer.extern "aten.mm.default" (%x, %w) : (!buffer.buffer<[1024, 64], f32, device "cuda:0">, !buffer.buffer<[64, 50], f32, device "cuda:0">) -> (!loop.tensor<[1024, 50], f32>) {
  ^bb0(%xa: !aten.tensor<[1024, 64], f32, device "cuda:0">, %wa: !aten.tensor<[64, 50], f32, device "cuda:0">):
    %m = aten.mm.default(%xa, %wa) : !aten.tensor<[1024, 50], f32, device "cuda:0">
    buffer.yield %m : !aten.tensor<[1024, 50], f32, device "cuda:0">
  }
  %r = loop.pointwise [1024, 50] : !loop.tensor<[1024, 50], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %mm[i0, i1] : !loop.tensor<[1024, 50], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  func.return %r, %mm : !loop.tensor<[1024, 50], f32>, !loop.tensor<[1024, 50], f32>
}

// -----

// A product of 16 rows, under MIN_ROWS: a per-call pad of its B would cost
// about what the aligned kernel saves. With pad-constants a B computed from
// parameters alone (a coil.static weight, here read as weight.t()) is padded
// whatever the rows: buffer-hoist-constants computes that pad once per weight
// version. An activation's B (%y) is not.
// CONST-LABEL: func.func @small_gemm_of_a_weight
// CONST:      %[[WP:.*]] = buffer.extern "aten.transpose.int" (%w)
// CONST:        aten.cat.default
// CONST:      buffer.extern "aten.mm.default" (%x, %[[WP]])
// CONST:        aten.mm.default(%{{.*}}, %{{.*}}) : !aten.tensor<[16, 1008], bf16, device "cuda:0">
// CONST-NOT:  aten.cat
// CONST:      buffer.extern "aten.mm.default" (%x, %y)
// CHECK-LABEL: func.func @small_gemm_of_a_weight
// CHECK-NOT:  aten.cat
func.func @small_gemm_of_a_weight(%x: !buffer.buffer<[16, 64], bf16, device "cuda:0">, %w: !buffer.buffer<[64, 1003], bf16, strides [1, 64], device "cuda:0"> {coil.static}, %y: !buffer.buffer<[64, 1003], bf16, device "cuda:0">) -> (!loop.tensor<[16, 1003], bf16>, !loop.tensor<[16, 1003], bf16>) attributes {coil.result_types = [!aten.tensor<[16, 1003], bf16, device "cuda:0">, !aten.tensor<[16, 1003], bf16, device "cuda:0">]} {
  %a = buffer.extern "aten.mm.default" (%x, %w) : (!buffer.buffer<[16, 64], bf16, device "cuda:0">, !buffer.buffer<[64, 1003], bf16, strides [1, 64], device "cuda:0">) -> (!loop.tensor<[16, 1003], bf16>) {
  ^bb0(%xa: !aten.tensor<[16, 64], bf16, device "cuda:0">, %wa: !aten.tensor<[64, 1003], bf16, strides [1, 64], device "cuda:0">):
    %m = aten.mm.default(%xa, %wa) : !aten.tensor<[16, 1003], bf16, device "cuda:0">
    buffer.yield %m : !aten.tensor<[16, 1003], bf16, device "cuda:0">
  }
  %b = buffer.extern "aten.mm.default" (%x, %y) : (!buffer.buffer<[16, 64], bf16, device "cuda:0">, !buffer.buffer<[64, 1003], bf16, device "cuda:0">) -> (!loop.tensor<[16, 1003], bf16>) {
  ^bb0(%xa: !aten.tensor<[16, 64], bf16, device "cuda:0">, %ya: !aten.tensor<[64, 1003], bf16, device "cuda:0">):
    %m = aten.mm.default(%xa, %ya) : !aten.tensor<[16, 1003], bf16, device "cuda:0">
    buffer.yield %m : !aten.tensor<[16, 1003], bf16, device "cuda:0">
  }
  func.return %a, %b : !loop.tensor<[16, 1003], bf16>, !loop.tensor<[16, 1003], bf16>
}

// -----

// An f32 CUDA product without TF32 runs cuBLAS's FFMA kernels, where a
// row-major right operand (`nn`) was faster than eager's transposed view of
// the keys (`tn`): the cast of the keys, which reaches the product through a
// transpose and a batch reshape, is stored so that the view is row-major, as
// Inductor realizes a product's viewed operand; no copy is made. With TF32
// the traced transposed layout stays.

// NOTF32-LABEL: func.func @ffma_operand_row_major
// NOTF32-NEXT: %[[K:.*]] = buffer.alloc : !buffer.buffer<[2, 3, 8, 4], f32, strides [96, 32, 1, 8], device "cuda:0">
// NOTF32-NEXT: loop.pointwise [2, 3, 8, 4] outs(%[[K]]
// NOTF32: %[[KT:.*]] = buffer.view %[[K]] : {{.*}} -> !buffer.buffer<[6, 4, 8], f32, device "cuda:0">
// NOTF32-NOT: loop.pointwise
// NOTF32: buffer.extern "aten.bmm.default" (%q, %[[KT]])
// NOTF32-NEXT: ^bb0(%{{.*}}: !aten.tensor<[6, 8, 4], f32, device "cuda:0">, %{{.*}}: !aten.tensor<[6, 4, 8], f32, device "cuda:0">):
// CHECK-LABEL: func.func @ffma_operand_row_major
// CHECK-NEXT: %[[K:.*]] = buffer.alloc : !buffer.buffer<[2, 3, 8, 4], f32, device "cuda:0">
// CHECK: buffer.view %[[K]] : {{.*}} -> !buffer.buffer<[6, 4, 8], f32, strides [32, 1, 4], device "cuda:0">
func.func @ffma_operand_row_major(%q: !buffer.buffer<[6, 8, 4], f32, device "cuda:0">, %k: !buffer.buffer<[2, 3, 8, 4], bf16, device "cuda:0">) -> !loop.tensor<[6, 8, 8], f32> {
  %kf = loop.pointwise [2, 3, 8, 4] : !loop.tensor<[2, 3, 8, 4], f32> {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %0 = loop.load %k[i0, i1, i2, i3] : !buffer.buffer<[2, 3, 8, 4], bf16, device "cuda:0">
    %1 = arith.extf %0 : bf16 to f32
    loop.yield %1 : f32
  }
  %kt = loop.view %kf[i0 floordiv 3, i0 mod 3, i2, i1] : !loop.tensor<[2, 3, 8, 4], f32> -> !loop.tensor<[6, 4, 8], f32>
  %s = buffer.extern "aten.bmm.default" (%q, %kt) : (!buffer.buffer<[6, 8, 4], f32, device "cuda:0">, !loop.tensor<[6, 4, 8], f32>) -> (!loop.tensor<[6, 8, 8], f32>) {
  ^bb0(%a: !aten.tensor<[6, 8, 4], f32, device "cuda:0">, %b: !aten.tensor<[6, 4, 8], f32, strides [32, 1, 4], device "cuda:0">):
    %0 = aten.bmm.default(%a, %b) : !aten.tensor<[6, 8, 8], f32, device "cuda:0">
    buffer.yield %0 : !aten.tensor<[6, 8, 8], f32, device "cuda:0">
  }
  func.return %s : !loop.tensor<[6, 8, 8], f32>
}

// -----

// The same keys also returned: stored in eager's layout, so the product keeps
// the traced transposed operand (declaring it row-major would cost a copy).

// NOTF32-LABEL: func.func @ffma_operand_returned
// NOTF32-NEXT: %[[K:.*]] = buffer.alloc : !buffer.buffer<[2, 3, 8, 4], f32, device "cuda:0">
// NOTF32: buffer.view %[[K]] : {{.*}} -> !buffer.buffer<[6, 4, 8], f32, strides [32, 1, 4], device "cuda:0">
// NOTF32-NOT: loop.pointwise
// NOTF32: buffer.extern "aten.bmm.default"
func.func @ffma_operand_returned(%q: !buffer.buffer<[6, 8, 4], f32, device "cuda:0">, %k: !buffer.buffer<[2, 3, 8, 4], bf16, device "cuda:0">) -> (!loop.tensor<[6, 8, 8], f32>, !loop.tensor<[2, 3, 8, 4], f32>) attributes {coil.result_types = [!aten.tensor<[6, 8, 8], f32, device "cuda:0">, !aten.tensor<[2, 3, 8, 4], f32, device "cuda:0">]} {
  %kf = loop.pointwise [2, 3, 8, 4] : !loop.tensor<[2, 3, 8, 4], f32> {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %0 = loop.load %k[i0, i1, i2, i3] : !buffer.buffer<[2, 3, 8, 4], bf16, device "cuda:0">
    %1 = arith.extf %0 : bf16 to f32
    loop.yield %1 : f32
  }
  %kt = loop.view %kf[i0 floordiv 3, i0 mod 3, i2, i1] : !loop.tensor<[2, 3, 8, 4], f32> -> !loop.tensor<[6, 4, 8], f32>
  %s = buffer.extern "aten.bmm.default" (%q, %kt) : (!buffer.buffer<[6, 8, 4], f32, device "cuda:0">, !loop.tensor<[6, 4, 8], f32>) -> (!loop.tensor<[6, 8, 8], f32>) {
  ^bb0(%a: !aten.tensor<[6, 8, 4], f32, device "cuda:0">, %b: !aten.tensor<[6, 4, 8], f32, strides [32, 1, 4], device "cuda:0">):
    %0 = aten.bmm.default(%a, %b) : !aten.tensor<[6, 8, 8], f32, device "cuda:0">
    buffer.yield %0 : !aten.tensor<[6, 8, 8], f32, device "cuda:0">
  }
  func.return %s, %kf : !loop.tensor<[6, 8, 8], f32>, !loop.tensor<[2, 3, 8, 4], f32>
}

// -----

// One nest read by two products, by the first through a transpose that the
// FFMA rule stores row-major (so the nest is column-major in each batch) and
// by the second directly, traced row-major: cuBLAS reads either order as it
// is, so the second product's operand is re-declared in the stored layout and
// nothing is copied (it was a copy of the whole nest: an LM head's logits
// gradient, 250 MiB at a backward's peak). With TF32 the nest stays row-major
// and the first product reads the transpose.

// NOTF32-LABEL: func.func @two_products_one_nest
// NOTF32-NEXT: %[[G:.*]] = buffer.alloc : !buffer.buffer<[6, 8, 4], f32, strides [32, 1, 8], device "cuda:0">
// NOTF32-NEXT: loop.pointwise [6, 8, 4] outs(%[[G]]
// NOTF32-NOT: loop.pointwise
// NOTF32: buffer.extern "aten.bmm.default" (%{{.*}}, %q)
// NOTF32-NEXT: ^bb0(%{{.*}}: !aten.tensor<[6, 4, 8], f32, device "cuda:0">, %{{.*}}: !aten.tensor<[6, 8, 8], f32, device "cuda:0">):
// NOTF32-NOT: loop.pointwise
// NOTF32: buffer.extern "aten.bmm.default" (%[[G]], %w)
// NOTF32-NEXT: ^bb0(%{{.*}}: !aten.tensor<[6, 8, 4], f32, strides [32, 1, 8], device "cuda:0">, %{{.*}}: !aten.tensor<[6, 4, 8], f32, device "cuda:0">):
// CHECK-LABEL: func.func @two_products_one_nest
// CHECK-NEXT: %[[G:.*]] = buffer.alloc : !buffer.buffer<[6, 8, 4], f32, device "cuda:0">
// CHECK-NEXT: loop.pointwise [6, 8, 4] outs(%[[G]]
// CHECK-NOT: loop.pointwise
// CHECK: buffer.extern "aten.bmm.default" (%[[G]], %w)
func.func @two_products_one_nest(%q: !buffer.buffer<[6, 8, 8], f32, device "cuda:0">, %k: !buffer.buffer<[6, 8, 4], bf16, device "cuda:0">, %w: !buffer.buffer<[6, 4, 8], f32, device "cuda:0">) -> (!loop.tensor<[6, 4, 8], f32>, !loop.tensor<[6, 8, 8], f32>) {
  %g = loop.pointwise [6, 8, 4] : !loop.tensor<[6, 8, 4], f32> {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %0 = loop.load %k[i0, i1, i2] : !buffer.buffer<[6, 8, 4], bf16, device "cuda:0">
    %1 = arith.extf %0 : bf16 to f32
    loop.yield %1 : f32
  }
  %gt = loop.view %g[i0, i2, i1] : !loop.tensor<[6, 8, 4], f32> -> !loop.tensor<[6, 4, 8], f32>
  %a = buffer.extern "aten.bmm.default" (%gt, %q) : (!loop.tensor<[6, 4, 8], f32>, !buffer.buffer<[6, 8, 8], f32, device "cuda:0">) -> (!loop.tensor<[6, 4, 8], f32>) {
  ^bb0(%x: !aten.tensor<[6, 4, 8], f32, strides [32, 1, 4], device "cuda:0">, %y: !aten.tensor<[6, 8, 8], f32, device "cuda:0">):
    %0 = aten.bmm.default(%x, %y) : !aten.tensor<[6, 4, 8], f32, device "cuda:0">
    buffer.yield %0 : !aten.tensor<[6, 4, 8], f32, device "cuda:0">
  }
  %b = buffer.extern "aten.bmm.default" (%g, %w) : (!loop.tensor<[6, 8, 4], f32>, !buffer.buffer<[6, 4, 8], f32, device "cuda:0">) -> (!loop.tensor<[6, 8, 8], f32>) {
  ^bb0(%x: !aten.tensor<[6, 8, 4], f32, device "cuda:0">, %y: !aten.tensor<[6, 4, 8], f32, device "cuda:0">):
    %0 = aten.bmm.default(%x, %y) : !aten.tensor<[6, 8, 8], f32, device "cuda:0">
    buffer.yield %0 : !aten.tensor<[6, 8, 8], f32, device "cuda:0">
  }
  func.return %a, %b : !loop.tensor<[6, 4, 8], f32>, !loop.tensor<[6, 8, 8], f32>
}

// -----

// A 2-D product keeps its traced operand layouts (a Linear's weight gradient
// dy.t() @ x reads the transpose of a row-major dy): the FFMA rule is for
// batched products, where it was measured faster; for mm cuBLAS's `nn` ran
// slower than eager's layouts.

// NOTF32-LABEL: func.func @mm_keeps_traced_layout
// NOTF32-NEXT: %[[G:.*]] = buffer.alloc : !buffer.buffer<[8, 4], f32, device "cuda:0">
// NOTF32-NEXT: loop.pointwise [8, 4] outs(%[[G]]
// NOTF32-NOT: loop.pointwise
// NOTF32: buffer.extern "aten.mm.default"
// NOTF32-NEXT: ^bb0(%{{.*}}: !aten.tensor<[4, 8], f32, strides [1, 4], device "cuda:0">
func.func @mm_keeps_traced_layout(%k: !buffer.buffer<[8, 4], bf16, device "cuda:0">, %x: !buffer.buffer<[8, 16], f32, device "cuda:0">) -> !loop.tensor<[4, 16], f32> {
  %g = loop.pointwise [8, 4] : !loop.tensor<[8, 4], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %k[i0, i1] : !buffer.buffer<[8, 4], bf16, device "cuda:0">
    %1 = arith.extf %0 : bf16 to f32
    loop.yield %1 : f32
  }
  %gt = loop.view %g[i1, i0] : !loop.tensor<[8, 4], f32> -> !loop.tensor<[4, 8], f32>
  %a = buffer.extern "aten.mm.default" (%gt, %x) : (!loop.tensor<[4, 8], f32>, !buffer.buffer<[8, 16], f32, device "cuda:0">) -> (!loop.tensor<[4, 16], f32>) {
  ^bb0(%p: !aten.tensor<[4, 8], f32, strides [1, 4], device "cuda:0">, %r: !aten.tensor<[8, 16], f32, device "cuda:0">):
    %0 = aten.mm.default(%p, %r) : !aten.tensor<[4, 16], f32, device "cuda:0">
    buffer.yield %0 : !aten.tensor<[4, 16], f32, device "cuda:0">
  }
  func.return %a : !loop.tensor<[4, 16], f32>
}
