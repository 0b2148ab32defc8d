// RUN: fx-opt %s | filecheck %s
// RUN: COIL_ROUNDTRIP | filecheck %s
// RUN: COIL_GENERIC_ROUNDTRIP | fx-opt | filecheck %s

// Round trips of every host op: the wrapper program that allocates buffers,
// launches tt kernels, calls ATen and frees, with static and symbolic sizes.

tt.func public @coil_softmax_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %s0: i64) {
  tt.return
}

tt.func public @coil_rand_1(%out_ptr0: !tt.ptr<f32>, %seed0: i64) {
  tt.return
}

tt.func public @coil_empty_2() {
  tt.return
}

// A symbol bound by an index argument, arg attributes and the func's
// attributes are kept.
// CHECK-LABEL: host.func @call
// CHECK-SAME: (%arg0: index {coil.symbol = #coil.expr<s0>}, %arg1: !buffer.buffer<[s0, 64], f32>, %w: !buffer.buffer<[64, 32], f32>) -> !buffer.buffer<[s0, 32], f32> attributes {coil.output_tree = "[0]", coil.peak_bytes = #coil.expr<256*s0>}
host.func @call(%arg0: index {coil.symbol = #coil.expr<s0>}, %arg1: !buffer.buffer<[s0, 64], f32>, %w: !buffer.buffer<[64, 32], f32>) -> !buffer.buffer<[s0, 32], f32> attributes {coil.output_tree = "[0]", coil.peak_bytes = #coil.expr<256*s0>} {
  // CHECK-NEXT: %buf0 = host.empty_strided : !buffer.buffer<[s0, 64], f32>
  // CHECK-NEXT: host.launch @coil_softmax_0 grid [(s0 + 3) floordiv 4, 1, 1] (%arg1, %buf0 : !buffer.buffer<[s0, 64], f32>, !buffer.buffer<[s0, 64], f32>) scalars [s0] {num_warps = 4 : i64, num_stages = 1 : i64}
  // CHECK-NEXT: %v = host.reinterpret %buf0 : !buffer.buffer<[s0, 64], f32> -> !buffer.buffer<[64, s0], f32, strides [1, 64]>
  // CHECK-NEXT: %row = host.reinterpret %buf0 : !buffer.buffer<[s0, 64], f32> -> !buffer.buffer<[64], f32, offset 64>
  // CHECK-NEXT: %mm = host.extern "aten.mm.default" (%buf0, %w) : (!buffer.buffer<[s0, 64], f32>, !buffer.buffer<[64, 32], f32>) -> (!buffer.buffer<[s0, 32], f32>) {
  // CHECK-NEXT: ^bb0(%a: !aten.tensor<[s0, 64], f32>, %b: !aten.tensor<[64, 32], f32>):
  // CHECK-NEXT:   %c = aten.mm.default(%a, %b) : !aten.tensor<[s0, 32], f32>
  // CHECK-NEXT:   host.yield %c : !aten.tensor<[s0, 32], f32>
  // CHECK-NEXT: }
  // CHECK-NEXT: host.free %buf0 : !buffer.buffer<[s0, 64], f32>
  // CHECK-NEXT: host.return %mm : !buffer.buffer<[s0, 32], f32>
  %buf0 = host.empty_strided : !buffer.buffer<[s0, 64], f32>
  host.launch @coil_softmax_0 grid [(s0 + 3) floordiv 4, 1, 1] (%arg1, %buf0 : !buffer.buffer<[s0, 64], f32>, !buffer.buffer<[s0, 64], f32>) scalars [s0] {num_warps = 4 : i64, num_stages = 1 : i64}
  %v = host.reinterpret %buf0 : !buffer.buffer<[s0, 64], f32> -> !buffer.buffer<[64, s0], f32, strides [1, 64]>
  %row = host.reinterpret %buf0 : !buffer.buffer<[s0, 64], f32> -> !buffer.buffer<[64], f32, offset 64>
  %mm = host.extern "aten.mm.default" (%buf0, %w) : (!buffer.buffer<[s0, 64], f32>, !buffer.buffer<[64, 32], f32>) -> (!buffer.buffer<[s0, 32], f32>) {
  ^bb0(%a: !aten.tensor<[s0, 64], f32>, %b: !aten.tensor<[64, 32], f32>):
    %c = aten.mm.default(%a, %b) : !aten.tensor<[s0, 32], f32>
    host.yield %c : !aten.tensor<[s0, 32], f32>
  }
  host.free %buf0 : !buffer.buffer<[s0, 64], f32>
  host.return %mm : !buffer.buffer<[s0, 32], f32>
}

// A seed is an i64 launch argument; a launch without scalars or config, one
// without arguments; a multi-result extern; a function without results.
// CHECK-LABEL: host.func @random
host.func @random(%x: !buffer.buffer<[8, 4], f32, device "cuda:0">) {
  // CHECK-NEXT: %seed = host.seed : i64
  // CHECK-NEXT: %buf0 = host.empty_strided : !buffer.buffer<[1024], f32, device "cuda:0">
  // CHECK-NEXT: host.launch @coil_rand_1 grid [1, 1, 1] (%buf0, %seed : !buffer.buffer<[1024], f32, device "cuda:0">, i64)
  // CHECK-NEXT: host.launch @coil_empty_2 grid [1, 1, 1] ()
  // CHECK-NEXT: %vals, %idx = host.extern "aten.sort.default" (%x) : (!buffer.buffer<[8, 4], f32, device "cuda:0">) -> (!buffer.buffer<[8, 4], f32, device "cuda:0">, !buffer.buffer<[8, 4], i64, device "cuda:0">) {
  // CHECK:        host.yield %s, %i : !aten.tensor<[8, 4], f32, device "cuda:0">, !aten.tensor<[8, 4], i64, device "cuda:0">
  // CHECK:      host.free %buf0 : !buffer.buffer<[1024], f32, device "cuda:0">
  // CHECK-NEXT: host.return
  %seed = host.seed : i64
  %buf0 = host.empty_strided : !buffer.buffer<[1024], f32, device "cuda:0">
  host.launch @coil_rand_1 grid [1, 1, 1] (%buf0, %seed : !buffer.buffer<[1024], f32, device "cuda:0">, i64)
  host.launch @coil_empty_2 grid [1, 1, 1] ()
  %vals, %idx = host.extern "aten.sort.default" (%x) : (!buffer.buffer<[8, 4], f32, device "cuda:0">) -> (!buffer.buffer<[8, 4], f32, device "cuda:0">, !buffer.buffer<[8, 4], i64, device "cuda:0">) {
  ^bb0(%a: !aten.tensor<[8, 4], f32, device "cuda:0">):
    %s, %i = aten.sort.default(%a) : (!aten.tensor<[8, 4], f32, device "cuda:0">, !aten.tensor<[8, 4], i64, device "cuda:0">)
    host.yield %s, %i : !aten.tensor<[8, 4], f32, device "cuda:0">, !aten.tensor<[8, 4], i64, device "cuda:0">
  }
  host.free %buf0 : !buffer.buffer<[1024], f32, device "cuda:0">
  host.return
}

// Counters the module keeps (zero before each launch that takes them) are a
// launch argument like any buffer.
// CHECK-LABEL: host.func @counted
host.func @counted(%x: !buffer.buffer<[1024], f32, device "cuda:0">) {
  // CHECK-NEXT: %sem = host.semaphores : !buffer.buffer<[4], i32, device "cuda:0">
  // CHECK-NEXT: host.launch @coil_rand_1 grid [8, 1, 1] (%x, %sem : !buffer.buffer<[1024], f32, device "cuda:0">, !buffer.buffer<[4], i32, device "cuda:0">)
  %sem = host.semaphores : !buffer.buffer<[4], i32, device "cuda:0">
  host.launch @coil_rand_1 grid [8, 1, 1] (%x, %sem : !buffer.buffer<[1024], f32, device "cuda:0">, !buffer.buffer<[4], i32, device "cuda:0">)
  host.return
}

// host.autotune: candidate launches of one nest (same arguments; kernels,
// grids and launch options differ); the runtime runs exactly one of them.
// CHECK-LABEL: host.func @tuned
host.func @tuned(%x: !buffer.buffer<[s0, 64], f32>) -> !buffer.buffer<[s0, 64], f32> {
  // CHECK-NEXT: %buf0 = host.empty_strided : !buffer.buffer<[s0, 64], f32>
  // CHECK-NEXT: host.autotune "coil_softmax_0" {
  // CHECK-NEXT:   host.launch @coil_softmax_0_c0 grid [(s0 + 3) floordiv 4, 1, 1] (%x, %buf0 : !buffer.buffer<[s0, 64], f32>, !buffer.buffer<[s0, 64], f32>) scalars [s0] {num_warps = 4 : i64, num_stages = 1 : i64}
  // CHECK-NEXT:   host.launch @coil_softmax_0_c1 grid [s0, 1, 1] (%x, %buf0 : !buffer.buffer<[s0, 64], f32>, !buffer.buffer<[s0, 64], f32>) scalars [s0] {num_warps = 8 : i64, num_stages = 1 : i64}
  // CHECK-NEXT: }
  // CHECK-NEXT: host.return %buf0 : !buffer.buffer<[s0, 64], f32>
  %buf0 = host.empty_strided : !buffer.buffer<[s0, 64], f32>
  host.autotune "coil_softmax_0" {
    host.launch @coil_softmax_0_c0 grid [(s0 + 3) floordiv 4, 1, 1] (%x, %buf0 : !buffer.buffer<[s0, 64], f32>, !buffer.buffer<[s0, 64], f32>) scalars [s0] {num_warps = 4 : i64, num_stages = 1 : i64}
    host.launch @coil_softmax_0_c1 grid [s0, 1, 1] (%x, %buf0 : !buffer.buffer<[s0, 64], f32>, !buffer.buffer<[s0, 64], f32>) scalars [s0] {num_warps = 8 : i64, num_stages = 1 : i64}
  }
  host.return %buf0 : !buffer.buffer<[s0, 64], f32>
}

// host.variants: kernels of one nest planned for ranges of a symbolic size (the
// first whose bound the size is within runs, the last past every bound).
// CHECK-LABEL: host.func @variants
host.func @variants(%x: !buffer.buffer<[s0, s1], f32>) -> !buffer.buffer<[s0], f32> {
  // CHECK-NEXT: %buf0 = host.empty_strided : !buffer.buffer<[s0], f32>
  // CHECK-NEXT: host.variants "coil_sum_0" size <s1> bounds <[1024, 4096]> {
  // CHECK-NEXT:   host.launch @coil_sum_0_r1024 grid [(s0 + 3) floordiv 4, 1, 1] (%x, %buf0 : !buffer.buffer<[s0, s1], f32>, !buffer.buffer<[s0], f32>) scalars [s0, s1]
  // CHECK-NEXT:   host.launch @coil_sum_0_r4096 grid [s0, 1, 1] (%x, %buf0 : !buffer.buffer<[s0, s1], f32>, !buffer.buffer<[s0], f32>) scalars [s0, s1]
  // CHECK-NEXT:   host.launch @coil_sum_0 grid [s0, 1, 1] (%x, %buf0 : !buffer.buffer<[s0, s1], f32>, !buffer.buffer<[s0], f32>) scalars [s0, s1]
  // CHECK-NEXT: }
  %buf0 = host.empty_strided : !buffer.buffer<[s0], f32>
  host.variants "coil_sum_0" size <s1> bounds <[1024, 4096]> {
    host.launch @coil_sum_0_r1024 grid [(s0 + 3) floordiv 4, 1, 1] (%x, %buf0 : !buffer.buffer<[s0, s1], f32>, !buffer.buffer<[s0], f32>) scalars [s0, s1]
    host.launch @coil_sum_0_r4096 grid [s0, 1, 1] (%x, %buf0 : !buffer.buffer<[s0, s1], f32>, !buffer.buffer<[s0], f32>) scalars [s0, s1]
    host.launch @coil_sum_0 grid [s0, 1, 1] (%x, %buf0 : !buffer.buffer<[s0, s1], f32>, !buffer.buffer<[s0], f32>) scalars [s0, s1]
  }
  host.return %buf0 : !buffer.buffer<[s0], f32>
}
