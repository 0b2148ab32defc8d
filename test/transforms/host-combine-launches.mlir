// RUN: fx-opt %s -p convert-loop-to-tt,host-combine-launches --split-input-file | filecheck %s
// RUN: fx-opt %s -p 'convert-loop-to-tt,host-combine-launches{max-kernels=2}' --split-input-file | filecheck %s --check-prefix=MAX2

// Three independent pointwise nests over tensors of different shapes (a
// compiled optimizer's per-parameter updates): one launch of a combo kernel
// over 1 + 2 + 1 programs. Each sub-kernel runs where the program id falls in
// its range, with the id shifted to start at 0; its tile is its own (64, 1024,
// 16 lanes). The kernels it replaced are gone; the free of %b, read by the
// first sub-kernel, moves after the launch.

// CHECK-LABEL: tt.func public @coil_combo_0
// CHECK-SAME:    (%in_ptr0: !tt.ptr<f32>, %out_ptr1: !tt.ptr<f32>, %in_ptr2: !tt.ptr<f32>, %out_ptr3: !tt.ptr<f32>, %in_ptr4: !tt.ptr<f32>, %out_ptr5: !tt.ptr<f32>)
// CHECK-SAME:    coil.kind = "combo"
// CHECK-SAME:    coil.cost = "3 sub-kernels: reads 256 B, writes 256 B
// CHECK:         %[[PID:.*]] = tt.get_program_id x : i32
// CHECK-NEXT:    %[[E0:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[IN0:.*]] = arith.cmpi slt, %[[PID]], %[[E0]] : i32
// CHECK-NEXT:    scf.if %[[IN0]] {
// CHECK-NEXT:      %[[B0:.*]] = arith.constant 64 : i32
// CHECK-NEXT:      arith.muli %[[PID]], %[[B0]] : i32
// CHECK:           tt.make_range {start = 0 : i32, end = 64 : i32}
// CHECK:           math.exp
// CHECK:         }
// CHECK-NEXT:    %[[E1:.*]] = arith.constant 3 : i32
// CHECK-NEXT:    %[[GE:.*]] = arith.cmpi sge, %[[PID]], %[[E0]] : i32
// CHECK-NEXT:    %[[LT:.*]] = arith.cmpi slt, %[[PID]], %[[E1]] : i32
// CHECK-NEXT:    %[[IN1:.*]] = arith.andi %[[GE]], %[[LT]] : i1
// CHECK-NEXT:    scf.if %[[IN1]] {
// CHECK-NEXT:      %[[P1:.*]] = arith.subi %[[PID]], %[[E0]] : i32
// CHECK-NEXT:      %[[B1:.*]] = arith.constant 1024 : i32
// CHECK-NEXT:      arith.muli %[[P1]], %[[B1]] : i32
// CHECK:           tt.make_range {start = 0 : i32, end = 1024 : i32}
// CHECK:           math.sqrt
// CHECK:         }
// CHECK-NEXT:    %[[IN2:.*]] = arith.cmpi sge, %[[PID]], %[[E1]] : i32
// CHECK-NEXT:    scf.if %[[IN2]] {
// CHECK-NEXT:      %[[P2:.*]] = arith.subi %[[PID]], %[[E1]] : i32
// CHECK:           tt.make_range {start = 0 : i32, end = 16 : i32}
// CHECK:           arith.negf
// CHECK:         }
// CHECK-NEXT:    tt.return
// CHECK-NOT:   tt.func public @coil_exp
// CHECK-LABEL: func.func @independent
// CHECK:         %[[X:.*]] = buffer.alloc : !buffer.buffer<[64], f32>
// CHECK-NEXT:    %[[Y:.*]] = buffer.alloc : !buffer.buffer<[2048], f32>
// CHECK-NEXT:    %[[Z:.*]] = buffer.alloc : !buffer.buffer<[16], f32>
// CHECK-NEXT:    host.launch @coil_combo_0 grid [4, 1, 1] (%a, %[[X]], %b, %[[Y]], %c, %[[Z]] : {{.*}}) {num_warps = 4 : i64, num_stages = 1 : i64}
// CHECK-NEXT:    buffer.dealloc %b
// CHECK-NEXT:    func.return

// Two kernels at most: the third launch stays apart.
// MAX2-LABEL: func.func @independent
// MAX2:         host.launch @coil_combo_0 grid [3, 1, 1]
// MAX2:         host.launch @coil_neg_2
func.func @independent(%a: !buffer.buffer<[64], f32>, %b: !buffer.buffer<[2048], f32>, %c: !buffer.buffer<[16], f32>) -> (!buffer.buffer<[64], f32>, !buffer.buffer<[2048], f32>, !buffer.buffer<[16], f32>) {
  %exp = buffer.alloc : !buffer.buffer<[64], f32>
  loop.pointwise [64] outs(%exp : !buffer.buffer<[64], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %a[i0] : !buffer.buffer<[64], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %sqrt = buffer.alloc : !buffer.buffer<[2048], f32>
  loop.pointwise [2048] outs(%sqrt : !buffer.buffer<[2048], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %b[i0] : !buffer.buffer<[2048], f32>
    %1 = math.sqrt %0 : f32
    loop.yield %1 : f32
  }
  buffer.dealloc %b : !buffer.buffer<[2048], f32>
  %neg = buffer.alloc : !buffer.buffer<[16], f32>
  loop.pointwise [16] outs(%neg : !buffer.buffer<[16], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %c[i0] : !buffer.buffer<[16], f32>
    %1 = arith.negf %0 : f32
    loop.yield %1 : f32
  }
  func.return %exp, %sqrt, %neg : !buffer.buffer<[64], f32>, !buffer.buffer<[2048], f32>, !buffer.buffer<[16], f32>
}

// -----

// The second kernel reads what the first writes: two launches, in order.

// CHECK-LABEL: func.func @dependent
// CHECK:         host.launch @coil_x_0
// CHECK:         host.launch @coil_y_1
// CHECK-NOT:     host.launch
func.func @dependent(%a: !buffer.buffer<[64], f32>) -> !buffer.buffer<[64], f32> {
  %x = buffer.alloc : !buffer.buffer<[64], f32>
  loop.pointwise [64] outs(%x : !buffer.buffer<[64], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %a[i0] : !buffer.buffer<[64], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %y = buffer.alloc : !buffer.buffer<[64], f32>
  loop.pointwise [64] outs(%y : !buffer.buffer<[64], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[64], f32>
    %1 = arith.negf %0 : f32
    loop.yield %1 : f32
  }
  func.return %y : !buffer.buffer<[64], f32>
}

// -----

// The second kernel writes storage the first reads, through a buffer the
// memory plan handed over (buffer.reuse of the dead %x): a dependence, so two
// launches. Likewise a kernel that writes an input another one reads.

// CHECK-LABEL: func.func @reused
// CHECK:         host.launch @coil_x_0
// CHECK:         host.launch @coil_x_0
// CHECK:         host.launch @coil_z_1
// CHECK-NOT:     host.launch
func.func @reused(%a: !buffer.buffer<[64], f32>, %b: !buffer.buffer<[64], f32>) -> !buffer.buffer<[64], f32> {
  %x = buffer.alloc : !buffer.buffer<[64], f32>
  loop.pointwise [64] outs(%x : !buffer.buffer<[64], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %a[i0] : !buffer.buffer<[64], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %y = buffer.alloc : !buffer.buffer<[64], f32>
  loop.pointwise [64] outs(%y : !buffer.buffer<[64], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[64], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %z = buffer.reuse %x : !buffer.buffer<[64], f32> -> !buffer.buffer<[64], f32>
  loop.pointwise [64] outs(%z : !buffer.buffer<[64], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %b[i0] : !buffer.buffer<[64], f32>
    %1 = arith.negf %0 : f32
    loop.yield %1 : f32
  }
  func.return %y : !buffer.buffer<[64], f32>
}

// -----

// Symbolic grids: the program offsets are i64 arguments the launch computes
// from the sizes (here cdiv(s0, 1024) programs before the second kernel), and
// program ids are compared in i64.

// CHECK-LABEL: tt.func public @coil_combo_0
// CHECK-SAME:    %s0: i64, %s1: i64, %pid_end0: i64)
// CHECK:         %[[PID:.*]] = tt.get_program_id x : i32
// CHECK-NEXT:    %[[W:.*]] = arith.extsi %[[PID]] : i32 to i64
// CHECK-NEXT:    %[[C0:.*]] = arith.cmpi slt, %[[W]], %pid_end0 : i64
// CHECK-NEXT:    scf.if %[[C0]] {
// CHECK-NEXT:      arith.trunci %[[W]] : i64 to i32
// CHECK:         %[[C1:.*]] = arith.cmpi sge, %[[W]], %pid_end0 : i64
// CHECK-NEXT:    scf.if %[[C1]] {
// CHECK-NEXT:      %[[L:.*]] = arith.subi %[[W]], %pid_end0 : i64
// CHECK-NEXT:      arith.trunci %[[L]] : i64 to i32
// CHECK-LABEL: func.func @symbolic
// CHECK:         host.launch @coil_combo_0 grid [(s0 + 1023) floordiv 1024 + (s1 + 1023) floordiv 1024, 1, 1] (%a, %{{.*}}, %b, %{{.*}} : {{.*}}) scalars [s0, s1, (s0 + 1023) floordiv 1024]
func.func @symbolic(%n: index {coil.symbol = #coil.expr<s0>}, %m: index {coil.symbol = #coil.expr<s1>}, %a: !buffer.buffer<[s0], f32>, %b: !buffer.buffer<[s1], f32>) -> (!buffer.buffer<[s0], f32>, !buffer.buffer<[s1], f32>) {
  %x = buffer.alloc : !buffer.buffer<[s0], f32>
  loop.pointwise [s0] outs(%x : !buffer.buffer<[s0], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %a[i0] : !buffer.buffer<[s0], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %y = buffer.alloc : !buffer.buffer<[s1], f32>
  loop.pointwise [s1] outs(%y : !buffer.buffer<[s1], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %b[i0] : !buffer.buffer<[s1], f32>
    %1 = arith.negf %0 : f32
    loop.yield %1 : f32
  }
  func.return %x, %y : !buffer.buffer<[s0], f32>, !buffer.buffer<[s1], f32>
}

// -----

// A reduction is no sub-kernel (its tile and warps are its own), and it ends
// the group before it: three launches.

// CHECK-LABEL: func.func @reduction
// CHECK:         host.launch @coil_x_0
// CHECK:         host.launch @coil_s_1
// CHECK:         host.launch @coil_z_2
func.func @reduction(%a: !buffer.buffer<[64], f32>, %b: !buffer.buffer<[8, 64], f32>, %c: !buffer.buffer<[64], f32>) -> (!buffer.buffer<[64], f32>, !buffer.buffer<[8], f32>, !buffer.buffer<[64], f32>) {
  %x = buffer.alloc : !buffer.buffer<[64], f32>
  loop.pointwise [64] outs(%x : !buffer.buffer<[64], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %a[i0] : !buffer.buffer<[64], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %s = buffer.alloc : !buffer.buffer<[8], f32>
  loop.reduction sum [8] [64] outs(%s : !buffer.buffer<[8], f32>) {
  ^bb0(%i0: index, %r0: index):
    %0 = loop.load %b[i0, r0] : !buffer.buffer<[8, 64], f32>
    loop.yield %0 : f32
  }
  %z = buffer.alloc : !buffer.buffer<[64], f32>
  loop.pointwise [64] outs(%z : !buffer.buffer<[64], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %c[i0] : !buffer.buffer<[64], f32>
    %1 = arith.negf %0 : f32
    loop.yield %1 : f32
  }
  func.return %x, %s, %z : !buffer.buffer<[64], f32>, !buffer.buffer<[8], f32>, !buffer.buffer<[64], f32>
}

// -----

// The same group twice (a repeated layer's launches): the second launch runs
// the first's combo kernel, which is built once.
// CHECK-LABEL: tt.func public @coil_combo_0
// CHECK-NOT:   tt.func public @coil_combo_1
// CHECK-LABEL: func.func @repeated
// CHECK:         host.launch @coil_combo_0 grid [3, 1, 1] (%a, %x, %b, %y
// CHECK:         host.launch @coil_combo_0 grid [3, 1, 1] (%x, %p, %y, %q
func.func @repeated(%a: !buffer.buffer<[64], f32>, %b: !buffer.buffer<[2048], f32>) -> (!buffer.buffer<[64], f32>, !buffer.buffer<[2048], f32>) {
  %x = buffer.alloc : !buffer.buffer<[64], f32>
  loop.pointwise [64] outs(%x : !buffer.buffer<[64], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %a[i0] : !buffer.buffer<[64], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %y = buffer.alloc : !buffer.buffer<[2048], f32>
  loop.pointwise [2048] outs(%y : !buffer.buffer<[2048], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %b[i0] : !buffer.buffer<[2048], f32>
    %1 = math.sqrt %0 : f32
    loop.yield %1 : f32
  }
  %p = buffer.alloc : !buffer.buffer<[64], f32>
  loop.pointwise [64] outs(%p : !buffer.buffer<[64], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[64], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  %q = buffer.alloc : !buffer.buffer<[2048], f32>
  loop.pointwise [2048] outs(%q : !buffer.buffer<[2048], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %y[i0] : !buffer.buffer<[2048], f32>
    %1 = math.sqrt %0 : f32
    loop.yield %1 : f32
  }
  func.return %p, %q : !buffer.buffer<[64], f32>, !buffer.buffer<[2048], f32>
}
