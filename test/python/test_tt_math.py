"""Math ops at the tt level (lowering/loop_to_tt/math.py), against torch in float64.

Each case builds a one-op kernel (load blocks, ``lower_math_op``, store), prints
it with ``-t triton``'s ``emit_kernels`` and runs it under Triton's interpreter
on CPU tensors: random values over the op's domain plus the special ones
(±0, ±inf, NaN, tiny, huge, exact halves).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from xdsl.dialects import arith as xarith
from xdsl.dialects.builtin import ModuleOp, f32, f64, i32, i64
from xdsl.ir import Attribute, Block, Operation, Region

from coil.dialects import tt
from coil.lowering.loop_to_tt.math import (
    CORE_OPS,
    LIBDEVICE,
    POLYFILLS,
    SUPPORTED,
    lower_math_op,
)
from coil.runtime.codecache import load_module
from coil.targets.triton import emit_kernels, header

BLOCK = 128

_ELEMENT = {torch.float32: f32, torch.float64: f64, torch.int32: i32, torch.int64: i64}


def build_kernel(name: str, in_elements: list[Attribute], out_element: Attribute, device: str):
    """``tt.func @k(in_ptr0.., out_ptr0)``: out[i] = math.<name>(in0[i], ...)."""
    ptrs = [tt.PointerType(e) for e in [*in_elements, out_element]]
    block = Block(arg_types=ptrs)
    ops: list[Operation] = []

    def add(op: Operation):
        ops.append(op)
        return op.results[0] if op.results else None

    pid = add(tt.GetProgramIdOp(0))
    start = add(xarith.MuliOp(pid, add(xarith.ConstantOp.from_int_and_width(BLOCK, i32))))
    index = add(xarith.AddiOp(add(tt.SplatOp(start, [BLOCK])), add(tt.MakeRangeOp(0, BLOCK))))

    def address(ptr):
        return add(tt.AddPtrOp(add(tt.SplatOp(ptr, [BLOCK])), index))

    values = [add(tt.LoadOp(address(p))) for p in block.args[:-1]]
    result = lower_math_op(name, values, tt.block_of(out_element, [BLOCK]), device, add)
    add(tt.StoreOp(address(block.args[-1]), result))
    add(tt.ReturnOp())
    block.add_ops(ops)
    kernel = tt.FuncOp("k", ptrs, region=Region(block), visibility="public")
    module = ModuleOp([kernel])
    module.verify()
    return module


def run(name: str, *inputs: torch.Tensor, out_dtype: torch.dtype | None = None) -> torch.Tensor:
    """math.<name> of ``inputs`` (1-D, same length, one device): through the
    interpreter on CPU tensors, compiled on CUDA ones."""
    out_dtype = out_dtype or inputs[0].dtype
    device = str(inputs[0].device)
    n = inputs[0].numel()
    padded = -(-n // BLOCK) * BLOCK
    args = [torch.cat([x, x[:1].expand(padded - n)]) for x in inputs]
    module = build_kernel(name, [_ELEMENT[x.dtype] for x in inputs], _ELEMENT[out_dtype], device)
    source = header(module) + "\n\n" + emit_kernels(module)
    generated = load_module(source, interpret=device == "cpu")
    out = torch.full((padded,), 12345, dtype=out_dtype, device=device)  # poison
    generated.k[(padded // BLOCK, 1, 1)](*args, out)
    return out[:n].cpu()


# ---- inputs --------------------------------------------------------------------------


def specials(dtype: torch.dtype) -> list[float]:
    info = torch.finfo(dtype)
    return [
        0.0,
        -0.0,
        math.inf,
        -math.inf,
        math.nan,
        info.tiny,
        -info.tiny,
        info.tiny * info.eps,  # smallest subnormal
        -info.tiny / 3,  # a subnormal
        1e-30 if dtype == torch.float32 else 1e-300,
        info.max,
        -info.max,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.5,
        -2.5,
        1.5,
        0.49999997 if dtype == torch.float32 else 0.49999999999999994,
    ]


def domain(lo: float, hi: float, dtype: torch.dtype, n: int = 2048) -> torch.Tensor:
    """Uniform on [lo, hi], log-uniform magnitudes over it and the special values."""
    g = torch.Generator().manual_seed(1)
    uniform = torch.rand(n, generator=g, dtype=torch.float64) * (hi - lo) + lo
    top = max(abs(lo), abs(hi))
    exponents = torch.rand(n, generator=g, dtype=torch.float64) * (math.log10(top) + 30) - 30
    signs = torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0).double()
    logs = (signs * 10.0**exponents).clamp(lo, hi)
    return torch.cat([uniform, logs, torch.tensor(specials(dtype), dtype=torch.float64)]).to(dtype)


UNARY = {
    # name: (torch reference, domain of the random part)
    "expm1": (torch.expm1, (-800.0, 709.0)),
    "log1p": (torch.log1p, (-1.0, 1e30)),
    "log10": (torch.log10, (0.0, 1e30)),
    "tanh": (torch.tanh, (-30.0, 30.0)),
    "sinh": (lambda x: torch.from_numpy(np.sinh(x.numpy())), (-720.0, 720.0)),
    "cosh": (lambda x: torch.from_numpy(np.cosh(x.numpy())), (-720.0, 720.0)),
    "tan": (torch.tan, (-100.0, 100.0)),
    "atan": (torch.atan, (-1e10, 1e10)),
    "asin": (torch.asin, (-1.0, 1.0)),
    "acos": (torch.acos, (-1.0, 1.0)),
    "asinh": (torch.asinh, (-1e30, 1e30)),
    "acosh": (torch.acosh, (1.0, 1e30)),
    "atanh": (torch.atanh, (-1.0, 1.0)),
    "cbrt": (lambda x: torch.from_numpy(np.cbrt(x.numpy())), (-1e30, 1e30)),
    "round": (lambda x: round_half_away(x), (-1e3, 1e3)),
    "roundeven": (torch.round, (-1e3, 1e3)),
    "trunc": (torch.trunc, (-1e3, 1e3)),
}
"""The polyfilled unary ops. numpy (libm) is the reference where torch is off: torch
has no cbrt (``|x| ** (1/3)`` is off by |log x| ulps), and its float64 sinh/cosh
overflow from |x| ~ 709.78 where the results (up to 1.8e308 at 710.47) still fit."""

TOLERANCE = {
    torch.float32: dict(rtol=2e-7, atol=1e-45),
    torch.float64: dict(rtol=4e-15, atol=5e-324),
}
"""float32 comes from a float64 computation: within an ulp. float64: a few ulps. An
absolute error of one subnormal is allowed: torch's float64 log1p flushes 5e-324 to 0."""


def reference(fn, *inputs: torch.Tensor) -> torch.Tensor:
    return fn(*[x.double() for x in inputs]).to(inputs[0].dtype)


def check(out: torch.Tensor, ref: torch.Tensor, rtol: float, atol: float) -> None:
    """Elementwise close (NaN where torch has NaN; signs of zeros and infinities equal)."""
    torch.testing.assert_close(out, ref, rtol=rtol, atol=atol, equal_nan=True)
    zeros = (ref == 0) & (out == 0)
    assert torch.equal(torch.signbit(out[zeros]), torch.signbit(ref[zeros])), "signed zero"


def round_half_away(x: torch.Tensor) -> torch.Tensor:
    """math.round; not floor(x + 0.5), which rounds 0.49999999999999994 up."""
    t = torch.trunc(x)
    return torch.where((x - t).abs() >= 0.5, t + torch.sign(x), t)


# ---- unary polyfills -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_polyfill(name: str, dtype: torch.dtype) -> None:
    fn, (lo, hi) = UNARY[name]
    x = domain(lo, hi, dtype)
    out = run(name, x)
    ref = reference(fn, x)
    check(out, ref, **TOLERANCE[dtype])


def test_round_half_away_exact_halves() -> None:
    x = torch.tensor([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.49999997, 8388607.5, 1e20])
    assert torch.equal(run("round", x), round_half_away(x.double()).float())


def test_roundeven_is_torch_round() -> None:
    x = torch.tensor([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, -0.3, 0.3, 4503599627370495.5, 1e300])
    assert torch.equal(run("roundeven", x.double()), torch.round(x.double()))


# ---- binary polyfills ----------------------------------------------------------------


def pairs(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Every value of ``a`` against every value of ``b``."""
    return a.repeat_interleave(b.numel()), b.repeat(a.numel())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_atan2(dtype: torch.dtype) -> None:
    v = torch.tensor(specials(dtype) + [3.0, -7.0, 1e-5, -1e10], dtype=dtype)
    y, x = pairs(v, v)
    g = torch.Generator().manual_seed(2)
    ry, rx = (
        torch.randn(4096, generator=g, dtype=dtype)
        * 10.0 ** torch.randint(-5, 5, (4096,), generator=g)
        for _ in range(2)
    )
    y, x = torch.cat([y, ry]), torch.cat([x, rx])
    check(run("atan2", y, x), reference(torch.atan2, y, x), **TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_copysign(dtype: torch.dtype) -> None:
    v = torch.tensor(specials(dtype), dtype=dtype)
    a, b = pairs(v, v)
    out = run("copysign", a, b)
    ref = torch.copysign(a, b)
    assert torch.equal(out.isnan(), ref.isnan())
    keep = ~ref.isnan()
    assert torch.equal(out[keep], ref[keep]) and torch.equal(out.signbit(), ref.signbit())


POW_BASES = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    2.0,
    -2.0,
    0.5,
    -0.5,
    3.7,
    -3.7,
    math.inf,
    -math.inf,
    math.nan,
    1e-3,
    10.0,
]
POW_EXPONENTS = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    2.0,
    -2.0,
    3.0,
    -3.0,
    0.5,
    -0.5,
    2.5,
    1e9 + 1,
    math.inf,
    -math.inf,
    math.nan,
    7.0,
    1e-8,
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_powf(dtype: torch.dtype) -> None:
    x, y = pairs(torch.tensor(POW_BASES, dtype=dtype), torch.tensor(POW_EXPONENTS, dtype=dtype))
    g = torch.Generator().manual_seed(3)
    rx = torch.rand(4096, generator=g, dtype=dtype) * 20.0 - 10.0
    ry = torch.rand(4096, generator=g, dtype=dtype) * 20.0 - 10.0
    x, y = torch.cat([x, rx]), torch.cat([y, ry])
    # float64's exp(y log|x|) loses |y log x| ulps; here |y log x| <= ~25.
    tol = TOLERANCE[dtype] if dtype == torch.float32 else dict(rtol=1e-14, atol=0.0)
    check(run("powf", x, y), reference(torch.pow, x, y), **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_fpowi(dtype: torch.dtype) -> None:
    n = torch.tensor(
        [0, 1, -1, 2, -2, 3, -3, 7, -7, 30, -31, 2**31 - 1, -(2**31)], dtype=torch.int32
    )
    x, n = pairs(torch.tensor(POW_BASES + [1.1, -1.1], dtype=dtype), n)
    out = run("fpowi", x, n, out_dtype=dtype)
    tol = TOLERANCE[dtype] if dtype == torch.float32 else dict(rtol=1e-13, atol=0.0)
    check(out, torch.pow(x.double(), n.double()).to(dtype), **tol)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=["i32", "i64"])
def test_ipowi(dtype: torch.dtype) -> None:
    x = torch.tensor([0, 1, -1, 2, -2, 3, -3, 7, 12345, -99], dtype=dtype)
    n = torch.tensor([0, 1, 2, 3, 5, 31, 62, 63, 100, -1, -2, -3], dtype=dtype)
    x, n = pairs(x, n)
    expected = torch.tensor([_int_pow(int(a), int(b), dtype) for a, b in zip(x, n)], dtype=dtype)
    assert torch.equal(run("ipowi", x, n), expected)


def _int_pow(a: int, b: int, dtype: torch.dtype) -> int:
    """torch's integer pow: wraps around; a negative exponent gives 1/a truncated."""
    if b < 0:
        return 1 if a == 1 else (-1 if b % 2 else 1) if a == -1 else 0
    bits = torch.iinfo(dtype).bits
    r = pow(a, b, 1 << bits)
    return r - (1 << bits) if r >= 1 << (bits - 1) else r


# ---- core ops and devices ------------------------------------------------------------


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "erf", "floor", "absf"])
def test_core_ops_stay_math(name: str) -> None:
    module = build_kernel(name, [f32], f32, "cpu")
    names = [op.name for op in module.walk()]
    assert f"math.{name}" in names and "tt.extern_elementwise" not in names
    x = domain(0.0 if name in ("log", "sqrt") else -10.0, 10.0, torch.float32)
    fn = {"absf": torch.abs}.get(name) or getattr(torch, name)
    check(run(name, x), reference(fn, x), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(LIBDEVICE))
def test_cuda_uses_libdevice(name: str) -> None:
    arity = 2 if name in ("atan2", "powf", "copysign", "fpowi") else 1
    inputs = [f32] * arity if name != "fpowi" else [f32, i32]
    module = build_kernel(name, inputs, f32, "cuda:0")
    externs = [op for op in module.walk() if isinstance(op, tt.ExternElementwiseOp)]
    assert len(externs) == 1
    assert not any(op.name == "arith.extf" for op in module.walk())
    assert externs[0].symbol.data == LIBDEVICE[name] and externs[0].libname.data == "libdevice"
    assert "libdevice." + LIBDEVICE[name] in emit_kernels(module)


def test_cpu_never_uses_libdevice() -> None:
    for name in POLYFILLS:
        arity = 2 if name in ("atan2", "powf", "copysign", "fpowi") else 1
        inputs = [f64] * arity if name != "fpowi" else [f64, i32]
        module = build_kernel(name, inputs, f64, "cpu")
        assert not any(isinstance(op, tt.ExternElementwiseOp) for op in module.walk()), name


def test_every_loop_math_op_is_covered() -> None:
    from coil.runtime.loop_executor import _BINARY, _UNARY

    loop_math = {k.removeprefix("math.") for k in [*_UNARY, *_BINARY] if k.startswith("math.")}
    assert loop_math <= SUPPORTED, loop_math - SUPPORTED
    assert set(LIBDEVICE) == set(POLYFILLS) and not set(CORE_OPS) & set(POLYFILLS)


def test_unsupported_op_says_so() -> None:
    with pytest.raises(NotImplementedError, match="math.ctlz"):
        build_kernel("ctlz", [i32], i32, "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_cuda_libdevice_unary(name: str, dtype: torch.dtype) -> None:
    """The CUDA path compiles and libdevice agrees with torch (a few ulps)."""
    fn, (lo, hi) = UNARY[name]
    x = domain(lo, hi, dtype)
    out = run(name, x.cuda())
    tol = dict(rtol=2e-6, atol=1e-37) if dtype == torch.float32 else dict(rtol=1e-14, atol=1e-300)
    check(out, reference(fn, x), **tol)


@pytest.mark.gpu
def test_cuda_libdevice_binary() -> None:
    x, y = pairs(torch.tensor(POW_BASES), torch.tensor(POW_EXPONENTS))
    tol = dict(rtol=2e-6, atol=1e-37)
    check(run("powf", x.cuda(), y.cuda()), reference(torch.pow, x, y), **tol)
    check(run("atan2", x.cuda(), y.cuda()), reference(torch.atan2, x, y), **tol)
    check(run("copysign", x.cuda(), y.cuda()), torch.copysign(x, y), rtol=0, atol=0)
    n = torch.tensor([0, 1, -1, 2, -3, 7, 30], dtype=torch.int32)
    xb, n = pairs(torch.tensor(POW_BASES), n)
    check(run("fpowi", xb.cuda(), n.cuda()), reference(torch.pow, xb, n.double()), **tol)
