// RUN: fx-opt %s -p aten-bucket-collectives --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'aten-bucket-collectives{bucket-mb=1}' --split-input-file | filecheck %s --check-prefix=CAP
// RUN: fx-opt %s -p '%sharded_pipeline' --split-input-file -t python | filecheck %s --check-prefix=WRAP
// RUN: not fx-opt %s -p 'aten-bucket-collectives{bucket-mb=0}' 2>&1 | filecheck %s --check-prefix=OPTION

// OPTION: aten-bucket-collectives: option 'bucket-mb' must be an integer >= 1; got 0

// Traced sharding's forward: each parameter shard cast to bf16 and
// all-gathered on its own. Bucketed: the casts write one flat buffer (the
// copy-in), one all-gather, and each parameter is a view of its columns of
// the [ranks, total] result (the copy-out, an index map). The slice of %a3
// reads the rows of rank 0: elements 10..25 of the result.

// CHECK-LABEL: func.func @forward
// CHECK:         %c1 = aten._to_copy.default(%w1, dtype = bf16)
// CHECK-NEXT:    %[[V1:.*]] = aten.view.default(%c1, size = [8])
// CHECK-NEXT:    %c2 = aten._to_copy.default(%w2, dtype = bf16)
// CHECK-NEXT:    %[[V2:.*]] = aten.view.default(%c2, size = [2])
// CHECK-NEXT:    %c3 = aten._to_copy.default(%w3, dtype = bf16)
// CHECK-NEXT:    %[[V3:.*]] = aten.view.default(%c3, size = [16])
// CHECK-NEXT:    %[[CAT:.*]] = aten.cat.default([%[[V1]], %[[V2]], %[[V3]]]) : !aten.tensor<[26], bf16>
// CHECK-NEXT:    %bucket_gather = _c10d_functional.all_gather_into_tensor.default(%[[CAT]], group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[52], bf16>
// CHECK-NEXT:    %bucket_gather_wait = _c10d_functional.wait_tensor.default(%bucket_gather)
// CHECK-NEXT:    %[[GRID:.*]] = aten.view.default(%bucket_gather_wait, size = [2, 26])
// CHECK-NEXT:    %[[S1:.*]] = aten.slice.Tensor(%[[GRID]], dim = 1, start = 0, end = 8) : !aten.tensor<[2, 8], bf16, strides [26, 1]>
// CHECK-NEXT:    %a1 = aten.view.default(%[[S1]], size = [4, 4])
// CHECK-NEXT:    %[[S2:.*]] = aten.slice.Tensor(%[[GRID]], dim = 1, start = 8, end = 10)
// CHECK-NEXT:    %a2 = aten.view.default(%[[S2]], size = [4])
// CHECK-NEXT:    %[[S3:.*]] = aten.slice.Tensor(%[[GRID]], dim = 1, start = 10, end = 26)
// CHECK-NEXT:    %a3 = aten.view.default(%[[S3]], size = [8, 4])
// CHECK-NEXT:    %t1 = aten.t.default(%a1)
// CHECK-NOT:     _c10d_functional
// CHECK:         func.return %h3

// Through the whole pipeline: one kernel casts the three shards into the
// flat buffer, one all-gather, and %s3 is the result's storage at offset 10.
// WRAP-LABEL: def call(args):
// WRAP:         buf0 = empty_cpu((26,), (1,), torch.bfloat16)
// WRAP-NEXT:    stream = raw_stream("cpu")
// WRAP-NEXT:    coil_pointwise_0_launch.run(1, 1, 1, stream, w1, w2, w3, buf0)
// WRAP:         bucket_gather = torch.ops._c10d_functional.all_gather_into_tensor.default(buf0, 2, '0')
// WRAP:         s3 = reinterpret_tensor(bucket_gather_wait, (4, 4), (4, 1), 10)
func.func @forward(%w1: !aten.tensor<[2, 4], f32>, %w2: !aten.tensor<[2], f32>, %w3: !aten.tensor<[4, 4], f32>, %x: !aten.tensor<[3, 4], bf16>) -> (!aten.tensor<[3, 4], bf16>) {
  %c1 = aten._to_copy.default(%w1, dtype = bf16) : !aten.tensor<[2, 4], bf16>
  %g1 = _c10d_functional.all_gather_into_tensor.default(%c1, group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[4, 4], bf16>
  %a1 = _c10d_functional.wait_tensor.default(%g1) : !aten.tensor<[4, 4], bf16>
  %t1 = aten.t.default(%a1) : !aten.tensor<[4, 4], bf16>
  %h1 = aten.mm.default(%x, %t1) : !aten.tensor<[3, 4], bf16>
  %c2 = aten._to_copy.default(%w2, dtype = bf16) : !aten.tensor<[2], bf16>
  %g2 = _c10d_functional.all_gather_into_tensor.default(%c2, group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[4], bf16>
  %a2 = _c10d_functional.wait_tensor.default(%g2) : !aten.tensor<[4], bf16>
  %h2 = aten.mul.Tensor(%h1, %a2) : !aten.tensor<[3, 4], bf16>
  %c3 = aten._to_copy.default(%w3, dtype = bf16) : !aten.tensor<[4, 4], bf16>
  %g3 = _c10d_functional.all_gather_into_tensor.default(%c3, group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[8, 4], bf16>
  %a3 = _c10d_functional.wait_tensor.default(%g3) : !aten.tensor<[8, 4], bf16>
  %s3 = aten.slice.Tensor(%a3, start = 0, end = 4) : !aten.tensor<[4, 4], bf16>
  %h3 = aten.mm.default(%h2, %s3) : !aten.tensor<[3, 4], bf16>
  func.return %h3 : !aten.tensor<[3, 4], bf16>
}

// -----

// A backward's reduce-scatters: rank r's chunk of each gradient side by side
// ([2, 8] and [2, 2] views, concatenated on dim 1), one reduce-scatter, each
// gradient shard a slice of the result. The permuted gradient is read
// through its view (value semantics: the copy-in kernel transposes).
// CHECK-LABEL: func.func @backward
// CHECK:         %p = aten.permute.default(%d1, dims = [1, 0])
// CHECK-NEXT:    %[[A:.*]] = aten.view.default(%p, size = [2, 8])
// CHECK-NEXT:    %[[B:.*]] = aten.view.default(%d2, size = [2, 2])
// CHECK-NEXT:    %[[CAT:.*]] = aten.cat.default([%[[A]], %[[B]]], dim = 1) : !aten.tensor<[2, 10], f32>
// CHECK-NEXT:    %[[FLAT:.*]] = aten.view.default(%[[CAT]], size = [20])
// CHECK-NEXT:    %bucket_scatter = _c10d_functional.reduce_scatter_tensor.default(%[[FLAT]], reduce_op = "avg", group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[10], f32>
// CHECK-NEXT:    %bucket_scatter_wait = _c10d_functional.wait_tensor.default(%bucket_scatter)
// CHECK-NEXT:    %[[S1:.*]] = aten.slice.Tensor(%bucket_scatter_wait, start = 0, end = 8)
// CHECK-NEXT:    %w1 = aten.view.default(%[[S1]], size = [2, 4])
// CHECK-NEXT:    %[[S2:.*]] = aten.slice.Tensor(%bucket_scatter_wait, start = 8, end = 10)
// CHECK-NEXT:    %w2 = aten.view.default(%[[S2]], size = [2])
// CHECK-NOT:     _c10d_functional
// CHECK:         func.return %w1, %w2
// WRAP-LABEL: def call(args):
// WRAP:         coil_pointwise_0_launch.run(1, 1, 1, stream, d1, d2, buf0)
// WRAP:         bucket_scatter = torch.ops._c10d_functional.reduce_scatter_tensor.default(view0, 'avg', 2, '0')
// WRAP:         w1 = reinterpret_tensor(bucket_scatter_wait, (2, 4), (4, 1), 0)
// WRAP-NEXT:    w2 = reinterpret_tensor(bucket_scatter_wait, (2,), (1,), 8)
func.func @backward(%d1: !aten.tensor<[4, 4], f32>, %d2: !aten.tensor<[4], f32>, %x: !aten.tensor<[4, 4], f32>) -> (!aten.tensor<[2, 4], f32>, !aten.tensor<[2], f32>) {
  %p = aten.permute.default(%d1, dims = [1, 0]) : !aten.tensor<[4, 4], f32>
  %r1 = _c10d_functional.reduce_scatter_tensor.default(%p, reduce_op = "avg", group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[2, 4], f32>
  %w1 = _c10d_functional.wait_tensor.default(%r1) : !aten.tensor<[2, 4], f32>
  %m = aten.mm.default(%x, %x) : !aten.tensor<[4, 4], f32>
  %r2 = _c10d_functional.reduce_scatter_tensor.default(%d2, reduce_op = "avg", group_size = 2, group_name = "0") ranks [0, 1] : !aten.tensor<[2], f32>
  %w2 = _c10d_functional.wait_tensor.default(%r2) : !aten.tensor<[2], f32>
  func.return %w1, %w2 : !aten.tensor<[2, 4], f32>, !aten.tensor<[2], f32>
}

// -----

// bucket-mb: a bucket's result stops at the cap (1 MB: two 512 KB results,
// the third starts a bucket of its own and stays as it was). The default
// (64 MB) takes all three.
// CAP-LABEL: func.func @cap
// CAP:         %[[CAT:.*]] = aten.cat.default([%{{.*}}, %{{.*}}]) : !aten.tensor<[131072], f32>
// CAP-NEXT:    %bucket_gather = _c10d_functional.all_gather_into_tensor.default(%[[CAT]], group_size = 2, group_name = "0") : !aten.tensor<[262144], f32>
// CAP:         %g3 = _c10d_functional.all_gather_into_tensor.default(%w3
// CHECK-LABEL: func.func @cap
// CHECK:         aten.cat.default([%{{.*}}, %{{.*}}, %{{.*}}]) : !aten.tensor<[196608], f32>
// CHECK-NOT:     %g3 = _c10d_functional
func.func @cap(%w1: !aten.tensor<[65536], f32>, %w2: !aten.tensor<[65536], f32>, %w3: !aten.tensor<[65536], f32>) -> (!aten.tensor<[131072], f32>, !aten.tensor<[131072], f32>, !aten.tensor<[131072], f32>) {
  %g1 = _c10d_functional.all_gather_into_tensor.default(%w1, group_size = 2, group_name = "0") : !aten.tensor<[131072], f32>
  %a1 = _c10d_functional.wait_tensor.default(%g1) : !aten.tensor<[131072], f32>
  %g2 = _c10d_functional.all_gather_into_tensor.default(%w2, group_size = 2, group_name = "0") : !aten.tensor<[131072], f32>
  %a2 = _c10d_functional.wait_tensor.default(%g2) : !aten.tensor<[131072], f32>
  %g3 = _c10d_functional.all_gather_into_tensor.default(%w3, group_size = 2, group_name = "0") : !aten.tensor<[131072], f32>
  %a3 = _c10d_functional.wait_tensor.default(%g3) : !aten.tensor<[131072], f32>
  func.return %a1, %a2, %a3 : !aten.tensor<[131072], f32>, !aten.tensor<[131072], f32>, !aten.tensor<[131072], f32>
}

// -----

// What is never bucketed together: an all-gather whose input needs another's
// result (%x reads %a1: one collective would wait for itself), and
// all-gathers of different dtypes. Nothing changes.
// CHECK-LABEL: func.func @dependent
// CHECK-NEXT:    %g1 = _c10d_functional.all_gather_into_tensor.default(%w1
// CHECK-NEXT:    %a1 = _c10d_functional.wait_tensor.default(%g1)
// CHECK:         %g2 = _c10d_functional.all_gather_into_tensor.default(%x
// CHECK:         %g3 = _c10d_functional.all_gather_into_tensor.default(%w3
// CHECK-NOT:     bucket
func.func @dependent(%w1: !aten.tensor<[2, 4], f32>, %w2: !aten.tensor<[2, 4], f32>, %w3: !aten.tensor<[2, 4], f16>) -> (!aten.tensor<[4, 4], f32>, !aten.tensor<[4, 4], f32>, !aten.tensor<[4, 4], f16>) {
  %g1 = _c10d_functional.all_gather_into_tensor.default(%w1, group_size = 2, group_name = "0") : !aten.tensor<[4, 4], f32>
  %a1 = _c10d_functional.wait_tensor.default(%g1) : !aten.tensor<[4, 4], f32>
  %s = aten.slice.Tensor(%a1, start = 0, end = 2) : !aten.tensor<[2, 4], f32>
  %x = aten.add.Tensor(%w2, %s) : !aten.tensor<[2, 4], f32>
  %g2 = _c10d_functional.all_gather_into_tensor.default(%x, group_size = 2, group_name = "0") : !aten.tensor<[4, 4], f32>
  %a2 = _c10d_functional.wait_tensor.default(%g2) : !aten.tensor<[4, 4], f32>
  %g3 = _c10d_functional.all_gather_into_tensor.default(%w3, group_size = 2, group_name = "0") : !aten.tensor<[4, 4], f16>
  %a3 = _c10d_functional.wait_tensor.default(%g3) : !aten.tensor<[4, 4], f16>
  func.return %a1, %a2, %a3 : !aten.tensor<[4, 4], f32>, !aten.tensor<[4, 4], f32>, !aten.tensor<[4, 4], f16>
}

// -----

// A backward that gathers again (recompute) between its reduce-scatters:
// %d2 needs %g2, issued after %r1, and still joins %r1's bucket (it needs no
// reduce-scatter); the gathers make one bucket too, which the scatter
// bucket follows. One all-gather, one reduce-scatter.
// CHECK-LABEL: func.func @scatter_past_gather
// CHECK:         %bucket_gather = _c10d_functional.all_gather_into_tensor.default({{.*}}) : !aten.tensor<[32], f32>
// CHECK:         %d1 = aten.mm.default(%x, %a1)
// CHECK:         %d2 = aten.mm.default(%d1, %a2)
// CHECK:         %bucket_scatter = _c10d_functional.reduce_scatter_tensor.default({{.*}}) : !aten.tensor<[16], f32>
// CHECK-NOT:     _c10d_functional.all_gather
// CHECK-NOT:     _c10d_functional.reduce_scatter
// CHECK:         func.return %v1, %v2
func.func @scatter_past_gather(%w1: !aten.tensor<[2, 4], f32>, %w2: !aten.tensor<[2, 4], f32>, %x: !aten.tensor<[4, 4], f32>) -> (!aten.tensor<[2, 4], f32>, !aten.tensor<[2, 4], f32>) {
  %g1 = _c10d_functional.all_gather_into_tensor.default(%w1, group_size = 2, group_name = "0") : !aten.tensor<[4, 4], f32>
  %a1 = _c10d_functional.wait_tensor.default(%g1) : !aten.tensor<[4, 4], f32>
  %d1 = aten.mm.default(%x, %a1) : !aten.tensor<[4, 4], f32>
  %r1 = _c10d_functional.reduce_scatter_tensor.default(%d1, reduce_op = "avg", group_size = 2, group_name = "0") : !aten.tensor<[2, 4], f32>
  %v1 = _c10d_functional.wait_tensor.default(%r1) : !aten.tensor<[2, 4], f32>
  %g2 = _c10d_functional.all_gather_into_tensor.default(%w2, group_size = 2, group_name = "0") : !aten.tensor<[4, 4], f32>
  %a2 = _c10d_functional.wait_tensor.default(%g2) : !aten.tensor<[4, 4], f32>
  %d2 = aten.mm.default(%d1, %a2) : !aten.tensor<[4, 4], f32>
  %r2 = _c10d_functional.reduce_scatter_tensor.default(%d2, reduce_op = "avg", group_size = 2, group_name = "0") : !aten.tensor<[2, 4], f32>
  %v2 = _c10d_functional.wait_tensor.default(%r2) : !aten.tensor<[2, 4], f32>
  func.return %v1, %v2 : !aten.tensor<[2, 4], f32>, !aten.tensor<[2, 4], f32>
}


// -----

// A cycle through another bucket: %g2's input needs %r1, so once %g2 joins
// %g1's bucket, that bucket needs %r1's; %r2 needs %g1's bucket and would
// make the scatter bucket wait for itself. %r2 stays alone.
// CHECK-LABEL: func.func @cycle
// CHECK:         %r1 = _c10d_functional.reduce_scatter_tensor.default(%y
// CHECK:         %bucket_gather = _c10d_functional.all_gather_into_tensor.default
// CHECK:         %r2 = _c10d_functional.reduce_scatter_tensor.default(%d
func.func @cycle(%w1: !aten.tensor<[2, 4], f32>, %w2: !aten.tensor<[2, 4], f32>, %y: !aten.tensor<[4, 4], f32>, %x: !aten.tensor<[4, 4], f32>) -> (!aten.tensor<[4, 4], f32>, !aten.tensor<[2, 4], f32>) {
  %g1 = _c10d_functional.all_gather_into_tensor.default(%w1, group_size = 2, group_name = "0") : !aten.tensor<[4, 4], f32>
  %a1 = _c10d_functional.wait_tensor.default(%g1) : !aten.tensor<[4, 4], f32>
  %r1 = _c10d_functional.reduce_scatter_tensor.default(%y, reduce_op = "avg", group_size = 2, group_name = "0") : !aten.tensor<[2, 4], f32>
  %v1 = _c10d_functional.wait_tensor.default(%r1) : !aten.tensor<[2, 4], f32>
  %u = aten.add.Tensor(%w2, %v1) : !aten.tensor<[2, 4], f32>
  %g2 = _c10d_functional.all_gather_into_tensor.default(%u, group_size = 2, group_name = "0") : !aten.tensor<[4, 4], f32>
  %a2 = _c10d_functional.wait_tensor.default(%g2) : !aten.tensor<[4, 4], f32>
  %d = aten.mm.default(%x, %a1) : !aten.tensor<[4, 4], f32>
  %r2 = _c10d_functional.reduce_scatter_tensor.default(%d, reduce_op = "avg", group_size = 2, group_name = "0") : !aten.tensor<[2, 4], f32>
  %v2 = _c10d_functional.wait_tensor.default(%r2) : !aten.tensor<[2, 4], f32>
  func.return %a2, %v2 : !aten.tensor<[4, 4], f32>, !aten.tensor<[2, 4], f32>
}
