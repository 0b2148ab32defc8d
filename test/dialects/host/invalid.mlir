// RUN: fx-opt %s --parsing-diagnostics --verify-diagnostics --split-input-file | filecheck %s

// Every user-facing parse and verification error of the host dialect.

host.func @empty_strided_needs_a_buffer() {
  %b = host.empty_strided : !aten.tensor<[4], f32>
  host.return
}
// CHECK: host.empty_strided: the result must be a !buffer.buffer, not !aten.tensor<[4], f32>

// -----

host.func @reinterpret_source(%x: !aten.tensor<[4], f32>) {
  %b = host.reinterpret %x : !aten.tensor<[4], f32> -> !buffer.buffer<[4], f32>
  host.return
}
// CHECK: host.reinterpret: the source must be a !buffer.buffer, not !aten.tensor<[4], f32>

// -----

host.func @reinterpret_result(%x: !buffer.buffer<[4], f32>) {
  %b = host.reinterpret %x : !buffer.buffer<[4], f32> -> !aten.tensor<[4], f32>
  host.return
}
// CHECK: host.reinterpret: the result must be a !buffer.buffer, not !aten.tensor<[4], f32>

// -----

host.func @reinterpret_element_type(%x: !buffer.buffer<[4], f32>) {
  %b = host.reinterpret %x : !buffer.buffer<[4], f32> -> !buffer.buffer<[4], i32>
  host.return
}
// CHECK: host.reinterpret: the storage keeps its element type and device (!buffer.buffer<[4], f32> -> !buffer.buffer<[4], i32>)

// -----

host.func @reinterpret_device(%x: !buffer.buffer<[4], f32>) {
  %b = host.reinterpret %x : !buffer.buffer<[4], f32> -> !buffer.buffer<[4], f32, device "cuda:0">
  host.return
}
// CHECK: host.reinterpret: the storage keeps its element type and device (!buffer.buffer<[4], f32> -> !buffer.buffer<[4], f32, device "cuda:0">)

// -----

host.func @free_needs_a_buffer(%x: !aten.tensor<[4], f32>) {
  host.free %x : !aten.tensor<[4], f32>
  host.return
}
// CHECK: host.free: the operand must be a !buffer.buffer, not !aten.tensor<[4], f32>

// -----

host.func @launch_grid_rank(%x: !buffer.buffer<[4], f32>) {
  host.launch @k grid [1, 1] (%x : !buffer.buffer<[4], f32>)
  host.return
}
// CHECK: host.launch: the grid has three extents (x, y, z), got 2

// -----

host.func @launch_argument_types(%x: !buffer.buffer<[4], f32>, %n: index) {
  host.launch @k grid [1, 1, 1] (%x, %n : !buffer.buffer<[4], f32>, index)
  host.return
}
// CHECK: host.launch: argument #1 must be a !buffer.buffer, not index

// -----

host.func @launch_needs_grid(%x: !buffer.buffer<[4], f32>) {
  host.launch @k (%x : !buffer.buffer<[4], f32>)
  host.return
}
// CHECK: host.launch: expected 'grid [x, y, z]' after the kernel name

// -----

host.func @launch_one_type_per_argument(%x: !buffer.buffer<[4], f32>) {
  host.launch @k grid [1, 1, 1] (%x, %x : !buffer.buffer<[4], f32>)
  host.return
}
// CHECK: host.launch: 2 argument(s) but 1 type(s)

// -----

host.func @launch_config_is_a_dictionary(%x: !buffer.buffer<[4], f32>) {
  host.launch @k grid [1, 1, 1] (%x : !buffer.buffer<[4], f32>) [4, 1]
  host.return
}
// CHECK: host.launch: the launch config is a dictionary {num_warps = ...}

// -----

host.func @extern_ends_with_host_yield(%x: !buffer.buffer<[4], f32>) {
  %r = host.extern "aten.neg.default" (%x) : (!buffer.buffer<[4], f32>) -> (!buffer.buffer<[4], f32>) {
  ^bb0(%a: !aten.tensor<[4], f32>):
    %n = aten.neg.default(%a) : !aten.tensor<[4], f32>
    buffer.yield %n : !aten.tensor<[4], f32>
  }
  host.return
}
// CHECK: host.extern: the region must end with host.yield

// -----

host.func @extern_result_matches(%x: !buffer.buffer<[4], f32>) {
  %r = host.extern "aten.neg.default" (%x) : (!buffer.buffer<[4], f32>) -> (!buffer.buffer<[8], f32>) {
  ^bb0(%a: !aten.tensor<[4], f32>):
    %n = aten.neg.default(%a) : !aten.tensor<[4], f32>
    host.yield %n : !aten.tensor<[4], f32>
  }
  host.return
}
// CHECK: host.extern: result !buffer.buffer<[8], f32> does not match what the call yields (!aten.tensor<[4], f32>)

// -----

host.func @extern_calls_what_it_names(%x: !buffer.buffer<[4], f32>) {
  %r = host.extern "aten.abs.default" (%x) : (!buffer.buffer<[4], f32>) -> (!buffer.buffer<[4], f32>) {
  ^bb0(%a: !aten.tensor<[4], f32>):
    %n = aten.neg.default(%a) : !aten.tensor<[4], f32>
    host.yield %n : !aten.tensor<[4], f32>
  }
  host.return
}
// CHECK: host.extern: the region calls "aten.neg.default", not "aten.abs.default"

// -----

host.func @autotune_needs_a_candidate(%x: !buffer.buffer<[4], f32>) {
  host.autotune "k" {
  }
  host.return
}
// CHECK: host.autotune: the region is one block without arguments, holding the candidate host.launch ops

// -----

host.func @autotune_holds_only_launches(%x: !buffer.buffer<[4], f32>) {
  host.autotune "k" {
    host.free %x : !buffer.buffer<[4], f32>
  }
  host.return
}
// CHECK: host.autotune: the region holds only host.launch candidates, found host.free

// -----

host.func @autotune_same_arguments(%x: !buffer.buffer<[4], f32>, %y: !buffer.buffer<[4], f32>) {
  host.autotune "k" {
    host.launch @k_c0 grid [1, 1, 1] (%x, %y : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>)
    host.launch @k_c1 grid [1, 1, 1] (%y, %x : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>)
  }
  host.return
}
// CHECK: host.autotune: every candidate launches the same arguments (@k_c1 differs from @k_c0)

// -----

host.func @autotune_distinct_kernels(%x: !buffer.buffer<[4], f32>) {
  host.autotune "k" {
    host.launch @k_c0 grid [1, 1, 1] (%x : !buffer.buffer<[4], f32>)
    host.launch @k_c0 grid [2, 1, 1] (%x : !buffer.buffer<[4], f32>)
  }
  host.return
}
// CHECK: host.autotune: kernel @k_c0 is a candidate twice

// -----

host.func @variants_need_a_launch_per_range(%x: !buffer.buffer<[s0], f32>) {
  host.variants "k" size <s0> bounds <[1024]> {
    host.launch @k_r1024 grid [1, 1, 1] (%x : !buffer.buffer<[s0], f32>)
  }
  host.return
}
// CHECK: host.variants: 1 bounds need 2 launches (one a bound, then the rest), found 1

// -----

host.func @variants_bounds_rise(%x: !buffer.buffer<[s0], f32>) {
  host.variants "k" size <s0> bounds <[4096, 1024]> {
    host.launch @k_r4096 grid [1, 1, 1] (%x : !buffer.buffer<[s0], f32>)
    host.launch @k_r1024 grid [1, 1, 1] (%x : !buffer.buffer<[s0], f32>)
    host.launch @k grid [1, 1, 1] (%x : !buffer.buffer<[s0], f32>)
  }
  host.return
}
// CHECK: host.variants: bounds rise strictly from 1 or more, got [4096, 1024]

// -----

host.func @variants_same_arguments(%x: !buffer.buffer<[s0], f32>, %y: !buffer.buffer<[s0], f32>) {
  host.variants "k" size <s0> bounds <[1024]> {
    host.launch @k_r1024 grid [1, 1, 1] (%x, %y : !buffer.buffer<[s0], f32>, !buffer.buffer<[s0], f32>)
    host.launch @k grid [1, 1, 1] (%y, %x : !buffer.buffer<[s0], f32>, !buffer.buffer<[s0], f32>)
  }
  host.return
}
// CHECK: host.variants: every variant launches the same arguments (@k differs from @k_r1024)

// -----

func.func @return_in_host_func() {
  host.return
}
// CHECK: 'host.return' expects parent op 'host.func'

// -----

host.func @semaphores_are_static_i32() {
  %sem = host.semaphores : !buffer.buffer<[s0], i32>
  host.return
}
// CHECK: host.semaphores: expected a static 1-D contiguous i32 buffer, got !buffer.buffer<[s0], i32>

// -----

host.func @semaphores_are_i32() {
  %sem = host.semaphores : !buffer.buffer<[4], f32>
  host.return
}
// CHECK: host.semaphores: expected a static 1-D contiguous i32 buffer, got !buffer.buffer<[4], f32>
