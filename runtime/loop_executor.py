"""The reference executor for the loop and buffer levels.

Each loop nest is evaluated *vectorized* with torch: the iteration domain is a
grid of broadcast ``arange`` index tensors, every body op maps to one torch
call over the whole grid, a reduction reduces the grid's trailing reduction
dimensions. The semantics are the dialects' own (an index expression reads the
logical element, a masked load reads 0 where masked off, an indirect index out
of bounds is an error), so any module at these levels -- or a mix of levels --
runs on real tensors, and each pass can be checked by running the IR before
and after it on the same inputs.

Buffers are torch tensors with the buffer's layout over real storage
(``as_strided``): allocations are poisoned (NaN, or a sentinel integer) so an
element nobody wrote shows in the results, views and reuses share storage, and
a deallocated buffer is poisoned and cannot be read again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import sympy
import torch
from torch.utils._sympy.functions import FloorDiv, ModularIndexing, PythonMod
from torch.utils._sympy.functions import Max as TorchMax
from torch.utils._sympy.functions import Min as TorchMin
from torch.utils._sympy.functions import Mod as TorchMod
from xdsl.dialects import arith, builtin
from xdsl.ir import Operation, SSAValue

from coil.dialects import buffer as B
from coil.dialects import dtypes
from coil.dialects import host as H
from coil.dialects import loop as L
from coil.dialects.layout import view_address
from coil.runtime.execution import ExecutionError
from coil.transforms.extern_effects import storage_roots

Env = Any  # runtime.aten_executor._Env (values, symbols, evaluate, execute_block)


# --------------------------------------------------------------------------
# Index expressions -> torch
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _compile(expr: sympy.Expr) -> Callable[[dict], Any]:
    """A function evaluating ``expr`` on a binding of its symbols to ints or
    int64 tensors (floor division and modulo with Python's signs, as sympy)."""
    if expr.is_Integer:
        value = int(expr)
        return lambda env: value
    if expr.is_Symbol:
        name = expr

        def sym(env):
            try:
                return env[name]
            except KeyError:
                raise ExecutionError(f"symbol {name} is not bound") from None

        return sym
    args = [_compile(a) for a in expr.args]
    if isinstance(expr, sympy.Add):
        return lambda env: functools.reduce(lambda x, y: x + y, (f(env) for f in args))
    if isinstance(expr, sympy.Mul):
        return lambda env: functools.reduce(lambda x, y: x * y, (f(env) for f in args))
    if isinstance(expr, sympy.Pow) and expr.args[1].is_Integer and int(expr.args[1]) >= 0:
        base, n = args[0], int(expr.args[1])
        return lambda env: base(env) ** n
    if isinstance(expr, FloorDiv):
        a, b = args
        return lambda env: a(env) // b(env)
    if isinstance(expr, PythonMod | TorchMod | sympy.Mod):
        a, b = args
        return lambda env: a(env) % b(env)
    if isinstance(expr, ModularIndexing):
        a, b, c = args
        return lambda env: (a(env) // b(env)) % c(env)
    if isinstance(expr, TorchMax | sympy.Max | TorchMin | sympy.Min):
        pick = torch.maximum if isinstance(expr, TorchMax | sympy.Max) else torch.minimum
        builtin_pick = max if pick is torch.maximum else min

        def extremum(env):
            vals = [f(env) for f in args]
            if any(isinstance(v, torch.Tensor) for v in vals):
                vals = [torch.as_tensor(v) for v in vals]
                return functools.reduce(pick, vals)
            return builtin_pick(vals)

        return extremum
    raise ExecutionError(f"cannot evaluate index expression {expr}")


def evaluate_index(expr: sympy.Expr, binding: dict) -> Any:
    return _compile(expr)(binding)


# --------------------------------------------------------------------------
# Random numbers: a counter-based hash (splitmix64) of (seed, offset)
# --------------------------------------------------------------------------

_MASK64 = (1 << 64) - 1


def _to_i64(x: int) -> int:
    x &= _MASK64
    return x - (1 << 64) if x >= 1 << 63 else x


_GOLDEN = _to_i64(0x9E3779B97F4A7C15)
_M1 = _to_i64(0xBF58476D1CE4E5B9)
_M2 = _to_i64(0x94D049BB133111EB)


def _srl(x: torch.Tensor, n: int) -> torch.Tensor:
    """Logical right shift of int64 values."""
    return (x >> n) & ((1 << (64 - n)) - 1)


def _splitmix(x: torch.Tensor) -> torch.Tensor:
    # int64 multiplication wraps around, as the 64-bit unsigned original does.
    z = (x ^ _srl(x, 30)) * _M1
    z = (z ^ _srl(z, 27)) * _M2
    return z ^ _srl(z, 31)


def _bits(seed: torch.Tensor | int, offset: torch.Tensor) -> torch.Tensor:
    """64 random bits (int64) per (seed, offset) counter."""
    x = torch.as_tensor(offset, dtype=torch.int64) + torch.as_tensor(seed, dtype=torch.int64) * (
        _GOLDEN
    )
    return _splitmix(x)


def uniform(seed: torch.Tensor | int, offset: torch.Tensor) -> torch.Tensor:
    """Uniform [0, 1) float32 numbers, one per (seed, offset) counter."""
    bits = _srl(_bits(seed, offset), 40)  # top 24 bits
    return bits.to(torch.float32) * (1.0 / (1 << 24))


def normal(seed: torch.Tensor | int, offset: torch.Tensor) -> torch.Tensor:
    """Standard normal float32 numbers (Box-Muller on two uniforms). Both come
    from the one counter ``offset`` (top and low 24 bits of its hash), so a
    normal draw consumes the same counters as a uniform one: ops given disjoint
    offsets draw independent streams."""
    bits = _bits(seed, offset)
    scale = 1.0 / (1 << 24)
    u1 = _srl(bits, 40).to(torch.float32) * scale
    u2 = (bits & ((1 << 24) - 1)).to(torch.float32) * scale
    radius = torch.sqrt(-2.0 * torch.log1p(-u1))  # 1 - u1 in (0, 1]
    return radius * torch.cos(2.0 * torch.pi * u2)


# --------------------------------------------------------------------------
# Body ops
# --------------------------------------------------------------------------


def _torch_dtype(t) -> torch.dtype:
    if isinstance(t, builtin.IndexType):
        return torch.int64
    return dtypes.to_torch(t)


def _cmpf(pred: str, a, b):
    nan = torch.isnan(a) | torch.isnan(b)
    base = pred[1:]
    result = {
        "eq": a == b,
        "ne": a != b,
        "lt": a < b,
        "le": a <= b,
        "gt": a > b,
        "ge": a >= b,
    }.get(base)
    if pred == "ord":
        return ~nan
    if pred == "uno":
        return nan
    if pred == "true":
        return torch.ones_like(nan)
    if pred == "false":
        return torch.zeros_like(nan)
    if pred.startswith("o"):
        return result & ~nan
    return result | nan


def _unsigned(x: torch.Tensor, bits: int) -> torch.Tensor:
    if x.dtype == torch.bool:
        return x.to(torch.int64)
    return x.to(torch.int64) & ((1 << bits) - 1) if bits < 64 else x.to(torch.int64)


def _cmpi(pred: str, a, b, bits: int):
    if pred.startswith("u") and a.dtype != torch.bool:
        a, b = _unsigned(a, bits), _unsigned(b, bits)
    return {
        "eq": torch.eq,
        "ne": torch.ne,
        "slt": torch.lt,
        "sle": torch.le,
        "sgt": torch.gt,
        "sge": torch.ge,
        "ult": torch.lt,
        "ule": torch.le,
        "ugt": torch.gt,
        "uge": torch.ge,
    }[pred](a, b)


_CMPF_NAMES = arith.CMPF_COMPARISON_OPERATIONS
_CMPI_NAMES = arith.CMPI_COMPARISON_OPERATIONS


def _pred_name(op, names) -> str:
    return names[op.predicate.value.data]


def _bool_or_bitwise(fn_bool, fn_int):
    return lambda a, b: fn_bool(a, b) if a.dtype == torch.bool else fn_int(a, b)


_BINARY: dict[str, Callable] = {
    "arith.addf": torch.add,
    "arith.subf": torch.sub,
    "arith.mulf": torch.mul,
    "arith.divf": torch.div,
    "arith.addi": lambda a, b: a + b if a.dtype != torch.bool else a ^ b,
    "arith.subi": lambda a, b: a - b if a.dtype != torch.bool else a ^ b,
    "arith.muli": lambda a, b: a * b if a.dtype != torch.bool else a & b,
    "arith.divsi": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "arith.floordivsi": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "arith.remsi": torch.fmod,
    "arith.maximumf": torch.maximum,
    "arith.minimumf": torch.minimum,
    "arith.maxnumf": torch.fmax,
    "arith.minnumf": torch.fmin,
    "arith.maxsi": torch.maximum,
    "arith.minsi": torch.minimum,
    "arith.andi": _bool_or_bitwise(torch.logical_and, torch.bitwise_and),
    "arith.ori": _bool_or_bitwise(torch.logical_or, torch.bitwise_or),
    "arith.xori": _bool_or_bitwise(torch.logical_xor, torch.bitwise_xor),
    "arith.shli": torch.bitwise_left_shift,
    "arith.shrsi": torch.bitwise_right_shift,
    "math.atan2": torch.atan2,
    "math.powf": torch.pow,
    "math.fpowi": torch.pow,
    "math.ipowi": torch.pow,
    "math.copysign": torch.copysign,
}

_UNARY: dict[str, Callable] = {
    "arith.negf": torch.neg,
    "math.absf": torch.abs,
    "math.absi": torch.abs,
    "math.acos": torch.acos,
    "math.acosh": torch.acosh,
    "math.asin": torch.asin,
    "math.asinh": torch.asinh,
    "math.atan": torch.atan,
    "math.atanh": torch.atanh,
    "math.cbrt": lambda x: torch.sign(x) * torch.abs(x) ** (1.0 / 3.0),
    "math.ceil": torch.ceil,
    "math.cos": torch.cos,
    "math.cosh": torch.cosh,
    "math.erf": torch.erf,
    "math.exp": torch.exp,
    "math.exp2": torch.exp2,
    "math.expm1": torch.expm1,
    "math.floor": torch.floor,
    "math.log": torch.log,
    "math.log10": torch.log10,
    "math.log1p": torch.log1p,
    "math.log2": torch.log2,
    # math.round rounds half away from zero; math.roundeven is torch.round.
    "math.round": lambda x: torch.sign(x) * torch.floor(torch.abs(x) + 0.5),
    "math.roundeven": torch.round,
    "math.rsqrt": torch.rsqrt,
    "math.sin": torch.sin,
    "math.sinh": torch.sinh,
    "math.sqrt": torch.sqrt,
    "math.tan": torch.tan,
    "math.tanh": torch.tanh,
    "math.trunc": torch.trunc,
}


def _to(x: Any, dtype: torch.dtype) -> torch.Tensor:
    return torch.as_tensor(x).to(dtype)


class _Body:
    """Evaluates one body over a grid: ``binding`` maps index symbols to
    broadcastable int64 tensors (and size symbols to ints)."""

    def __init__(self, env: Env, binding: dict, device: torch.device):
        self.env = env
        self.binding = binding
        self.device = device

    def value(self, v: SSAValue) -> Any:
        if v in self.local:
            return self.local[v]
        return self.env.values[v]

    def run(self, block, local: dict | None = None) -> list[Any]:
        self.local = dict(local or {})
        for op in block.ops:
            if isinstance(op, L.YieldOp):
                return [self.value(v) for v in op.values]
            try:
                result = self.op(op)
            except ExecutionError:
                raise
            except Exception as e:  # name the body op that failed
                raise ExecutionError(f"{op.name} failed: {type(e).__name__}: {e}") from e
            if op.results:
                self.local[op.results[0]] = result
        raise ExecutionError("body has no loop.yield")

    def op(self, op: Operation) -> Any:
        if isinstance(op, L.LoadOp):
            return self.load(op)
        if isinstance(op, L.IndexOp):
            return _to(evaluate_index(op.value, self.binding), torch.int64).to(self.device)
        if isinstance(op, L.RandOp | L.RandnOp):
            seed = self.value(op.seed)
            offset = _to(evaluate_index(op.offset.data[0], self.binding), torch.int64)
            draw = uniform if isinstance(op, L.RandOp) else normal
            return draw(seed, offset.to(self.device)).to(_torch_dtype(op.result.type))
        if isinstance(op, arith.ConstantOp):
            dtype = _torch_dtype(op.result.type)
            value = op.value.value.data
            if dtype == torch.bool:
                value = bool(value)
            return torch.tensor(value, dtype=dtype, device=self.device)
        if op.name in _BINARY:
            a, b = (self.value(v) for v in op.operands)
            return _BINARY[op.name](a, b)
        if op.name in _UNARY:
            return _UNARY[op.name](self.value(op.operands[0]))
        if op.name == "math.fma":  # rounded once: exact product and sum in f64
            a, b, c = (self.value(v) for v in op.operands)
            wide = torch.float64 if a.dtype != torch.float64 else a.dtype
            return (a.to(wide) * b.to(wide) + c.to(wide)).to(a.dtype)
        if isinstance(op, arith.CmpfOp):
            a, b = (self.value(v) for v in op.operands)
            return _cmpf(_pred_name(op, _CMPF_NAMES), a, b)
        if isinstance(op, arith.CmpiOp):
            a, b = (self.value(v) for v in op.operands)
            bits = op.operands[0].type.bitwidth if hasattr(op.operands[0].type, "bitwidth") else 64
            return _cmpi(_pred_name(op, _CMPI_NAMES), a, b, bits)
        if isinstance(op, arith.SelectOp):
            c, a, b = (self.value(v) for v in op.operands)
            return torch.where(c, a, b)
        if isinstance(
            op,
            arith.ExtFOp
            | arith.TruncFOp
            | arith.SIToFPOp
            | arith.FPToSIOp
            | arith.ExtSIOp
            | arith.TruncIOp
            | arith.IndexCastOp,
        ):
            return self.value(op.operands[0]).to(_torch_dtype(op.results[0].type))
        if isinstance(op, arith.ExtUIOp | arith.UIToFPOp):
            x = self.value(op.operands[0])
            bits = getattr(op.operands[0].type, "bitwidth", 64)
            return _unsigned(x, bits).to(_torch_dtype(op.results[0].type))
        raise ExecutionError(f"the loop executor cannot run {op.name} in a body")

    def load(self, op: L.LoadOp) -> torch.Tensor:
        source = self.value(op.source)
        if not isinstance(source, torch.Tensor):
            raise ExecutionError(f"loop.load reads {type(source).__name__}, not a tensor")
        binding = self.binding
        if op.indirect:
            binding = dict(binding)
            for k, v in enumerate(op.indirect):
                binding[L.indirect_symbol(k)] = self.value(v).to(torch.int64)
        mask = self.value(op.mask) if op.mask is not None else None
        indices = []
        for dim, expr in enumerate(op.index.data):
            idx = _to(evaluate_index(expr, binding), torch.int64).to(source.device)
            size = source.shape[dim]
            bad = (idx < 0) | (idx >= size)
            if mask is not None:
                bad = bad & mask
            if bool(bad.any()):
                raise ExecutionError(
                    f"loop.load: index {expr} out of bounds for dimension {dim} of size {size}"
                )
            if mask is not None:
                idx = torch.where(mask, idx, torch.zeros_like(idx))
            indices.append(idx)
        if mask is not None and source.numel() == 0:
            # Every lane is masked off (checked above): there is nothing to read.
            shape = torch.broadcast_shapes(mask.shape, *(i.shape for i in indices))
            return torch.zeros(shape, dtype=source.dtype, device=source.device)
        if not indices:
            value = source.reshape(())
        else:
            value = source[tuple(indices)]
        if mask is not None:
            value = torch.where(mask, value, torch.zeros((), dtype=value.dtype))
        return value


# --------------------------------------------------------------------------
# Nests
# --------------------------------------------------------------------------


def _grid(ranges: Sequence[int], device: torch.device) -> list[torch.Tensor]:
    n = len(ranges)
    out = []
    for k, size in enumerate(ranges):
        shape = [1] * n
        shape[k] = size
        out.append(torch.arange(size, dtype=torch.int64, device=device).reshape(shape))
    return out


def _device_of(env: Env) -> torch.device:
    for v in env.values.values():
        if isinstance(v, torch.Tensor):
            return v.device
    return torch.device("cpu")


def _run_body(env: Env, nest: L.LoopOp, ranges: list[int]) -> tuple[list[Any], list[int]]:
    device = _device_of(env)
    if any(n == 0 for n in ranges):  # an empty domain: the body never runs
        term = nest.body.block.last_op
        return [torch.zeros((), dtype=_torch_dtype(v.type)) for v in term.values], ranges
    binding = dict(env.symbols)
    for sym, index in zip(nest.index_symbols(), _grid(ranges, device)):
        binding[sym] = index
    values = _Body(env, binding, device).run(nest.body.block)
    return values, ranges


def _full(value: Any, shape: list[int], dtype: torch.dtype) -> torch.Tensor:
    t = torch.as_tensor(value).to(dtype)
    return t.expand(shape).clone() if list(t.shape) != shape else t.contiguous()


def _pointwise(env: Env, op: L.PointwiseOp) -> list[torch.Tensor]:
    ranges = [env.evaluate(r) for r in op.ranges.data]
    (value,), _ = _run_body(env, op, ranges)
    return [_full(value, ranges, dtypes.to_torch(op.targets[0].type.element_type))]


def _reduction(env: Env, op: L.ReductionOp) -> list[torch.Tensor]:
    outer = [env.evaluate(r) for r in op.ranges.data]
    inner = [env.evaluate(r) for r in op.reduction_ranges.data]
    (value,), _ = _run_body(env, op, outer + inner)
    numel = 1
    for n in inner:
        numel *= n
    yielded_dtype = _torch_dtype(op.body.block.last_op.values[0].type)
    x = _full(value, outer + inner, yielded_dtype).reshape([*outer, numel])
    kind = op.kind.data
    result_dtype = dtypes.to_torch(op.targets[0].type.element_type)
    if kind == "sum":
        out = x.sum(-1, dtype=result_dtype)
    elif kind == "prod":
        out = x.prod(-1, dtype=result_dtype)
    elif kind in ("max", "min"):
        if numel == 0:
            raise ExecutionError(f"loop.reduction {kind} over an empty domain")
        out = x.amax(-1) if kind == "max" else x.amin(-1)
    elif kind in ("argmax", "argmin"):
        if numel == 0:
            raise ExecutionError(f"loop.reduction {kind} over an empty domain")
        out = x.argmax(-1) if kind == "argmax" else x.argmin(-1)
    elif kind == "any":
        out = x.any(-1)
    elif kind == "all":
        out = x.all(-1)
    elif kind == "welford":
        xf = x.to(torch.float64) if x.dtype == torch.float64 else x.to(torch.float32)
        mean = xf.mean(-1)
        m2 = ((xf - mean.unsqueeze(-1)) ** 2).sum(-1)
        count = torch.full_like(mean, float(numel))
        return [t.to(result_dtype) for t in (mean, m2, count)]
    else:
        raise ExecutionError(f"unknown reduction kind {kind}")
    return [out.to(result_dtype)]


def _scan(env: Env, op: L.ScanOp) -> list[torch.Tensor]:
    """torch's own scans along the op's dim, in the yielded dtype, then cast."""
    ranges = [env.evaluate(r) for r in op.ranges.data]
    (value,), _ = _run_body(env, op, ranges)
    yielded_dtype = _torch_dtype(op.body.block.last_op.values[0].type)
    x = _full(value, ranges, yielded_dtype)
    d, kind = op.scan_dim, op.kind.data
    if kind == "sum":
        outs = [torch.cumsum(x, d, dtype=x.dtype)]
    elif kind == "prod":
        outs = [torch.cumprod(x, d, dtype=x.dtype)]
    elif kind in ("max", "min"):
        outs = [(torch.cummax if kind == "max" else torch.cummin)(x, d).values]
    elif kind == "logsumexp":
        outs = [torch.logcumsumexp(x, d)]
    elif kind in ("argmax", "argmin"):
        found = (torch.cummax if kind == "argmax" else torch.cummin)(x, d)
        outs = [found.values, found.indices]
    else:
        raise ExecutionError(f"unknown scan kind {kind}")
    return [v.to(dtypes.to_torch(t.type.element_type)) for v, t in zip(outs, op.targets)]


def _scatter(env: Env, op: L.ScatterOp, target: torch.Tensor) -> None:
    """Update ``target`` in place: each point's value through its index (the
    last of several stores wins, as torch's ``index_put_``; the other modes
    combine all of them)."""
    ranges = [env.evaluate(r) for r in op.ranges.data]
    if any(n == 0 for n in ranges):
        return
    device = target.device
    binding = dict(env.symbols)
    for sym, index in zip(op.index_symbols(), _grid(ranges, device)):
        binding[sym] = index
    values = _Body(env, binding, device).run(op.body.block)
    value = _full(values[0], ranges, target.dtype)
    for k, t in enumerate(values[1:]):
        binding[L.indirect_symbol(k)] = _full(torch.as_tensor(t), ranges, torch.int64)
    indices = []
    for dim, expr in enumerate(op.index.data):
        idx = _full(_to(evaluate_index(expr, binding), torch.int64), ranges, torch.int64)
        size = target.shape[dim]
        if bool(((idx < 0) | (idx >= size)).any()):
            raise ExecutionError(
                f"loop.scatter: index {expr} out of bounds for dimension {dim} of size {size}"
            )
        indices.append(idx.to(device))
    mode = op.mode.data
    if mode in ("store", "add"):
        target.index_put_(tuple(indices), value, accumulate=mode == "add")
        return
    flat = torch.zeros(ranges, dtype=torch.int64, device=device)
    for idx, stride in zip(indices, _contiguous_strides(list(target.shape))):
        flat += idx * stride
    dense = target.contiguous().reshape(-1)
    reduce = "amax" if mode == "max" else "amin"
    dense.scatter_reduce_(0, flat.reshape(-1), value.reshape(-1), reduce, include_self=True)
    target.copy_(dense.reshape(target.shape))


def _contiguous_strides(shape: list[int]) -> list[int]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return strides[::-1]


def _fused(env: Env, op: L.FusedOp) -> list[torch.Tensor]:
    for member in op.body.block.ops:
        if isinstance(member, L.YieldOp):
            return [env.values[v] for v in member.values]
        execute(member, env)
    raise ExecutionError("loop.fused has no loop.yield")


def _strided_copy(
    env: Env, source: torch.Tensor, index: Sequence[sympy.Expr], shape: list[int]
) -> torch.Tensor | None:
    """A strided view ``source[index]`` laid over a copy of the source's whole
    storage, as eager lays the view out (None when the view is not strided).
    Values keep their semantics (later writes to the source do not show), and
    an ATen op that reads storage (an ``as_strided`` extern) sees what eager does."""
    if not shape or 0 in shape or source.numel() == 0:
        return None
    index = [e.xreplace(env.symbols) for e in index]
    strides, offset = view_address(index, source.stride(), source.storage_offset(), shape)
    if not all(p.is_Integer and p >= 0 for p in [*strides, offset]):
        return None
    base = torch.empty(0, dtype=source.dtype, device=source.device)
    base.set_(source.untyped_storage().clone())
    return torch.as_strided(base, shape, [int(s) for s in strides], int(offset))


def _view(env: Env, op: L.ViewOp) -> torch.Tensor:
    source = env.values[op.source]
    shape = [env.evaluate(d) for d in op.result.type.shape_attr.data]
    device = source.device
    binding = dict(env.symbols)
    for sym, index in zip(L.index_symbols(len(shape)), _grid(shape, device)):
        binding[sym] = index
    if not op.index.data:
        return _full(source.reshape(()), shape, source.dtype)
    strided = _strided_copy(env, source, op.index.data, shape)
    if strided is not None:
        return strided
    indices = [_to(evaluate_index(e, binding), torch.int64).to(device) for e in op.index.data]
    for dim, idx in enumerate(indices):
        if idx.numel() and (bool((idx < 0).any()) or bool((idx >= source.shape[dim]).any())):
            raise ExecutionError(f"loop.view: index out of bounds in dimension {dim}")
    return _full(source[tuple(indices)], shape, source.dtype)


# --------------------------------------------------------------------------
# Buffers
# --------------------------------------------------------------------------


def _poison(t: torch.Tensor) -> torch.Tensor:
    if t.dtype.is_floating_point or t.dtype.is_complex:
        return t.fill_(float("nan"))
    if t.dtype == torch.bool:
        return t.fill_(True)
    return t.fill_(torch.iinfo(t.dtype).min // 3)


def _layout(env: Env, t: B.BufferType) -> tuple[list[int], list[int], int]:
    return (
        [env.evaluate(d) for d in t.shape_attr.data],
        [env.evaluate(s) for s in t.strides_attr.data],
        env.evaluate(t.offset_attr.data),
    )


def _alloc(env: Env, t: B.BufferType) -> torch.Tensor:
    sizes, strides, offset = _layout(env, t)
    numel = env.evaluate(t.storage_numel())
    storage = torch.empty(max(numel, 0), dtype=t.dtype, device=t.device)
    _poison(storage)
    return torch.as_strided(storage, sizes, strides, offset)


def _reinterpret(env: Env, source: torch.Tensor, base: int, t: B.BufferType) -> torch.Tensor:
    sizes, strides, offset = _layout(env, t)
    storage_numel = source.untyped_storage().nbytes() // source.element_size()
    needed = base + env.evaluate(t.storage_numel())
    if needed > storage_numel:
        raise ExecutionError(
            f"layout {t} needs {needed} elements of storage, the buffer has {storage_numel}"
        )
    return torch.as_strided(source, sizes, strides, base + offset)


def _store(env: Env, op: L.LoopOp, values: list[torch.Tensor]) -> None:
    for buf, value in zip(op.outs, values):
        target = env.values[buf]
        target.copy_(value)


# --------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------


_RELEASE = object()  # env.values[_RELEASE, nest]: a buffer that dies after nest


def execute(op: Operation, env: Env) -> bool:
    """Run ``op`` if it is a loop/buffer op; False when it is not one."""
    if isinstance(op, L.ScatterOp):
        if op.outs:
            _scatter(env, op, env.values[op.outs[0]])
        else:
            (init,) = op.init
            result = env.values[init].clone(memory_format=torch.contiguous_format)
            _scatter(env, op, result)
            env.values[op.res[0]] = result
        return True
    if isinstance(op, L.PointwiseOp | L.ReductionOp | L.ScanOp | L.FusedOp):
        run = {
            L.PointwiseOp: _pointwise,
            L.ReductionOp: _reduction,
            L.ScanOp: _scan,
            L.FusedOp: _fused,
        }[type(op)]
        values = run(env, op)  # every value is read before any is stored
        if op.outs:
            _store(env, op, values)
        else:
            for r, v in zip(op.res, values):
                env.values[r] = v
        dead = env.values.pop((_RELEASE, op), None)
        if dead is not None:
            del env.values[dead]
        return True
    if isinstance(op, L.ViewOp):
        env.values[op.result] = _view(env, op)
        return True
    if isinstance(op, L.CopyOp):
        env.values[op.dest].copy_(env.values[op.value])
        return True
    if isinstance(op, L.SeedOp):
        env.values[op.result] = torch.randint(0, 2**31 - 1, (), dtype=torch.int64)
        return True
    if isinstance(op, B.AllocOp):
        env.values[op.result] = _alloc(env, op.result.type)
        env.bases[op.result] = 0
        return True
    if isinstance(op, H.SemaphoresOp):  # counters a launch finds zero (and leaves so)
        t = op.result.type
        n = int(t.shape_attr.data[0])
        env.values[op.result] = torch.zeros(n, dtype=torch.int32, device=t.device_attr.data)
        env.bases[op.result] = 0
        return True
    if isinstance(op, B.ViewOp | B.ReuseOp):
        source = env.values.get(op.source)
        if source is None:
            raise ExecutionError(f"{op.name} of a buffer that was deallocated")
        base = env.bases.get(op.source, 0)
        view = _reinterpret(env, source, base, op.result.type)
        if isinstance(op, B.ReuseOp):
            nest = op.next_op
            reads = nest.walk() if nest is not None else ()
            if any(op.source in storage_roots(v) for o in reads for v in o.operands):
                # In place (memory-plan's _in_place): the nest after the reuse reads
                # the old buffer where it writes the new one; it dies after it.
                env.values[_RELEASE, nest] = op.source
            else:
                _poison(view)
                del env.values[op.source]
        env.values[op.result] = view
        env.bases[op.result] = base
        return True
    if isinstance(op, B.DeallocOp):
        if op.buffer not in env.values:
            raise ExecutionError("buffer.dealloc of a buffer that was deallocated")
        # Poison the freed storage: a view of it read later shows the use-after-free.
        freed = env.values.pop(op.buffer)
        numel = env.evaluate(op.buffer.type.storage_numel())
        _poison(torch.as_strided(freed, [numel], [1], env.bases.get(op.buffer, 0)))
        return True
    if isinstance(op, B.ExternOp):
        _extern(env, op)
        return True
    return False


def _extern(env: Env, op: B.ExternOp) -> None:
    block = op.body.block
    inner_values = {arg: env.values[v] for arg, v in zip(block.args, op.args)}
    outs = env.execute_block(block, inner_values)
    for r, v in zip(op.res, outs):
        # Data-dependent sizes (u0 ...) are known once ATen has computed them.
        if isinstance(v, torch.Tensor) and hasattr(r.type, "shape_attr"):
            for dim, size in zip(r.type.shape_attr.data, v.shape):
                if dim.is_Symbol and dim not in env.symbols:
                    env.symbols[dim] = int(size)
        if isinstance(r.type, B.BufferType):
            sizes, strides, _ = _layout(env, r.type)
            if list(v.shape) != sizes or any(
                n > 1 and s != w for n, s, w in zip(sizes, v.stride(), strides)
            ):
                raise ExecutionError(
                    f"buffer.extern {op.kernel_name}: ATen returned shape {list(v.shape)} "
                    f"strides {list(v.stride())}, the IR expects {r.type}"
                )
        env.values[r] = v
        if isinstance(v, torch.Tensor):
            env.bases[r] = v.storage_offset()
