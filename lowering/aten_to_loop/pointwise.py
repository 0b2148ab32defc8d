"""Pointwise lowerings: elementwise math with torch's type promotion and
broadcasting. Each op is one ``loop.pointwise`` over the result's shape; the
body loads each operand (broadcast), converts it to the compute dtype (reduced
floats compute in f32), applies the op and converts to the result dtype.

Semantics follow ATen's CPU/CUDA kernels where they are not plain IEEE:
integer ``div`` rounds as asked (``trunc``/``floor``), ``remainder`` takes the
divisor's sign, ``maximum``/``minimum``/``clamp`` propagate NaN, ``sign(nan)``
is 0, ``pow`` with small constant exponents becomes multiplications."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import sympy
from xdsl.dialects.builtin import StringAttr, i1, i32
from xdsl.ir import Attribute, SSAValue

from coil.dialects import dtypes
from coil.dialects.aten import AtenOp
from coil.dialects.body_builder import (
    BodyBuilder,
    CannotLower,
    ExternByDesign,
    compute_dtype,
    is_bool,
    is_float,
)
from coil.lowering.aten_to_loop.common import (
    dtype_of,
    is_tensor,
    load_broadcast,
    python_scalar,
    result_type,
)
from coil.lowering.aten_to_loop.lowerer import Lowerer, register

Operand = SSAValue | bool | int | float | sympy.Expr
ElementFn = Callable[..., SSAValue]

# ---- operands and promotion ------------------------------------------------------


def arg(op: AtenOp, name: str) -> Operand | None:
    """Argument ``name`` of ``op``: a tensor or scalar SSA operand, else the
    Python value of the property (None when an optional one is absent)."""
    group = op.operand_groups().get(name)
    if group is not None:
        return group[0] if group else None
    return op.arg(name)


def _normalize(value: Operand) -> Operand:
    value = python_scalar(value)
    if isinstance(value, sympy.Expr) and value.is_number:
        return int(value) if value.is_Integer else float(value)
    return value


def promoted_dtype(*operands: Operand) -> Attribute:
    """torch's result type for these operands (0-d tensors and Python scalars
    promote as torch promotes them), as an element type."""
    entries: list[tuple[str, Attribute]] = []
    for v in operands:
        if is_tensor(v):
            entries.append(("zerodim" if v.type.rank == 0 else "tensor", dtype_of(v)))
        else:
            py = _normalize(v)
            # a symbolic or run-time scalar counts as an int, as torch sees a SymInt
            py = py if isinstance(py, bool | int | float) else 1
            entries.append(("scalar", dtypes.scalar_type(py)))
    if len(entries) > 2:  # pairwise folding would lose the dims-vs-0-d categories
        raise CannotLower("type promotion of more than two operands")
    try:
        return dtypes.result_type(entries)
    except dtypes.UnsupportedDtype as e:
        raise CannotLower(str(e)) from None


def element(
    lw: Lowerer,
    b: BodyBuilder,
    value: Operand,
    shape: Sequence,
    idx: Sequence[sympy.Expr],
    to: Attribute | None,
) -> SSAValue:
    """``load_broadcast`` that also takes symbolic scalars (sympy expressions)."""
    value = _normalize(value)
    if isinstance(value, sympy.Expr):
        if to is None:
            raise CannotLower("a scalar operand needs a target dtype")
        return b.cast(b.index(value), to)
    return load_broadcast(lw, b, value, shape, idx, to)


def elementwise(
    lw: Lowerer,
    op: AtenOp,
    operands: Sequence[Operand],
    fn: ElementFn,
    compute: Attribute | None = None,
) -> SSAValue:
    """A pointwise op over ``op``'s result shape: ``fn(b, *elements)`` with each
    operand loaded (broadcast) and converted to ``compute`` (default: the
    result dtype's compute dtype)."""
    out = result_type(op)
    shape, dtype = out.shape, out.element_type
    compute = compute or compute_dtype(dtype)

    def body(b: BodyBuilder, idx):
        elems = [element(lw, b, v, shape, idx, compute) for v in operands]
        return fn(b, *elems)

    return lw.pointwise(shape, dtype, body)


def _other(op: AtenOp) -> Operand:
    return op.operands[1] if len(op.operands) > 1 else op.arg("other")


def _input_compute(op: AtenOp, *operands: Operand) -> Attribute:
    """Compute dtype of ops whose result dtype is not their inputs' (bool tests)."""
    return compute_dtype(promoted_dtype(*operands))


# ---- scalar helpers on body values -----------------------------------------------


def _c(b: BodyBuilder, value: bool | int | float, like: SSAValue) -> SSAValue:
    return b.const_like(value, like)


def _need_float(x: SSAValue, what: str) -> None:
    if not is_float(x.type):
        raise CannotLower(f"{what} needs a floating-point operand, not {x.type}")


def _fmath(name: str) -> ElementFn:
    def fn(b: BodyBuilder, x: SSAValue) -> SSAValue:
        _need_float(x, name)
        return b.math(name, x)

    return fn


def _recip(b: BodyBuilder, x: SSAValue) -> SSAValue:
    _need_float(x, "reciprocal")
    return b.truediv(_c(b, 1.0, x), x)


def _sigmoid(b: BodyBuilder, x: SSAValue) -> SSAValue:
    _need_float(x, "sigmoid")
    one = _c(b, 1.0, x)
    return b.truediv(one, b.add(one, b.math("exp", b.neg(x))))


def _abs(b: BodyBuilder, x: SSAValue) -> SSAValue:
    if is_bool(x.type):
        return x
    return b.math("absf" if is_float(x.type) else "absi", x)


def _sign(b: BodyBuilder, x: SSAValue) -> SSAValue:
    if is_bool(x.type):
        return x
    zero = _c(b, 0, x)
    pos = b.cast(b.cmp("gt", x, zero), x.type)
    neg = b.cast(b.cmp("lt", x, zero), x.type)
    return b.sub(pos, neg)  # 0 for NaN and -0.0, as torch.sign


def _relu(b: BodyBuilder, x: SSAValue) -> SSAValue:
    if is_bool(x.type):
        return x
    return b.maximum(x, _c(b, 0, x))  # NaN-propagating, as torch.relu


def _rounding(name: str) -> ElementFn:
    def fn(b: BodyBuilder, x: SSAValue) -> SSAValue:
        return b.math(name, x) if is_float(x.type) else x  # identity on integers

    return fn


def _bitwise_not(b: BodyBuilder, x: SSAValue) -> SSAValue:
    if is_float(x.type):
        raise CannotLower("bitwise_not of a float")
    return b.xori(x, _c(b, True if is_bool(x.type) else -1, x))


def _isnan(b: BodyBuilder, x: SSAValue) -> SSAValue:
    return b.isnan(x) if is_float(x.type) else b.const(False, i1)


def _isinf(b: BodyBuilder, x: SSAValue) -> SSAValue:
    if not is_float(x.type):
        return b.const(False, i1)
    return b.cmp("eq", b.math("absf", x), _c(b, float("inf"), x))


def _silu(b: BodyBuilder, x: SSAValue) -> SSAValue:
    return b.mul(x, _sigmoid(b, x))


UNARY: dict[str, ElementFn] = {
    "abs": _abs,
    "neg": lambda b, x: b.neg(x),
    "reciprocal": _recip,
    "sigmoid": _sigmoid,
    "silu": _silu,
    "sign": _sign,
    "relu": _relu,
    "floor": _rounding("floor"),
    "ceil": _rounding("ceil"),
    "round": _rounding("roundeven"),  # torch.round rounds half to even
    "trunc": _rounding("trunc"),
    "bitwise_not": _bitwise_not,
}
for _name in (
    "exp",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "erf",
):
    UNARY[_name] = _fmath(_name)

BOOL_TESTS: dict[str, ElementFn] = {
    "isnan": _isnan,
    "isinf": _isinf,
    "logical_not": lambda b, x: b.logical_not(x),
}
"""Unary ops whose result (bool) is not their compute dtype: they compute in the input's."""


def _register_unary(name: str, fn: ElementFn, input_compute: bool) -> None:
    @register(f"aten.{name}.default", f"prims.{name}.default")
    def lower(lw: Lowerer, op: AtenOp):
        x = op.operands[0]
        compute = _input_compute(op, x) if input_compute else None
        return [elementwise(lw, op, [x], fn, compute)]


for _name, _fn in UNARY.items():
    _register_unary(_name, _fn, False)
for _name, _fn in BOOL_TESTS.items():
    _register_unary(_name, _fn, True)


@register("aten.round.decimals")
def _round_decimals(lw: Lowerer, op: AtenOp):
    decimals = int(op.arg("decimals"))
    scale = 10.0 ** abs(decimals)

    def fn(b: BodyBuilder, x: SSAValue) -> SSAValue:
        _need_float(x, "round(decimals=)")
        s = _c(b, scale, x)
        if decimals >= 0:  # as ATen: nearbyint(x * 10^d) / 10^d
            return b.truediv(b.math("roundeven", b.mul(x, s)), s)
        return b.mul(b.math("roundeven", b.truediv(x, s)), s)

    return [elementwise(lw, op, [op.operands[0]], fn)]


# ---- activations with arguments ---------------------------------------------------


def _clamp_fn(lo: bool, hi: bool) -> ElementFn:
    """min(max(x, lo), hi) with NaN propagation (torch.clamp)."""

    def fn(b: BodyBuilder, x: SSAValue, *bounds: SSAValue) -> SSAValue:
        it = iter(bounds)
        if is_bool(x.type):
            raise CannotLower("clamp of bool")
        if lo:
            x = b.maximum(x, next(it))
        if hi:
            x = b.minimum(x, next(it))
        return x

    return fn


def _lower_clamp(lw: Lowerer, op: AtenOp, x: Operand, lo: Operand | None, hi: Operand | None):
    bounds = [v for v in (lo, hi) if v is not None]
    if not bounds:
        raise CannotLower("clamp without bounds")
    return [elementwise(lw, op, [x, *bounds], _clamp_fn(lo is not None, hi is not None))]


@register("aten.clamp.default", "aten.clamp.Tensor")
def _clamp(lw: Lowerer, op: AtenOp):
    return _lower_clamp(lw, op, op.operands[0], arg(op, "min"), arg(op, "max"))


@register("aten.clamp_min.default", "aten.clamp_min.Tensor")
def _clamp_min(lw: Lowerer, op: AtenOp):
    return _lower_clamp(lw, op, op.operands[0], arg(op, "min"), None)


@register("aten.clamp_max.default", "aten.clamp_max.Tensor")
def _clamp_max(lw: Lowerer, op: AtenOp):
    return _lower_clamp(lw, op, op.operands[0], None, arg(op, "max"))


@register("aten.hardtanh.default")
def _hardtanh(lw: Lowerer, op: AtenOp):
    return _lower_clamp(lw, op, op.operands[0], op.arg("min_val"), op.arg("max_val"))


@register("aten.leaky_relu.default")
def _leaky_relu(lw: Lowerer, op: AtenOp):
    def fn(b: BodyBuilder, x: SSAValue, slope: SSAValue) -> SSAValue:
        _need_float(x, "leaky_relu")
        return b.select(b.cmp("gt", x, _c(b, 0, x)), x, b.mul(x, slope))

    return [elementwise(lw, op, [op.operands[0], op.arg("negative_slope")], fn)]


@register("aten.gelu.default")
def _gelu(lw: Lowerer, op: AtenOp):
    approximate = op.arg("approximate") or "none"

    def fn(b: BodyBuilder, x: SSAValue) -> SSAValue:
        _need_float(x, "gelu")
        half = b.mul(x, _c(b, 0.5, x))
        if approximate == "tanh":
            inner = b.add(x, b.mul(_c(b, 0.044715, x), b.mul(x, b.mul(x, x))))
            t = b.math("tanh", b.mul(_c(b, (2.0 / math.pi) ** 0.5, x), inner))
        else:
            t = b.math("erf", b.mul(x, _c(b, 0.5**0.5, x)))
        return b.mul(half, b.add(_c(b, 1.0, x), t))

    if approximate not in ("none", "tanh"):
        raise CannotLower(f"gelu approximate={approximate!r}")
    return [elementwise(lw, op, [op.operands[0]], fn)]


# Backward formulas of activations (training graphs keep them after decomposition).


@register("aten.sigmoid_backward.default")
def _sigmoid_backward(lw: Lowerer, op: AtenOp):
    def fn(b: BodyBuilder, g: SSAValue, y: SSAValue) -> SSAValue:
        return b.mul(g, b.mul(b.sub(_c(b, 1.0, y), y), y))

    return [elementwise(lw, op, list(op.operands[:2]), fn)]


@register("aten.tanh_backward.default")
def _tanh_backward(lw: Lowerer, op: AtenOp):
    def fn(b: BodyBuilder, g: SSAValue, y: SSAValue) -> SSAValue:
        return b.mul(g, b.sub(_c(b, 1.0, y), b.mul(y, y)))

    return [elementwise(lw, op, list(op.operands[:2]), fn)]


@register("aten.threshold_backward.default")
def _threshold_backward(lw: Lowerer, op: AtenOp):
    def fn(b: BodyBuilder, g: SSAValue, x: SSAValue, t: SSAValue) -> SSAValue:
        return b.select(b.cmp("le", x, t), _c(b, 0, g), g)

    g, x = op.operands[:2]
    return [elementwise(lw, op, [g, x, op.arg("threshold")], fn)]


# ---- binary arithmetic -------------------------------------------------------------


def _add_like(sign: int):
    def lower(lw: Lowerer, op: AtenOp):
        a, other = op.operands[0], _other(op)
        alpha = _normalize(op.arg("alpha"))

        def fn(b: BodyBuilder, x, y, *scale):
            if scale:
                y = b.mul(y, scale[0])
            if is_bool(x.type):
                if sign < 0:
                    raise CannotLower("subtraction of bools")
                return b.ori(x, y)
            return b.add(x, y) if sign > 0 else b.sub(x, y)

        extra = [] if alpha in (None, 1) else [alpha]
        return [elementwise(lw, op, [a, other, *extra], fn)]

    return lower


register("aten.add.Tensor", "aten.add.Scalar", "prims.add.default")(_add_like(+1))
register("aten.sub.Tensor", "aten.sub.Scalar", "prims.sub.default")(_add_like(-1))


def _binary(names: Sequence[str], fn: ElementFn) -> None:
    @register(*names)
    def lower(lw: Lowerer, op: AtenOp):
        return [elementwise(lw, op, [op.operands[0], _other(op)], fn)]


def _mul(b: BodyBuilder, x, y):
    return b.andi(x, y) if is_bool(x.type) else b.mul(x, y)


def _maximum(b: BodyBuilder, x, y):
    return b.ori(x, y) if is_bool(x.type) else b.maximum(x, y)


def _minimum(b: BodyBuilder, x, y):
    return b.andi(x, y) if is_bool(x.type) else b.minimum(x, y)


def _truediv(b: BodyBuilder, x, y):
    _need_float(x, "true division")
    return b.truediv(x, y)


def _atan2(b: BodyBuilder, x, y):
    _need_float(x, "atan2")
    return b.math("atan2", x, y)


def _bitwise(kind: str) -> ElementFn:
    def fn(b: BodyBuilder, x, y):
        if is_float(x.type):
            raise CannotLower(f"bitwise_{kind} of floats")
        return {"and": b.andi, "or": b.ori, "xor": b.xori}[kind](x, y)

    return fn


def _fmod(b: BodyBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    """C's fmod: the remainder of truncated division, with the dividend's sign."""
    if not is_float(x.type):
        return b.remsi(x, y)
    if x.type.bitwidth >= 64:
        # arith has no remf in this xDSL; the exact f64 route below needs a wider type.
        raise CannotLower("floating-point fmod of f64")
    # In f64, x - trunc(x/y)*y is exact for |x/y| < 2^29 once the truncated
    # quotient (off by at most one) is corrected; the result rounds to f32 exactly.
    xd, yd = b.cast(x, dtypes.f64), b.cast(y, dtypes.f64)
    n = b.math("trunc", b.truediv(xd, yd))
    r = b.sub(xd, b.mul(n, yd))
    ay = b.math("absf", yd)
    zero = _c(b, 0.0, xd)
    x_neg = b.cmp("lt", xd, zero)
    wrong_sign = b.select(x_neg, b.cmp("gt", r, zero), b.cmp("lt", r, zero))
    step = b.select(x_neg, b.neg(ay), ay)
    r = b.select(wrong_sign, b.add(r, step), r)
    r = b.select(b.cmp("ge", b.math("absf", r), ay), b.sub(r, step), r)
    r = b.math("copysign", r, xd)
    # fmod(finite, +-inf) is the dividend.
    inf = _c(b, float("inf"), xd)
    finite_by_inf = b.andi(b.cmp("eq", ay, inf), b.cmp("lt", b.math("absf", xd), inf))
    r = b.select(finite_by_inf, xd, r)
    return b.cast(r, x.type)


def _remainder(b: BodyBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    """Python's %: the remainder takes the divisor's sign (torch.remainder)."""
    if is_bool(x.type):
        raise CannotLower("remainder of bools")
    mod = _fmod(b, x, y)
    zero = _c(b, 0, x)
    adjust = b.andi(b.cmp("ne", mod, zero), b.xori(b.cmp("lt", y, zero), b.cmp("lt", mod, zero)))
    return b.select(adjust, b.add(mod, y), mod)


def _floordiv(b: BodyBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    """torch's div(rounding_mode='floor'): ATen's div_floor_floating for floats."""
    if is_bool(x.type):
        raise CannotLower("floor division of bools")
    if not is_float(x.type):
        return b.floordivsi(x, y)
    zero, one = _c(b, 0.0, x), _c(b, 1.0, x)
    quotient = b.truediv(x, y)
    mod = _fmod(b, x, y)
    div = b.truediv(b.sub(x, mod), y)
    adjust = b.andi(b.cmp("ne", mod, zero), b.xori(b.cmp("lt", y, zero), b.cmp("lt", mod, zero)))
    div = b.select(adjust, b.sub(div, one), div)
    floordiv = b.math("floor", div)
    up = b.cmp("gt", b.sub(div, floordiv), _c(b, 0.5, x))
    floordiv = b.select(up, b.add(floordiv, one), floordiv)
    floordiv = b.select(b.cmp("ne", div, zero), floordiv, b.math("copysign", zero, quotient))
    return b.select(b.cmp("eq", y, zero), quotient, floordiv)


def _truncdiv(b: BodyBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    if is_bool(x.type):
        raise CannotLower("truncated division of bools")
    if not is_float(x.type):
        return b.divsi(x, y)
    return b.math("trunc", b.truediv(x, y))


_binary(["aten.mul.Tensor", "aten.mul.Scalar", "prims.mul.default"], _mul)
_binary(["aten.div.Tensor", "aten.div.Scalar", "prims.div.default"], _truediv)
_binary(["aten.maximum.default", "prims.maximum.default"], _maximum)
_binary(["aten.minimum.default", "prims.minimum.default"], _minimum)
_binary(["aten.atan2.default", "prims.atan2.default"], _atan2)
_binary(["aten.fmod.Tensor", "aten.fmod.Scalar", "prims.fmod.default"], _fmod)
_binary(["aten.remainder.Tensor", "aten.remainder.Scalar"], _remainder)
for _kind in ("and", "or", "xor"):
    _binary([f"aten.bitwise_{_kind}.Tensor", f"aten.bitwise_{_kind}.Scalar"], _bitwise(_kind))


@register("aten.remainder.Scalar_Tensor")
def _remainder_scalar_tensor(lw: Lowerer, op: AtenOp):
    return [elementwise(lw, op, [op.arg("self"), op.operands[0]], _remainder)]


@register(
    "aten.bitwise_and.Scalar_Tensor",
    "aten.bitwise_or.Scalar_Tensor",
    "aten.bitwise_xor.Scalar_Tensor",
)
def _bitwise_scalar_tensor(lw: Lowerer, op: AtenOp):
    kind = op.name.split(".")[1].removeprefix("bitwise_")
    return [elementwise(lw, op, [op.arg("self"), op.operands[0]], _bitwise(kind))]


@register("aten.div.Tensor_mode", "aten.div.Scalar_mode")
def _div_mode(lw: Lowerer, op: AtenOp):
    mode = op.arg("rounding_mode")
    fn = {None: _truediv, "trunc": _truncdiv, "floor": _floordiv}.get(mode)
    if fn is None:
        raise CannotLower(f"rounding_mode={mode!r}")
    return [elementwise(lw, op, [op.operands[0], _other(op)], fn)]


def _logical(kind: str) -> None:
    @register(f"aten.logical_{kind}.default")
    def lower(lw: Lowerer, op: AtenOp):
        a, other = op.operands[0], op.operands[1]

        def fn(b: BodyBuilder, x, y):
            x, y = b.cast(x, i1), b.cast(y, i1)
            return {"and": b.andi, "or": b.ori, "xor": b.xori}[kind](x, y)

        return [elementwise(lw, op, [a, other], fn, _input_compute(op, a, other))]


for _kind in ("and", "or", "xor"):
    _logical(_kind)


# ---- pow ---------------------------------------------------------------------------


def _int_pow(b: BodyBuilder, x: SSAValue, n: int) -> SSAValue:
    """x**n by repeated squaring (n >= 1)."""
    result = None
    square = x
    while n:
        if n & 1:
            result = square if result is None else b.mul(result, square)
        n >>= 1
        if n:
            square = b.mul(square, square)
    return result


def _pow(b: BodyBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    if is_bool(x.type):
        raise CannotLower("pow of bools")
    if is_float(x.type):
        return b.math("powf", x, y)
    return b.math("ipowi", x, y)


@register("aten.pow.Tensor_Tensor", "prims.pow.default")
def _pow_tensor_tensor(lw: Lowerer, op: AtenOp):
    return [elementwise(lw, op, [op.operands[0], op.operands[1]], _pow)]


@register("aten.pow.Scalar")
def _pow_scalar(lw: Lowerer, op: AtenOp):
    return [elementwise(lw, op, [op.arg("self"), op.operands[0]], _pow)]


@register("aten.pow.Tensor_Scalar")
def _pow_tensor_scalar(lw: Lowerer, op: AtenOp):
    x = op.operands[0]
    exponent = _normalize(arg(op, "exponent"))
    if not isinstance(exponent, bool | int | float):
        return [elementwise(lw, op, [x, exponent], _pow)]
    e = float(exponent)

    def fn(b: BodyBuilder, v: SSAValue) -> SSAValue:
        if is_bool(v.type):
            raise CannotLower("pow of bools")
        floating = is_float(v.type)
        if e == 0:
            return _c(b, 1, v)
        if e.is_integer() and 1 <= e <= 4:
            return _int_pow(b, v, int(e))
        if floating and e == 0.5:
            return b.math("sqrt", v)
        if floating and e == -0.5:
            return b.math("rsqrt", v)
        if floating and e.is_integer() and -4 <= e < 0:
            return b.truediv(_c(b, 1.0, v), _int_pow(b, v, int(-e)))
        if floating and e.is_integer() and abs(e) < 2**31:
            # An integral exponent keeps negative bases defined (powf would give NaN).
            return b.math("fpowi", v, b.const(int(e), i32))
        return _pow(b, v, _c(b, exponent, v))

    return [elementwise(lw, op, [x], fn)]


@register("prims.fma.default")
def _fma(lw: Lowerer, op: AtenOp):
    """``prims.fma(a, b, c)``, ``a * b + c`` rounded once: what Dynamo traces
    ``Tensor.addcmul_(.., value=)`` and ``Tensor.add_(.., alpha=tensor)`` into
    (a compiled optimizer's step, a tensor learning rate); ``math.fma`` (``tl.fma``)
    in the result's compute dtype, as Inductor's ``ops.fma``."""
    a, b_, c = op.operands[:3]

    def fn(b: BodyBuilder, x, y, z):
        _need_float(x, "fma")
        return b.math("fma", x, y, z)

    return [elementwise(lw, op, [a, b_, c], fn)]


# ---- comparisons and selection ---------------------------------------------------


def _comparison(name: str) -> None:
    @register(f"aten.{name}.Tensor", f"aten.{name}.Scalar", f"prims.{name}.default")
    def lower(lw: Lowerer, op: AtenOp):
        a, other = op.operands[0], _other(op)
        compute = _input_compute(op, a, other)
        return [elementwise(lw, op, [a, other], lambda b, x, y: b.cmp(name, x, y), compute)]


for _cmp in ("eq", "ne", "lt", "le", "gt", "ge"):
    _comparison(_cmp)


def _lower_where(lw: Lowerer, op: AtenOp, cond: Operand, a: Operand, other: Operand):
    out = result_type(op)
    compute = compute_dtype(out.element_type)
    shape = out.shape

    def body(b: BodyBuilder, idx):
        c = element(lw, b, cond, shape, idx, i1)
        x = element(lw, b, a, shape, idx, compute)
        y = element(lw, b, other, shape, idx, compute)
        return b.select(c, x, y)

    return [lw.pointwise(shape, out.element_type, body)]


@register("aten.where.self", "prims.where.default")
def _where(lw: Lowerer, op: AtenOp):
    cond, a, other = op.operands
    return _lower_where(lw, op, cond, a, other)


@register("aten.where.ScalarSelf", "aten.where.ScalarOther", "aten.where.Scalar")
def _where_scalar(lw: Lowerer, op: AtenOp):
    return _lower_where(lw, op, arg(op, "condition"), arg(op, "self"), arg(op, "other"))


@register("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(lw: Lowerer, op: AtenOp):
    return _lower_where(lw, op, arg(op, "mask"), arg(op, "value"), arg(op, "self"))


# ---- casts, copies, scalars --------------------------------------------------------


def _aten_type(lw: Lowerer, v: SSAValue):
    return lw.aten_types.get(v, v.type)


def _lower_cast(lw: Lowerer, op: AtenOp, x: SSAValue):
    out = result_type(op)
    src = _aten_type(lw, x)
    src_device = getattr(src, "device_attr", None)
    if src_device is not None and src_device != out.device_attr:
        raise ExternByDesign("a copy to another device")
    # Load in the source dtype; the pointwise converts to the result's as .to() does.
    return [elementwise(lw, op, [x], lambda b, v: v, dtype_of(x))]


@register("aten._to_copy.default")
def _to_copy(lw: Lowerer, op: AtenOp):
    layout = op.arg_attr("layout")
    if isinstance(layout, StringAttr) and layout.data != "strided":
        raise CannotLower(f"_to_copy to layout {layout.data}")
    return _lower_cast(lw, op, op.operands[0])


@register("prims.convert_element_type.default", "aten.clone.default", "prims.clone.default")
def _convert(lw: Lowerer, op: AtenOp):
    return _lower_cast(lw, op, op.operands[0])


@register("aten.scalar_tensor.default", "prims.scalar_tensor.default")
def _scalar_tensor(lw: Lowerer, op: AtenOp):
    out = result_type(op)
    value = _normalize(op.arg("s"))
    dtype = out.element_type
    return [lw.pointwise(out.shape, dtype, lambda b, idx: _scalar(lw, b, value, dtype))]


def _scalar(lw: Lowerer, b: BodyBuilder, value: Operand, dtype: Attribute) -> SSAValue:
    if isinstance(value, sympy.Expr):
        return b.cast(b.index(value), dtype)
    return lw.scalar(b, value, dtype)


__all__ = ["UNARY", "arg", "element", "elementwise", "promoted_dtype"]
