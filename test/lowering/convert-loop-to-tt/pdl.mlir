// RUN: fx-opt %s --device h200 -p 'convert-loop-to-tt{pdl=true},convert-buffer-to-host' -t triton --split-input-file | filecheck %s
// RUN: fx-opt %s --device h200 -p 'convert-loop-to-tt{pdl=true}' --split-input-file | filecheck %s --check-prefix=IR
// RUN: fx-opt %s --device h200 -p 'convert-loop-to-tt{pdl=true},convert-buffer-to-host' -t python --split-input-file | filecheck %s --check-prefix=PY
// RUN: fx-opt %s --device h200 -p 'convert-loop-to-tt,convert-buffer-to-host' -t python --split-input-file | filecheck %s --check-prefix=OFF
// RUN: fx-opt %s --device a100 -p 'convert-loop-to-tt{pdl=true},convert-buffer-to-host' -t python --split-input-file > %t.a100.on
// RUN: filecheck %s --check-prefix=OFF < %t.a100.on
// RUN: fx-opt %s --device cpu-interpreter -p 'convert-loop-to-tt{pdl=true},convert-buffer-to-host' -t python --split-input-file > %t.cpu.on
// RUN: filecheck %s --check-prefix=OFF < %t.cpu.on
// RUN: fx-opt %s --device h200 -p 'convert-loop-to-tt{pdl=true},host-combine-launches,convert-buffer-to-host' -t python --split-input-file | filecheck %s --check-prefix=COMBO
// RUN: fx-opt %s --device a100 -p 'convert-loop-to-tt,convert-buffer-to-host' -t python --split-input-file > %t.a100.off
// RUN: fx-opt %s --device cpu-interpreter -p 'convert-loop-to-tt,convert-buffer-to-host' -t python --split-input-file > %t.cpu.off
// lit's built-in diff leaves PYTHONPATH pointing at lit for the RUN lines after
// it (a later fx-opt would import another coil): the diffs come last.
// RUN: diff %t.a100.on %t.a100.off
// RUN: diff %t.cpu.on %t.cpu.off

// Programmatic dependent launch (lowering/loop_to_tt/pdl.py): on an sm90+
// target each kernel waits for the previous one (gdc_wait) before its first
// access of anything but a static input, and lets the next one start
// (gdc_launch_dependents) right after that wait. Loads of static inputs
// ({coil.static} arguments no op of the function writes: a Linear's weight)
// go before the wait: a persistent row's whole row, a looped row's first
// tile (its loop's first iteration peeled). Without the option, on an A100
// (sm80) and under the interpreter nothing changes (OFF).

// The looped, streamed gate product (rows two a program, steps of 512): the
// first step's weight tile (in_ptr1, evict_first) is loaded before the wait;
// the activation (in_ptr0) after it; the loop runs the other three steps.
// CHECK-LABEL: def coil_gate_0(in_ptr0, in_ptr1, out_ptr0):
// CHECK:         tmp{{[0-9]+}} = in_ptr1 + tl.zeros([2, 512], tl.int32)
// CHECK-NEXT:    [[W:tmp[0-9]+]] = tmp{{[0-9]+}} + tmp{{[0-9]+}}
// CHECK-NEXT:    [[W0:tmp[0-9]+]] = tl.load([[W]], eviction_policy="evict_first")
// CHECK-NEXT:    tl.extra.cuda.gdc_wait()
// CHECK-NEXT:    tl.extra.cuda.gdc_launch_dependents()
// CHECK-NEXT:    tmp{{[0-9]+}} = tl.load(tmp{{[0-9]+}}, eviction_policy="evict_last")
// CHECK:         tmp{{[0-9]+}} = [[W0]].to(tl.float32)
// CHECK:         for roffset in range(512, 2048, 512):
// CHECK:           tl.load(tmp{{[0-9]+}}, eviction_policy="evict_first")
// CHECK:         tl.store(

// The persistent product: the whole weight row before the wait.
// CHECK-LABEL: def coil_o_1(in_ptr0, in_ptr1, out_ptr0):
// CHECK:         tl.load(tmp{{[0-9]+}}, eviction_policy="evict_first")
// CHECK-NEXT:    tl.extra.cuda.gdc_wait()
// CHECK-NEXT:    tl.extra.cuda.gdc_launch_dependents()
// CHECK-NEXT:    tl.load(tmp{{[0-9]+}}, eviction_policy="evict_last")
// CHECK-NOT:     gdc_
// CHECK:         tl.store(

// A kernel that reads no static input waits before its first load.
// CHECK-LABEL: def coil_y_2(in_ptr0, out_ptr0):
// CHECK-NOT:     tl.load
// CHECK:         tl.extra.cuda.gdc_wait()
// CHECK-NEXT:    tl.extra.cuda.gdc_launch_dependents()
// CHECK-NEXT:    tl.load(

// The first launch of the function runs without the attribute (it waits for
// everything before the call, which the loads before the waits of the
// launches after it rely on); the launches after it carry launch_pdl.
// IR-LABEL:  func.func @decode
// IR:          host.launch @coil_gate_0 {{.*}} {num_warps = 2 : i64, num_stages = 1 : i64}
// IR-NEXT:     buffer.alloc
// IR-NEXT:     host.launch @coil_o_1 {{.*}} launch_pdl = 1 : i64}
// IR-NEXT:     buffer.alloc
// IR-NEXT:     host.launch @coil_y_2 {{.*}} launch_pdl = 1 : i64}
// PY:        coil_gate_0_launch = Launcher(globals(), "coil_gate_0", {{.*}}checked=(0, 1))
// PY-NEXT:   coil_o_1_launch = Launcher(globals(), "coil_o_1", {{.*}}, pdl=True)
// PY-NEXT:   coil_y_2_launch = Launcher(globals(), "coil_y_2", {{.*}}, pdl=True)
// OFF-NOT:   gdc_
// OFF-NOT:   pdl=True
func.func @decode(%x: !buffer.buffer<[1, 2048], bf16, device "cuda:0">, %w: !buffer.buffer<[5632, 2048], bf16, device "cuda:0"> {coil.static}, %w2: !buffer.buffer<[2048, 5632], bf16, device "cuda:0"> {coil.static}) -> !buffer.buffer<[1, 2048], f32, device "cuda:0"> {
  %gate = buffer.alloc : !buffer.buffer<[1, 5632], f32, device "cuda:0">
  loop.reduction sum [1, 5632] [2048] outs(%gate : !buffer.buffer<[1, 5632], f32, device "cuda:0">) {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %0 = loop.load %x[i0, r0] : !buffer.buffer<[1, 2048], bf16, device "cuda:0">
    %1 = arith.extf %0 : bf16 to f32
    %2 = loop.load %w[i1, r0] : !buffer.buffer<[5632, 2048], bf16, device "cuda:0">
    %3 = arith.extf %2 : bf16 to f32
    %4 = arith.mulf %1, %3 : f32
    loop.yield %4 : f32
  }
  %o = buffer.alloc : !buffer.buffer<[1, 2048], f32, device "cuda:0">
  loop.reduction sum [1, 2048] [2048] outs(%o : !buffer.buffer<[1, 2048], f32, device "cuda:0">) {
  ^bb0(%i0: index, %i1: index, %r0: index):
    %0 = loop.load %gate[i0, r0] : !buffer.buffer<[1, 5632], f32, device "cuda:0">
    %2 = loop.load %w2[i1, r0] : !buffer.buffer<[2048, 5632], bf16, device "cuda:0">
    %3 = arith.extf %2 : bf16 to f32
    %4 = arith.mulf %0, %3 : f32
    loop.yield %4 : f32
  }
  %y = buffer.alloc : !buffer.buffer<[1, 2048], f32, device "cuda:0">
  loop.pointwise [1, 2048] outs(%y : !buffer.buffer<[1, 2048], f32, device "cuda:0">) {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %o[i0, i1] : !buffer.buffer<[1, 2048], f32, device "cuda:0">
    %1 = arith.addf %0, %0 : f32
    loop.yield %1 : f32
  }
  func.return %y : !buffer.buffer<[1, 2048], f32, device "cuda:0">
}

// -----

// A static input that the function writes (a KV cache updated in place) is
// not static: the kernel reading it waits first. A gather from a static table
// waits too where its index is loaded from anything else (the table's load
// needs the index).
// CHECK-LABEL: def coil_kv_0(
// CHECK-NOT:     tl.load
// CHECK:         tl.extra.cuda.gdc_wait()
// CHECK-LABEL: def coil_read_1(
// CHECK-NOT:     tl.load
// CHECK:         tl.extra.cuda.gdc_wait()
// CHECK-LABEL: def coil_gather_2(
// CHECK-NOT:     tl.load
// CHECK:         tl.extra.cuda.gdc_wait()
// CHECK-NEXT:    tl.extra.cuda.gdc_launch_dependents()
// CHECK-NEXT:    t = tl.load(
// CHECK:         tl.load({{.*}})
// IR-LABEL:  func.func @cache
// IR:          host.launch @coil_kv_0 {{.*}} {num_warps = 4 : i64, num_stages = 1 : i64}
// IR:          host.launch @coil_read_1 {{.*}} launch_pdl = 1 : i64}
// IR:          host.launch @coil_gather_2 {{.*}} launch_pdl = 1 : i64}
func.func @cache(%kv: !buffer.buffer<[64], f32, device "cuda:0"> {coil.static}, %x: !buffer.buffer<[64], f32, device "cuda:0">, %emb: !buffer.buffer<[100, 8], f32, device "cuda:0"> {coil.static}, %ix: !buffer.buffer<[32], i64, device "cuda:0">) -> (!buffer.buffer<[64], f32, device "cuda:0">, !buffer.buffer<[32], f32, device "cuda:0">) {
  loop.pointwise [64] outs(%kv : !buffer.buffer<[64], f32, device "cuda:0">) {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[64], f32, device "cuda:0">
    loop.yield %0 : f32
  }
  %read = buffer.alloc : !buffer.buffer<[64], f32, device "cuda:0">
  loop.pointwise [64] outs(%read : !buffer.buffer<[64], f32, device "cuda:0">) {
  ^bb0(%i0: index):
    %0 = loop.load %kv[i0] : !buffer.buffer<[64], f32, device "cuda:0">
    %1 = arith.mulf %0, %0 : f32
    loop.yield %1 : f32
  }
  %gather = buffer.alloc : !buffer.buffer<[32], f32, device "cuda:0">
  loop.pointwise [32] outs(%gather : !buffer.buffer<[32], f32, device "cuda:0">) {
  ^bb0(%i0: index):
    %t = loop.load %ix[i0] : !buffer.buffer<[32], i64, device "cuda:0">
    %v = loop.load %emb[t0, 3] indirect(%t : i64) : !buffer.buffer<[100, 8], f32, device "cuda:0">
    loop.yield %v : f32
  }
  func.return %read, %gather : !buffer.buffer<[64], f32, device "cuda:0">, !buffer.buffer<[32], f32, device "cuda:0">
}

// -----

// host-combine-launches joins independent elementwise launches of one config:
// each sub-kernel keeps its own wait (and its static loads before it) in its
// branch; the combined launch keeps launch_pdl.
// COMBO-LABEL: def coil_combo_0(in_ptr0, in_ptr1, out_ptr2, in_ptr3, out_ptr4):
// COMBO:         if tmp{{[0-9]+}}:
// COMBO:           tl.load(
// COMBO-NEXT:      tl.extra.cuda.gdc_wait()
// COMBO:         if tmp{{[0-9]+}}:
// COMBO-NOT:       tl.load(
// COMBO:           tl.extra.cuda.gdc_wait()
// COMBO:       coil_x_0_launch = Launcher(globals(), "coil_x_0", {{.*}}checked=(0,))
// COMBO-NEXT:  coil_combo_0_launch = Launcher({{.*}}, pdl=True)
func.func @combo(%a: !buffer.buffer<[64], f32, device "cuda:0">, %b: !buffer.buffer<[128], f32, device "cuda:0">, %w: !buffer.buffer<[64], f32, device "cuda:0"> {coil.static}) -> (!buffer.buffer<[64], f32, device "cuda:0">, !buffer.buffer<[128], f32, device "cuda:0">) {
  %x = buffer.alloc : !buffer.buffer<[64], f32, device "cuda:0">
  loop.pointwise [64] outs(%x : !buffer.buffer<[64], f32, device "cuda:0">) {
  ^bb0(%i0: index):
    %0 = loop.load %a[i0] : !buffer.buffer<[64], f32, device "cuda:0">
    %1 = arith.addf %0, %0 : f32
    loop.yield %1 : f32
  }
  %y = buffer.alloc : !buffer.buffer<[64], f32, device "cuda:0">
  loop.pointwise [64] outs(%y : !buffer.buffer<[64], f32, device "cuda:0">) {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[64], f32, device "cuda:0">
    %1 = loop.load %w[i0] : !buffer.buffer<[64], f32, device "cuda:0">
    %2 = arith.addf %0, %1 : f32
    loop.yield %2 : f32
  }
  %z = buffer.alloc : !buffer.buffer<[128], f32, device "cuda:0">
  loop.pointwise [128] outs(%z : !buffer.buffer<[128], f32, device "cuda:0">) {
  ^bb0(%i0: index):
    %0 = loop.load %b[i0] : !buffer.buffer<[128], f32, device "cuda:0">
    %1 = arith.mulf %0, %0 : f32
    loop.yield %1 : f32
  }
  func.return %y, %z : !buffer.buffer<[64], f32, device "cuda:0">, !buffer.buffer<[128], f32, device "cuda:0">
}
