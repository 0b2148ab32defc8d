// RUN: fx-opt %s -p aten-reorder-collectives --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'aten-reorder-collectives{sink-waits=false}' --split-input-file | filecheck %s --check-prefix=RAISE
// RUN: fx-opt %s -p 'aten-reorder-collectives{raise-collectives=false}' --split-input-file | filecheck %s --check-prefix=SINK
// RUN: fx-opt %s -p 'aten-reorder-collectives{max-in-flight=1}' --split-input-file | filecheck %s --check-prefix=ONE
// RUN: not fx-opt %s -p 'aten-reorder-collectives{max-in-flight=-1}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: fx-opt %s -p 'aten-reorder-collectives{prefetch=1}' --split-input-file | filecheck %s --check-prefix=PREFETCH

// OPTION: aten-reorder-collectives: option 'max-in-flight' must be 0 (no limit) or an integer >= 1; got -1

// As traced (a data-parallel backward): each gradient is all-reduced and
// waited for at once, so the next gradient's compute waits for the network.
// After the pass each all-reduce starts as soon as its gradient exists and
// the waits come last, before the ops that need them: the later gradients'
// compute overlaps the earlier all-reduces. The all-reduces keep their order.

// CHECK-LABEL: func.func @backward
// CHECK-NEXT:    %g1 = aten.mul.Tensor(%x, %y)
// CHECK-NEXT:    %r1 = _c10d_functional.all_reduce.default(%g1
// CHECK-NEXT:    %g2 = aten.sin.default(%g1)
// CHECK-NEXT:    %r2 = _c10d_functional.all_reduce.default(%g2
// CHECK-NEXT:    %g3 = aten.cos.default(%g2)
// CHECK-NEXT:    %r3 = _c10d_functional.all_reduce.default(%g3
// CHECK-NEXT:    %w1 = _c10d_functional.wait_tensor.default(%r1)
// CHECK-NEXT:    %d1 = aten.div.Tensor(%w1, %x)
// CHECK-NEXT:    %w2 = _c10d_functional.wait_tensor.default(%r2)
// CHECK-NEXT:    %d2 = aten.div.Tensor(%w2, %x)
// CHECK-NEXT:    %w3 = _c10d_functional.wait_tensor.default(%r3)
// CHECK-NEXT:    %d3 = aten.div.Tensor(%w3, %x)
// CHECK-NEXT:    func.return %d1, %d2, %d3

// Either half alone gives the same order here: raising schedules every
// gradient an all-reduce needs before the first wait (which blocks no
// collective); sinking defers the first wait past the ready gradients.
// RAISE-LABEL: func.func @backward
// RAISE-NEXT:    %g1 = aten.mul.Tensor
// RAISE-NEXT:    %r1 = _c10d_functional.all_reduce.default
// RAISE-NEXT:    %g2 = aten.sin.default
// RAISE-NEXT:    %r2 = _c10d_functional.all_reduce.default
// SINK-LABEL: func.func @backward
// SINK-NEXT:    %g1 = aten.mul.Tensor
// SINK-NEXT:    %r1 = _c10d_functional.all_reduce.default
// SINK-NEXT:    %g2 = aten.sin.default
// SINK-NEXT:    %r2 = _c10d_functional.all_reduce.default

// At most one in flight: each wait comes before the next all-reduce starts.
// ONE-LABEL: func.func @backward
// ONE-NEXT:    %g1 = aten.mul.Tensor
// ONE-NEXT:    %r1 = _c10d_functional.all_reduce.default
// ONE-NEXT:    %g2 = aten.sin.default
// ONE-NEXT:    %w1 = _c10d_functional.wait_tensor.default(%r1)
// ONE-NEXT:    %r2 = _c10d_functional.all_reduce.default
// ONE-NEXT:    %g3 = aten.cos.default
// ONE-NEXT:    %w2 = _c10d_functional.wait_tensor.default(%r2)
// ONE-NEXT:    %r3 = _c10d_functional.all_reduce.default
func.func @backward(%x: !aten.tensor<[4, 4], f32>, %y: !aten.tensor<[4, 4], f32>) -> (!aten.tensor<[4, 4], f32>, !aten.tensor<[4, 4], f32>, !aten.tensor<[4, 4], f32>) {
  %g1 = aten.mul.Tensor(%x, %y) : !aten.tensor<[4, 4], f32>
  %r1 = _c10d_functional.all_reduce.default(%g1, reduce_op = "sum", group_name = "0") : !aten.tensor<[4, 4], f32>
  %w1 = _c10d_functional.wait_tensor.default(%r1) : !aten.tensor<[4, 4], f32>
  %d1 = aten.div.Tensor(%w1, %x) : !aten.tensor<[4, 4], f32>
  %g2 = aten.sin.default(%g1) : !aten.tensor<[4, 4], f32>
  %r2 = _c10d_functional.all_reduce.default(%g2, reduce_op = "sum", group_name = "0") : !aten.tensor<[4, 4], f32>
  %w2 = _c10d_functional.wait_tensor.default(%r2) : !aten.tensor<[4, 4], f32>
  %d2 = aten.div.Tensor(%w2, %x) : !aten.tensor<[4, 4], f32>
  %g3 = aten.cos.default(%g2) : !aten.tensor<[4, 4], f32>
  %r3 = _c10d_functional.all_reduce.default(%g3, reduce_op = "sum", group_name = "0") : !aten.tensor<[4, 4], f32>
  %w3 = _c10d_functional.wait_tensor.default(%r3) : !aten.tensor<[4, 4], f32>
  %d3 = aten.div.Tensor(%w3, %x) : !aten.tensor<[4, 4], f32>
  func.return %d1, %d2, %d3 : !aten.tensor<[4, 4], f32>, !aten.tensor<[4, 4], f32>, !aten.tensor<[4, 4], f32>
}

// -----

// Raising: the all-gather's input is computed late in the traced order, after
// work it does not need; the pass computes it first and starts the all-gather,
// and the unrelated matmul runs while it is in flight.
// CHECK-LABEL: func.func @forward
// CHECK-NEXT:    %p = aten.mul.Tensor(%w, %w)
// CHECK-NEXT:    %ag = _c10d_functional.all_gather_into_tensor.default(%p
// CHECK-NEXT:    %h = aten.mm.default(%x, %x)
// CHECK-NEXT:    %e = aten.exp.default(%h)
// CHECK-NEXT:    %agw = _c10d_functional.wait_tensor.default(%ag)
// CHECK-NEXT:    %o = aten.mm.default(%agw, %e)
// Raising alone starts the all-gather first but waits in the traced order;
// sinking alone waits last but starts it where it was traced.
// RAISE-LABEL: func.func @forward
// RAISE-NEXT:    %p = aten.mul.Tensor(%w, %w)
// RAISE-NEXT:    %ag = _c10d_functional.all_gather_into_tensor.default(%p
// RAISE-NEXT:    %h = aten.mm.default(%x, %x)
// RAISE-NEXT:    %agw = _c10d_functional.wait_tensor.default(%ag)
// RAISE-NEXT:    %e = aten.exp.default(%h)
// SINK-LABEL: func.func @forward
// SINK-NEXT:    %h = aten.mm.default(%x, %x)
// SINK-NEXT:    %p = aten.mul.Tensor(%w, %w)
// SINK-NEXT:    %ag = _c10d_functional.all_gather_into_tensor.default(%p
// SINK-NEXT:    %e = aten.exp.default(%h)
// SINK-NEXT:    %agw = _c10d_functional.wait_tensor.default(%ag)
func.func @forward(%x: !aten.tensor<[4, 4], f32>, %w: !aten.tensor<[2, 4], f32>) -> !aten.tensor<[4, 4], f32> {
  %h = aten.mm.default(%x, %x) : !aten.tensor<[4, 4], f32>
  %p = aten.mul.Tensor(%w, %w) : !aten.tensor<[2, 4], f32>
  %ag = _c10d_functional.all_gather_into_tensor.default(%p, group_size = 2, group_name = "0") : !aten.tensor<[4, 4], f32>
  %agw = _c10d_functional.wait_tensor.default(%ag) : !aten.tensor<[4, 4], f32>
  %e = aten.exp.default(%h) : !aten.tensor<[4, 4], f32>
  %o = aten.mm.default(%agw, %e) : !aten.tensor<[4, 4], f32>
  func.return %o : !aten.tensor<[4, 4], f32>
}

// -----

// An op with side effects (here a custom op of unknown effects) is a barrier:
// the wait before it stays before it, the collective after it stays after it.
// CHECK-LABEL: func.func @barrier
// CHECK-NEXT:    %r1 = _c10d_functional.all_reduce.default(%x
// CHECK-NEXT:    %s = aten.sin.default(%x)
// CHECK-NEXT:    %w1 = _c10d_functional.wait_tensor.default(%r1)
// CHECK-NEXT:    aten.operator "mylib::log"(%x)
// CHECK-NEXT:    %c = aten.cos.default(%x)
// CHECK-NEXT:    %r2 = _c10d_functional.all_reduce.default(%c
// CHECK-NEXT:    %w2 = _c10d_functional.wait_tensor.default(%r2)
func.func @barrier(%x: !aten.tensor<[4], f32>) -> (!aten.tensor<[4], f32>, !aten.tensor<[4], f32>, !aten.tensor<[4], f32>) {
  %r1 = _c10d_functional.all_reduce.default(%x, reduce_op = "sum", group_name = "0") : !aten.tensor<[4], f32>
  %w1 = _c10d_functional.wait_tensor.default(%r1) : !aten.tensor<[4], f32>
  %s = aten.sin.default(%x) : !aten.tensor<[4], f32>
  aten.operator "mylib::log"(%x)
  %c = aten.cos.default(%x) : !aten.tensor<[4], f32>
  %r2 = _c10d_functional.all_reduce.default(%c, reduce_op = "sum", group_name = "0") : !aten.tensor<[4], f32>
  %w2 = _c10d_functional.wait_tensor.default(%r2) : !aten.tensor<[4], f32>
  func.return %w1, %s, %w2 : !aten.tensor<[4], f32>, !aten.tensor<[4], f32>, !aten.tensor<[4], f32>
}

// -----

// A custom op is a barrier only when its schema says it has effects: a
// functional one (resolved in this process) lets the wait move past it.
// CHECK-LABEL: func.func @functional_operator
// CHECK-NEXT:    %r = _c10d_functional.all_reduce.default(%x
// CHECK-NEXT:    %n = aten.operator "aten::linalg_vector_norm"(%x
// CHECK-NEXT:    %w = _c10d_functional.wait_tensor.default(%r)
func.func @functional_operator(%x: !aten.tensor<[4], f32>) -> (!aten.tensor<[4], f32>, !aten.tensor<[], f32>) {
  %r = _c10d_functional.all_reduce.default(%x, reduce_op = "sum", group_name = "0") : !aten.tensor<[4], f32>
  %w = _c10d_functional.wait_tensor.default(%r) : !aten.tensor<[4], f32>
  %n = aten.operator "aten::linalg_vector_norm"(%x, 2.0, [0], false) : !aten.tensor<[], f32>
  func.return %w, %n : !aten.tensor<[4], f32>, !aten.tensor<[], f32>
}

// -----

// Random ops keep their order (the same draws as traced) but are no barrier:
// raising the all-reduce of the second draw raises the first draw too, and
// the sine of the first runs while the all-reduce is in flight.
// CHECK-LABEL: func.func @random
// CHECK-NEXT:    %a = aten.rand_like.default(%x)
// CHECK-NEXT:    %b = aten.rand_like.default(%x)
// CHECK-NEXT:    %r = _c10d_functional.all_reduce.default(%b
// CHECK-NEXT:    %s = aten.sin.default(%a)
// CHECK-NEXT:    %w = _c10d_functional.wait_tensor.default(%r)
func.func @random(%x: !aten.tensor<[4], f32>) -> (!aten.tensor<[4], f32>, !aten.tensor<[4], f32>) {
  %a = aten.rand_like.default(%x) : !aten.tensor<[4], f32>
  %s = aten.sin.default(%a) : !aten.tensor<[4], f32>
  %b = aten.rand_like.default(%x) : !aten.tensor<[4], f32>
  %r = _c10d_functional.all_reduce.default(%b, reduce_op = "sum", group_name = "0") : !aten.tensor<[4], f32>
  %w = _c10d_functional.wait_tensor.default(%r) : !aten.tensor<[4], f32>
  func.return %s, %w : !aten.tensor<[4], f32>, !aten.tensor<[4], f32>
}

// -----

// No collective: the function is left as it is.
// CHECK-LABEL: func.func @none
// CHECK-NEXT:    %a = aten.sin.default(%x)
// CHECK-NEXT:    %b = aten.cos.default(%x)
func.func @none(%x: !aten.tensor<[4], f32>) -> (!aten.tensor<[4], f32>, !aten.tensor<[4], f32>) {
  %a = aten.sin.default(%x) : !aten.tensor<[4], f32>
  %b = aten.cos.default(%x) : !aten.tensor<[4], f32>
  func.return %b, %a : !aten.tensor<[4], f32>, !aten.tensor<[4], f32>
}

// -----

// prefetch=1 (FSDP's forward prefetch, bounded memory): raised alone, all
// three all-gathers start at the top and every parameter is gathered at
// once; with prefetch=1 the next all-gather starts right after the previous
// one's wait, so it overlaps that one's compute (%g2 with %h1, %g3 with %h2).
// The reduce-scatter, whose result only leaves the function, is never held
// back: it starts as soon as %h1 exists.
// CHECK-LABEL: func.func @prefetch
// CHECK-NEXT:    %g1 = _c10d_functional.all_gather_into_tensor.default
// CHECK-NEXT:    %g2 = _c10d_functional.all_gather_into_tensor.default
// CHECK-NEXT:    %g3 = _c10d_functional.all_gather_into_tensor.default
// CHECK-NEXT:    %a1 = _c10d_functional.wait_tensor.default(%g1)
// PREFETCH-LABEL: func.func @prefetch
// PREFETCH-NEXT:    %g1 = _c10d_functional.all_gather_into_tensor.default
// PREFETCH-NEXT:    %a1 = _c10d_functional.wait_tensor.default(%g1)
// PREFETCH-NEXT:    %g2 = _c10d_functional.all_gather_into_tensor.default
// PREFETCH-NEXT:    %h1 = aten.mm.default(%x, %a1)
// PREFETCH-NEXT:    %r = _c10d_functional.reduce_scatter_tensor.default(%h1
// PREFETCH-NEXT:    %a2 = _c10d_functional.wait_tensor.default(%g2)
// PREFETCH-NEXT:    %g3 = _c10d_functional.all_gather_into_tensor.default
// PREFETCH-NEXT:    %h2 = aten.mm.default(%h1, %a2)
// PREFETCH-NEXT:    %a3 = _c10d_functional.wait_tensor.default(%g3)
// PREFETCH-NEXT:    %h3 = aten.mm.default(%h2, %a3)
func.func @prefetch(%w1: !aten.tensor<[2, 4], f32>, %w2: !aten.tensor<[2, 4], f32>, %w3: !aten.tensor<[2, 4], f32>, %x: !aten.tensor<[4, 4], f32>) -> !aten.tensor<[4, 4], f32> {
  %g1 = _c10d_functional.all_gather_into_tensor.default(%w1, group_size = 2, group_name = "0") : !aten.tensor<[4, 4], f32>
  %a1 = _c10d_functional.wait_tensor.default(%g1) : !aten.tensor<[4, 4], f32>
  %h1 = aten.mm.default(%x, %a1) : !aten.tensor<[4, 4], f32>
  %g2 = _c10d_functional.all_gather_into_tensor.default(%w2, group_size = 2, group_name = "0") : !aten.tensor<[4, 4], f32>
  %a2 = _c10d_functional.wait_tensor.default(%g2) : !aten.tensor<[4, 4], f32>
  %h2 = aten.mm.default(%h1, %a2) : !aten.tensor<[4, 4], f32>
  %g3 = _c10d_functional.all_gather_into_tensor.default(%w3, group_size = 2, group_name = "0") : !aten.tensor<[4, 4], f32>
  %a3 = _c10d_functional.wait_tensor.default(%g3) : !aten.tensor<[4, 4], f32>
  %h3 = aten.mm.default(%h2, %a3) : !aten.tensor<[4, 4], f32>
  %r = _c10d_functional.reduce_scatter_tensor.default(%h1, reduce_op = "sum", group_size = 2, group_name = "0") : !aten.tensor<[2, 4], f32>
  %rw = _c10d_functional.wait_tensor.default(%r) : !aten.tensor<[2, 4], f32>
  %o = aten.mul.Tensor(%h3, %h3) : !aten.tensor<[4, 4], f32>
  func.return %o : !aten.tensor<[4, 4], f32>
}

// -----

// A reduce-scatter whose result the function reads (a tied weight's two
// gradient shards added) is outside the prefetch chain: the next all-gather
// starts after the previous all-gather's wait, not after the scatter's
// (which would leave it nothing to overlap).
// PREFETCH-LABEL: func.func @prefetch_past_scatter
// PREFETCH-NEXT:    %g1 = _c10d_functional.all_gather_into_tensor.default
// PREFETCH-NEXT:    %a1 = _c10d_functional.wait_tensor.default(%g1)
// PREFETCH-NEXT:    %h1 = aten.mm.default(%x, %a1)
// PREFETCH-NEXT:    %r = _c10d_functional.reduce_scatter_tensor.default(%h1
// PREFETCH-NEXT:    %g2 = _c10d_functional.all_gather_into_tensor.default
// PREFETCH-NEXT:    %rw = _c10d_functional.wait_tensor.default(%r)
func.func @prefetch_past_scatter(%w1: !aten.tensor<[2, 4], f32>, %w2: !aten.tensor<[2, 4], f32>, %e: !aten.tensor<[2, 4], f32>, %x: !aten.tensor<[4, 4], f32>) -> (!aten.tensor<[4, 4], f32>, !aten.tensor<[2, 4], f32>) {
  %g1 = _c10d_functional.all_gather_into_tensor.default(%w1, group_size = 2, group_name = "0") : !aten.tensor<[4, 4], f32>
  %a1 = _c10d_functional.wait_tensor.default(%g1) : !aten.tensor<[4, 4], f32>
  %h1 = aten.mm.default(%x, %a1) : !aten.tensor<[4, 4], f32>
  %r = _c10d_functional.reduce_scatter_tensor.default(%h1, reduce_op = "avg", group_size = 2, group_name = "0") : !aten.tensor<[2, 4], f32>
  %rw = _c10d_functional.wait_tensor.default(%r) : !aten.tensor<[2, 4], f32>
  %s = aten.add.Tensor(%rw, %e) : !aten.tensor<[2, 4], f32>
  %g2 = _c10d_functional.all_gather_into_tensor.default(%w2, group_size = 2, group_name = "0") : !aten.tensor<[4, 4], f32>
  %a2 = _c10d_functional.wait_tensor.default(%g2) : !aten.tensor<[4, 4], f32>
  %h2 = aten.mm.default(%h1, %a2) : !aten.tensor<[4, 4], f32>
  %h3 = aten.mm.default(%h2, %h2) : !aten.tensor<[4, 4], f32>
  func.return %h3, %s : !aten.tensor<[4, 4], f32>, !aten.tensor<[2, 4], f32>
}
