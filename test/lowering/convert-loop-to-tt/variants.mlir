// RUN: fx-opt %s -p convert-loop-to-tt --split-input-file | filecheck %s
// RUN: fx-opt %s -p "convert-loop-to-tt{variants=false}" --split-input-file | filecheck %s --check-prefix=OFF

// A reduction over a symbolic row: the looped kernel serves every size; the
// cost model keeps a persistent kernel for rows of at most 4096 points (the
// bucket's largest size, where it beats the looped one by the margin), and
// host.variants runs it where s1 <= 4096. The looped kernel's plan names the
// variants and the estimates that chose them.

// CHECK:       tt.func public @coil_out_0_r4096
// CHECK-SAME:  coil.plan = "reduction rows, persistent [XBLOCK 1, RBLOCK 4096], 16 warps: {{.*}}; rows of at most 4096"
// CHECK:       tt.func public @coil_out_0(
// CHECK-SAME:  coil.plan = "reduction inner rows, looped [XBLOCK 1, RBLOCK 2048], 8 warps: {{.*}}; variants: rows <= 4096: persistent [XBLOCK 1, RBLOCK 4096] {{.*}} us against looped {{.*}} us at 4096"
// CHECK-LABEL: func.func @sum_rows
// CHECK:       host.variants "coil_out_0" size <s1> bounds <[4096]> {
// CHECK-NEXT:    host.launch @coil_out_0_r4096 grid [s0, 1, 1] (%x, %out : {{.*}}) scalars [s0, s1] {num_warps = 16 : i64, num_stages = 1 : i64}
// CHECK-NEXT:    host.launch @coil_out_0 grid [s0, 1, 1] (%x, %out : {{.*}}) scalars [s0, s1] {num_warps = 8 : i64, num_stages = 1 : i64}
// CHECK-NEXT:  }

// OFF-LABEL:   func.func @sum_rows
// OFF-NOT:     host.variants
// OFF:         host.launch @coil_out_0 grid [s0, 1, 1]
func.func @sum_rows(%x: !buffer.buffer<[s0, s1], f32>) -> !buffer.buffer<[s0], f32> attributes {coil.size_hints = {s0 = 64 : i64, s1 = 1000 : i64}} {
  %out = buffer.alloc : !buffer.buffer<[s0], f32>
  loop.reduction sum [s0] [s1] outs(%out : !buffer.buffer<[s0], f32>) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[s0, s1], f32>
    loop.yield %0 : f32
  }
  func.return %out : !buffer.buffer<[s0], f32>
}

// -----

// A static row is planned once: no variants.

// CHECK-LABEL: func.func @static_rows
// CHECK-NOT:   host.variants
// CHECK:       host.launch @coil_out_0
func.func @static_rows(%x: !buffer.buffer<[s0, 1000], f32>) -> !buffer.buffer<[s0], f32> {
  %out = buffer.alloc : !buffer.buffer<[s0], f32>
  loop.reduction sum [s0] [1000] outs(%out : !buffer.buffer<[s0], f32>) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[s0, 1000], f32>
    loop.yield %0 : f32
  }
  func.return %out : !buffer.buffer<[s0], f32>
}

// -----

// A Welford row kept whole: its count is the row's length, a size argument
// (s1 as a float), not a constant.

// CHECK:       tt.func public @coil_mean_m2_n_0_r4096
// CHECK:       arith.sitofp %s1 : i64 to f32
// CHECK-LABEL: func.func @welford_rows
// CHECK:       host.variants "coil_mean_m2_n_0" size <s1> bounds <[4096]> {
func.func @welford_rows(%x: !buffer.buffer<[s0, s1], f32>) -> (!buffer.buffer<[s0], f32>, !buffer.buffer<[s0], f32>, !buffer.buffer<[s0], f32>) attributes {coil.size_hints = {s0 = 64 : i64, s1 = 1000 : i64}} {
  %mean = buffer.alloc : !buffer.buffer<[s0], f32>
  %m2 = buffer.alloc : !buffer.buffer<[s0], f32>
  %n = buffer.alloc : !buffer.buffer<[s0], f32>
  loop.reduction welford [s0] [s1] outs(%mean, %m2, %n : !buffer.buffer<[s0], f32>, !buffer.buffer<[s0], f32>, !buffer.buffer<[s0], f32>) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[s0, s1], f32>
    loop.yield %0 : f32
  }
  func.return %mean, %m2, %n : !buffer.buffer<[s0], f32>, !buffer.buffer<[s0], f32>, !buffer.buffer<[s0], f32>
}
