// RUN: fx-opt %s -t triton | filecheck %s

// A masked pointwise kernel: header, decorator with the size symbol, the
// widening of s0, one assignment per op, inlined i32 literals and load `other`.

// CHECK:      import triton
// CHECK-NEXT: import triton.language as tl
// CHECK-NOT:  libdevice

// CHECK-LABEL: # kind: pointwise
// CHECK-NEXT:  # fused from: model.py:3, model.py:4
// CHECK-NEXT:  @triton.jit(do_not_specialize=["s0"])
// CHECK-NEXT:  def coil_add_0(in_ptr0, out_ptr0, s0):
// CHECK-NEXT:      s0 = s0.to(tl.int64)
// CHECK-NEXT:      pid = tl.program_id(0)
// CHECK-NEXT:      off = pid * 128
// CHECK-NEXT:      range_ = tl.arange(0, 128)
// CHECK-NEXT:      base = tl.full([128], off, tl.int32)
// CHECK-NEXT:      x = base + range_
// CHECK-NEXT:      x64 = x.to(tl.int64)
// CHECK-NEXT:      n = tl.full([128], s0, tl.int64)
// CHECK-NEXT:      m = x64 < n
// CHECK-NEXT:      p = in_ptr0 + tl.zeros([128], tl.int32)
// CHECK-NEXT:      a = p + x
// CHECK-NEXT:      v = tl.load(a, m, other=0.0)
// CHECK-NEXT:      e = tl.exp(v)
// CHECK-NEXT:      c = tl.maximum(e, v, propagate_nan=tl.PropagateNan.ALL)
// CHECK-NEXT:      h = c.to(tl.float16)
// CHECK-NEXT:      tmp0 = tl.exp(h.to(tl.float32)).to(tl.float16)
// CHECK-NEXT:      f = tmp0.to(tl.float32)
// CHECK-NEXT:      big = tl.full([], 4294967296, tl.int64)
// CHECK-NEXT:      inf = tl.full([], float("-inf"), tl.float32)
// CHECK-NEXT:      infs = tl.full([128], inf, tl.float32)
// CHECK-NEXT:      g = tl.where(m, f, infs)
// CHECK-NEXT:      un = ~(g >= v)
// CHECK-NEXT:      o = out_ptr0 + tl.zeros([128], tl.int32)
// CHECK-NEXT:      oa = o + x
// CHECK-NEXT:      tl.store(oa, g, m)
// CHECK-NOT:       return

builtin.module {
  tt.func public @coil_add_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %s0: i64)
      attributes {coil.kind = "pointwise", coil.source_lines = ["model.py:3", "model.py:4"]} {
    %pid = tt.get_program_id x : i32
    %c128 = arith.constant 128 : i32
    %off = arith.muli %pid, %c128 : i32
    %range = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %base = tt.splat %off : i32 -> tensor<128xi32>
    %x = arith.addi %base, %range : tensor<128xi32>
    %x64 = arith.extsi %x : tensor<128xi32> to tensor<128xi64>
    %n = tt.splat %s0 : i64 -> tensor<128xi64>
    %m = arith.cmpi slt, %x64, %n : tensor<128xi64>
    %p = tt.splat %in_ptr0 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %a = tt.addptr %p, %x : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %z = arith.constant dense<0.0> : tensor<128xf32>
    %v = tt.load %a, %m, %z : tensor<128x!tt.ptr<f32>>
    %e = math.exp %v : tensor<128xf32>
    %c = arith.maximumf %e, %v : tensor<128xf32>
    %h = arith.truncf %c : tensor<128xf32> to tensor<128xf16>
    %0 = math.exp %h : tensor<128xf16>
    %f = arith.extf %0 : tensor<128xf16> to tensor<128xf32>
    %big = arith.constant 4294967296 : i64
    %inf = arith.constant 0xFF800000 : f32
    %infs = tt.splat %inf : f32 -> tensor<128xf32>
    %g = arith.select %m, %f, %infs : tensor<128xi1>, tensor<128xf32>
    %un = arith.cmpf ult, %g, %v : tensor<128xf32>
    %o = tt.splat %out_ptr0 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %oa = tt.addptr %o, %x : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    tt.store %oa, %g, %m : tensor<128x!tt.ptr<f32>>
    tt.return
  }
}
