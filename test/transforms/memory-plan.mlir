// RUN: fx-opt %s -p memory-plan --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'memory-plan{reuse=false}' --split-input-file | filecheck %s --check-prefix=NOREUSE

// A chain of reductions: each intermediate dies after its reader, and a later
// buffer of the same size takes over its storage.

// CHECK-LABEL: func.func @chain
// CHECK-SAME: attributes {coil.peak_bytes = #coil.expr<32>}
// CHECK-NEXT: %[[A:.*]] = buffer.alloc : !buffer.buffer<[4], f32>
// CHECK:      %[[B:.*]] = buffer.alloc : !buffer.buffer<[4], f32>
// CHECK-NOT:  buffer.dealloc %[[A]]
// CHECK:      %[[C:.*]] = buffer.reuse %[[A]] : !buffer.buffer<[4], f32> -> !buffer.buffer<[4], f32>
// CHECK-NEXT: loop.reduction sum [4] [8] outs(%[[C]] : !buffer.buffer<[4], f32>)
// CHECK:      %[[D:.*]] = buffer.reuse %[[B]] : !buffer.buffer<[4], f32> -> !buffer.buffer<[4], f32>
// CHECK-NEXT: loop.reduction min [4] [8] outs(%[[D]] : !buffer.buffer<[4], f32>)
// CHECK:      buffer.dealloc %[[C]] : !buffer.buffer<[4], f32>
// CHECK-NEXT: func.return %[[D]]
// NOREUSE-LABEL: func.func @chain
// NOREUSE-SAME: coil.peak_bytes = #coil.expr<32>
// NOREUSE-NOT:  buffer.reuse
// NOREUSE:      %[[A:.*]] = buffer.alloc
// NOREUSE:      %[[B:.*]] = buffer.alloc
// NOREUSE:      loop.reduction max
// NOREUSE:      buffer.dealloc %[[A]]
// NOREUSE-NEXT: %[[C:.*]] = buffer.alloc
// NOREUSE:      buffer.dealloc %[[B]]
// NOREUSE-NEXT: %[[D:.*]] = buffer.alloc
// NOREUSE:      buffer.dealloc %[[C]]
// NOREUSE-NEXT: func.return %[[D]]
func.func @chain(%x: !buffer.buffer<[4, 8], f32>) -> !buffer.buffer<[4], f32> {
  %a = buffer.alloc : !buffer.buffer<[4], f32>
  loop.reduction sum [4] [8] outs(%a : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index, %r0: index):
    %v = loop.load %x[i0, r0] : !buffer.buffer<[4, 8], f32>
    loop.yield %v : f32
  }
  %b = buffer.alloc : !buffer.buffer<[4], f32>
  loop.reduction max [4] [8] outs(%b : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index, %r0: index):
    %v = loop.load %x[i0, r0] : !buffer.buffer<[4, 8], f32>
    %w = loop.load %a[i0] : !buffer.buffer<[4], f32>
    %s = arith.subf %v, %w : f32
    loop.yield %s : f32
  }
  %c = buffer.alloc : !buffer.buffer<[4], f32>
  loop.reduction sum [4] [8] outs(%c : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index, %r0: index):
    %v = loop.load %x[i0, r0] : !buffer.buffer<[4, 8], f32>
    %w = loop.load %b[i0] : !buffer.buffer<[4], f32>
    %s = arith.subf %v, %w : f32
    loop.yield %s : f32
  }
  %d = buffer.alloc : !buffer.buffer<[4], f32>
  loop.reduction min [4] [8] outs(%d : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index, %r0: index):
    %v = loop.load %x[i0, r0] : !buffer.buffer<[4, 8], f32>
    %w = loop.load %c[i0] : !buffer.buffer<[4], f32>
    %s = arith.subf %v, %w : f32
    loop.yield %s : f32
  }
  func.return %d : !buffer.buffer<[4], f32>
}

// -----

// Views keep their storage alive; a result (or a view a result returns) is
// never freed; another dtype or a live buffer is never reused. %c reads %b
// through a transposed view of a transpose: at the very address it writes,
// so it runs in place over %b, which dies there.

// CHECK-LABEL: func.func @aliases
// CHECK-SAME: coil.peak_bytes = #coil.expr<512>
// CHECK:      %[[A:.*]] = buffer.alloc : !buffer.buffer<[4, 8], f32>
// CHECK:      %[[B:.*]] = buffer.alloc : !buffer.buffer<[4, 8], f32>
// CHECK:      %[[C:.*]] = buffer.reuse %[[B]] : !buffer.buffer<[4, 8], f32>
// CHECK:        loop.load %{{.*}}[i1, i0] : !buffer.buffer<[8, 4], f32, strides [1, 8]>
// CHECK:      %[[D:.*]] = buffer.alloc : !buffer.buffer<[4, 8], i64>
// CHECK:      buffer.dealloc %[[C]]
// CHECK-NOT:  buffer.dealloc %[[A]]
// CHECK:      func.return
func.func @aliases(%x: !buffer.buffer<[4, 8], f32>) -> (!buffer.buffer<[8, 4], f32, strides [1, 8]>, !buffer.buffer<[4, 8], i64>) {
  %a = buffer.alloc : !buffer.buffer<[4, 8], f32>
  loop.pointwise [4, 8] outs(%a : !buffer.buffer<[4, 8], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %x[i0, i1] : !buffer.buffer<[4, 8], f32>
    loop.yield %v : f32
  }
  %t = buffer.view %a : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[8, 4], f32, strides [1, 8]>
  %b = buffer.alloc : !buffer.buffer<[4, 8], f32>
  loop.pointwise [4, 8] outs(%b : !buffer.buffer<[4, 8], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %x[i0, i1] : !buffer.buffer<[4, 8], f32>
    loop.yield %v : f32
  }
  %bt = buffer.view %b : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[8, 4], f32, strides [1, 8]>
  %c = buffer.alloc : !buffer.buffer<[4, 8], f32>
  loop.pointwise [4, 8] outs(%c : !buffer.buffer<[4, 8], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %bt[i1, i0] : !buffer.buffer<[8, 4], f32, strides [1, 8]>
    loop.yield %v : f32
  }
  %d = buffer.alloc : !buffer.buffer<[4, 8], i64>
  loop.pointwise [4, 8] outs(%d : !buffer.buffer<[4, 8], i64>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %c[i0, i1] : !buffer.buffer<[4, 8], f32>
    %w = arith.fptosi %v : f32 to i64
    loop.yield %w : i64
  }
  func.return %t, %d : !buffer.buffer<[8, 4], f32, strides [1, 8]>, !buffer.buffer<[4, 8], i64>
}

// -----

// An extern call whose result aliases its operand (a view op) keeps the
// operand alive while the result is (%a dies after the clone reads %t); the
// clone's result does not alias: the copy after it runs in place over it.

// CHECK-LABEL: func.func @externs
// CHECK:      %[[A:.*]] = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK:      buffer.extern "aten.t.default" (%[[A]])
// CHECK:      %[[CL:.*]] = buffer.extern "aten.clone.default"
// CHECK:      buffer.dealloc %[[A]]
// CHECK-NEXT: %[[B:.*]] = buffer.reuse %[[CL]]
// NOREUSE-LABEL: func.func @externs
// NOREUSE:      buffer.extern "aten.clone.default"
// NOREUSE:      buffer.dealloc %[[A:.*]] :
// NOREUSE-NEXT: buffer.alloc
func.func @externs(%x: !buffer.buffer<[4, 4], f32>) -> !buffer.buffer<[4, 4], f32> {
  %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
  loop.pointwise [4, 4] outs(%a : !buffer.buffer<[4, 4], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %x[i0, i1] : !buffer.buffer<[4, 4], f32>
    loop.yield %v : f32
  }
  %t = buffer.extern "aten.t.default" (%a) : (!buffer.buffer<[4, 4], f32>) -> (!buffer.buffer<[4, 4], f32, strides [1, 4]>) {
  ^bb0(%arg: !aten.tensor<[4, 4], f32>):
    %0 = aten.t.default(%arg) : !aten.tensor<[4, 4], f32, strides [1, 4]>
    buffer.yield %0 : !aten.tensor<[4, 4], f32, strides [1, 4]>
  }
  %cl = buffer.extern "aten.clone.default" (%t) : (!buffer.buffer<[4, 4], f32, strides [1, 4]>) -> (!buffer.buffer<[4, 4], f32>) {
  ^bb0(%p: !aten.tensor<[4, 4], f32, strides [1, 4]>):
    %1 = aten.clone.default(%p, memory_format = contiguous_format) : !aten.tensor<[4, 4], f32>
    buffer.yield %1 : !aten.tensor<[4, 4], f32>
  }
  %b = buffer.alloc : !buffer.buffer<[4, 4], f32>
  loop.pointwise [4, 4] outs(%b : !buffer.buffer<[4, 4], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %cl[i0, i1] : !buffer.buffer<[4, 4], f32>
    loop.yield %v : f32
  }
  func.return %b : !buffer.buffer<[4, 4], f32>
}

// -----

// A GEMM writes its product into a planned buffer through its out= form
// (destination-passing: the extern has no result, readers read the buffer),
// so the product's storage is reused like a kernel's: the second product
// takes over %a, dead after the first product read it (never the storage the
// call itself reads). A product with another layout than the row-major one
// ATen makes keeps its own result. Without reuse nothing changes.

// CHECK-LABEL: func.func @gemm_out
// CHECK:      %[[A:.*]] = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK:      %[[M1:.*]] = buffer.alloc : !buffer.buffer<[4, 4], f32>
// CHECK-NEXT: buffer.extern "aten.mm.out" (%[[A]], %x, %[[M1]]) : ({{.*}}) -> () {
// CHECK-NEXT: ^{{.*}}(%{{.*}}: !aten.tensor<[4, 4], f32>, %{{.*}}: !aten.tensor<[4, 4], f32>, %out: !aten.tensor<[4, 4], f32>):
// CHECK-NEXT:   aten.mm.out(%{{.*}}, %{{.*}}, %out) : !aten.tensor<[4, 4], f32>
// CHECK-NEXT:   buffer.yield{{$}}
// CHECK:      %[[M2:.*]] = buffer.reuse %[[A]]
// CHECK-NEXT: buffer.extern "aten.addmm.out" (%x, %[[M1]], %x, %[[M2]])
// CHECK:        aten.addmm.out({{.*}}beta = 2
// CHECK:      buffer.dealloc %[[M1]]
// CHECK:      %[[T:.*]] = buffer.extern "aten.mm.default" (%[[M2]], %x)
// CHECK:      func.return %[[T]]
// NOREUSE-LABEL: func.func @gemm_out
// NOREUSE-NOT:  .out
// NOREUSE:      func.return
func.func @gemm_out(%x: !buffer.buffer<[4, 4], f32>) -> !buffer.buffer<[4, 4], f32, strides [1, 4]> {
  %a = buffer.alloc : !buffer.buffer<[4, 4], f32>
  loop.pointwise [4, 4] outs(%a : !buffer.buffer<[4, 4], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %x[i0, i1] : !buffer.buffer<[4, 4], f32>
    loop.yield %v : f32
  }
  %m1 = buffer.extern "aten.mm.default" (%a, %x) : (!buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], f32>) -> (!buffer.buffer<[4, 4], f32>) {
  ^bb0(%p: !aten.tensor<[4, 4], f32>, %q: !aten.tensor<[4, 4], f32>):
    %0 = aten.mm.default(%p, %q) : !aten.tensor<[4, 4], f32>
    buffer.yield %0 : !aten.tensor<[4, 4], f32>
  }
  %m2 = buffer.extern "aten.addmm.default" (%x, %m1, %x) : (!buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], f32>) -> (!buffer.buffer<[4, 4], f32>) {
  ^bb0(%b: !aten.tensor<[4, 4], f32>, %p: !aten.tensor<[4, 4], f32>, %q: !aten.tensor<[4, 4], f32>):
    %1 = aten.addmm.default(%b, %p, %q, beta = 2) : !aten.tensor<[4, 4], f32>
    buffer.yield %1 : !aten.tensor<[4, 4], f32>
  }
  %t = buffer.extern "aten.mm.default" (%m2, %x) : (!buffer.buffer<[4, 4], f32>, !buffer.buffer<[4, 4], f32>) -> (!buffer.buffer<[4, 4], f32, strides [1, 4]>) {
  ^bb0(%p: !aten.tensor<[4, 4], f32>, %q: !aten.tensor<[4, 4], f32>):
    %2 = aten.mm.default(%p, %q) : !aten.tensor<[4, 4], f32, strides [1, 4]>
    buffer.yield %2 : !aten.tensor<[4, 4], f32, strides [1, 4]>
  }
  func.return %t : !buffer.buffer<[4, 4], f32, strides [1, 4]>
}

// -----

// Symbolic sizes: equal storage sizes are found by sympy; the peak is a max of
// what cannot be compared.

// CHECK-LABEL: func.func @symbolic
// CHECK-SAME: coil.peak_bytes = #coil.expr<max(128*s0, 64*s0 + 256)>
// CHECK:      %[[A:.*]] = buffer.alloc : !buffer.buffer<[s0, 16], f32>
// CHECK:      %[[B:.*]] = buffer.alloc : !buffer.buffer<[16, s0], f32>
// CHECK:      buffer.dealloc %[[A]]
// CHECK-NEXT: %[[C:.*]] = buffer.alloc : !buffer.buffer<[64], f32>
// CHECK:      %[[D:.*]] = buffer.reuse %[[B]] : !buffer.buffer<[16, s0], f32> -> !buffer.buffer<[s0, 16], f32>
// CHECK:      buffer.dealloc %[[C]]
// CHECK:      buffer.dealloc %[[D]]
// CHECK-NOT:  buffer.dealloc %[[B]]
// NOREUSE-LABEL: func.func @symbolic
// NOREUSE-SAME: coil.peak_bytes = #coil.expr<max(128*s0, 64*s0 + 256)>
func.func @symbolic(%x: !buffer.buffer<[s0, 16], f32>) -> !buffer.buffer<[s0], f32> {
  %a = buffer.alloc : !buffer.buffer<[s0, 16], f32>
  loop.pointwise [s0, 16] outs(%a : !buffer.buffer<[s0, 16], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %x[i0, i1] : !buffer.buffer<[s0, 16], f32>
    loop.yield %v : f32
  }
  %b = buffer.alloc : !buffer.buffer<[16, s0], f32>
  loop.pointwise [16, s0] outs(%b : !buffer.buffer<[16, s0], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %a[i1, i0] : !buffer.buffer<[s0, 16], f32>
    loop.yield %v : f32
  }
  %c = buffer.alloc : !buffer.buffer<[64], f32>
  loop.reduction sum [64] [16] outs(%c : !buffer.buffer<[64], f32>) {
  ^bb0(%i0: index, %r0: index):
    %v = loop.load %b[r0, 0] : !buffer.buffer<[16, s0], f32>
    loop.yield %v : f32
  }
  %d = buffer.alloc : !buffer.buffer<[s0, 16], f32>
  loop.pointwise [s0, 16] outs(%d : !buffer.buffer<[s0, 16], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %c[i1] : !buffer.buffer<[64], f32>
    loop.yield %v : f32
  }
  %e = buffer.alloc : !buffer.buffer<[s0], f32>
  loop.reduction sum [s0] [16] outs(%e : !buffer.buffer<[s0], f32>) {
  ^bb0(%i0: index, %r0: index):
    %v = loop.load %d[i0, r0] : !buffer.buffer<[s0, 16], f32>
    loop.yield %v : f32
  }
  func.return %e : !buffer.buffer<[s0], f32>
}

// -----

// What ATen allocates is storage too: a clone's result counts in the peak
// and its storage is reused, here in place by the relu (which reads each
// element only where it writes it, Inductor's in-place buffers); the
// transposed read after it cannot run in place (clone/relu 1 KB + e 1 KB).
// CHECK-LABEL: func.func @extern_results
// CHECK-SAME:    coil.peak_bytes = #coil.expr<2048>
// CHECK:       %[[MM:.*]] = buffer.extern "aten.clone.default"
// CHECK:       %[[R:.*]] = buffer.reuse %[[MM]] : !buffer.buffer<[16, 16], f32> -> !buffer.buffer<[16, 16], f32>
// CHECK:       loop.pointwise [16, 16] outs(%[[R]]
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:  loop.load %[[MM]]
// CHECK:       %[[E:.*]] = buffer.alloc : !buffer.buffer<[16, 16], f32>
// CHECK:       loop.pointwise [16, 16] outs(%[[E]]
// CHECK:       buffer.dealloc %[[R]]
// CHECK:       func.return %[[E]]
// NOREUSE-LABEL: func.func @extern_results
// NOREUSE:       loop.load %[[MM:.*]][i0, i1]
// NOREUSE:       }
// NOREUSE-NEXT:  buffer.dealloc %[[MM]]
func.func @extern_results(%x: !buffer.buffer<[16, 16], f32>) -> !buffer.buffer<[16, 16], f32> {
  %mm = buffer.extern "aten.clone.default" (%x) : (!buffer.buffer<[16, 16], f32>) -> (!buffer.buffer<[16, 16], f32>) {
  ^bb0(%a: !aten.tensor<[16, 16], f32>):
    %m = aten.clone.default(%a) : !aten.tensor<[16, 16], f32>
    buffer.yield %m : !aten.tensor<[16, 16], f32>
  }
  %r = buffer.alloc : !buffer.buffer<[16, 16], f32>
  loop.pointwise [16, 16] outs(%r : !buffer.buffer<[16, 16], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %mm[i0, i1] : !buffer.buffer<[16, 16], f32>
    %z = arith.constant 0.0 : f32
    %w = arith.maximumf %v, %z : f32
    loop.yield %w : f32
  }
  %e = buffer.alloc : !buffer.buffer<[16, 16], f32>
  loop.pointwise [16, 16] outs(%e : !buffer.buffer<[16, 16], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %r[i1, i0] : !buffer.buffer<[16, 16], f32>
    %w = math.exp %v : f32
    loop.yield %w : f32
  }
  func.return %e : !buffer.buffer<[16, 16], f32>
}

// -----

// An out-of-place ATen op whose `self` dies at the call runs in place
// (index_put -> index_put_: the embedding's backward into zeros); its result
// aliases the zeros, which live on through it. A `self` still read later
// (%z2, read by the nest after) keeps the copying form, as does
// reuse=false.

// CHECK-LABEL: func.func @extern_in_place
// CHECK:      %[[Z:.*]] = buffer.alloc : !buffer.buffer<[10, 4], f32>
// CHECK:      buffer.extern "aten.index_put_.default" (%[[Z]], %i, %v)
// CHECK:        aten.index_put_.default
// CHECK:      buffer.extern "aten.index_put.default" (%[[Z2:.*]], %i, %v)
// CHECK-NOT:  buffer.dealloc %[[Z]]
// CHECK:      func.return
// NOREUSE-LABEL: func.func @extern_in_place
// NOREUSE-NOT:  index_put_
func.func @extern_in_place(%i: !buffer.buffer<[6], i64>, %v: !buffer.buffer<[6, 4], f32>) -> (!buffer.buffer<[10, 4], f32>, !buffer.buffer<[10, 4], f32>, !buffer.buffer<[10, 4], f32>) {
  %z = buffer.alloc : !buffer.buffer<[10, 4], f32>
  loop.pointwise [10, 4] outs(%z : !buffer.buffer<[10, 4], f32>) {
  ^bb0(%i0: index, %i1: index):
    %c = arith.constant 0.000000e+00 : f32
    loop.yield %c : f32
  }
  %g = buffer.extern "aten.index_put.default" (%z, %i, %v) : (!buffer.buffer<[10, 4], f32>, !buffer.buffer<[6], i64>, !buffer.buffer<[6, 4], f32>) -> (!buffer.buffer<[10, 4], f32>) {
  ^bb0(%a: !aten.tensor<[10, 4], f32>, %b: !aten.tensor<[6], i64>, %c: !aten.tensor<[6, 4], f32>):
    %0 = aten.index_put.default(%a, [%b], %c, accumulate = true) : !aten.tensor<[10, 4], f32>
    buffer.yield %0 : !aten.tensor<[10, 4], f32>
  }
  %z2 = buffer.alloc : !buffer.buffer<[10, 4], f32>
  loop.pointwise [10, 4] outs(%z2 : !buffer.buffer<[10, 4], f32>) {
  ^bb0(%i0: index, %i1: index):
    %c = arith.constant 1.000000e+00 : f32
    loop.yield %c : f32
  }
  %g2 = buffer.extern "aten.index_put.default" (%z2, %i, %v) : (!buffer.buffer<[10, 4], f32>, !buffer.buffer<[6], i64>, !buffer.buffer<[6, 4], f32>) -> (!buffer.buffer<[10, 4], f32>) {
  ^bb0(%a: !aten.tensor<[10, 4], f32>, %b: !aten.tensor<[6], i64>, %c: !aten.tensor<[6, 4], f32>):
    %0 = aten.index_put.default(%a, [%b], %c, accumulate = true) : !aten.tensor<[10, 4], f32>
    buffer.yield %0 : !aten.tensor<[10, 4], f32>
  }
  %o = buffer.alloc : !buffer.buffer<[10, 4], f32>
  loop.pointwise [10, 4] outs(%o : !buffer.buffer<[10, 4], f32>) {
  ^bb0(%i0: index, %i1: index):
    %x = loop.load %z2[i0, i1] : !buffer.buffer<[10, 4], f32>
    %y = loop.load %g2[i0, i1] : !buffer.buffer<[10, 4], f32>
    %s = arith.addf %x, %y : f32
    loop.yield %s : f32
  }
  func.return %g, %g2, %o : !buffer.buffer<[10, 4], f32>, !buffer.buffer<[10, 4], f32>, !buffer.buffer<[10, 4], f32>
}

// -----

// An `aten.operator` extern names its op without an overload (the default
// one): its schema is found, its results are fresh storage, and the one
// nothing reads (the attention's logsumexp) is freed right after the call,
// and the output, dying at the nest that reads it, is written over in place.
// Before, both counted as aliases of the operands and lived to the end of the
// call (ViT's twelve attention outputs).

// CHECK-LABEL: func.func @operator_results
// CHECK:      %[[O:.*]], %[[L:.*]] = buffer.extern "aten._scaled_dot_product_flash_attention_for_cpu"
// CHECK:      buffer.dealloc %[[L]]
// CHECK-NEXT: buffer.reuse %[[O]]
// CHECK:      func.return
func.func @operator_results(%q: !buffer.buffer<[1, 2, 4, 8], f32>) -> !buffer.buffer<[1, 2, 4, 8], f32> {
  %o, %l = buffer.extern "aten._scaled_dot_product_flash_attention_for_cpu" (%q, %q, %q) : (!buffer.buffer<[1, 2, 4, 8], f32>, !buffer.buffer<[1, 2, 4, 8], f32>, !buffer.buffer<[1, 2, 4, 8], f32>) -> (!buffer.buffer<[1, 2, 4, 8], f32>, !buffer.buffer<[1, 2, 4], f32>) {
  ^bb0(%a: !aten.tensor<[1, 2, 4, 8], f32>, %b: !aten.tensor<[1, 2, 4, 8], f32>, %c: !aten.tensor<[1, 2, 4, 8], f32>):
    %0, %1 = aten.operator "aten::_scaled_dot_product_flash_attention_for_cpu"(%a, %b, %c, scale = 0.125) : (!aten.tensor<[1, 2, 4, 8], f32>, !aten.tensor<[1, 2, 4], f32>)
    buffer.yield %0, %1 : !aten.tensor<[1, 2, 4, 8], f32>, !aten.tensor<[1, 2, 4], f32>
  }
  %r = buffer.alloc : !buffer.buffer<[1, 2, 4, 8], f32>
  loop.pointwise [1, 2, 4, 8] outs(%r : !buffer.buffer<[1, 2, 4, 8], f32>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %v = loop.load %o[i0, i1, i2, i3] : !buffer.buffer<[1, 2, 4, 8], f32>
    %w = arith.addf %v, %v : f32
    loop.yield %w : f32
  }
  func.return %r : !buffer.buffer<[1, 2, 4, 8], f32>
}

// -----

// A buffer that dies before an ATen call with a fresh result is freed where
// it dies, not held for a later allocation of its size: ATen's caching
// allocator can then give the call's result its storage (ConvNeXt's LayerNorm
// output, dead after fc1, and fc2's result: %a here, once taken over by %c).
// In-place reuse (%c over %b, dying where %c is written) is unaffected.

// CHECK-LABEL: func.func @not_held_across_externs
// CHECK:      %[[A:.*]] = buffer.alloc : !buffer.buffer<[16], f32>
// CHECK:      %[[B:.*]] = buffer.alloc : !buffer.buffer<[16], f32>
// CHECK:      buffer.dealloc %[[A]]
// CHECK-NEXT: %{{.*}} = buffer.extern "aten.clone.default"
// CHECK:      %c = buffer.reuse %[[B]]
// CHECK:      %d = buffer.alloc
func.func @not_held_across_externs(%x: !buffer.buffer<[16], f32>, %m: !buffer.buffer<[4, 4], f32>) -> (!buffer.buffer<[4, 4], f32>, !buffer.buffer<[16], f32>) {
  %a = buffer.alloc : !buffer.buffer<[16], f32>
  loop.pointwise [16] outs(%a : !buffer.buffer<[16], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %x[i0] : !buffer.buffer<[16], f32>
    loop.yield %v : f32
  }
  %b = buffer.alloc : !buffer.buffer<[16], f32>
  loop.pointwise [16] outs(%b : !buffer.buffer<[16], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %a[15 - i0] : !buffer.buffer<[16], f32>
    loop.yield %v : f32
  }
  %mm = buffer.extern "aten.clone.default" (%m) : (!buffer.buffer<[4, 4], f32>) -> (!buffer.buffer<[4, 4], f32>) {
  ^bb0(%p: !aten.tensor<[4, 4], f32>):
    %0 = aten.clone.default(%p) : !aten.tensor<[4, 4], f32>
    buffer.yield %0 : !aten.tensor<[4, 4], f32>
  }
  %c = buffer.alloc : !buffer.buffer<[16], f32>
  loop.pointwise [16] outs(%c : !buffer.buffer<[16], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %b[i0] : !buffer.buffer<[16], f32>
    loop.yield %v : f32
  }
  %d = buffer.alloc : !buffer.buffer<[16], f32>
  loop.pointwise [16] outs(%d : !buffer.buffer<[16], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %c[15 - i0] : !buffer.buffer<[16], f32>
    loop.yield %v : f32
  }
  func.return %mm, %d : !buffer.buffer<[4, 4], f32>, !buffer.buffer<[16], f32>
}

// -----

// In place through a size-1 dimension: the [1, 4, 8] result is written at the
// addresses its [4, 8] input is read from (the index over the 1 is always 0;
// GPT-2's GELU over its [128, 3072] matmul product).

// CHECK-LABEL: func.func @in_place_unit_dim
// CHECK:      %[[A:.*]] = buffer.alloc : !buffer.buffer<[4, 8], f32>
// CHECK:      %[[B:.*]] = buffer.reuse %[[A]] : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[1, 4, 8], f32>
// CHECK-NEXT: loop.pointwise [1, 4, 8] outs(%[[B]]
func.func @in_place_unit_dim(%x: !buffer.buffer<[4, 8], f32>) -> !buffer.buffer<[1, 4, 8], f32> {
  %a = buffer.alloc : !buffer.buffer<[4, 8], f32>
  loop.pointwise [4, 8] outs(%a : !buffer.buffer<[4, 8], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %x[i0, i1] : !buffer.buffer<[4, 8], f32>
    %w = math.exp %v : f32
    loop.yield %w : f32
  }
  %b = buffer.alloc : !buffer.buffer<[1, 4, 8], f32>
  loop.pointwise [1, 4, 8] outs(%b : !buffer.buffer<[1, 4, 8], f32>) {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %v = loop.load %a[i1, i2] : !buffer.buffer<[4, 8], f32>
    %w = math.exp %v : f32
    loop.yield %w : f32
  }
  func.return %b : !buffer.buffer<[1, 4, 8], f32>
}

// -----

// index_put(a, [i], a): `self` is also the values, one argument of the
// extern. The in-place form would write what it reads (ATen refuses it): the
// copying form stays though `a` dies at the call.
// CHECK-LABEL: func.func @extern_self_is_values
// CHECK:      buffer.extern "aten.index_put.default" (%[[A:.*]], %i)
// CHECK-NOT:  index_put_
// CHECK:      func.return
func.func @extern_self_is_values(%i: !buffer.buffer<[10], i64>) -> !buffer.buffer<[10], f32> {
  %a = buffer.alloc : !buffer.buffer<[10], f32>
  loop.pointwise [10] outs(%a : !buffer.buffer<[10], f32>) {
  ^bb0(%i0: index):
    %c = arith.constant 1.000000e+00 : f32
    loop.yield %c : f32
  }
  %g = buffer.extern "aten.index_put.default" (%a, %i) : (!buffer.buffer<[10], f32>, !buffer.buffer<[10], i64>) -> (!buffer.buffer<[10], f32>) {
  ^bb0(%x: !aten.tensor<[10], f32>, %b: !aten.tensor<[10], i64>):
    %0 = aten.index_put.default(%x, [%b], %x) : !aten.tensor<[10], f32>
    buffer.yield %0 : !aten.tensor<[10], f32>
  }
  func.return %g : !buffer.buffer<[10], f32>
}

// -----

// A dead buffer is not held for a later allocation where holding it makes the
// peak: %a, dead after %b's nest, would be held through %big and %r for %c
// (64 + 64 + 256 + 16 = 400 bytes); freed where it dies, the peak is 336 and
// %c is allocated anew (ConvNeXt's depthwise-convolution output, held through
// the 4x-wide fc1 product for fc2's). Holds that miss the peak stay: see
// @chain.

// CHECK-LABEL: func.func @not_held_at_peak
// CHECK-SAME: coil.peak_bytes = #coil.expr<336>
// CHECK:      %[[A:.*]] = buffer.alloc : !buffer.buffer<[16], f32>
// CHECK:      %[[B:.*]] = buffer.alloc : !buffer.buffer<[16], f32>
// CHECK:      loop.load %[[A]][15 - i0]
// CHECK:      buffer.dealloc %[[A]]
// CHECK-NEXT: %[[BIG:.*]] = buffer.alloc : !buffer.buffer<[4, 16], f32>
// CHECK-NOT:  buffer.reuse
// CHECK:      %c = buffer.alloc : !buffer.buffer<[16], f32>
func.func @not_held_at_peak(%x: !buffer.buffer<[16], f32>) -> !buffer.buffer<[16], f32> {
  %a = buffer.alloc : !buffer.buffer<[16], f32>
  loop.pointwise [16] outs(%a : !buffer.buffer<[16], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %x[i0] : !buffer.buffer<[16], f32>
    loop.yield %v : f32
  }
  %b = buffer.alloc : !buffer.buffer<[16], f32>
  loop.pointwise [16] outs(%b : !buffer.buffer<[16], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %a[15 - i0] : !buffer.buffer<[16], f32>
    loop.yield %v : f32
  }
  %big = buffer.alloc : !buffer.buffer<[4, 16], f32>
  loop.pointwise [4, 16] outs(%big : !buffer.buffer<[4, 16], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %b[i1] : !buffer.buffer<[16], f32>
    loop.yield %v : f32
  }
  %r = buffer.alloc : !buffer.buffer<[4], f32>
  loop.reduction sum [4] [16] outs(%r : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index, %r0: index):
    %v = loop.load %big[i0, r0] : !buffer.buffer<[4, 16], f32>
    loop.yield %v : f32
  }
  %c = buffer.alloc : !buffer.buffer<[16], f32>
  loop.pointwise [16] outs(%c : !buffer.buffer<[16], f32>) {
  ^bb0(%i0: index):
    %v = loop.load %b[15 - i0] : !buffer.buffer<[16], f32>
    %w = loop.load %r[0] : !buffer.buffer<[4], f32>
    %s = arith.addf %v, %w : f32
    loop.yield %s : f32
  }
  func.return %c : !buffer.buffer<[16], f32>
}

// -----

// A squeeze-excite block's x = bn(conv), stored for the product after the SE
// and reduced by x.mean in the same fused kernel: the group computes x in one
// pass (its reduction reads no other reduction of the group, x reads none),
// each element of %c read by the program that writes it there, so x is
// written over %c, which dies at the group: one [2, 4, 8] buffer, not two.
// CHECK-LABEL: func.func @fused_in_place
// CHECK-SAME:  coil.peak_bytes = #coil.expr<288>
// CHECK:      %[[C:.*]] = buffer.alloc : !buffer.buffer<[2, 4, 8], f32>
// CHECK:      %[[M:.*]] = buffer.alloc : !buffer.buffer<[2, 4], f32>
// CHECK-NEXT: %[[X:.*]] = buffer.reuse %[[C]]
// CHECK-NEXT: loop.fused [2, 4] [8] outs(%[[X]], %[[M]]
func.func @fused_in_place(%in: !buffer.buffer<[2, 4, 8], f32>, %w: !buffer.buffer<[4], f32>) -> (!buffer.buffer<[2, 4, 8], f32>, !buffer.buffer<[2, 4], f32>) {
  %c = buffer.alloc : !buffer.buffer<[2, 4, 8], f32>
  loop.pointwise [2, 4, 8] outs(%c : !buffer.buffer<[2, 4, 8], f32>) {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %0 = loop.load %in[i0, i1, i2] : !buffer.buffer<[2, 4, 8], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %x = buffer.alloc : !buffer.buffer<[2, 4, 8], f32>
  %m = buffer.alloc : !buffer.buffer<[2, 4], f32>
  loop.fused [2, 4] [8] outs(%x, %m : !buffer.buffer<[2, 4, 8], f32>, !buffer.buffer<[2, 4], f32>) {
    %p = loop.pointwise [2, 4, 8] : !loop.tensor<[2, 4, 8], f32> {
    ^bb0(%i0: index, %i1: index, %i2: index):
      %2 = loop.load %c[i0, i1, i2] : !buffer.buffer<[2, 4, 8], f32>
      %3 = loop.load %w[i1] : !buffer.buffer<[4], f32>
      %4 = arith.mulf %2, %3 : f32
      loop.yield %4 : f32
    }
    %s = loop.reduction sum [2, 4] [8] : !loop.tensor<[2, 4], f32> {
    ^bb0(%i0: index, %i1: index, %r0: index):
      %5 = loop.load %p[i0, i1, r0] : !loop.tensor<[2, 4, 8], f32>
      loop.yield %5 : f32
    }
    loop.yield %p, %s : !loop.tensor<[2, 4, 8], f32>, !loop.tensor<[2, 4], f32>
  }
  func.return %x, %m : !buffer.buffer<[2, 4, 8], f32>, !buffer.buffer<[2, 4], f32>
}

// -----

// Not in place: a group whose stored member reads a reduction of the group
// (x - mean: the kernel loops over the row twice, and the second loop
// recomputes what reads %c); and a group where another member reads %c at
// other addresses (the sum reads %d itself, reversed). (%d reuses %c, dead
// by then.)
// CHECK-LABEL: func.func @fused_not_in_place
// CHECK:      %[[C:.*]] = buffer.alloc : !buffer.buffer<[2, 8], f32>
// CHECK:      %[[X:.*]] = buffer.alloc : !buffer.buffer<[2, 8], f32>
// CHECK:      loop.fused [2] [8] outs(%[[X]] :
// CHECK:      %[[D:.*]] = buffer.reuse %[[C]]
// CHECK:      %[[Y:.*]] = buffer.alloc : !buffer.buffer<[2, 8], f32>
// CHECK:      loop.fused [2] [8] outs(%[[Y]], %{{.*}} :
func.func @fused_not_in_place(%in: !buffer.buffer<[2, 8], f32>) -> (!buffer.buffer<[2, 8], f32>, !buffer.buffer<[2, 8], f32>, !buffer.buffer<[2], f32>) {
  %c = buffer.alloc : !buffer.buffer<[2, 8], f32>
  loop.pointwise [2, 8] outs(%c : !buffer.buffer<[2, 8], f32>) {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %in[i0, i1] : !buffer.buffer<[2, 8], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %x = buffer.alloc : !buffer.buffer<[2, 8], f32>
  loop.fused [2] [8] outs(%x : !buffer.buffer<[2, 8], f32>) {
    %s = loop.reduction sum [2] [8] : !loop.tensor<[2], f32> {
    ^bb0(%i0: index, %r0: index):
      %2 = loop.load %c[i0, r0] : !buffer.buffer<[2, 8], f32>
      loop.yield %2 : f32
    }
    %p = loop.pointwise [2, 8] : !loop.tensor<[2, 8], f32> {
    ^bb0(%i0: index, %i1: index):
      %3 = loop.load %c[i0, i1] : !buffer.buffer<[2, 8], f32>
      %4 = loop.load %s[i0] : !loop.tensor<[2], f32>
      %5 = arith.subf %3, %4 : f32
      loop.yield %5 : f32
    }
    loop.yield %p : !loop.tensor<[2, 8], f32>
  }
  %d = buffer.alloc : !buffer.buffer<[2, 8], f32>
  loop.pointwise [2, 8] outs(%d : !buffer.buffer<[2, 8], f32>) {
  ^bb0(%i0: index, %i1: index):
    %6 = loop.load %in[i0, i1] : !buffer.buffer<[2, 8], f32>
    %7 = math.exp %6 : f32
    loop.yield %7 : f32
  }
  %y = buffer.alloc : !buffer.buffer<[2, 8], f32>
  %m = buffer.alloc : !buffer.buffer<[2], f32>
  loop.fused [2] [8] outs(%y, %m : !buffer.buffer<[2, 8], f32>, !buffer.buffer<[2], f32>) {
    %q = loop.pointwise [2, 8] : !loop.tensor<[2, 8], f32> {
    ^bb0(%i0: index, %i1: index):
      %8 = loop.load %d[i0, i1] : !buffer.buffer<[2, 8], f32>
      %9 = math.exp %8 : f32
      loop.yield %9 : f32
    }
    %t = loop.reduction sum [2] [8] : !loop.tensor<[2], f32> {
    ^bb0(%i0: index, %r0: index):
      %10 = loop.load %d[i0, 7 - r0] : !buffer.buffer<[2, 8], f32>
      %11 = loop.load %q[i0, r0] : !loop.tensor<[2, 8], f32>
      %12 = arith.addf %10, %11 : f32
      loop.yield %12 : f32
    }
    loop.yield %q, %t : !loop.tensor<[2, 8], f32>, !loop.tensor<[2], f32>
  }
  func.return %x, %y, %m : !buffer.buffer<[2, 8], f32>, !buffer.buffer<[2, 8], f32>, !buffer.buffer<[2], f32>
}
