"""``-t triton``: the emitted ``@triton.jit`` source, run under Triton's interpreter
on CPU tensors and compared with torch."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from coil.ir import parse_module
from coil.runtime.codecache import load_module
from coil.targets.triton import KernelPrinter, emit_kernels, header

pytest.importorskip("triton")


def load(ir: str, **printer_options):
    """Print ``ir``'s kernels and import them through the code cache, interpreted."""
    module = parse_module(ir)
    source = header(module) + "\n\n" + KernelPrinter(module, **printer_options).print_module()
    mod = load_module(source, interpret=True)
    mod.SOURCE = source
    return mod


def close(out: torch.Tensor, ref: torch.Tensor) -> None:
    out64, ref64 = out.double(), ref.double()
    assert (out64 - ref64).norm() / ref64.norm() < 1e-5
    torch.testing.assert_close(out, ref)


POINTWISE = """
builtin.module {
  tt.func public @coil_add_0(%in_ptr0: !tt.ptr<f32>, %in_ptr1: !tt.ptr<f32>,
      %out_ptr0: !tt.ptr<f32>, %s0: i64)
      attributes {coil.kind = "pointwise", coil.source_lines = ["model.py:3"]} {
    %pid = tt.get_program_id x : i32
    %c128 = arith.constant 128 : i32
    %off = arith.muli %pid, %c128 : i32
    %range = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %base = tt.splat %off : i32 -> tensor<128xi32>
    %x = arith.addi %base, %range : tensor<128xi32>
    %x64 = arith.extsi %x : tensor<128xi32> to tensor<128xi64>
    %n = tt.splat %s0 : i64 -> tensor<128xi64>
    %m = arith.cmpi slt, %x64, %n : tensor<128xi64>
    %pa = tt.splat %in_ptr0 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %aa = tt.addptr %pa, %x : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %pb = tt.splat %in_ptr1 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %ab = tt.addptr %pb, %x : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %z = arith.constant dense<0.0> : tensor<128xf32>
    %a = tt.load %aa, %m, %z : tensor<128x!tt.ptr<f32>>
    %b = tt.load %ab, %m, %z : tensor<128x!tt.ptr<f32>>
    %sum = arith.addf %a, %b : tensor<128xf32>
    %po = tt.splat %out_ptr0 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %ao = tt.addptr %po, %x : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    tt.store %ao, %sum, %m : tensor<128x!tt.ptr<f32>>
    tt.return
  }
}
"""


def test_masked_pointwise_add():
    mod = load(POINTWISE)
    assert '@triton.jit(do_not_specialize=["s0"])' in mod.SOURCE
    assert "# fused from: model.py:3" in mod.SOURCE
    n = 300
    a, b = torch.randn(n), torch.randn(n)
    out = torch.full((n + 84,), float("nan"))  # poison, and a tail the mask must protect
    mod.coil_add_0[(3, 1, 1)](a, b, out, n)
    close(out[:n], a + b)
    assert out[n:].isnan().all()


def _rows_ir(combiner: str, elem: str = "f32") -> str:
    """A [R, 64] row reduction of a contiguous [R, 64] input into out[R]: one program
    per block of 4 rows."""
    return f"""
builtin.module {{
  tt.func public @coil_rows_0(%in_ptr0: !tt.ptr<{elem}>, %out_ptr0: !tt.ptr<{elem}>) {{
    %pid = tt.get_program_id x : i32
    %c4 = arith.constant 4 : i32
    %row0 = arith.muli %pid, %c4 : i32
    %r = tt.make_range {{end = 4 : i32, start = 0 : i32}} : tensor<4xi32>
    %rb = tt.splat %row0 : i32 -> tensor<4xi32>
    %rows = arith.addi %rb, %r : tensor<4xi32>
    %c = tt.make_range {{end = 64 : i32, start = 0 : i32}} : tensor<64xi32>
    %rows2 = tt.expand_dims %rows {{axis = 1 : i32}} : tensor<4xi32> -> tensor<4x1xi32>
    %c64 = arith.constant dense<64> : tensor<4x1xi32>
    %rowoff = arith.muli %rows2, %c64 : tensor<4x1xi32>
    %rowoffb = tt.broadcast %rowoff : tensor<4x1xi32> -> tensor<4x64xi32>
    %cols2 = tt.expand_dims %c {{axis = 0 : i32}} : tensor<64xi32> -> tensor<1x64xi32>
    %colsb = tt.broadcast %cols2 : tensor<1x64xi32> -> tensor<4x64xi32>
    %idx = arith.addi %rowoffb, %colsb : tensor<4x64xi32>
    %p = tt.splat %in_ptr0 : !tt.ptr<{elem}> -> tensor<4x64x!tt.ptr<{elem}>>
    %pa = tt.addptr %p, %idx : tensor<4x64x!tt.ptr<{elem}>>, tensor<4x64xi32>
    %v = tt.load %pa : tensor<4x64x!tt.ptr<{elem}>>
    %s = "tt.reduce"(%v) <{{axis = 1 : i32}}> ({{
    ^bb0(%l: {elem}, %rr: {elem}):
{combiner}
    }}) : (tensor<4x64x{elem}>) -> tensor<4x{elem}>
    %o = tt.splat %out_ptr0 : !tt.ptr<{elem}> -> tensor<4x!tt.ptr<{elem}>>
    %oa = tt.addptr %o, %rows : tensor<4x!tt.ptr<{elem}>>, tensor<4xi32>
    tt.store %oa, %s : tensor<4x!tt.ptr<{elem}>>
    tt.return
  }}
}}
"""


ADD_COMBINER = """      %q = arith.addf %l, %rr : f32
      tt.reduce.return %q : f32"""


@pytest.mark.parametrize("sum_shortcut", [True, False])
def test_row_sum_reduce(sum_shortcut):
    mod = load(_rows_ir(ADD_COMBINER), sum_shortcut=sum_shortcut)
    if sum_shortcut:
        assert "tl.sum(v, 1)" in mod.SOURCE
    else:
        assert "def coil_rows_0_combine0(a0, b0):" in mod.SOURCE
        assert "tl.reduce(v, 1, coil_rows_0_combine0)" in mod.SOURCE
    x = torch.randn(8, 64)
    out = torch.full((8,), float("nan"))
    mod.coil_rows_0[(2, 1, 1)](x, out)
    close(out, x.sum(1))


def test_row_max_reduce_outlined():
    combiner = """      %q = arith.maxnumf %l, %rr : f32
      tt.reduce.return %q : f32"""
    mod = load(_rows_ir(combiner))
    assert "return q" in mod.SOURCE
    x = torch.randn(8, 64)
    out = torch.full((8,), float("nan"))
    mod.coil_rows_0[(2, 1, 1)](x, out)
    torch.testing.assert_close(out, x.amax(1))


ARGMAX = """
builtin.module {
  tt.func public @coil_argmax_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<i32>,
      %out_ptr1: !tt.ptr<f32>) {
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %p = tt.splat %in_ptr0 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %pa = tt.addptr %p, %r : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %v = tt.load %pa : tensor<128x!tt.ptr<f32>>
    %best, %where = "tt.reduce"(%v, %r) <{axis = 0 : i32}> ({
    ^bb0(%va: f32, %ia: i32, %vb: f32, %ib: i32):
      %gt = arith.cmpf ogt, %va, %vb : f32
      %eq = arith.cmpf oeq, %va, %vb : f32
      %lt = arith.cmpi slt, %ia, %ib : i32
      %tie = arith.andi %eq, %lt : i1
      %take = arith.ori %gt, %tie : i1
      %v2 = arith.select %take, %va, %vb : f32
      %i2 = arith.select %take, %ia, %ib : i32
      tt.reduce.return %v2, %i2 : f32, i32
    }) : (tensor<128xf32>, tensor<128xi32>) -> (f32, i32)
    tt.store %out_ptr0, %where : !tt.ptr<i32>
    tt.store %out_ptr1, %best : !tt.ptr<f32>
    tt.return
  }
}
"""


def test_argmax_two_operand_reduce():
    mod = load(ARGMAX)
    assert "best, where = tl.reduce((v, r), 0, coil_argmax_0_combine0)" in mod.SOURCE
    assert "def coil_argmax_0_combine0(a0, a1, b0, b1):" in mod.SOURCE
    x = torch.randn(128)
    x[77] = x.max() + 1
    x[99] = x[77]  # a tie: the first index wins
    idx = torch.full((1,), -1, dtype=torch.int32)
    val = torch.full((1,), float("nan"))
    mod.coil_argmax_0[(1, 1, 1)](x, idx, val)
    assert idx.item() == 77 == x.argmax().item()
    assert val.item() == x.max().item()


LOOP = """
builtin.module {
  tt.func public @coil_sum_0(%in_ptr0: !tt.ptr<f32>, %out_ptr0: !tt.ptr<f32>, %s0: i64) {
    %pid = tt.get_program_id x : i32
    %pid64 = arith.extsi %pid : i32 to i64
    %rowbase = arith.muli %pid64, %s0 : i64
    %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %r64 = arith.extsi %r : tensor<32xi32> to tensor<32xi64>
    %zero = arith.constant dense<0.0> : tensor<32xf32>
    %c0 = arith.constant 0 : i64
    %c32 = arith.constant 32 : i64
    %acc = scf.for %k = %c0 to %s0 step %c32 iter_args(%a = %zero) -> (tensor<32xf32>) : i64 {
      %base = arith.addi %rowbase, %k : i64
      %bs = tt.splat %base : i64 -> tensor<32xi64>
      %idx = arith.addi %bs, %r64 : tensor<32xi64>
      %ks = tt.splat %k : i64 -> tensor<32xi64>
      %col = arith.addi %ks, %r64 : tensor<32xi64>
      %n = tt.splat %s0 : i64 -> tensor<32xi64>
      %m = arith.cmpi slt, %col, %n : tensor<32xi64>
      %p = tt.splat %in_ptr0 : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
      %pa = tt.addptr %p, %idx : tensor<32x!tt.ptr<f32>>, tensor<32xi64>
      %v = tt.load %pa, %m, %zero : tensor<32x!tt.ptr<f32>>
      %a2 = arith.addf %a, %v : tensor<32xf32>
      scf.yield %a2 : tensor<32xf32>
    }
    %total = "tt.reduce"(%acc) <{axis = 0 : i32}> ({
    ^bb0(%l: f32, %rr: f32):
      %q = arith.addf %l, %rr : f32
      tt.reduce.return %q : f32
    }) : (tensor<32xf32>) -> f32
    %o = tt.addptr %out_ptr0, %pid : !tt.ptr<f32>, i32
    tt.store %o, %total : !tt.ptr<f32>
    tt.return
  }
}
"""


def test_scf_for_looped_sum():
    mod = load(LOOP)
    assert "for k in range(c0, s0, c32):" in mod.SOURCE
    x = torch.randn(5, 200)
    out = torch.full((5,), float("nan"))
    mod.coil_sum_0[(5, 1, 1)](x, out, 200)
    close(out, x.sum(1))


INT_OPS = ["divsi", "remsi", "floordivsi", "ceildivsi", "divui", "remui", "shrsi", "shrui"]


def _intdiv_ir() -> str:
    lines = [
        "builtin.module {",
        "  tt.func public @coil_div_0(%in_ptr0: !tt.ptr<i32>, %in_ptr1: !tt.ptr<i32>, "
        + ", ".join(f"%out_ptr{i}: !tt.ptr<i32>" for i in range(len(INT_OPS)))
        + ") {",
        "    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>",
        "    %pa = tt.splat %in_ptr0 : !tt.ptr<i32> -> tensor<16x!tt.ptr<i32>>",
        "    %aa = tt.addptr %pa, %r : tensor<16x!tt.ptr<i32>>, tensor<16xi32>",
        "    %pb = tt.splat %in_ptr1 : !tt.ptr<i32> -> tensor<16x!tt.ptr<i32>>",
        "    %ab = tt.addptr %pb, %r : tensor<16x!tt.ptr<i32>>, tensor<16xi32>",
        "    %a = tt.load %aa : tensor<16x!tt.ptr<i32>>",
        "    %b = tt.load %ab : tensor<16x!tt.ptr<i32>>",
    ]
    for i, name in enumerate(INT_OPS):
        lines += [
            f"    %{name} = arith.{name} %a, %b : tensor<16xi32>",
            f"    %po{i} = tt.splat %out_ptr{i} : !tt.ptr<i32> -> tensor<16x!tt.ptr<i32>>",
            f"    %ao{i} = tt.addptr %po{i}, %r : tensor<16x!tt.ptr<i32>>, tensor<16xi32>",
            f"    tt.store %ao{i}, %{name} : tensor<16x!tt.ptr<i32>>",
        ]
    lines += ["    tt.return", "  }", "}"]
    return "\n".join(lines)


def _arith_reference(name: str, a: int, b: int) -> int:
    """MLIR arith's semantics on i32 values, in Python integers."""
    u = lambda v: v & 0xFFFFFFFF  # noqa: E731
    s = lambda v: v - (1 << 32) if v & 0x80000000 else v  # noqa: E731
    trunc = int(a / b) if abs(a) < 2**52 else None
    return {
        "divsi": trunc,
        "remsi": a - b * trunc,
        "floordivsi": a // b,
        "ceildivsi": -(-a // b),
        "divui": s(u(a) // u(b)),
        "remui": s(u(a) % u(b)),
        "shrsi": a >> (b & 31) if 0 <= b < 32 else None,
        "shrui": s(u(a) >> b) if 0 <= b < 32 else None,
    }[name]


def test_integer_division_semantics():
    mod = load(_intdiv_ir())
    a = torch.tensor([7, -7, 7, -7, 6, -6, 0, 9, -9, 1, -1, 100, -100, 5, -5, 2**31 - 1])
    b = torch.tensor([2, 2, -2, -2, 3, 3, 3, -4, 4, 3, 3, 7, 7, 1, 1, 2])
    a, b = a.to(torch.int32), b.to(torch.int32)
    outs = [torch.full((16,), -12345, dtype=torch.int32) for _ in INT_OPS]
    mod.coil_div_0[(1, 1, 1)](a, b, *outs)
    for name, out in zip(INT_OPS, outs):
        for i in range(16):
            want = _arith_reference(name, int(a[i]), int(b[i]))
            if want is not None:
                assert int(out[i]) == want, (name, int(a[i]), int(b[i]))


NANMAX = """
builtin.module {
  tt.func public @coil_max_0(%in_ptr0: !tt.ptr<f32>, %in_ptr1: !tt.ptr<f32>,
      %out_ptr0: !tt.ptr<f32>, %out_ptr1: !tt.ptr<f32>, %out_ptr2: !tt.ptr<f32>) {
    %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
    %pa = tt.splat %in_ptr0 : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
    %aa = tt.addptr %pa, %r : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
    %pb = tt.splat %in_ptr1 : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
    %ab = tt.addptr %pb, %r : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
    %a = tt.load %aa : tensor<8x!tt.ptr<f32>>
    %b = tt.load %ab : tensor<8x!tt.ptr<f32>>
    %x = arith.maximumf %a, %b : tensor<8xf32>
    %y = arith.minimumf %a, %b : tensor<8xf32>
    %inf = arith.constant 0x7F800000 : f32
    %infs = tt.splat %inf : f32 -> tensor<8xf32>
    %z = arith.minnumf %a, %infs : tensor<8xf32>
    %p0 = tt.splat %out_ptr0 : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
    %a0 = tt.addptr %p0, %r : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
    tt.store %a0, %x : tensor<8x!tt.ptr<f32>>
    %p1 = tt.splat %out_ptr1 : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
    %a1 = tt.addptr %p1, %r : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
    tt.store %a1, %y : tensor<8x!tt.ptr<f32>>
    %p2 = tt.splat %out_ptr2 : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
    %a2 = tt.addptr %p2, %r : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
    tt.store %a2, %z : tensor<8x!tt.ptr<f32>>
    tt.return
  }
}
"""


def test_maximumf_propagates_nan():
    mod = load(NANMAX)
    assert 'tl.full([], float("inf"), tl.float32)' in mod.SOURCE
    nan = float("nan")
    a = torch.tensor([1.0, nan, 3.0, nan, -1.0, 2.0, -0.5, 4.0])
    b = torch.tensor([2.0, 1.0, nan, nan, -2.0, 2.0, 0.5, -4.0])
    x, y, z = (torch.zeros(8) for _ in range(3))
    mod.coil_max_0[(1, 1, 1)](a, b, x, y, z)
    torch.testing.assert_close(x, torch.maximum(a, b), equal_nan=True)
    torch.testing.assert_close(y, torch.minimum(a, b), equal_nan=True)
    # minnumf ignores a NaN operand: min(nan, inf) is inf.
    torch.testing.assert_close(z, torch.where(a.isnan(), math.inf, a))


RAND = """
builtin.module {
  tt.func public @coil_rand_0(%out_ptr0: !tt.ptr<f32>, %seed0: i64) {
    %pid = tt.get_program_id x : i32
    %c64 = arith.constant 64 : i32
    %off = arith.muli %pid, %c64 : i32
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %base = tt.splat %off : i32 -> tensor<64xi32>
    %x = arith.addi %base, %r : tensor<64xi32>
    %v = tt.call @"tl.rand"(%seed0, %x) : (i64, tensor<64xi32>) -> tensor<64xf32>
    %p = tt.splat %out_ptr0 : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %a = tt.addptr %p, %x : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %a, %v : tensor<64x!tt.ptr<f32>>
    tt.return
  }
}
"""


def test_rand_reproducible():
    mod = load(RAND)
    assert "v = tl.rand(seed0, x)" in mod.SOURCE

    def run(seed):
        out = torch.full((256,), float("nan"))
        mod.coil_rand_0[(4, 1, 1)](out, seed)
        return out

    a, b, c = run(1234), run(1234), run(99)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    assert ((a >= 0) & (a < 1)).all()
    assert 0.4 < a.mean().item() < 0.6


def test_no_kernels_is_a_sentence():
    from xdsl.utils.exceptions import DiagnosticException

    module = parse_module("builtin.module {\n  func.func @f() {\n    func.return\n  }\n}")
    with pytest.raises(DiagnosticException, match="expects tt.func kernels"):
        emit_kernels(module)


def test_scf_for_and_if_from_lit_case():
    ir = (Path(__file__).parents[1] / "targets" / "triton" / "loop.mlir").read_text()
    mod = load(ir)
    x = torch.randn(96)
    out = torch.full((1,), float("nan"))
    mod.coil_loop_0[(1, 1, 1)](x, out, 96)
    close(out, x.sum().reshape(1))
    mod.coil_loop_0[(1, 1, 1)](x, out, 0)  # no iteration: the else branch
    assert out.item() == 0.0
