// RUN: fx-opt %s | filecheck %s
// RUN: COIL_ROUNDTRIP | filecheck %s
// RUN: COIL_GENERIC_ROUNDTRIP | fx-opt | filecheck %s

// Round trips of every tt op and of the pointer type, in the syntax of
// `triton --dump ttir`: kernels (public) and device functions, program ids,
// ranges, shape ops, pointer arithmetic, masked loads/stores, atomics,
// reductions, dots, casts, library calls and debug ops.

// CHECK-LABEL: tt.func public @types
// CHECK-SAME: (%p: !tt.ptr<f32>, %q: !tt.ptr<i1>, %r: !tt.ptr<f16, 3>, %s0: i64)
tt.func public @types(%p: !tt.ptr<f32>, %q: !tt.ptr<i1>, %r: !tt.ptr<f16, 3>, %s0: i64) {
  tt.return
}

// A device function returns values; a kernel calls it and Triton's library.
// CHECK-LABEL: tt.func private @helper
// CHECK-SAME: (%x: tensor<128xf32>) -> tensor<128xf32>
// CHECK-NEXT:   tt.return %x : tensor<128xf32>
tt.func private @helper(%x: tensor<128xf32>) -> tensor<128xf32> {
  tt.return %x : tensor<128xf32>
}

// CHECK-LABEL: tt.func public @programs
tt.func public @programs(%seed: i32) {
  // CHECK:      %pid = tt.get_program_id x : i32
  // CHECK-NEXT: %pidy = tt.get_program_id y : i32
  // CHECK-NEXT: %npz = tt.get_num_programs z : i32
  // CHECK-NEXT: %range = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
  // CHECK-NEXT: %base = tt.splat %pid : i32 -> tensor<128xi32>
  // CHECK-NEXT: %r = tt.call @tl.rand(%seed, %range) : (i32, tensor<128xi32>) -> tensor<128xf32>
  // CHECK-NEXT: %h = tt.call @helper(%r) : (tensor<128xf32>) -> tensor<128xf32>
  %pid = tt.get_program_id x : i32
  %pidy = tt.get_program_id y : i32
  %npz = tt.get_num_programs z : i32
  %range = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
  %base = tt.splat %pid : i32 -> tensor<128xi32>
  %r = tt.call @"tl.rand"(%seed, %range) : (i32, tensor<128xi32>) -> tensor<128xf32>
  %h = tt.call @helper(%r) : (tensor<128xf32>) -> tensor<128xf32>
  tt.return
}

// CHECK-LABEL: tt.func public @shapes
tt.func public @shapes(%x: tensor<64xf32>) {
  // CHECK:      %e = tt.expand_dims %x {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
  // CHECK-NEXT: %b = tt.broadcast %e : tensor<64x1xf32> -> tensor<64x8xf32>
  // CHECK-NEXT: %r = tt.reshape %b : tensor<64x8xf32> -> tensor<512xf32>
  %e = tt.expand_dims %x {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
  %b = tt.broadcast %e : tensor<64x1xf32> -> tensor<64x8xf32>
  %r = tt.reshape %b : tensor<64x8xf32> -> tensor<512xf32>
  tt.return
}

// Compiler hints: a block passed through with its divisibility and contiguity
// per dimension (tl.multiple_of, tl.max_contiguous).
// CHECK-LABEL: tt.func public @hints
tt.func public @hints(%x: tensor<128x1xi32>) {
  // CHECK:      %m = tt.multiple_of %x {values = array<i32: 16, 1>} : tensor<128x1xi32>
  // CHECK-NEXT: %c = tt.max_contiguous %m {values = array<i32: 16, 1>} : tensor<128x1xi32>
  %m = tt.multiple_of %x {values = array<i32: 16, 1>} : tensor<128x1xi32>
  %c = tt.max_contiguous %m {values = array<i32: 16, 1>} : tensor<128x1xi32>
  tt.return
}

// Loads: plain, masked, masked with `other`, with cache/eviction hints;
// stores with and without a mask; an atomic update; scalar pointers.
// CHECK-LABEL: tt.func public @memory
tt.func public @memory(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %off: tensor<128xi32>, %m: tensor<128xi1>, %z: tensor<128xf32>) {
  // CHECK:      %p = tt.splat %in_ptr0 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
  // CHECK-NEXT: %a = tt.addptr %p, %off : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
  // CHECK-NEXT: %v0 = tt.load %a : tensor<128x!tt.ptr<f32>>
  // CHECK-NEXT: %v1 = tt.load %a, %m : tensor<128x!tt.ptr<f32>>
  // CHECK-NEXT: %v2 = tt.load %a, %m, %z {cache = cg, evict = evict_last} : tensor<128x!tt.ptr<f32>>
  // CHECK-NEXT: %c7 = arith.constant 7 : i64
  // CHECK-NEXT: %s = tt.addptr %in_ptr0, %c7 : !tt.ptr<f32>, i64
  // CHECK-NEXT: %sv = tt.load %s : !tt.ptr<f32>
  // CHECK-NEXT: %o = tt.splat %out_ptr0 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
  // CHECK-NEXT: %oa = tt.addptr %o, %off : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
  // CHECK-NEXT: tt.store %oa, %v0 : tensor<128x!tt.ptr<f32>>
  // CHECK-NEXT: tt.store %oa, %v2, %m {evict = evict_first} : tensor<128x!tt.ptr<f32>>
  // CHECK-NEXT: tt.store %s, %sv : !tt.ptr<f32>
  // CHECK-NEXT: %old = tt.atomic_rmw fadd, relaxed, gpu, %oa, %v1, %m : (tensor<128x!tt.ptr<f32>>, tensor<128xf32>, tensor<128xi1>) -> tensor<128xf32>
  // CHECK-NEXT: %old2 = tt.atomic_rmw max, acq_rel, cta, %oa, %v1 : (tensor<128x!tt.ptr<f32>>, tensor<128xf32>) -> tensor<128xf32>
  %p = tt.splat %in_ptr0 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
  %a = tt.addptr %p, %off : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
  %v0 = tt.load %a : tensor<128x!tt.ptr<f32>>
  %v1 = tt.load %a, %m : tensor<128x!tt.ptr<f32>>
  %v2 = tt.load %a, %m, %z {cache = cg, evict = evict_last} : tensor<128x!tt.ptr<f32>>
  %c7 = arith.constant 7 : i64
  %s = tt.addptr %in_ptr0, %c7 : !tt.ptr<f32>, i64
  %sv = tt.load %s : !tt.ptr<f32>
  %o = tt.splat %out_ptr0 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
  %oa = tt.addptr %o, %off : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
  tt.store %oa, %v0 : tensor<128x!tt.ptr<f32>>
  tt.store %oa, %v2, %m {evict = evict_first} : tensor<128x!tt.ptr<f32>>
  tt.store %s, %sv : !tt.ptr<f32>
  %old = tt.atomic_rmw fadd, relaxed, gpu, %oa, %v1, %m : (tensor<128x!tt.ptr<f32>>, tensor<128xf32>, tensor<128xi1>) -> tensor<128xf32>
  %old2 = tt.atomic_rmw max, acq_rel, cta, %oa, %v1 : (tensor<128x!tt.ptr<f32>>, tensor<128xf32>) -> tensor<128xf32>
  tt.return
}

// tt.reduce prints in the generic form, as Triton prints it; a two-operand
// reduction (argmax-like) has a four-argument combiner.
// CHECK-LABEL: tt.func public @reduce
tt.func public @reduce(%x: tensor<64x8xf32>, %i: tensor<64x8xi32>) {
  // CHECK:      %s = "tt.reduce"(%x) <{axis = 1 : i32}> ({
  // CHECK-NEXT: ^bb0(%l: f32, %r: f32):
  // CHECK-NEXT:   %q = arith.addf %l, %r : f32
  // CHECK-NEXT:   tt.reduce.return %q : f32
  // CHECK-NEXT: }) : (tensor<64x8xf32>) -> tensor<64xf32>
  // CHECK:      %v, %k = "tt.reduce"(%x, %i) <{axis = 0 : i32}> ({
  // CHECK:        tt.reduce.return %mx, %ki : f32, i32
  // CHECK-NEXT: }) : (tensor<64x8xf32>, tensor<64x8xi32>) -> (tensor<8xf32>, tensor<8xi32>)
  %s = "tt.reduce"(%x) <{axis = 1 : i32}> ({
  ^bb0(%l: f32, %r: f32):
    %q = arith.addf %l, %r : f32
    tt.reduce.return %q : f32
  }) : (tensor<64x8xf32>) -> tensor<64xf32>
  %v, %k = "tt.reduce"(%x, %i) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %ai: i32, %b: f32, %bi: i32):
    %gt = arith.cmpf ogt, %a, %b : f32
    %mx = arith.select %gt, %a, %b : f32
    %ki = arith.select %gt, %ai, %bi : i32
    tt.reduce.return %mx, %ki : f32, i32
  }) : (tensor<64x8xf32>, tensor<64x8xi32>) -> (tensor<8xf32>, tensor<8xi32>)
  tt.return
}

// tt.scan prints in the generic form too: an inclusive scan along axis 1, and
// a two-operand running max with its positions, scanned from the end.
// CHECK-LABEL: tt.func public @scan
tt.func public @scan(%x: tensor<4x64xf32>, %i: tensor<4x64xi64>) {
  // CHECK:      %s = "tt.scan"(%x) <{axis = 1 : i32, reverse = false}> ({
  // CHECK-NEXT: ^bb0(%l: f32, %r: f32):
  // CHECK-NEXT:   %q = arith.addf %l, %r : f32
  // CHECK-NEXT:   tt.scan.return %q : f32
  // CHECK-NEXT: }) : (tensor<4x64xf32>) -> tensor<4x64xf32>
  // CHECK:      %v, %k = "tt.scan"(%x, %i) <{axis = 1 : i32, reverse = true}> ({
  // CHECK:        tt.scan.return %mx, %ki : f32, i64
  // CHECK-NEXT: }) : (tensor<4x64xf32>, tensor<4x64xi64>) -> (tensor<4x64xf32>, tensor<4x64xi64>)
  %s = "tt.scan"(%x) <{axis = 1 : i32, reverse = false}> ({
  ^bb0(%l: f32, %r: f32):
    %q = arith.addf %l, %r : f32
    tt.scan.return %q : f32
  }) : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %v, %k = "tt.scan"(%x, %i) <{axis = 1 : i32, reverse = true}> ({
  ^bb0(%a: f32, %ai: i64, %b: f32, %bi: i64):
    %ge = arith.cmpf oge, %b, %a : f32
    %mx = arith.select %ge, %b, %a : f32
    %ki = arith.select %ge, %bi, %ai : i64
    tt.scan.return %mx, %ki : f32, i64
  }) : (tensor<4x64xf32>, tensor<4x64xi64>) -> (tensor<4x64xf32>, tensor<4x64xi64>)
  tt.return
}

// CHECK-LABEL: tt.func public @compute
tt.func public @compute(%a: tensor<16x32xf16>, %b: tensor<32x64xf16>, %c: tensor<16x64xf32>, %x: tensor<128xf32>, %m: tensor<128xi1>) {
  // CHECK:      %d = tt.dot %a, %b, %c : tensor<16x32xf16> * tensor<32x64xf16> -> tensor<16x64xf32>
  // CHECK-NEXT: %d2 = tt.dot %a, %b, %c, inputPrecision = "ieee" : tensor<16x32xf16> * tensor<32x64xf16> -> tensor<16x64xf32>
  // CHECK-NEXT: %bc = tt.bitcast %x : tensor<128xf32> -> tensor<128xi32>
  // CHECK-NEXT: %h = tt.fp_to_fp %x : tensor<128xf32> -> tensor<128xf16>
  // CHECK-NEXT: %hz = tt.fp_to_fp %x, rounding = "rtz" : tensor<128xf32> -> tensor<128xbf16>
  // CHECK-NEXT: %w = tt.fp_to_fp %h : tensor<128xf16> -> tensor<128xf32>
  // CHECK-NEXT: %t = tt.extern_elementwise %x {libname = "libdevice", symbol = "tanh"} : (tensor<128xf32>) -> tensor<128xf32>
  // CHECK-NEXT: %pw = tt.extern_elementwise %x, %x {libname = "libdevice", symbol = "pow"} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  // CHECK-NEXT: tt.assert %m, "in bounds" : tensor<128xi1>
  // CHECK-NEXT: tt.print " x: " : %x, %t : tensor<128xf32>, tensor<128xf32>
  // CHECK-NEXT: tt.print "here"
  // CHECK-NEXT: tt.debug_barrier
  // CHECK-NEXT: tt.grid_dependency_wait
  // CHECK-NEXT: tt.grid_dependency_launch_dependents
  %d = tt.dot %a, %b, %c : tensor<16x32xf16> * tensor<32x64xf16> -> tensor<16x64xf32>
  %d2 = tt.dot %a, %b, %c, inputPrecision = "ieee" : tensor<16x32xf16> * tensor<32x64xf16> -> tensor<16x64xf32>
  %bc = tt.bitcast %x : tensor<128xf32> -> tensor<128xi32>
  %h = tt.fp_to_fp %x : tensor<128xf32> -> tensor<128xf16>
  %hz = tt.fp_to_fp %x, rounding = "rtz" : tensor<128xf32> -> tensor<128xbf16>
  %w = tt.fp_to_fp %h : tensor<128xf16> -> tensor<128xf32>
  %t = tt.extern_elementwise %x {libname = "libdevice", symbol = "tanh"} : (tensor<128xf32>) -> tensor<128xf32>
  %pw = tt.extern_elementwise %x, %x {libname = "libdevice", symbol = "pow"} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  tt.assert %m, "in bounds" : tensor<128xi1>
  tt.print " x: " : %x, %t : tensor<128xf32>, tensor<128xf32>
  tt.print "here"
  tt.debug_barrier
  tt.grid_dependency_wait
  tt.grid_dependency_launch_dependents
  tt.return
}
