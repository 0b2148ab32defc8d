// RUN: fx-opt %s -p convert-loop-to-tt --split-input-file | filecheck %s
// RUN: fx-opt %s -p convert-loop-to-tt --split-input-file -t triton | filecheck %s --check-prefix=PY
// RUN: fx-opt %s -p "convert-loop-to-tt{tile2d=off outer-reduction=false}" --split-input-file | filecheck %s --check-prefix=OFF
// RUN: fx-opt %s -p "convert-loop-to-tt{yblock=16 xblock=64}" --split-input-file | filecheck %s --check-prefix=BLK

// 2-D tiles (loop_to_tt/tiling.py). A transposed read next to a contiguous read
// and store: the loads and the store disagree on the contiguous loop index
// (i0 for %x, i1 for %y and the output), so the nest is tiled [YBLOCK, XBLOCK]
// = [32, 32] over (i0, i1): yindex [32, 1], xindex [1, 32], %x contiguous along
// tile axis 0, %y and the store along axis 1. 48 rows: only y is masked. The
// grid is [x tiles, y tiles, 1]. tile2d=off keeps the 1-D tile of 1024.

// CHECK-LABEL: tt.func public @coil_add_0
// CHECK:         %pid_x = tt.get_program_id x : i32
// CHECK:         %pid_y = tt.get_program_id y : i32
// CHECK:         %yoffset = arith.muli %pid_y, %[[C32:.*]] : i32
// CHECK:         tt.expand_dims %{{.*}} {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
// CHECK:         %yindex = arith.addi %{{.*}} : tensor<32x1xi32>
// CHECK:         %ymask = arith.cmpi slt, %yindex, %{{.*}} : tensor<32x1xi32>
// CHECK:         %xoffset = arith.muli %pid_x, %[[C32]] : i32
// CHECK:         tt.expand_dims %{{.*}} {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
// CHECK:         %xindex = arith.addi %{{.*}} : tensor<1x32xi32>
// CHECK-NOT:     %xmask
// CHECK:         %[[MASK:.*]] = tt.broadcast %ymask : tensor<32x1xi1> -> tensor<32x32xi1>
// CHECK:         %[[A:.*]] = tt.load %{{.*}}, %[[MASK]], %{{.*}} : tensor<32x32x!tt.ptr<f32>>
// CHECK:         %[[B:.*]] = tt.load %{{.*}}, %[[MASK]], %{{.*}} : tensor<32x32x!tt.ptr<f32>>
// CHECK:         %[[C:.*]] = arith.addf %[[A]], %[[B]] : tensor<32x32xf32>
// CHECK:         tt.store %{{.*}}, %[[C]], %[[MASK]] : tensor<32x32x!tt.ptr<f32>>
// CHECK:       host.launch @coil_add_0 grid [2, 2, 1]
// CHECK-SAME:    {num_warps = 4 : i64, num_stages = 1 : i64}

// PY-LABEL: def coil_add_0(in_ptr0, in_ptr1, out_ptr0):
// PY-NEXT:      pid_x = tl.program_id(0)
// PY-NEXT:      pid_y = tl.program_id(1)
// PY-NEXT:      yoffset = pid_y * 32
// PY-NEXT:      [[R:tmp[0-9]+]] = tl.arange(0, 32)
// PY-NEXT:      [[E:tmp[0-9]+]] = tl.expand_dims([[R]], 1)
// PY-NEXT:      [[S:tmp[0-9]+]] = tl.full([32, 1], yoffset, tl.int32)
// PY-NEXT:      yindex = [[S]] + [[E]]
// PY:           xoffset = pid_x * 32
// PY:           xindex = {{.*}}
// PY:           [[MASK:tmp[0-9]+]] = tl.broadcast_to(ymask, [32, 32])
// PY:           a = tl.load({{.*}}, [[MASK]], other=0.0)
// PY:           b = tl.load({{.*}}, [[MASK]], other=0.0)
// PY-NEXT:      c = a + b
// PY:           tl.store({{.*}}, c, [[MASK]])

// OFF-LABEL: tt.func public @coil_add_0
// OFF-NOT:     tt.get_program_id y
// OFF:         tt.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
// OFF:       host.launch @coil_add_0 grid [3, 1, 1]

// BLK-LABEL: tt.func public @coil_add_0
// BLK:         tt.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
// BLK:         tt.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
// BLK:         arith.addf %{{.*}} : tensor<16x64xf32>
// BLK:       host.launch @coil_add_0 grid [1, 3, 1]

func.func @transpose(%x: !buffer.buffer<[64, 48], f32>, %y: !buffer.buffer<[48, 64], f32>) -> !buffer.buffer<[48, 64], f32> {
  %add = buffer.alloc : !buffer.buffer<[48, 64], f32>
  loop.pointwise [48, 64] outs(%add : !buffer.buffer<[48, 64], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i1, i0] : !buffer.buffer<[64, 48], f32>
    %b = loop.load %y[i0, i1] : !buffer.buffer<[48, 64], f32>
    %c = arith.addf %a, %b : f32
    loop.yield %c : f32
  }
  func.return %add : !buffer.buffer<[48, 64], f32>
}

// -----

// NCHW -> NHWC (x.permute(0, 2, 3, 1).contiguous()): the load is contiguous
// along i2 (W), the store along i3 (C), so y = (N, H, W) = 84 points, x = C = 5
// (a block of 8). The load reads x[i0, xindex, i1, i2]: i0 by a division of
// yindex, H and W together as yindex % 42 (7*i1 + i2 folded back), plus
// xindex * H*W (42); the store (N, H, W, C) row-major is 5*yindex + xindex,
// no division at all.

// CHECK-LABEL: tt.func public @coil_permute_0
// CHECK:         %xindex = arith.addi %{{.*}} : tensor<1x8xi32>
// CHECK:         %i0 = arith.divsi %yindex, %{{.*}} : tensor<32x1xi32>
// CHECK:         %[[M:.*]] = arith.andi %{{.*}} : tensor<32x8xi1>
// CHECK:         %[[H:.*]] = arith.constant dense<42> : tensor<1x8xi32>
// CHECK:         arith.muli %xindex, %[[H]] : tensor<1x8xi32>
// CHECK:         arith.remsi %yindex, %{{.*}} : tensor<32x1xi32>
// CHECK:         tt.load %{{.*}}, %[[M]], %{{.*}} : tensor<32x8x!tt.ptr<f32>>
// CHECK-NOT:     arith.remsi
// CHECK-NOT:     arith.divsi
// CHECK:         tt.broadcast %xindex : tensor<1x8xi32> -> tensor<32x8xi32>
// CHECK:         tt.store %{{.*}}, %{{.*}}, %[[M]] : tensor<32x8x!tt.ptr<f32>>
// CHECK:       host.launch @coil_permute_0 grid [1, 3, 1]

// PY-LABEL: def coil_permute_0(in_ptr0, out_ptr0):
// PY:           i0 = yindex // {{.*}}
// PY:           yindex % {{.*}}
// PY:           tl.store(

// OFF-LABEL: tt.func public @coil_permute_0
// OFF-NOT:     tt.get_program_id y
// OFF:       host.launch @coil_permute_0 grid [1, 1, 1]

func.func @nchw_to_nhwc(%x: !buffer.buffer<[2, 5, 6, 7], f32>) -> !buffer.buffer<[2, 6, 7, 5], f32> {
  %permute = buffer.alloc : !buffer.buffer<[2, 6, 7, 5], f32>
  loop.pointwise [2, 6, 7, 5] outs(%permute : !buffer.buffer<[2, 6, 7, 5], f32>) {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    %a = loop.load %x[i0, i3, i1, i2] : !buffer.buffer<[2, 5, 6, 7], f32>
    loop.yield %a : f32
  }
  func.return %permute : !buffer.buffer<[2, 6, 7, 5], f32>
}

// -----

// A large transpose (2**23 static points, bf16 2048x4096): 64 x 64 tiles, each
// tile row a whole 128-byte line (tiling.py's LARGE_TILE: the cost model's
// choice where the kernel is bandwidth-bound; 32 x 32 for the small nests
// above), 8 warps, a grid of [64, 32, 1].

// CHECK-LABEL: tt.func public @coil_add_0
// CHECK:         tt.expand_dims %{{.*}} {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
// CHECK:         tt.expand_dims %{{.*}} {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
// CHECK:         arith.addf %{{.*}} : tensor<64x64xbf16>
// CHECK:       host.launch @coil_add_0 grid [64, 32, 1]
// CHECK-SAME:    {num_warps = 8 : i64, num_stages = 1 : i64}

// BLK-LABEL: tt.func public @coil_add_0
// BLK:         arith.addf %{{.*}} : tensor<16x64xbf16>
// BLK:       host.launch @coil_add_0 grid [64, 128, 1]

// OFF-LABEL: tt.func public @coil_add_0
// OFF-NOT:     tt.get_program_id y

func.func @large_transpose(%x: !buffer.buffer<[4096, 2048], bf16>, %y: !buffer.buffer<[2048, 4096], bf16>) -> !buffer.buffer<[2048, 4096], bf16> {
  %add = buffer.alloc : !buffer.buffer<[2048, 4096], bf16>
  loop.pointwise [2048, 4096] outs(%add : !buffer.buffer<[2048, 4096], bf16>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i1, i0] : !buffer.buffer<[4096, 2048], bf16>
    %b = loop.load %y[i0, i1] : !buffer.buffer<[2048, 4096], bf16>
    %c = arith.addf %a, %b : bf16
    loop.yield %c : bf16
  }
  func.return %add : !buffer.buffer<[2048, 4096], bf16>
}

// -----

// Dynamic sizes: how many y tiles there are is not known, and grid y allows only
// 65535, so the grid is one flat grid x of (x tiles) * (y tiles) programs and the
// kernel splits its program id (x tiles fastest); i64 indices, both masks.

// CHECK-LABEL: tt.func public @coil_add_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %s0: i64, %s1: i64)
// CHECK:         %[[P:.*]] = tt.get_program_id x : i32
// CHECK-NOT:     tt.get_program_id
// CHECK:         %pid = arith.extsi %[[P]] : i32 to i64
// CHECK:         %[[NX:.*]] = arith.divsi %{{.*}} : i64
// CHECK:         %pid_x = arith.remsi %pid, %[[NX]] : i64
// CHECK:         %pid_y = arith.divsi %pid, %[[NX]] : i64
// CHECK:         %yindex = arith.addi %{{.*}} : tensor<32x1xi64>
// CHECK:         %ymask = arith.cmpi slt, %yindex, %{{.*}} : tensor<32x1xi64>
// CHECK:         %xindex = arith.addi %{{.*}} : tensor<1x32xi64>
// CHECK:         %xmask = arith.cmpi slt, %xindex, %{{.*}} : tensor<1x32xi64>
// CHECK:         tt.store %{{.*}} : tensor<32x32x!tt.ptr<f32>>
// CHECK:       host.launch @coil_add_0 grid [((s0 + 31) floordiv 32)*((s1 + 31) floordiv 32), 1, 1]
// CHECK-SAME:    scalars [s0, s1]

// PY-LABEL: def coil_add_0(in_ptr0, out_ptr0, s0, s1):
// PY:           pid_x = pid % {{.*}}
// PY-NEXT:      pid_y = pid // {{.*}}

// OFF-LABEL: tt.func public @coil_add_0
// OFF:       host.launch @coil_add_0 grid [(s0*s1 + 1023) floordiv 1024, 1, 1]

// BLK-LABEL: tt.func public @coil_add_0
// BLK:       host.launch @coil_add_0 grid [((s0 + 15) floordiv 16)*((s1 + 63) floordiv 64), 1, 1]

func.func @dynamic(%x: !buffer.buffer<[s1, s0], f32>) -> !buffer.buffer<[s0, s1], f32> {
  %add = buffer.alloc : !buffer.buffer<[s0, s1], f32>
  loop.pointwise [s0, s1] outs(%add : !buffer.buffer<[s0, s1], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i1, i0] : !buffer.buffer<[s1, s0], f32>
    %b = arith.addf %a, %a : f32
    loop.yield %b : f32
  }
  func.return %add : !buffer.buffer<[s0, s1], f32>
}

// -----

// A contiguous nest (with a broadcast column read: stride 0 after its
// contiguous index, which proposes no split) keeps its 1-D tile.

// CHECK-LABEL: tt.func public @coil_mul_0
// CHECK-NOT:     tt.get_program_id y
// CHECK-NOT:     yindex
// CHECK:         tt.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
// CHECK:         tt.store %{{.*}} : tensor<1024x!tt.ptr<f32>>
// CHECK:       host.launch @coil_mul_0 grid [3, 1, 1]

// PY-LABEL: def coil_mul_0(in_ptr0, in_ptr1, out_ptr0):
// PY-NEXT:      pid = tl.program_id(0)
// PY-NEXT:      xoffset = pid * 1024

func.func @contiguous(%x: !buffer.buffer<[48, 64], f32>, %y: !buffer.buffer<[48, 1], f32>) -> !buffer.buffer<[48, 64], f32> {
  %mul = buffer.alloc : !buffer.buffer<[48, 64], f32>
  loop.pointwise [48, 64] outs(%mul : !buffer.buffer<[48, 64], f32>) {
  ^bb0(%i0: index, %i1: index):
    %a = loop.load %x[i0, i1] : !buffer.buffer<[48, 64], f32>
    %b = loop.load %y[i0, 0] : !buffer.buffer<[48, 1], f32>
    %c = arith.mulf %a, %b : f32
    loop.yield %c : f32
  }
  func.return %mul : !buffer.buffer<[48, 64], f32>
}

// -----

// An outer reduction (x.sum(0) of a row-major [300, 2000]): the load is
// contiguous along the output index i0, not along r0. It loops (300 > 64) over
// RBLOCK = 64 rows of XBLOCK = 8 columns (a 32-byte sector of each row; wider
// would leave fewer than 256 programs), instead of holding eight whole
// 300-long columns in registers and reading them with a stride
// (outer-reduction=false).

// CHECK-LABEL: tt.func public @coil_sum_0
// CHECK:         tt.make_range {start = 0 : i32, end = 8 : i32} : tensor<8xi32>
// CHECK:         %rbase = tt.expand_dims %{{.*}} : tensor<64xi32> -> tensor<1x64xi32>
// CHECK:         scf.for
// CHECK:           tt.load %{{.*}} : tensor<8x64x!tt.ptr<f32>>
// CHECK:         "tt.reduce"
// CHECK:       host.launch @coil_sum_0 grid [250, 1, 1]

// OFF-LABEL: tt.func public @coil_sum_0
// OFF-NOT:     scf.for
// OFF:         tt.load %{{.*}} : tensor<8x512x!tt.ptr<f32>>
// OFF:       host.launch @coil_sum_0 grid [250, 1, 1]

func.func @outer_sum(%x: !buffer.buffer<[300, 2000], f32>) -> !buffer.buffer<[2000], f32> {
  %sum = buffer.alloc : !buffer.buffer<[2000], f32>
  loop.reduction sum [2000] [300] outs(%sum : !buffer.buffer<[2000], f32>) {
  ^bb0(%i0: index, %r0: index):
    %a = loop.load %x[r0, i0] : !buffer.buffer<[300, 2000], f32>
    loop.yield %a : f32
  }
  func.return %sum : !buffer.buffer<[2000], f32>
}
