// RUN: fx-opt %s --parsing-diagnostics --verify-diagnostics --split-input-file | filecheck %s

// Every user-facing parse and verification error of the loop dialect.

// A load needs one index expression per dimension of its source.
func.func @a_load_needs_one_index_expression(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.load: 1 indices for a rank-2 tensor

// -----

// A pointwise nest binds no reduction index: r0 is unbound.
func.func @a_pointwise_nest_binds_no_reduction(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.load: index symbol r0 is not bound here

// -----

// Indirect symbols t<k> name the load's k-th indirect operand; there is one.
func.func @indirect_symbols_t_k_name_the(%x: !loop.tensor<[4, 8], f32>, %n: i64) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[t1, i0] indirect(%n : i64) : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.load: index symbol t1 is not bound here

// -----

// Loop.index outside a loop nest has no indices to name.
func.func @loop_index_outside_a_loop_nest() {
  %k = loop.index i0 : i64
  func.return
}
// CHECK: loop.index: index symbol i0 is not bound here

// -----

// Random offsets are index expressions too.
func.func @random_offsets_are_index_expressions_too() {
  %s = loop.seed : i64
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %u = loop.rand %s[i1] : f32
    loop.yield %u : f32
  }
  func.return
}
// CHECK: loop.rand: index symbol i1 is not bound here

// -----

// The result's shape is the nest's ranges.
func.func @the_result_s_shape_is_the(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.pointwise [4, 8] : !loop.tensor<[8, 4], f32> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.pointwise: result shape [8, 4] must equal its ranges [4, 8]

// -----

// The body yields one element of the result's element type.
func.func @the_body_yields_one_element_of(%x: !loop.tensor<[4], f32>) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f16> {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !loop.tensor<[4], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.pointwise: body yields f32, result holds f16

// -----

// One index argument per range.
func.func @one_index_argument_per_range(%x: !loop.tensor<[4], f32>) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0] : !loop.tensor<[4], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.pointwise: body takes 1 index argument(s), one per range, got 2

// -----

// Index arguments have type index.
func.func @index_arguments_have_type_index(%x: !loop.tensor<[4], f32>) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: i64):
    %a = loop.load %x[i0] : !loop.tensor<[4], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.pointwise: body arguments must be index, got i64

// -----

// A body ends with loop.yield.
func.func @a_body_ends_with_loop_yield(%x: !loop.tensor<[4], f32>) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !loop.tensor<[4], f32>
  }
  func.return
}
// CHECK: loop.pointwise: body must end with loop.yield

// -----

// A pointwise body yields one value.
func.func @a_pointwise_body_yields_one_value(%x: !loop.tensor<[4], f32>) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !loop.tensor<[4], f32>
    loop.yield %a, %a : f32, f32
  }
  func.return
}
// CHECK: loop.pointwise: body must yield 1 value(s), got 2

// -----

// A pointwise nest has one result.
func.func @a_pointwise_nest_has_one_result(%x: !loop.tensor<[4], f32>) {
  %y, %z = loop.pointwise [4] : !loop.tensor<[4], f32>, !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !loop.tensor<[4], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.pointwise: expected 1 result(s), got 2

// -----

// Missing result types.
func.func @missing_result_types(%x: !loop.tensor<[4], f32>) {
  loop.pointwise [4] : {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !loop.tensor<[4], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: type expected

// -----

// Results are tensors (or, with outs, buffers).
func.func @results_are_tensors_or_with_outs(%x: !loop.tensor<[4], f32>) {
  %y = loop.pointwise [4] : f32 {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !loop.tensor<[4], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.pointwise: f32 is not a tensor or buffer

// -----

// Unknown reduction kind.
func.func @unknown_reduction_kind(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.reduction mean [4] [8] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.reduction: unknown kind 'mean' (one of sum, prod, max, min, argmax, argmin, any, all, welford)

// -----

// Unknown scan kind.
func.func @unknown_scan_kind(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.scan mean dim 1 [4, 8] : !loop.tensor<[4, 8], f32> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.scan: unknown kind 'mean' (one of sum, prod, max, min, logsumexp, argmax, argmin)

// -----

// The scanned dimension is one of the ranges.
func.func @scan_dim_out_of_range(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.scan sum dim 2 [4, 8] : !loop.tensor<[4, 8], f32> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.scan: dim 2 is out of range for 2 range(s)

// -----

// A scan's result has the shape of its ranges.
func.func @scan_result_shape(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.scan sum dim 1 [4, 8] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.scan: result shape [4] must equal its ranges [4, 8]

// -----

// The result holds the yielded type or a narrower float, never a wider one.
func.func @scan_result_type(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.scan sum dim 1 [4, 8] : !loop.tensor<[4, 8], f64> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.scan sum: result holds f64, expected the yielded f32 (or a narrower float)

// -----

// A running argmax gives the values and their i64 positions.
func.func @scan_argmax_two_results(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.scan argmax dim 1 [4, 8] : !loop.tensor<[4, 8], f32> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.scan: expected 2 result(s), got 1

// -----

func.func @scan_argmax_positions(%x: !loop.tensor<[4, 8], f32>) {
  %y, %k = loop.scan argmax dim 1 [4, 8] : !loop.tensor<[4, 8], f32>, !loop.tensor<[4, 8], i32> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.scan argmax: the positions result holds i32, expected i64

// -----

// logsumexp scans floats.
func.func @scan_logsumexp_float(%x: !loop.tensor<[4, 8], i32>) {
  %y = loop.scan logsumexp dim 1 [4, 8] : !loop.tensor<[4, 8], i32> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !loop.tensor<[4, 8], i32>
    loop.yield %a : i32
  }
  func.return
}
// CHECK: loop.scan logsumexp: body must yield a float, not i32

// -----

// The head names the scanned dimension.
func.func @scan_needs_dim(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.scan sum [4, 8] : !loop.tensor<[4, 8], f32> {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: Expected 'dim'

// -----

// Unknown scatter mode.
func.func @unknown_scatter_mode(%x: !loop.tensor<[5], f32>, %ix: !loop.tensor<[3], i64>) {
  %y = loop.scatter mul [3] into(%x : !loop.tensor<[5], f32>) at [t0] : !loop.tensor<[5], f32> {
  ^bb0(%i0: index):
    %a = loop.load %ix[i0] : !loop.tensor<[3], i64>
    %c = arith.constant 1.0 : f32
    loop.yield %c, %a : f32, i64
  }
  func.return
}
// CHECK: loop.scatter: unknown mode 'mul' (one of store, add, max, min)

// -----

// A value-semantic scatter updates a copy of into(...).
func.func @scatter_needs_into(%x: !loop.tensor<[5], f32>, %ix: !loop.tensor<[3], i64>) {
  %y = loop.scatter add [3] at [t0] : !loop.tensor<[5], f32> {
  ^bb0(%i0: index):
    %a = loop.load %ix[i0] : !loop.tensor<[3], i64>
    %c = arith.constant 1.0 : f32
    loop.yield %c, %a : f32, i64
  }
  func.return
}
// CHECK: loop.scatter: a value-semantic scatter updates a copy of one tensor: into(%init : type)

// -----

// The result has the type of into(...).
func.func @scatter_result_type(%x: !loop.tensor<[5], f32>, %ix: !loop.tensor<[3], i64>) {
  %y = loop.scatter add [3] into(%x : !loop.tensor<[5], f32>) at [t0] : !loop.tensor<[6], f32> {
  ^bb0(%i0: index):
    %a = loop.load %ix[i0] : !loop.tensor<[3], i64>
    %c = arith.constant 1.0 : f32
    loop.yield %c, %a : f32, i64
  }
  func.return
}
// CHECK: loop.scatter: the result !loop.tensor<[6], f32> must have the type of into(...) !loop.tensor<[5], f32> (shape and element type)

// -----

// One index expression per dimension of the result.
func.func @scatter_index_count(%x: !loop.tensor<[5], f32>, %ix: !loop.tensor<[3], i64>) {
  %y = loop.scatter add [3] into(%x : !loop.tensor<[5], f32>) at [t0, 0] : !loop.tensor<[5], f32> {
  ^bb0(%i0: index):
    %a = loop.load %ix[i0] : !loop.tensor<[3], i64>
    %c = arith.constant 1.0 : f32
    loop.yield %c, %a : f32, i64
  }
  func.return
}
// CHECK: loop.scatter: 2 indices for a rank-1 result

// -----

// t1 names a second yielded index, which there is not.
func.func @scatter_unbound_indirect(%x: !loop.tensor<[5], f32>, %ix: !loop.tensor<[3], i64>) {
  %y = loop.scatter add [3] into(%x : !loop.tensor<[5], f32>) at [t1] : !loop.tensor<[5], f32> {
  ^bb0(%i0: index):
    %a = loop.load %ix[i0] : !loop.tensor<[3], i64>
    %c = arith.constant 1.0 : f32
    loop.yield %c, %a : f32, i64
  }
  func.return
}
// CHECK: loop.scatter: index symbol t1 is not bound here

// -----

// The yielded value has the result's element type.
func.func @scatter_value_type(%x: !loop.tensor<[5], f64>, %ix: !loop.tensor<[3], i64>) {
  %y = loop.scatter add [3] into(%x : !loop.tensor<[5], f64>) at [t0] : !loop.tensor<[5], f64> {
  ^bb0(%i0: index):
    %a = loop.load %ix[i0] : !loop.tensor<[3], i64>
    %c = arith.constant 1.0 : f32
    loop.yield %c, %a : f32, i64
  }
  func.return
}
// CHECK: loop.scatter: body yields f32, the result holds f64

// -----

// Indices are integers.
func.func @scatter_float_index(%x: !loop.tensor<[5], f32>, %ix: !loop.tensor<[3], i64>) {
  %y = loop.scatter add [3] into(%x : !loop.tensor<[5], f32>) at [t0] : !loop.tensor<[5], f32> {
  ^bb0(%i0: index):
    %a = loop.load %ix[i0] : !loop.tensor<[3], i64>
    %c = arith.constant 1.0 : f32
    loop.yield %c, %c : f32, f32
  }
  func.return
}
// CHECK: loop.scatter: index t0 must be an integer or index, not f32

// -----

// After bufferize a scatter updates its out in place: no into(...).
func.func @scatter_into_and_outs(%x: !loop.tensor<[5], f32>, %ix: !loop.tensor<[3], i64>, %o: !buffer.buffer<[5], f32>) {
  loop.scatter add [3] into(%x : !loop.tensor<[5], f32>) at [t0] outs(%o : !buffer.buffer<[5], f32>) {
  ^bb0(%i0: index):
    %a = loop.load %ix[i0] : !loop.tensor<[3], i64>
    %c = arith.constant 1.0 : f32
    loop.yield %c, %a : f32, i64
  }
  func.return
}
// CHECK: loop.scatter with outs(...) updates its out in place: drop into(...)

// -----

// Argmax/argmin give i64 positions.
func.func @argmax_argmin_give_i64_positions(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.reduction argmax [4] [8] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.reduction argmax: result holds f32, expected i64

// -----

// Welford has three results: mean, m2, count.
func.func @welford_has_three_results_mean_m2(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.reduction welford [4] [8] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.reduction welford: expected 3 results (mean, m2, count), got 1

// -----

// Welford's results hold the body's type.
func.func @welford_s_results_hold_the_body(%x: !loop.tensor<[4, 8], f32>) {
  %y:3 = loop.reduction welford [4] [8] : !loop.tensor<[4], f32>, !loop.tensor<[4], f32>, !loop.tensor<[4], i64> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.reduction welford: accumulates in f32 or f64 (its count must be exact)

// -----

func.func @welford_in_f16(%x: !loop.tensor<[4, 8], f16>) {
  %y:3 = loop.reduction welford [4] [8] : !loop.tensor<[4], f16>, !loop.tensor<[4], f16>, !loop.tensor<[4], f16> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[4, 8], f16>
    loop.yield %a : f16
  }
  func.return
}
// CHECK: loop.reduction welford: accumulates in f32 or f64 (its count must be exact)

// -----

func.func @load_outside_a_nest(%x: !loop.tensor<[4], f32>) {
  %a = loop.load %x[0] : !loop.tensor<[4], f32>
  func.return
}
// CHECK: loop.load reads elements inside a loop nest body only

// -----

func.func @outs_must_be_buffers(%x: !loop.tensor<[4], f32>) {
  loop.pointwise [4] outs(%x : !loop.tensor<[4], f32>) {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !loop.tensor<[4], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.pointwise: outs(...) are the buffers written in place, not !loop.tensor<[4], f32>

// -----

// Any/all give i1.
func.func @any_all_give_i1(%x: !loop.tensor<[4, 8], i1>) {
  %y = loop.reduction any [4] [8] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[4, 8], i1>
    loop.yield %a : i1
  }
  func.return
}
// CHECK: loop.reduction any: result holds f32, expected i1

// -----

// Any/all reduce i1 values.
func.func @any_all_reduce_i1_values(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.reduction any [4] [8] : !loop.tensor<[4], i1> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.reduction any: body must yield i1

// -----

// A reduction's result has the nest's ranges, without the reduced dims (no keepdim).
func.func @a_reduction_s_result_has_the(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.reduction sum [4] [8] : !loop.tensor<[4, 1], f32> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.reduction: result shape [4, 1] must equal its ranges [4]

// -----

// Sum/prod/max/min keep the body's type (casts go in the body).
func.func @sum_prod_max_min_keep_the(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.reduction sum [4] [8] : !loop.tensor<[4], f64> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.reduction sum: result holds f64, expected f32

// -----

// Member reductions of a group range over the group's ranges.
func.func @member_reductions_of_a_group_range(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.fused [4] [8] : !loop.tensor<[8], f32> {
    %s = loop.reduction sum [8] [4] : !loop.tensor<[8], f32> {
    ^bb0(%i0: index, %r0: index):
      %a = loop.load %x[r0, i0] : !loop.tensor<[4, 8], f32>
      loop.yield %a : f32
    }
    loop.yield %s : !loop.tensor<[8], f32>
  }
  func.return
}
// CHECK: loop.fused: member reductions must range over the group's ranges [4] [8], got [8] [4]

// -----

// Member pointwise nests of a group range over its ranges or ranges ++ reduction_ranges.
func.func @member_pointwise_nests_of_a_group(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.fused [4] [8] : !loop.tensor<[8], f32> {
    %s = loop.pointwise [8] : !loop.tensor<[8], f32> {
    ^bb0(%i0: index):
      %a = loop.load %x[0, i0] : !loop.tensor<[4, 8], f32>
      loop.yield %a : f32
    }
    loop.yield %s : !loop.tensor<[8], f32>
  }
  func.return
}
// CHECK: loop.fused: member pointwise ops must range over the group's ranges [4] (or ranges ++ reduction_ranges [4, 8]), got [8]

// -----

// Only loop nests are members of a group.
func.func @only_loop_nests_are_members_of(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.fused [4] [8] : !loop.tensor<[8, 4], f32> {
    %v = loop.view %x[i1, i0] : !loop.tensor<[4, 8], f32> -> !loop.tensor<[8, 4], f32>
    loop.yield %v : !loop.tensor<[8, 4], f32>
  }
  func.return
}
// CHECK: loop.fused: loop.view cannot be a member of a group

// -----

// A group's results are what it yields.
func.func @a_group_s_results_are_what(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.fused [4] [8] : !loop.tensor<[4], f64> {
    %s = loop.reduction sum [4] [8] : !loop.tensor<[4], f32> {
    ^bb0(%i0: index, %r0: index):
      %a = loop.load %x[i0, r0] : !loop.tensor<[4, 8], f32>
      loop.yield %a : f32
    }
    loop.yield %s : !loop.tensor<[4], f32>
  }
  func.return
}
// CHECK: loop.fused: yielded tensor #0 !loop.tensor<[4], f32> does not match result !loop.tensor<[4], f64> (shape and element type)

// -----

// A group has one result per yielded tensor.
func.func @a_group_has_one_result_per(%x: !loop.tensor<[4, 8], f32>) {
  %y, %z = loop.fused [4] [8] : !loop.tensor<[4], f32>, !loop.tensor<[4], f32> {
    %s = loop.reduction sum [4] [8] : !loop.tensor<[4], f32> {
    ^bb0(%i0: index, %r0: index):
      %a = loop.load %x[i0, r0] : !loop.tensor<[4, 8], f32>
      loop.yield %a : f32
    }
    loop.yield %s : !loop.tensor<[4], f32>
  }
  func.return
}
// CHECK: loop.fused: expected 1 result(s), got 2

// -----

// Members of a group are value-semantic even when the group writes outs.
func.func @members_of_a_group_are_value(%x: !loop.tensor<[4, 8], f32>, %b: !buffer.buffer<[4], f32>) {
  loop.fused [4] [8] {
    loop.reduction sum [4] [8] outs(%b : !buffer.buffer<[4], f32>) {
    ^bb0(%i0: index, %r0: index):
      %a = loop.load %x[i0, r0] : !loop.tensor<[4, 8], f32>
      loop.yield %a : f32
    }
    loop.yield
  }
  func.return
}
// CHECK: loop.fused: members are value-semantic

// -----

// A group's body has no index arguments.
func.func @a_group_s_body_has_no(%x: !loop.tensor<[4, 8], f32>) {
  loop.fused [4] [8] {
  ^bb0(%i0: index):
    loop.yield
  }
  func.return
}
// CHECK: loop.fused: the group body takes no arguments

// -----

// Results and outs together (generic form).
func.func @results_and_outs_together_generic_form(%x: !loop.tensor<[4], f32>, %b: !buffer.buffer<[4], f32>) {
  %y = "loop.pointwise"(%b) <{ranges = #coil.shape<[4]>}> ({
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !loop.tensor<[4], f32>
    loop.yield %a : f32
  }) : (!buffer.buffer<[4], f32>) -> !loop.tensor<[4], f32>
  func.return
}
// CHECK: loop.pointwise: either results or outs(...), not both

// -----

// Results and outs together (custom form).
func.func @results_and_outs_together_custom_form(%x: !loop.tensor<[4], f32>, %b: !buffer.buffer<[4], f32>) {
  %y = loop.pointwise [4] outs(%b : !buffer.buffer<[4], f32>) : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !loop.tensor<[4], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.pointwise with outs(...) writes its outs and has no results: drop ': types'

// -----

// Outs buffers have the nest's ranges as shape.
func.func @outs_buffers_have_the_nest_s(%x: !loop.tensor<[4], f32>, %b: !buffer.buffer<[5], f32>) {
  loop.pointwise [4] outs(%b : !buffer.buffer<[5], f32>) {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !loop.tensor<[4], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.pointwise: result shape [5] must equal its ranges [4]

// -----

// Loop.view: one index expression per source dimension.
func.func @loop_view_one_index_expression_per(%x: !loop.tensor<[4, 8], f32>) {
  %v = loop.view %x[i0] : !loop.tensor<[4, 8], f32> -> !loop.tensor<[32], f32>
  func.return
}
// CHECK: loop.view: 1 indices for a rank-2 source

// -----

// Loop.view keeps the element type.
func.func @loop_view_keeps_the_element_type(%x: !loop.tensor<[4, 8], f32>) {
  %v = loop.view %x[i1, i0] : !loop.tensor<[4, 8], f32> -> !loop.tensor<[8, 4], f16>
  func.return
}
// CHECK: loop.view: a view keeps the element type: source holds f32, result f16

// -----

// Loop.view's expressions are over the result's indices i0.. only.
func.func @loop_view_s_expressions_are_over(%x: !loop.tensor<[4, 8], f32>) {
  %v = loop.view %x[i1, i2] : !loop.tensor<[4, 8], f32> -> !loop.tensor<[8, 4], f32>
  func.return
}
// CHECK: loop.view: index symbol i2 is not bound here

// -----

// Loop.view gives a loop tensor.
func.func @loop_view_gives_a_loop_tensor(%x: !loop.tensor<[4, 8], f32>) {
  %v = loop.view %x[i1, i0] : !loop.tensor<[4, 8], f32> -> !buffer.buffer<[8, 4], f32>
  func.return
}
// CHECK: loop.view: the result is a !loop.tensor, not !buffer.buffer<[8, 4], f32>

// -----

// Loop.copy: value and destination have the same shape.
func.func @loop_copy_value_and_destination_have(%x: !loop.tensor<[4, 8], f32>, %d: !buffer.buffer<[8, 4], f32>) {
  loop.copy %x, %d : !loop.tensor<[4, 8], f32>, !buffer.buffer<[8, 4], f32>
  func.return
}
// CHECK: loop.copy: value shape [4, 8] differs from destination shape [8, 4]

// -----

// Loop.copy: value and destination have the same element type.
func.func @loop_copy_value_and_destination_have(%x: !loop.tensor<[4, 8], f32>, %d: !buffer.buffer<[4, 8], f16>) {
  loop.copy %x, %d : !loop.tensor<[4, 8], f32>, !buffer.buffer<[4, 8], f16>
  func.return
}
// CHECK: loop.copy: value element type f32 differs from destination element type f16

// -----

// Loop.load reads tensors and buffers.
func.func @loop_load_reads_tensors_and_buffers(%x: f32) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : f32
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.load reads a tensor or buffer, not f32

// -----

// Indirect(...) has one type per operand.
func.func @indirect_has_one_type_per_operand(%x: !loop.tensor<[4], f32>, %n: i64) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[t0] indirect(%n, %n : i64) : !loop.tensor<[4], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: indirect(...) needs one type per operand: 2 operand(s), 1 type(s)

// -----

// Indirect indices are integers.
func.func @indirect_indices_are_integers(%x: !loop.tensor<[4], f32>, %n: f32) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[t0] indirect(%n : f32) : !loop.tensor<[4], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.load: indirect indices are integers or index, not f32

// -----

// A mask is i1.
func.func @a_mask_is_i1(%x: !loop.tensor<[4], f32>, %m: i32) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] mask(%m) : !loop.tensor<[4], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: operand is used with type i1, but has been previously used or defined with type i32

// -----

// Loop tensors hold torch element types.
func.func @loop_tensors_hold_torch_element_types(%x: !loop.tensor<[4], index>) {
  func.return
}
// CHECK: index is not a torch element type

// -----

// Ranges are bracketed.
func.func @ranges_are_bracketed(%x: !loop.tensor<[4], f32>) {
  %y = loop.pointwise 4 : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[i0] : !loop.tensor<[4], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: '[' expected

// -----

// Load indices are bracketed.
func.func @load_indices_are_bracketed(%x: !loop.tensor<[4], f32>) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x i0 : !loop.tensor<[4], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: '[' expected

// -----

// Malformed index expression.
func.func @malformed_index_expression(%x: !loop.tensor<[4], f32>) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[i0 +] : !loop.tensor<[4], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: expected a symbolic integer expression (int, symbol, '(' or '-')

// -----

// '/' is not an index operator (use floordiv).
func.func @is_not_an_index_operator_use(%x: !loop.tensor<[4], f32>) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = loop.load %x[i0 / 2] : !loop.tensor<[4], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: ']' expected

// -----

// A reduction names its kind.
func.func @a_reduction_names_its_kind(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.reduction [4] [8] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.reduction: expected a reduction kind (sum, prod, max, min, argmax, argmin, any, all, welford)

// -----

// A reduction has reduction ranges.
func.func @a_reduction_has_reduction_ranges(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.reduction sum [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[4, 8], f32>
    loop.yield %a : f32
  }
  func.return
}
// CHECK: '[' expected

// -----

// Loop.rand gives a float.
func.func @loop_rand_gives_a_float() {
  %s = loop.seed : i64
  %y = loop.pointwise [4] : !loop.tensor<[4], i64> {
  ^bb0(%i0: index):
    %u = loop.rand %s[i0] : i64
    loop.yield %u : i64
  }
  func.return
}
// CHECK: loop.rand: result must be a float type, not i64

// -----

// Loop.seed gives i64.
func.func @loop_seed_gives_i64() {
  %s = loop.seed : i32
  func.return
}
// CHECK: loop.seed: result must be i64, not i32

// -----

// Loop.index gives an integer or index.
func.func @loop_index_gives_an_integer_or() {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %u = loop.index i0 : f32
    loop.yield %u : f32
  }
  func.return
}
// CHECK: loop.index: result must be an integer or index, not f32

// -----

// A load gives its source's element type.
func.func @a_load_gives_its_source_s(%x: !loop.tensor<[4], f32>) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    %a = "loop.load"(%x) <{index = #coil.shape<[i0]>, operandSegmentSizes = array<i32: 1, 0, 0>}> : (!loop.tensor<[4], f32>) -> f16
    loop.yield %a : f16
  }
  func.return
}
// CHECK: loop.load: result must be the element type f32, got f16

// -----

// An empty yield in a pointwise body.
func.func @an_empty_yield_in_a_pointwise(%x: !loop.tensor<[4], f32>) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index):
    loop.yield
  }
  func.return
}
// CHECK: loop.pointwise: body must yield 1 value(s), got 0

// -----

// A group yields tensors; a scalar op is not a member.
func.func @a_group_yields_tensors_a_scalar(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.fused [4] [8] : !loop.tensor<[4], f32> {
    %c = arith.constant 1.0 : f32
    loop.yield %c : f32
  }
  func.return
}
// CHECK: loop.fused: arith.constant cannot be a member of a group

// -----

// A nest needs a body block.
func.func @a_nest_needs_a_body_block(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.pointwise [4] : !loop.tensor<[4], f32> {
  }
  func.return
}
// CHECK: Region 'body' at position 0 expected a single block, but got 0 blocks

// -----

// Malformed tensor type.
func.func @malformed_tensor_type(%x: !loop.tensor<[4, 8], f32>) {
  %v = loop.view %x[i1, i0] : !loop.tensor<[4, 8], f32> -> !loop.tensor<[8, 4] f32>
  func.return
}
// CHECK: Expected ','

// -----

// Unclosed index list.
func.func @unclosed_index_list(%x: !loop.tensor<[4, 8], f32>) {
  %v = loop.view %x[i1, i0 : !loop.tensor<[4, 8], f32> -> !loop.tensor<[8, 4], f32>
  func.return
}
// CHECK: ']' expected

// -----

// Tensor sizes are bracketed.
func.func @tensor_sizes_are_bracketed(%x: !loop.tensor<4, f32>) {
  func.return
}
// CHECK: '[' expected

// -----

// Division by zero in an index expression.
func.func @division_by_zero_in_an_index(%x: !loop.tensor<[4, 8], f32>) {
  %v = loop.view %x[i1 floordiv 0, i0] : !loop.tensor<[4, 8], f32> -> !loop.tensor<[8, 4], f32>
  func.return
}
// CHECK: division by zero in a symbolic expression

// -----

// Loop.copy names both types.
func.func @loop_copy_names_both_types(%x: !loop.tensor<[4, 8], f32>) {
  loop.copy %x, %x : !loop.tensor<[4, 8], f32>
  func.return
}
// CHECK: Expected ','

// -----

// Loop.copy copies tensors.
func.func @loop_copy_copies_tensors(%x: !loop.tensor<[4, 8], f32>, %y: f32) {
  loop.copy %y, %x : f32, !loop.tensor<[4, 8], f32>
  func.return
}
// CHECK: loop.copy: f32 is not a tensor or buffer

// -----

// A reduction over one reduction range binds r0 only.
func.func @a_reduction_over_one_reduction_range(%x: !loop.tensor<[4, 8], f32>) {
  %y = loop.reduction sum [4] [8] : !loop.tensor<[4], f32> {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[i0, r0] : !loop.tensor<[4, 8], f32>
    %k = loop.index i1 : i64
    loop.yield %a : f32
  }
  func.return
}
// CHECK: loop.index: index symbol i1 is not bound here
