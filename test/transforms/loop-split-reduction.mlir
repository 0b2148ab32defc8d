// RUN: fx-opt %s -p loop-split-reduction --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'loop-split-reduction{split=4}' --split-input-file | filecheck %s --check-prefix=FORCED
// RUN: fx-opt %s -p 'loop-split-reduction{num-sms=1}' --split-input-file | filecheck %s --check-prefix=FEWSM

// A full sum of 2^26 elements (rranges [32768, 2048]): 4096 chunks (max-split)
// of eight rows; the 4096 partials are one persistent row, and a second
// reduction finishes.
// CHECK-LABEL: func.func @full
// CHECK:      %[[P1:.*]] = loop.reduction sum [4096] [8, 2048] : !loop.tensor<[4096], f32> {
// CHECK-NEXT: ^bb0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK-NEXT:   loop.load %x[8*i0 + r0, r1]
// CHECK:      %[[S:.*]] = loop.reduction sum [] [4096] : !loop.tensor<[], f32> {
// CHECK:        loop.load %[[P1]][r0]
// CHECK:      func.return %[[S]]
// FORCED-LABEL: func.func @full
// FORCED:      %[[P:.*]] = loop.reduction sum [4] [8192, 2048]
// FORCED:        loop.load %x[8192*i0 + r0, r1]
// FORCED:      loop.reduction sum [] [4]
// FORCED-NEXT: ^bb0(%{{.*}}: index):
// FORCED-NEXT:   loop.load %[[P]][r0]
func.func @full(%x: !buffer.buffer<[32768, 2048], f32>) -> !loop.tensor<[], f32> {
  %s = loop.reduction sum [] [32768, 2048] : !loop.tensor<[], f32> {
  ^bb0(%r0: index, %r1: index):
    %0 = loop.load %x[r0, r1] : !buffer.buffer<[32768, 2048], f32>
    loop.yield %0 : f32
  }
  func.return %s : !loop.tensor<[], f32>
}

// -----

// x.sum(0) of a tall row-major matrix (an outer reduction: the loads' last
// index is i0): its 2048 outputs alone run in too few programs, each walking
// 32768 rows (latency-bound); split, 32 chunks of 1024 rows (the strategy's
// estimate: 94.8 us on an H100 against 204 unsplit; bandwidth-bound, 64 and
// 128 chunks within 3 %, their finishes longer: on an H200 this sum ran
// 72.6-74.6 us in 16, 64 and 128 chunks, devlogs/12); stage 1's split index
// leads, so its rows are consecutive columns.
// CHECK-LABEL: func.func @column
// CHECK:      %[[P:.*]] = loop.reduction sum [32, 2048] [1024] : !loop.tensor<[32, 2048], f32> {
// CHECK:        loop.load %x[1024*i0 + r0, i1]
// CHECK:      %[[S:.*]] = loop.reduction sum [2048] [32] : !loop.tensor<[2048], f32> {
// CHECK:        loop.load %[[P]][r0, i0]
// CHECK:      func.return %[[S]]
func.func @column(%x: !buffer.buffer<[32768, 2048], f32>) -> !loop.tensor<[2048], f32> {
  %s = loop.reduction sum [2048] [32768] : !loop.tensor<[2048], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[32768, 2048], f32>
    loop.yield %0 : f32
  }
  func.return %s : !loop.tensor<[2048], f32>
}

// -----

// x.sum(1) of a column-major input is a column reduction too (the unit-stride
// dimension is indexed by i0), split as @column is.
// CHECK-LABEL: func.func @column_major
// CHECK:      loop.reduction sum [32, 2048] [1024]
// CHECK:        loop.load %x[i1, 1024*i0 + r0]
func.func @column_major(%x: !buffer.buffer<[2048, 32768], f32, strides [1, 2048]>) -> !loop.tensor<[2048], f32> {
  %s = loop.reduction sum [2048] [32768] : !loop.tensor<[2048], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[2048, 32768], f32, strides [1, 2048]>
    loop.yield %0 : f32
  }
  func.return %s : !loop.tensor<[2048], f32>
}

// -----

// Row max over dim 1 of 8 long rows: 25 chunks of 4000 (a divisor, no mask;
// 50 of 2000 are within 2 %, where the fewest chunks win);
// the 32768 rows of @wide already fill the GPU and are left alone, and so do
// the 4096 rows of @vocab (a looped row runs one program each: 4096 programs,
// as a log-softmax over GPT-2's vocabulary). With a single SM (num-sms=1) the
// eight rows' eight programs are enough, and nothing is split.
// CHECK-LABEL: func.func @few_rows
// CHECK:      %[[P:.*]] = loop.reduction max [25, 8] [4000] : !loop.tensor<[25, 8], f32> {
// CHECK:        loop.load %x[i1, 4000*i0 + r0]
// CHECK-NOT:    mask
// CHECK:      loop.reduction max [8] [25]
// CHECK:        loop.load %[[P]][r0, i0]
// CHECK:      loop.reduction sum [32768] [2048]
// CHECK:      loop.reduction max [4096] [50257]
// FEWSM-LABEL: func.func @few_rows
// FEWSM:      loop.reduction max [8] [100000]
// FEWSM:      loop.reduction sum [32768] [2048]
// FEWSM:      loop.reduction max [4096] [50257]
func.func @few_rows(%x: !buffer.buffer<[8, 100000], f32>, %y: !buffer.buffer<[32768, 2048], f32>, %v: !buffer.buffer<[4096, 50257], f32>) -> (!loop.tensor<[8], f32>, !loop.tensor<[32768], f32>, !loop.tensor<[4096], f32>) {
  %m = loop.reduction max [8] [100000] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[8, 100000], f32>
    loop.yield %0 : f32
  }
  %wide = loop.reduction sum [32768] [2048] : !loop.tensor<[32768], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %y[i0, r0] : !buffer.buffer<[32768, 2048], f32>
    loop.yield %0 : f32
  }
  %vocab = loop.reduction max [4096] [50257] : !loop.tensor<[4096], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %v[i0, r0] : !buffer.buffer<[4096, 50257], f32>
    loop.yield %0 : f32
  }
  func.return %m, %wide, %vocab : !loop.tensor<[8], f32>, !loop.tensor<[32768], f32>, !loop.tensor<[4096], f32>
}

// -----

// welford over 40 rows in 4 full chunks: stage 1 is welford per chunk; stage 2
// sums n_s*mean_s (n_s = 10), then m2_s + n_s*(mean_s - mean)^2; the count is
// the reduction's numel.
// FORCED-LABEL: func.func @welford
// FORCED:      %[[M:.*]], %[[M2:.*]], %{{.*}} = loop.reduction welford [4, 3] [10]
// FORCED:        loop.load %x[10*i0 + r0, i1]
// FORCED:      %[[T:.*]] = loop.reduction sum [3] [4]
// FORCED:        loop.load %[[M]][r0, i0]
// FORCED:        arith.mulf
// FORCED:      %[[Q:.*]] = loop.reduction sum [3] [4]
// FORCED:        loop.load %[[T]][i0]
// FORCED:        loop.load %[[M2]][r0, i0]
// FORCED:      %[[MEAN:.*]] = loop.pointwise [3]
// FORCED:      %[[N:.*]] = loop.pointwise [3]
// FORCED-NEXT: ^bb0(%{{.*}}: index):
// FORCED-NEXT:   loop.index 40 : i64
// FORCED:      func.return %[[MEAN]], %[[Q]], %[[N]]
func.func @welford(%x: !buffer.buffer<[40, 3], f32>) -> (!loop.tensor<[3], f32>, !loop.tensor<[3], f32>, !loop.tensor<[3], f32>) {
  %mean, %m2, %n = loop.reduction welford [3] [40] : !loop.tensor<[3], f32>, !loop.tensor<[3], f32>, !loop.tensor<[3], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[40, 3], f32>
    loop.yield %0 : f32
  }
  func.return %mean, %m2, %n : !loop.tensor<[3], f32>, !loop.tensor<[3], f32>, !loop.tensor<[3], f32>
}

// -----

// welford over 37 rows in 4 chunks of 10: the last is partial, so masked lanes
// must not count: per chunk a sum, then the squared deviations from the
// chunk's mean (chunk sizes from min(37 - 10*s, 10)).
// FORCED-LABEL: func.func @welford_masked
// FORCED:      %[[S:.*]] = loop.reduction sum [4, 3] [10]
// FORCED:        %[[V:.*]] = arith.cmpi slt
// FORCED:        loop.load %x[10*i0 + r0, i1] mask(%[[V]])
// FORCED:      loop.reduction sum [4, 3] [10]
// FORCED:        arith.minsi
// FORCED:        loop.load %[[S]][i0, i1]
// FORCED:        arith.select
// FORCED:      loop.reduction sum [3] [4]
// FORCED:      loop.reduction sum [3] [4]
func.func @welford_masked(%x: !buffer.buffer<[37, 3], f32>) -> (!loop.tensor<[3], f32>, !loop.tensor<[3], f32>, !loop.tensor<[3], f32>) {
  %mean, %m2, %n = loop.reduction welford [3] [37] : !loop.tensor<[3], f32>, !loop.tensor<[3], f32>, !loop.tensor<[3], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[37, 3], f32>
    loop.yield %0 : f32
  }
  func.return %mean, %m2, %n : !loop.tensor<[3], f32>, !loop.tensor<[3], f32>, !loop.tensor<[3], f32>
}

// -----

// argmax over all of [37, 5] in 4 chunks of 10 rows (masked): per chunk the max
// and its arg; then the max of the partial maxima and the smallest global
// index (arg + 50*s) among chunks holding it (NaN matches NaN).
// FORCED-LABEL: func.func @argmax
// FORCED:      %[[V:.*]] = loop.reduction max [4] [10, 5]
// FORCED:        arith.constant 0xff800000 : f32
// FORCED:      %[[A:.*]] = loop.reduction argmax [4] [10, 5]
// FORCED:      %[[B:.*]] = loop.reduction max [] [4]
// FORCED:      %[[I:.*]] = loop.reduction min [] [4] : !loop.tensor<[], i64>
// FORCED:        loop.load %[[V]][r0]
// FORCED:        loop.load %[[B]][]
// FORCED:        arith.cmpf oeq
// FORCED:        arith.cmpf uno
// FORCED:        loop.load %[[A]][r0]
// FORCED:        loop.index 50*r0 : i64
// FORCED:        arith.constant 9223372036854775807 : i64
// FORCED:      func.return %[[I]]
func.func @argmax(%x: !buffer.buffer<[37, 5], f32>) -> !loop.tensor<[], i64> {
  %a = loop.reduction argmax [] [37, 5] : !loop.tensor<[], i64> {
  ^bb0(%r0: index, %r1: index):
    %0 = loop.load %x[r0, r1] : !buffer.buffer<[37, 5], f32>
    loop.yield %0 : f32
  }
  func.return %a : !loop.tensor<[], i64>
}

// -----

// A dynamic full reduction, planned as a long one: static chunks of 4096 (one
// persistent row each), (s0 + 4095) floordiv 4096 of them, masked
// (4096*i0 + r0 < s0), then one reduction over the dynamic number of partials
// (not split again). A dynamic number of outputs is left alone.
// CHECK-LABEL: func.func @dynamic
// CHECK:      %[[P:.*]] = loop.reduction sum [(s0 + 4095) floordiv 4096] [4096]
// CHECK:        %[[V:.*]] = arith.cmpi slt
// CHECK:        loop.load %x[4096*i0 + r0] mask(%[[V]])
// CHECK:      loop.reduction sum [] [(s0 + 4095) floordiv 4096]
// CHECK-NEXT: ^bb0
// CHECK-NEXT:   loop.load %[[P]][r0]
// CHECK:      loop.reduction sum [s1] [8192]
// FORCED-LABEL: func.func @dynamic
// FORCED:      loop.reduction sum [4] [(s0 + 3) floordiv 4]
// FORCED:      loop.reduction sum [] [4]
// FORCED:      loop.reduction sum [4, s1] [2048]
func.func @dynamic(%x: !buffer.buffer<[s0], f32>, %y: !buffer.buffer<[s1, 8192], f32>) -> (!loop.tensor<[], f32>, !loop.tensor<[s1], f32>) {
  %s = loop.reduction sum [] [s0] : !loop.tensor<[], f32> {
  ^bb0(%r0: index):
    %0 = loop.load %x[r0] : !buffer.buffer<[s0], f32>
    loop.yield %0 : f32
  }
  %t = loop.reduction sum [s1] [8192] : !loop.tensor<[s1], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %y[i0, r0] : !buffer.buffer<[s1, 8192], f32>
    loop.yield %0 : f32
  }
  func.return %s, %t : !loop.tensor<[], f32>, !loop.tensor<[s1], f32>
}

// -----

// A layer norm's weight gradient: 768 columns summed over 4096 rows. The
// column tile of convert-loop-to-tt (8 columns a program) would run 96
// programs of 4096 rows each, latency-bound: 16 chunks of 256 rows (on an
// H100 the estimate is 8.4 us against 22.5 unsplit), then the 16 partials.
// More chunks finish in the same round of programs and wait on their tile's
// counter (plan.ATOMIC_S): on an H200 the bf16 4096 x 768 column sum ran
// 12.9 us in 64 chunks against 9.6 in 16 (devlogs/6), 9.7-10.2 in 16 and 32
// (devlogs/12).
// CHECK-LABEL: func.func @column_sum
// CHECK:      %[[P:.*]] = loop.reduction sum [16, 768] [256]
// CHECK:        loop.load %x[256*i0 + r0, i1]
// CHECK:      loop.reduction sum [768] [16]
func.func @column_sum(%x: !buffer.buffer<[4096, 768], f32>) -> !loop.tensor<[768], f32> {
  %s = loop.reduction sum [768] [4096] : !loop.tensor<[768], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[4096, 768], f32>
    loop.yield %0 : f32
  }
  func.return %s : !loop.tensor<[768], f32>
}

// -----

// A column softmax's max and denominator (bf16 x, 8192 x 4096): the sum of
// exp(x - M) is split online. Its stage 1 subtracts its own chunk's max (the
// max's stage-1 partial), so both stage-1 nests read x in one kernel; its
// stage 2 rescales each chunk's sum to the overall max, 0 for a -inf chunk
// below a finite overall max (under a -inf one eager's terms are NaN too).
// CHECK-LABEL: func.func @softmax_denominator
// CHECK:      %[[MP:.*]] = loop.reduction max [32, 4096] [256]
// CHECK:      %[[M:.*]] = loop.reduction max [4096] [32]
// CHECK:      %[[SP:.*]] = loop.reduction sum [32, 4096] [256]
// CHECK:        %[[X:.*]] = arith.extf
// CHECK:        %[[CM:.*]] = loop.load %[[MP]][i0, i1]
// CHECK:        %[[D:.*]] = arith.subf %[[X]], %[[CM]]
// CHECK:        math.exp %[[D]]
// CHECK:      %[[S:.*]] = loop.reduction sum [4096] [32]
// CHECK:        %[[PS:.*]] = loop.load %[[SP]][r0, i0]
// CHECK:        %[[PM:.*]] = loop.load %[[MP]][r0, i0]
// CHECK:        %[[TOP:.*]] = loop.load %[[M]][i0]
// CHECK:        %[[E:.*]] = math.exp
// CHECK:        %[[SC:.*]] = arith.mulf %[[PS]], %[[E]]
// CHECK:        %[[NEG:.*]] = arith.constant 0xff800000 : f32
// CHECK:        %[[EMPTY:.*]] = arith.cmpf oeq, %[[PM]], %[[NEG]]
// CHECK:        %[[FINITE:.*]] = arith.cmpf une, %[[TOP]], %[[NEG]]
// CHECK:        %[[ZERO:.*]] = arith.andi %[[EMPTY]], %[[FINITE]]
// CHECK:        arith.select %[[ZERO]], %{{.*}}, %[[SC]]
// CHECK:      func.return %[[M]], %[[S]]
func.func @softmax_denominator(%x: !buffer.buffer<[8192, 4096], bf16>) -> (!loop.tensor<[4096], f32>, !loop.tensor<[4096], f32>) {
  %m = loop.reduction max [4096] [8192] : !loop.tensor<[4096], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[8192, 4096], bf16>
    %1 = arith.extf %0 : bf16 to f32
    loop.yield %1 : f32
  }
  %s = loop.reduction sum [4096] [8192] : !loop.tensor<[4096], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[8192, 4096], bf16>
    %1 = arith.extf %0 : bf16 to f32
    %2 = loop.load %m[i0] : !loop.tensor<[4096], f32>
    %3 = arith.subf %1, %2 : f32
    %4 = math.exp %3 : f32
    loop.yield %4 : f32
  }
  func.return %m, %s : !loop.tensor<[4096], f32>, !loop.tensor<[4096], f32>
}

// -----

// exp(2x - M) is no softmax denominator (2x may exceed a chunk's max, and
// exp would overflow against it): its split waits for the overall max.
// CHECK-LABEL: func.func @not_a_denominator
// CHECK:      %[[M:.*]] = loop.reduction max [4096] [16]
// CHECK:      loop.reduction sum [16, 4096] [512]
// CHECK:        loop.load %[[M]][i1]
func.func @not_a_denominator(%x: !buffer.buffer<[8192, 4096], f32>) -> (!loop.tensor<[4096], f32>, !loop.tensor<[4096], f32>) {
  %m = loop.reduction max [4096] [8192] : !loop.tensor<[4096], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[8192, 4096], f32>
    loop.yield %0 : f32
  }
  %s = loop.reduction sum [4096] [8192] : !loop.tensor<[4096], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[8192, 4096], f32>
    %1 = arith.addf %0, %0 : f32
    %2 = loop.load %m[i0] : !loop.tensor<[4096], f32>
    %3 = arith.subf %1, %2 : f32
    %4 = math.exp %3 : f32
    loop.yield %4 : f32
  }
  func.return %m, %s : !loop.tensor<[4096], f32>, !loop.tensor<[4096], f32>
}

// -----

// logsumexp's denominator subtracts select(|M| == inf, 0, M), M kept [1, 512]
// (keepdim) while the sum is [512]: split online as well; stage 1 applies the
// same select to its chunk's max, stage 2 rescales by exp(g(m) - g(M)).
// CHECK-LABEL: func.func @logsumexp_denominator
// CHECK:      %[[MP:.*]] = loop.reduction max [16, 1, 512] [512]
// CHECK:      %[[M:.*]] = loop.reduction max [1, 512] [16]
// CHECK:      loop.reduction sum [16, 512] [512]
// CHECK:        %[[CM:.*]] = loop.load %[[MP]][i0, 0, i1]
// CHECK:        math.absf %[[CM]]
// CHECK-NOT:    loop.load %[[M]][0, i1]
// CHECK:      loop.reduction sum [512] [16]
// CHECK:        loop.load %[[MP]][r0, 0, i0]
// CHECK:        loop.load %[[M]][0, i0]
func.func @logsumexp_denominator(%x: !buffer.buffer<[8192, 512], f32>) -> !loop.tensor<[512], f32> {
  %m = loop.reduction max [1, 512] [8192] : !loop.tensor<[1, 512], f32> {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %0 = loop.load %x[r0, i1] : !buffer.buffer<[8192, 512], f32>
    loop.yield %0 : f32
  }
  %s = loop.reduction sum [512] [8192] : !loop.tensor<[512], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[8192, 512], f32>
    %1 = loop.load %m[0, i0] : !loop.tensor<[1, 512], f32>
    %2 = math.absf %1 : f32
    %3 = arith.constant 0x7f800000 : f32
    %4 = arith.cmpf oeq, %2, %3 : f32
    %5 = arith.constant 0.000000e+00 : f32
    %6 = loop.load %m[0, i0] : !loop.tensor<[1, 512], f32>
    %7 = arith.select %4, %5, %6 : f32
    %8 = arith.subf %0, %7 : f32
    %9 = math.exp %8 : f32
    loop.yield %9 : f32
  }
  func.return %s : !loop.tensor<[512], f32>
}

// -----

// The same denominator with one load of M read by both sides of the guard (as
// CSE leaves it after loop-inline puts the guard into the sum): split online
// too, the chunk's max replacing that load.
// CHECK-LABEL: func.func @logsumexp_denominator_one_load
// CHECK:      %[[MP:.*]] = loop.reduction max [16, 1, 512] [512]
// CHECK:      %[[M:.*]] = loop.reduction max [1, 512] [16]
// CHECK:      loop.reduction sum [16, 512] [512]
// CHECK:        %[[CM:.*]] = loop.load %[[MP]][i0, 0, i1]
// CHECK:        math.absf %[[CM]]
// CHECK-NOT:    loop.load %[[M]][0, i1]
// CHECK:      loop.reduction sum [512] [16]
func.func @logsumexp_denominator_one_load(%x: !buffer.buffer<[8192, 512], f32>) -> !loop.tensor<[512], f32> {
  %m = loop.reduction max [1, 512] [8192] : !loop.tensor<[1, 512], f32> {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %0 = loop.load %x[r0, i1] : !buffer.buffer<[8192, 512], f32>
    loop.yield %0 : f32
  }
  %s = loop.reduction sum [512] [8192] : !loop.tensor<[512], f32> {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %x[r0, i0] : !buffer.buffer<[8192, 512], f32>
    %1 = loop.load %m[0, i0] : !loop.tensor<[1, 512], f32>
    %2 = math.absf %1 : f32
    %3 = arith.constant 0x7f800000 : f32
    %4 = arith.cmpf oeq, %2, %3 : f32
    %5 = arith.constant 0.000000e+00 : f32
    %6 = arith.select %4, %5, %1 : f32
    %7 = arith.subf %0, %6 : f32
    %8 = math.exp %7 : f32
    loop.yield %8 : f32
  }
  func.return %s : !loop.tensor<[512], f32>
}
