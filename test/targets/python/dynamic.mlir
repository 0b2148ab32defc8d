// RUN: fx-opt %s -t python | filecheck %s

// Size symbols are bound in order: an index argument with coil.symbol, then a
// size or stride of a tensor input that is exactly the symbol, then a symbol
// that only occurs in a linear size (solved), then -- right after the extern
// that makes it -- an unbacked size. Inputs are checked with the bound
// expressions (in Python only when they differ from an earlier call with the
// same sizes: InputGuard); views of an input keep its storage offset.

// buf0's storage offset (3 floats) is not 16-byte aligned: checked at launch.
// CHECK: coil_k_0_launch = Launcher(globals(), "coil_k_0", ("*float32", "*float32", "i64", "i64", "i64"), "cpu", 4, 1, checked=(0, 1))
// CHECK-LABEL: def call(args):
// CHECK:      n, x, y, z = args
// CHECK-NEXT: args.clear()
// CHECK-NEXT: s0 = n
// CHECK-NEXT: s1 = x.size(1)
// CHECK-NEXT: s3 = y.stride(0)
// CHECK-NEXT: s2 = (z.size(0) - 1) // 2
// CHECK-NEXT: if not _inputs.check((s0, s1, s2, s3), x, y, z):
// CHECK-NEXT:     check_input("x", x, (s0, s1), (s1, 1), torch.float32, "cpu")
// CHECK-NEXT:     check_input("y", y, (s0, 4), (s3, 1), torch.float32, "cpu")
// CHECK-NEXT:     check_input("z", z, (2*s2 + 1,), (1,), torch.int64, "cpu")
// CHECK-NEXT:     _inputs.learn((s0, s1, s2, s3), x, y, z)
// CHECK-NEXT: row = reinterpret_tensor(y, (4,), (1,), s3)
// CHECK-NEXT: del y
// CHECK-NEXT: nz = torch.ops.aten.nonzero.default(z)
// CHECK-NEXT: u0 = nz.size(0)
// CHECK-NEXT: del z
// CHECK-NEXT: buf0 = empty_cpu((s0*s1 + 3,), (1,), torch.float32).as_strided((s0, s1), (s1, 1), 3)
// CHECK-NEXT: tail = reinterpret_tensor(buf0, (u0,), (1,), max(s1, u0) % 5 - 3)
// CHECK-NEXT: seed = int(torch.randint(2**31 - 1, (), device="cpu"))
// CHECK-NEXT: stream = raw_stream("cpu")
// CHECK-NEXT: coil_k_0_launch.run(1, 1, 1, stream, x, buf0, seed, s0*s1, u0 // 2)
// CHECK-NEXT: del x
// CHECK-NEXT: return ((buf0, [row]), {'nz': nz, 'tail': tail}, 'tag')

!x = !buffer.buffer<[s0, s1], f32>
!y = !buffer.buffer<[s0, 4], f32, strides [s3, 1]>
!z = !buffer.buffer<[2*s2 + 1], i64>
!nz = !buffer.buffer<[u0, 1], i64>
!b = !buffer.buffer<[s0, s1], f32, offset 3>
builtin.module {
  tt.func public @coil_k_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %seed0: i64, %a: i64, %b: i64) {
    tt.return
  }
  host.func @forward(%n: index {coil.symbol = #coil.expr<s0>}, %x: !x, %y: !y, %z: !z) -> (!b, !buffer.buffer<[4], f32, offset s3>, !nz, !buffer.buffer<[u0], f32, offset max(s1, u0) mod 5>) attributes {coil.output_tree = "((0, [1]), {'nz': 2, 'tail': 3}, 'tag')"} {
    %row = host.reinterpret %y : !y -> !buffer.buffer<[4], f32, offset s3>
    %nz = host.extern "aten.nonzero.default" (%z) : (!z) -> (!nz) {
    ^bb0(%za: !aten.tensor<[2*s2 + 1], i64>):
      %r = aten.nonzero.default(%za) : !aten.tensor<[u0, 1], i64>
      host.yield %r : !aten.tensor<[u0, 1], i64>
    }
    %0 = host.empty_strided : !b
    %tail = host.reinterpret %0 : !b -> !buffer.buffer<[u0], f32, offset max(s1, u0) mod 5>
    %seed = host.seed : i64
    host.launch @coil_k_0 grid [1, 1, 1] (%x, %0, %seed : !x, !b, i64) scalars [s0*s1, u0 floordiv 2]
    host.return %0, %row, %nz, %tail : !b, !buffer.buffer<[4], f32, offset s3>, !nz, !buffer.buffer<[u0], f32, offset max(s1, u0) mod 5>
  }
}
