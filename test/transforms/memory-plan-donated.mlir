// RUN: fx-opt %s -p memory-plan --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'memory-plan{reuse=false}' --split-input-file | filecheck %s --check-prefix=NOREUSE

// A backward's donated input (coil.donated: a saved activation only this
// graph reads, AOTAutograd's bw_donated_idxs) is written over in place by
// the nest where it dies, when that nest reads it only at the addresses it
// writes: the gradient of an LM head's logits, computed from the saved bf16
// logits, takes the logits' storage (Inductor's donated buffers). A Llama
// training step under bf16 autocast (vocab 32000, 4 x 512 tokens) held the
// saved logits and their gradient at once: 125 MB above Inductor's peak on
// an H200. The argument is not freed by the plan (the wrapper drops its
// name); the buffer that takes it over is, after its last use.

// CHECK-LABEL: func.func @logits_grad
// CHECK-SAME:  coil.peak_bytes = #coil.expr<64>
// CHECK-NOT:   buffer.alloc : !buffer.buffer<[2, 4, 16], bf16>
// CHECK:       %[[G:.*]] = buffer.reuse %logits : !buffer.buffer<[8, 16], bf16> -> !buffer.buffer<[2, 4, 16], bf16>
// CHECK-NEXT:  loop.pointwise [2, 4, 16] outs(%[[G]] : !buffer.buffer<[2, 4, 16], bf16>)
// CHECK:       %[[V:.*]] = buffer.view %[[G]]
// CHECK:       loop.reduction
// CHECK:       buffer.dealloc %[[G]]
// CHECK-NOT:   buffer.dealloc %logits
// CHECK:       func.return
// NOREUSE-LABEL: func.func @logits_grad
// NOREUSE:     buffer.alloc : !buffer.buffer<[2, 4, 16], bf16>
// NOREUSE-NOT: buffer.reuse
func.func @logits_grad(%logits: !buffer.buffer<[8, 16], bf16> {coil.donated}, %lse: !buffer.buffer<[8, 1], f32>) -> !buffer.buffer<[16], f32> {
  %g = buffer.alloc : !buffer.buffer<[2, 4, 16], bf16>
  loop.pointwise [2, 4, 16] outs(%g : !buffer.buffer<[2, 4, 16], bf16>) {
  ^bb0(%i0: index, %i1: index, %i2: index):
    %x = loop.load %logits[4*i0 + i1, i2] : !buffer.buffer<[8, 16], bf16>
    %xf = arith.extf %x : bf16 to f32
    %m = loop.load %lse[4*i0 + i1, 0] : !buffer.buffer<[8, 1], f32>
    %d = arith.subf %xf, %m : f32
    %e = math.exp %d : f32
    %t = arith.truncf %e : f32 to bf16
    loop.yield %t : bf16
  }
  %gv = buffer.view %g : !buffer.buffer<[2, 4, 16], bf16> -> !buffer.buffer<[8, 16], bf16>
  %s = buffer.alloc : !buffer.buffer<[16], f32>
  loop.reduction sum [16] [8] outs(%s : !buffer.buffer<[16], f32>) {
  ^bb0(%i0: index, %r0: index):
    %v = loop.load %gv[r0, i0] : !buffer.buffer<[8, 16], bf16>
    %vf = arith.extf %v : bf16 to f32
    loop.yield %vf : f32
  }
  func.return %s : !buffer.buffer<[16], f32>
}

// -----

// The same without coil.donated (a forward's input, or a backward input the
// caller may still hold): a new buffer.

// CHECK-LABEL: func.func @not_donated
// CHECK-SAME:  coil.peak_bytes = #coil.expr<256>
// CHECK:       buffer.alloc : !buffer.buffer<[8, 16], bf16>
// CHECK-NOT:   buffer.reuse
func.func @not_donated(%logits: !buffer.buffer<[8, 16], bf16>) -> !buffer.buffer<[8, 16], bf16> {
  %g = buffer.alloc : !buffer.buffer<[8, 16], bf16>
  loop.pointwise [8, 16] outs(%g : !buffer.buffer<[8, 16], bf16>) {
  ^bb0(%i0: index, %i1: index):
    %x = loop.load %logits[i0, i1] : !buffer.buffer<[8, 16], bf16>
    %y = arith.addf %x, %x : bf16
    loop.yield %y : bf16
  }
  func.return %g : !buffer.buffer<[8, 16], bf16>
}

// -----

// Not taken over: a donated input read again after the nest (%a at %x: it
// does not die there), inputs read at another address than the one written
// (%a and %b transposed at %y), one of another dtype (%c), one a result
// returns (%d).

// CHECK-LABEL: func.func @not_in_place
// CHECK-NOT:   buffer.reuse
// CHECK:       func.return
func.func @not_in_place(%a: !buffer.buffer<[8, 8], f32> {coil.donated}, %b: !buffer.buffer<[8, 8], f32> {coil.donated}, %c: !buffer.buffer<[8, 8], bf16> {coil.donated}, %d: !buffer.buffer<[8, 8], f32> {coil.donated}) -> (!buffer.buffer<[8, 8], f32>, !buffer.buffer<[8, 8], f32>, !buffer.buffer<[8, 8], f32>, !buffer.buffer<[8, 8], f32>, !buffer.buffer<[8, 8], f32>) {
  %x = buffer.alloc : !buffer.buffer<[8, 8], f32>
  loop.pointwise [8, 8] outs(%x : !buffer.buffer<[8, 8], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %a[i0, i1] : !buffer.buffer<[8, 8], f32>
    loop.yield %v : f32
  }
  %y = buffer.alloc : !buffer.buffer<[8, 8], f32>
  loop.pointwise [8, 8] outs(%y : !buffer.buffer<[8, 8], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %a[i1, i0] : !buffer.buffer<[8, 8], f32>
    %w = loop.load %b[i1, i0] : !buffer.buffer<[8, 8], f32>
    %s = arith.addf %v, %w : f32
    loop.yield %s : f32
  }
  %z = buffer.alloc : !buffer.buffer<[8, 8], f32>
  loop.pointwise [8, 8] outs(%z : !buffer.buffer<[8, 8], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %c[i0, i1] : !buffer.buffer<[8, 8], bf16>
    %f = arith.extf %v : bf16 to f32
    loop.yield %f : f32
  }
  %u = buffer.alloc : !buffer.buffer<[8, 8], f32>
  loop.pointwise [8, 8] outs(%u : !buffer.buffer<[8, 8], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %d[i0, i1] : !buffer.buffer<[8, 8], f32>
    loop.yield %v : f32
  }
  func.return %x, %y, %z, %u, %d : !buffer.buffer<[8, 8], f32>, !buffer.buffer<[8, 8], f32>, !buffer.buffer<[8, 8], f32>, !buffer.buffer<[8, 8], f32>, !buffer.buffer<[8, 8], f32>
}

// -----

// In place only: a donated input that died earlier is not pooled for a later
// allocation of its size (as Inductor, which frees a graph input's name and
// reuses only allocations it made).

// CHECK-LABEL: func.func @not_pooled
// CHECK:       %[[S:.*]] = buffer.alloc : !buffer.buffer<[8], f32>
// CHECK:       %[[Y:.*]] = buffer.alloc : !buffer.buffer<[8, 8], f32>
// CHECK-NOT:   buffer.reuse %a
func.func @not_pooled(%a: !buffer.buffer<[8, 8], f32> {coil.donated}, %b: !buffer.buffer<[8], f32>) -> !buffer.buffer<[8, 8], f32> {
  %s = buffer.alloc : !buffer.buffer<[8], f32>
  loop.reduction sum [8] [8] outs(%s : !buffer.buffer<[8], f32>) {
  ^bb0(%i0: index, %r0: index):
    %v = loop.load %a[i0, r0] : !buffer.buffer<[8, 8], f32>
    loop.yield %v : f32
  }
  %y = buffer.alloc : !buffer.buffer<[8, 8], f32>
  loop.pointwise [8, 8] outs(%y : !buffer.buffer<[8, 8], f32>) {
  ^bb0(%i0: index, %i1: index):
    %v = loop.load %s[i0] : !buffer.buffer<[8], f32>
    %w = loop.load %b[i1] : !buffer.buffer<[8], f32>
    %p = arith.mulf %v, %w : f32
    loop.yield %p : f32
  }
  func.return %y : !buffer.buffer<[8, 8], f32>
}
