// RUN: fx-opt %s | filecheck %s
// RUN: COIL_ROUNDTRIP | filecheck %s
// RUN: COIL_GENERIC_ROUNDTRIP | fx-opt | filecheck %s

// Round trips of every loop op and type: static and symbolic ranges, loop
// nests at tensor level (results) and in destination-passing style (outs),
// every reduction and scan kind, scatters, fusion groups, indirect and masked loads, random
// numbers, views and copies.

// CHECK-LABEL: func.func @types
// CHECK-SAME: (%a: !loop.tensor<[4, 8], f32>, %b: !loop.tensor<[s0, 2*s1 + 1], f16>, %c: !loop.tensor<[], i64>, %d: !loop.tensor<[s0 floordiv 2, (s1 + 3) mod 4], i1>, %e: !loop.tensor<[max(4, s0)], bf16>)
func.func @types(%a: !loop.tensor<[4, 8], f32>, %b: !loop.tensor<[s0, 2*s1 + 1], f16>,
                 %c: !loop.tensor<[], i64>, %d: !loop.tensor<[s0 floordiv 2, (s1 + 3) mod 4], i1>,
                 %e: !loop.tensor<[max(s0, 4)], bf16>) {
  func.return
}

// CHECK-LABEL: func.func @pointwise
func.func @pointwise(%x: !loop.tensor<[4, s0], f32>, %y: !loop.tensor<[s0], f32>) -> !loop.tensor<[4, s0], f32> {
  // CHECK:      %z = loop.pointwise [4, s0] : !loop.tensor<[4, s0], f32> {
  // CHECK-NEXT: ^bb0(%i0: index, %i1: index):
  // CHECK-NEXT:   %a = loop.load %x[i0, i1] : !loop.tensor<[4, s0], f32>
  // CHECK-NEXT:   %b = loop.load %y[i1] : !loop.tensor<[s0], f32>
  // CHECK-NEXT:   %c = arith.addf %a, %b : f32
  // CHECK-NEXT:   %d = math.exp %c : f32
  // CHECK-NEXT:   loop.yield %d : f32
  // CHECK-NEXT: }
  %z = loop.pointwise [4, s0] : !loop.tensor<[4, s0], f32> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !loop.tensor<[4, s0], f32>
    %b = loop.load %y[i1] : !loop.tensor<[s0], f32>
    %c = arith.addf %a, %b : f32
    %d = math.exp %c : f32
    loop.yield %d : f32
  }
  func.return %z : !loop.tensor<[4, s0], f32>
}

// A scalar (rank-0) nest; the SSA names of the indices do not matter, the
// symbols i0, r0 ... name block arguments by position.
// CHECK-LABEL: func.func @rank0
func.func @rank0(%x: !loop.tensor<[], f32>) -> !loop.tensor<[], f32> {
  // CHECK:      %y = loop.pointwise [] : !loop.tensor<[], f32> {
  // CHECK-NEXT:   %a = loop.load %x[] : !loop.tensor<[], f32>
  // CHECK-NEXT:   loop.yield %a : f32
  %y = loop.pointwise [] : !loop.tensor<[], f32> {
    %a = loop.load %x[] : !loop.tensor<[], f32>
    loop.yield %a : f32
  }
  // CHECK:      %t = loop.pointwise [3, 5] : !loop.tensor<[3, 5], i64> {
  // CHECK-NEXT: ^bb0(%row: index, %col: index):
  // CHECK-NEXT:   %k = loop.index 5*i0 + i1 : i64
  %t = loop.pointwise [3, 5] : !loop.tensor<[3, 5], i64> {
  ^bb0(%row: index, %col: index):
    %k = loop.index 5*i0 + i1 : i64
    loop.yield %k : i64
  }
  func.return %y : !loop.tensor<[], f32>
}

// Index expressions: affine, floordiv/mod, indices bound by the enclosing nest.
// CHECK-LABEL: func.func @load_exprs
func.func @load_exprs(%x: !loop.tensor<[s0, 8], f32>) -> !loop.tensor<[8*s0], f32> {
  // CHECK: loop.load %x[i0 floordiv 8, i0 mod 8] : !loop.tensor<[s0, 8], f32>
  // CHECK: loop.index i0 floordiv 8 : index
  %y = loop.pointwise [8*s0] : !loop.tensor<[8*s0], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[i0 floordiv 8, i0 mod 8] : !loop.tensor<[s0, 8], f32>
    %r = loop.index i0 floordiv 8 : index
    loop.yield %a : f32
  }
  func.return %y : !loop.tensor<[8*s0], f32>
}

// An embedding gather (indirect) and a masked load (constant_pad_nd).
// CHECK-LABEL: func.func @indirect_and_mask
func.func @indirect_and_mask(%w: !loop.tensor<[100, 16], f32>, %ix: !loop.tensor<[s0], i64>, %x: !loop.tensor<[4], f32>) -> (!loop.tensor<[s0, 16], f32>, !loop.tensor<[6], f32>) {
  // CHECK:      %e = loop.pointwise [s0, 16] : !loop.tensor<[s0, 16], f32> {
  // CHECK-NEXT: ^bb0(%i0: index, %i1: index):
  // CHECK-NEXT:   %n = loop.load %ix[i0] : !loop.tensor<[s0], i64>
  // CHECK-NEXT:   %v = loop.load %w[t0, i1] indirect(%n : i64) : !loop.tensor<[100, 16], f32>
  // CHECK-NEXT:   loop.yield %v : f32
  %e = loop.pointwise [s0, 16] : !loop.tensor<[s0, 16], f32> {
  ^bb0(%i0: index, %i1: index):
    %n = loop.load %ix[i0] : !loop.tensor<[s0], i64>
    %v = loop.load %w[t0, i1] indirect(%n : i64) : !loop.tensor<[100, 16], f32>
    loop.yield %v : f32
  }
  // CHECK:      %m = arith.andi %ge, %lt : i1
  // CHECK-NEXT: %{{.*}} = loop.load %x[i0 - 1] mask(%m) : !loop.tensor<[4], f32>
  // CHECK-NEXT: %g = loop.load %w[t0, t1] indirect(%k, %k2 : i64, index) mask(%m) : !loop.tensor<[100, 16], f32>
  %p = loop.pointwise [6] : !loop.tensor<[6], f32> {
  ^bb0(%i0: index):
    %k = loop.index i0 : i64
    %k2 = loop.index i0 : index
    %one = arith.constant 1 : i64
    %five = arith.constant 5 : i64
    %ge = arith.cmpi sge, %k, %one : i64
    %lt = arith.cmpi slt, %k, %five : i64
    %m = arith.andi %ge, %lt : i1
    %v = loop.load %x[i0 - 1] mask(%m) : !loop.tensor<[4], f32>
    %g = loop.load %w[t0, t1] indirect(%k, %k2 : i64, index) mask(%m) : !loop.tensor<[100, 16], f32>
    %zero = arith.constant 0.0 : f32
    %r = arith.select %m, %v, %zero : f32
    loop.yield %r : f32
  }
  func.return %e, %p : !loop.tensor<[s0, 16], f32>, !loop.tensor<[6], f32>
}

// Every reduction kind. Reductions index i0.. over ranges then r0.. over
// reduction_ranges.
// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: !loop.tensor<[s0, 8], f32>, %b: !loop.tensor<[s0, 8], i1>) {
  // CHECK:      %sum = loop.reduction sum [s0] [8] : !loop.tensor<[s0], f32> {
  // CHECK-NEXT: ^bb0(%i0: index, %r0: index):
  // CHECK-NEXT:   %a = loop.load %x[i0, r0] : !loop.tensor<[s0, 8], f32>
  // CHECK-NEXT:   loop.yield %a : f32
  // CHECK-NEXT: }
  %sum = loop.reduction sum [s0] [8] : !loop.tensor<[s0], f32> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[s0, 8], f32>
    loop.yield %a : f32
  }
  // CHECK: %prod = loop.reduction prod [s0] [8] : !loop.tensor<[s0], f32> {
  %prod = loop.reduction prod [s0] [8] : !loop.tensor<[s0], f32> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[s0, 8], f32>
    loop.yield %a : f32
  }
  // CHECK: %max = loop.reduction max [s0] [8] : !loop.tensor<[s0], f32> {
  %max = loop.reduction max [s0] [8] : !loop.tensor<[s0], f32> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[s0, 8], f32>
    loop.yield %a : f32
  }
  // CHECK: %min = loop.reduction min [s0] [8] : !loop.tensor<[s0], f32> {
  %min = loop.reduction min [s0] [8] : !loop.tensor<[s0], f32> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[s0, 8], f32>
    loop.yield %a : f32
  }
  // CHECK: %argmax = loop.reduction argmax [s0] [8] : !loop.tensor<[s0], i64> {
  %argmax = loop.reduction argmax [s0] [8] : !loop.tensor<[s0], i64> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[s0, 8], f32>
    loop.yield %a : f32
  }
  // CHECK: %argmin = loop.reduction argmin [s0] [8] : !loop.tensor<[s0], i64> {
  %argmin = loop.reduction argmin [s0] [8] : !loop.tensor<[s0], i64> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[s0, 8], f32>
    loop.yield %a : f32
  }
  // CHECK: %any = loop.reduction any [s0] [8] : !loop.tensor<[s0], i1> {
  %any = loop.reduction any [s0] [8] : !loop.tensor<[s0], i1> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %b[i0, r0] : !loop.tensor<[s0, 8], i1>
    loop.yield %a : i1
  }
  // CHECK: %all = loop.reduction all [s0] [8] : !loop.tensor<[s0], i1> {
  %all = loop.reduction all [s0] [8] : !loop.tensor<[s0], i1> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %b[i0, r0] : !loop.tensor<[s0, 8], i1>
    loop.yield %a : i1
  }
  // welford gives (mean, m2, count).
  // CHECK: %mean, %m2, %count = loop.reduction welford [s0] [8] : !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32> {
  %mean, %m2, %count = loop.reduction welford [s0] [8] : !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[s0, 8], f32>
    loop.yield %a : f32
  }
  // A full reduction to a scalar, over a 2-d symbolic domain.
  // CHECK: %total = loop.reduction sum [] [s0, 8] : !loop.tensor<[], f32> {
  // CHECK-NEXT: ^bb0(%{{.*}}: index, %r1: index):
  %total = loop.reduction sum [] [s0, 8] : !loop.tensor<[], f32> {
  ^bb0(%r0: index, %r1: index):
    %a = loop.load %x[r0, r1] : !loop.tensor<[s0, 8], f32>
    loop.yield %a : f32
  }
  func.return
}

// Scans along one dimension of their ranges: a bf16 cumsum accumulated in f32
// (the result may hold a narrower float), a running max with its positions,
// and every other kind; in DPS form after bufferize.
// CHECK-LABEL: func.func @scans
func.func @scans(%x: !loop.tensor<[4, s0], bf16>, %y: !loop.tensor<[s0, 3], f32>, %o: !buffer.buffer<[s0, 3], f32>) -> (!loop.tensor<[4, s0], bf16>, !loop.tensor<[s0, 3], i64>) {
  // CHECK:      %c = loop.scan sum dim 1 [4, s0] : !loop.tensor<[4, s0], bf16> {
  // CHECK-NEXT: ^bb0(%i0: index, %i1: index):
  // CHECK-NEXT:   %a = loop.load %x[i0, i1] : !loop.tensor<[4, s0], bf16>
  // CHECK-NEXT:   %b = arith.extf %a : bf16 to f32
  // CHECK-NEXT:   loop.yield %b : f32
  // CHECK-NEXT: }
  %c = loop.scan sum dim 1 [4, s0] : !loop.tensor<[4, s0], bf16> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !loop.tensor<[4, s0], bf16>
    %b = arith.extf %a : bf16 to f32
    loop.yield %b : f32
  }
  // CHECK: %v, %k = loop.scan argmax dim 0 [s0, 3] : !loop.tensor<[s0, 3], f32>, !loop.tensor<[s0, 3], i64> {
  %v, %k = loop.scan argmax dim 0 [s0, 3] : !loop.tensor<[s0, 3], f32>, !loop.tensor<[s0, 3], i64> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %y[i0, i1] : !loop.tensor<[s0, 3], f32>
    loop.yield %a : f32
  }
  // CHECK: loop.scan argmin dim 1
  // CHECK: loop.scan prod dim 0
  // CHECK: loop.scan max dim 0
  // CHECK: loop.scan min dim 0
  // CHECK: loop.scan logsumexp dim 0
  %w, %j = loop.scan argmin dim 1 [s0, 3] : !loop.tensor<[s0, 3], f32>, !loop.tensor<[s0, 3], i64> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %y[i0, i1] : !loop.tensor<[s0, 3], f32>
    loop.yield %a : f32
  }
  %p = loop.scan prod dim 0 [s0, 3] : !loop.tensor<[s0, 3], f32> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %y[i0, i1] : !loop.tensor<[s0, 3], f32>
    loop.yield %a : f32
  }
  %mx = loop.scan max dim 0 [s0, 3] : !loop.tensor<[s0, 3], f32> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %y[i0, i1] : !loop.tensor<[s0, 3], f32>
    loop.yield %a : f32
  }
  %mn = loop.scan min dim 0 [s0, 3] : !loop.tensor<[s0, 3], f32> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %y[i0, i1] : !loop.tensor<[s0, 3], f32>
    loop.yield %a : f32
  }
  %l = loop.scan logsumexp dim 0 [s0, 3] : !loop.tensor<[s0, 3], f32> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %y[i0, i1] : !loop.tensor<[s0, 3], f32>
    loop.yield %a : f32
  }
  // CHECK: loop.scan sum dim 1 [s0, 3] outs(%o : !buffer.buffer<[s0, 3], f32>) {
  loop.scan sum dim 1 [s0, 3] outs(%o : !buffer.buffer<[s0, 3], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %y[i0, i1] : !loop.tensor<[s0, 3], f32>
    loop.yield %a : f32
  }
  func.return %c, %k : !loop.tensor<[4, s0], bf16>, !loop.tensor<[s0, 3], i64>
}

// Scatters: a value-semantic update of a copy of `into` (index_put with
// accumulate: two indirect indices, t0 and t1), and in DPS form, updating the
// out in place (a scatter along dim 0, overwriting; atomic max and min).
// CHECK-LABEL: func.func @scatters
func.func @scatters(%x: !loop.tensor<[5, 6], f32>, %ix: !loop.tensor<[s0], i64>, %jx: !loop.tensor<[s0], i32>, %v: !loop.tensor<[s0], f32>, %o: !buffer.buffer<[5, 6], f32>, %k: !buffer.buffer<[3, 6], i64>) -> !loop.tensor<[5, 6], f32> {
  // CHECK:      %y = loop.scatter add [s0] into(%x : !loop.tensor<[5, 6], f32>) at [t0, t1] : !loop.tensor<[5, 6], f32> {
  // CHECK-NEXT: ^bb0(%i0: index):
  // CHECK-NEXT:   %a = loop.load %ix[i0] : !loop.tensor<[s0], i64>
  // CHECK-NEXT:   %b = loop.load %jx[i0] : !loop.tensor<[s0], i32>
  // CHECK-NEXT:   %c = loop.load %v[i0] : !loop.tensor<[s0], f32>
  // CHECK-NEXT:   loop.yield %c, %a, %b : f32, i64, i32
  // CHECK-NEXT: }
  %y = loop.scatter add [s0] into(%x : !loop.tensor<[5, 6], f32>) at [t0, t1] : !loop.tensor<[5, 6], f32> {
  ^bb0(%i0: index):
    %a = loop.load %ix[i0] : !loop.tensor<[s0], i64>
    %b = loop.load %jx[i0] : !loop.tensor<[s0], i32>
    %c = loop.load %v[i0] : !loop.tensor<[s0], f32>
    loop.yield %c, %a, %b : f32, i64, i32
  }
  // CHECK:      loop.scatter store [3, 6] at [t0, i1] outs(%o : !buffer.buffer<[5, 6], f32>) {
  // CHECK:      loop.scatter max [3, 6] at [t0, i1] outs(%o : !buffer.buffer<[5, 6], f32>) {
  // CHECK:      loop.scatter min [3, 6] at [t0, i1] outs(%o : !buffer.buffer<[5, 6], f32>) {
  loop.scatter store [3, 6] at [t0, i1] outs(%o : !buffer.buffer<[5, 6], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %k[i0, i1] : !buffer.buffer<[3, 6], i64>
    %c = arith.constant 2.0 : f32
    loop.yield %c, %a : f32, i64
  }
  loop.scatter max [3, 6] at [t0, i1] outs(%o : !buffer.buffer<[5, 6], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %k[i0, i1] : !buffer.buffer<[3, 6], i64>
    %c = arith.constant 2.0 : f32
    loop.yield %c, %a : f32, i64
  }
  loop.scatter min [3, 6] at [t0, i1] outs(%o : !buffer.buffer<[5, 6], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %k[i0, i1] : !buffer.buffer<[3, 6], i64>
    %c = arith.constant 2.0 : f32
    loop.yield %c, %a : f32, i64
  }
  func.return %y : !loop.tensor<[5, 6], f32>
}

// A fusion group (softmax): member reductions over the group's ranges x
// reduction_ranges, pointwise members over ranges ++ reduction_ranges; only
// what the group yields leaves it.
// CHECK-LABEL: func.func @fused
func.func @fused(%x: !loop.tensor<[s0, 8], f32>) -> !loop.tensor<[s0, 8], f32> {
  // CHECK:      %soft = loop.fused [s0] [8] : !loop.tensor<[s0, 8], f32> {
  // CHECK-NEXT:   %max = loop.reduction max [s0] [8] : !loop.tensor<[s0], f32> {
  // CHECK:        %exp = loop.pointwise [s0, 8] : !loop.tensor<[s0, 8], f32> {
  // CHECK:        %sum = loop.reduction sum [s0] [8] : !loop.tensor<[s0], f32> {
  // CHECK:        %div = loop.pointwise [s0, 8] : !loop.tensor<[s0, 8], f32> {
  // CHECK:        loop.yield %div : !loop.tensor<[s0, 8], f32>
  // CHECK-NEXT: }
  %soft = loop.fused [s0] [8] : !loop.tensor<[s0, 8], f32> {
    %max = loop.reduction max [s0] [8] : !loop.tensor<[s0], f32> {
    ^bb0(%i0: index, %r0: index):
      %a = loop.load %x[i0, r0] : !loop.tensor<[s0, 8], f32>
      loop.yield %a : f32
    }
    %exp = loop.pointwise [s0, 8] : !loop.tensor<[s0, 8], f32> {
    ^bb0(%i0: index, %i1: index):
      %a = loop.load %x[i0, i1] : !loop.tensor<[s0, 8], f32>
      %m = loop.load %max[i0] : !loop.tensor<[s0], f32>
      %d = arith.subf %a, %m : f32
      %e = math.exp %d : f32
      loop.yield %e : f32
    }
    %sum = loop.reduction sum [s0] [8] : !loop.tensor<[s0], f32> {
    ^bb0(%i0: index, %r0: index):
      %a = loop.load %exp[i0, r0] : !loop.tensor<[s0, 8], f32>
      loop.yield %a : f32
    }
    %div = loop.pointwise [s0, 8] : !loop.tensor<[s0, 8], f32> {
    ^bb0(%i0: index, %i1: index):
      %a = loop.load %exp[i0, i1] : !loop.tensor<[s0, 8], f32>
      %s = loop.load %sum[i0] : !loop.tensor<[s0], f32>
      %d = arith.divf %a, %s : f32
      loop.yield %d : f32
    }
    loop.yield %div : !loop.tensor<[s0, 8], f32>
  }
  // A group with a pointwise prologue over its ranges and two results.
  // CHECK: %n, %mean, %m2, %count = loop.fused [s0] [8] : !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32> {
  %n, %mean, %m2, %count = loop.fused [s0] [8] : !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32> {
    %c = loop.pointwise [s0] : !loop.tensor<[s0], f32> {
    ^bb0(%i0: index):
      %k = loop.index i0 : i64
      %f = arith.sitofp %k : i64 to f32
      loop.yield %f : f32
    }
    %mean, %m2, %count = loop.reduction welford [s0] [8] : !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32> {
    ^bb0(%i0: index, %r0: index):
      %a = loop.load %x[i0, r0] : !loop.tensor<[s0, 8], f32>
      %o = loop.load %c[i0] : !loop.tensor<[s0], f32>
      %d = arith.subf %a, %o : f32
      loop.yield %d : f32
    }
    loop.yield %c, %mean, %m2, %count : !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32>, !loop.tensor<[s0], f32>
  }
  func.return %soft : !loop.tensor<[s0, 8], f32>
}

// Destination-passing style (after bufferize): nests write their outs, no
// results; buffers may be strided, offset and on a device.
// CHECK-LABEL: func.func @outs
func.func @outs(%x: !buffer.buffer<[4, s0], f32, strides [1, 4], offset 3, device "cuda:0">) {
  // CHECK:      %b = buffer.alloc : !buffer.buffer<[4, s0], f32, device "cuda:0">
  // CHECK-NEXT: loop.pointwise [4, s0] outs(%b : !buffer.buffer<[4, s0], f32, device "cuda:0">) {
  // CHECK-NEXT: ^bb0(%i0: index, %i1: index):
  // CHECK-NEXT:   %a = loop.load %x[i0, i1] : !buffer.buffer<[4, s0], f32, strides [1, 4], offset 3, device "cuda:0">
  // CHECK-NEXT:   loop.yield %a : f32
  // CHECK-NEXT: }
  %b = buffer.alloc : !buffer.buffer<[4, s0], f32, device "cuda:0">
  loop.pointwise [4, s0] outs(%b : !buffer.buffer<[4, s0], f32, device "cuda:0">) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !buffer.buffer<[4, s0], f32, strides [1, 4], offset 3, device "cuda:0">
    loop.yield %a : f32
  }
  // CHECK: loop.reduction sum [4] [s0] outs(%s : !buffer.buffer<[4], f32, device "cuda:0">) {
  %s = buffer.alloc : !buffer.buffer<[4], f32, device "cuda:0">
  loop.reduction sum [4] [s0] outs(%s : !buffer.buffer<[4], f32, device "cuda:0">) {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %b[i0, r0] : !buffer.buffer<[4, s0], f32, device "cuda:0">
    loop.yield %a : f32
  }
  // CHECK: loop.reduction welford [4] [s0] outs(%w0, %w1, %w2 : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>) {
  %w0 = buffer.alloc : !buffer.buffer<[4], f32>
  %w1 = buffer.alloc : !buffer.buffer<[4], f32>
  %w2 = buffer.alloc : !buffer.buffer<[4], f32>
  loop.reduction welford [4] [s0] outs(%w0, %w1, %w2 : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !buffer.buffer<[4, s0], f32, strides [1, 4], offset 3, device "cuda:0">
    loop.yield %a : f32
  }
  // A group in DPS form: members stay value-semantic, the group writes its outs.
  // CHECK:      loop.fused [4] [s0] outs(%o : !buffer.buffer<[4, s0], f32>) {
  // CHECK-NEXT:   %max = loop.reduction max [4] [s0] : !loop.tensor<[4], f32> {
  // CHECK:        loop.yield %sub : !loop.tensor<[4, s0], f32>
  // CHECK-NEXT: }
  %o = buffer.alloc : !buffer.buffer<[4, s0], f32>
  loop.fused [4] [s0] outs(%o : !buffer.buffer<[4, s0], f32>) {
    %max = loop.reduction max [4] [s0] : !loop.tensor<[4], f32> {
    ^bb0(%i0: index, %r0: index):
      %a = loop.load %x[i0, r0] : !buffer.buffer<[4, s0], f32, strides [1, 4], offset 3, device "cuda:0">
      loop.yield %a : f32
    }
    %sub = loop.pointwise [4, s0] : !loop.tensor<[4, s0], f32> {
    ^bb0(%i0: index, %i1: index):
      %a = loop.load %x[i0, i1] : !buffer.buffer<[4, s0], f32, strides [1, 4], offset 3, device "cuda:0">
      %m = loop.load %max[i0] : !loop.tensor<[4], f32>
      %d = arith.subf %a, %m : f32
      loop.yield %d : f32
    }
    loop.yield %sub : !loop.tensor<[4, s0], f32>
  }
  func.return
}

// Random numbers: one host-side seed, counter-based draws per element.
// CHECK-LABEL: func.func @random
func.func @random() -> (!loop.tensor<[4, s0], f32>, !loop.tensor<[4, s0], f64>) {
  // CHECK:      %seed = loop.seed : i64
  // CHECK:        %{{.*}} = loop.rand %seed[i0*s0 + i1] : f32
  // CHECK:        %{{.*}} = loop.randn %seed[i0*s0 + i1 + 4*s0] : f64
  %seed = loop.seed : i64
  %u = loop.pointwise [4, s0] : !loop.tensor<[4, s0], f32> {
  ^bb0(%i0: index, %i1: index):
    %u = loop.rand %seed[i0*s0 + i1] : f32
    loop.yield %u : f32
  }
  %g = loop.pointwise [4, s0] : !loop.tensor<[4, s0], f64> {
  ^bb0(%i0: index, %i1: index):
    %g = loop.randn %seed[4*s0 + i0*s0 + i1] : f64
    loop.yield %g : f64
  }
  func.return %u, %g : !loop.tensor<[4, s0], f32>, !loop.tensor<[4, s0], f64>
}

// Views (no copy) of tensors and buffers; copies into graph inputs.
// CHECK-LABEL: func.func @view_and_copy
func.func @view_and_copy(%x: !loop.tensor<[4, s0], f32>, %in: !buffer.buffer<[s0, 4], f32>, %out: !buffer.buffer<[4, s0], f32, strides [1, 4]>) {
  // CHECK:      %t = loop.view %x[i1, i0] : !loop.tensor<[4, s0], f32> -> !loop.tensor<[s0, 4], f32>
  // CHECK-NEXT: %flat = loop.view %x[i0 floordiv s0, i0 mod s0] : !loop.tensor<[4, s0], f32> -> !loop.tensor<[4*s0], f32>
  // CHECK-NEXT: %bv = loop.view %in[i0 + 1, 2] : !buffer.buffer<[s0, 4], f32> -> !loop.tensor<[s0 - 1], f32>
  // CHECK-NEXT: %s = loop.view %x[0, 0] : !loop.tensor<[4, s0], f32> -> !loop.tensor<[], f32>
  // CHECK-NEXT: loop.copy %t, %in : !loop.tensor<[s0, 4], f32>, !buffer.buffer<[s0, 4], f32>
  // CHECK-NEXT: loop.copy %x, %out : !loop.tensor<[4, s0], f32>, !buffer.buffer<[4, s0], f32, strides [1, 4]>
  %t = loop.view %x[i1, i0] : !loop.tensor<[4, s0], f32> -> !loop.tensor<[s0, 4], f32>
  %flat = loop.view %x[i0 floordiv s0, i0 mod s0] : !loop.tensor<[4, s0], f32> -> !loop.tensor<[4*s0], f32>
  %bv = loop.view %in[i0 + 1, 2] : !buffer.buffer<[s0, 4], f32> -> !loop.tensor<[s0 - 1], f32>
  %s = loop.view %x[0, 0] : !loop.tensor<[4, s0], f32> -> !loop.tensor<[], f32>
  loop.copy %t, %in : !loop.tensor<[s0, 4], f32>, !buffer.buffer<[s0, 4], f32>
  loop.copy %x, %out : !loop.tensor<[4, s0], f32>, !buffer.buffer<[4, s0], f32, strides [1, 4]>
  func.return
}
