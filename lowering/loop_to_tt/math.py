"""Loop-body ``math`` ops as tt-level ops, per device.

``lower_math_op`` turns one ``math.<name>`` of a loop body into ops on Triton
blocks (``tensor<N x T>``) or scalars:

* ops Triton has in its core (``tl.exp``, ``tl.sqrt``, ``tl.erf`` ...: ``CORE_OPS``)
  stay ``math`` ops, on either device;
* on CUDA the others become ``tt.extern_elementwise`` calls of libdevice, the
  symbol being the function's name in ``triton.language.extra.libdevice``
  (``LIBDEVICE``);
* anywhere else kernels run under Triton's interpreter, which cannot call
  libdevice, so those ops are expanded into core ops (``POLYFILLS``).

The polyfills follow fdlibm/Kahan/Cephes formulations and are written once, for
float64: a float32 (or narrower) operand is widened to float64, computed, and
rounded back, as glibc computes its single-precision functions in double. The
float32 results are then within about half an ulp of torch's; float64 ones are
within a few ulps, except ``powf``/``fpowi``, whose error grows with
``|y * log(x)|`` (up to ~700 ulps next to overflow) since ``exp(y * log|x|)``
has no extra-precise logarithm here. The rounding ops and ``copysign`` are
exact and stay in the operand's type. ``ipowi`` has no libdevice counterpart
and is square-and-multiply in integer arithmetic on every device.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.dialects import arith as xarith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    f32,
    f64,
    i1,
)
from xdsl.ir import Attribute, Operation, SSAValue

from coil.dialects import arith as A
from coil.dialects import tt

Insert = Callable[[Operation], None]

CORE_OPS: dict[str, type[Operation]] = {
    "exp": xmath.ExpOp,
    "exp2": xmath.Exp2Op,
    "log": xmath.LogOp,
    "log2": xmath.Log2Op,
    "sqrt": xmath.SqrtOp,
    "rsqrt": xmath.RsqrtOp,
    "sin": xmath.SinOp,
    "cos": xmath.CosOp,
    "erf": xmath.ErfOp,
    "floor": xmath.FloorOp,
    "ceil": xmath.CeilOp,
    "absf": xmath.AbsFOp,
    "absi": xmath.AbsIOp,
    "fma": xmath.FmaOp,
}
"""``math`` ops that Triton has in ``tl``/``tl.math``: kept as they are."""

LIBDEVICE: dict[str, str] = {
    "acos": "acos",
    "acosh": "acosh",
    "asin": "asin",
    "asinh": "asinh",
    "atan": "atan",
    "atan2": "atan2",
    "atanh": "atanh",
    "cbrt": "cbrt",
    "copysign": "copysign",
    "cosh": "cosh",
    "expm1": "expm1",
    "fpowi": "pow",  # libdevice.pow(f32/f64, i32) is __nv_powif / __nv_powi
    "log10": "log10",
    "log1p": "log1p",
    "powf": "pow",
    "round": "round",  # half away from zero, as math.round
    "roundeven": "rint",
    "sinh": "sinh",
    "tan": "tan",
    "tanh": "tanh",
    "trunc": "trunc",
}
"""``math`` op → function of ``triton.language.extra.libdevice`` (CUDA)."""


def lower_math_op(
    op_name: str,
    operands: Sequence[SSAValue],
    result_type: Attribute,
    device: str,
    insert: Insert,
) -> SSAValue:
    """Emit ``math.<op_name>`` of ``operands`` for ``device`` through ``insert``.

    ``op_name`` is the mnemonic with or without the ``math.`` prefix; operands are
    tt-level values (blocks or scalars; a scalar next to a block is splat to the
    result's shape). Returns the value of type ``result_type``. Raises
    ``NotImplementedError`` with a sentence for an op this module cannot lower.
    """
    name = op_name.removeprefix("math.")
    b = _Emitter(insert)
    shape = tt.shape_of(result_type)
    operands = [b.splat(v, shape) for v in operands]
    if name in CORE_OPS:
        return b.op(CORE_OPS[name](*operands))
    if name == "ipowi":
        return _ipowi(b, *operands)
    if name not in POLYFILLS:
        raise NotImplementedError(
            f"math.{name} has no tt lowering: neither Triton's core nor libdevice "
            "nor coil's polyfills provide it"
        )
    if device.startswith("cuda"):
        if name == "cbrt" and tt.element_of(result_type) == f32:
            return _cbrtf_libdevice(b, operands[0])
        return b.op(tt.ExternElementwiseOp(operands, LIBDEVICE[name], result_type))
    element = tt.element_of(result_type)
    if not isinstance(element, AnyFloat):
        raise NotImplementedError(f"math.{name} of {element}: expected a float result")
    if name in EXACT:
        return POLYFILLS[name](b, *operands)
    wide = [b.to_f64(v) if isinstance(tt.element_of(v.type), AnyFloat) else v for v in operands]
    return b.cast_float(POLYFILLS[name](b, *wide), element)


# --------------------------------------------------------------------------
# Emission helpers: constants are typed like a value, as body_builder's const_like.
# --------------------------------------------------------------------------


class _Emitter:
    """Appends ops through ``insert`` and returns their results."""

    def __init__(self, insert: Insert):
        self.insert = insert
        self.constants: dict[tuple[str, Attribute], SSAValue] = {}

    def op(self, op: Operation) -> SSAValue:
        self.insert(op)
        return op.results[0]

    # -- types and constants
    def const(self, value: float | int | bool, like: SSAValue | Attribute) -> SSAValue:
        """``value`` as a constant of ``like``'s type (element type for a block)."""
        t = like.type if isinstance(like, SSAValue) else like
        element = tt.element_of(t)
        value = float(value) if isinstance(element, AnyFloat) else int(value)
        key = (repr(value), t)  # repr: NaN keys equal, 0.0 and -0.0 differ
        if key not in self.constants:
            if isinstance(t, TensorType):
                attr = DenseIntOrFPElementsAttr.from_list(t, [value])
            elif isinstance(element, AnyFloat):
                attr = FloatAttr(value, element)
            else:
                attr = IntegerAttr(value, element)
            self.constants[key] = self.op(xarith.ConstantOp(attr))
        return self.constants[key]

    def splat(self, v: SSAValue, shape: tuple[int, ...]) -> SSAValue:
        if not shape or isinstance(v.type, TensorType):
            return v
        return self.op(tt.SplatOp(v, shape))

    def to_f64(self, v: SSAValue) -> SSAValue:
        if isinstance(tt.element_of(v.type), Float64Type):
            return v
        return self.op(xarith.ExtFOp(v, A.like(v.type, f64)))

    def cast_float(self, v: SSAValue, element: Attribute) -> SSAValue:
        if tt.element_of(v.type) == element:
            return v
        return self.op(xarith.TruncFOp(v, A.like(v.type, element)))

    def int_like(self, v: SSAValue) -> Attribute:
        """The signless integer type as wide as ``v``'s float elements, shaped alike."""
        return A.like(v.type, IntegerType(tt.element_of(v.type).bitwidth))

    # -- float arithmetic
    def add(self, a, b):
        return self.op(xarith.AddfOp(a, b))

    def sub(self, a, b):
        return self.op(xarith.SubfOp(a, b))

    def mul(self, a, b):
        return self.op(xarith.MulfOp(a, b))

    def div(self, a, b):
        return self.op(xarith.DivfOp(a, b))

    def neg(self, a):
        # a * -1, not arith.negf: Triton 3.6 spells `-x` as `0 - x`, which loses -0.0.
        return self.mul(a, self.const(-1.0, a))

    def m(self, name: str, *args: SSAValue) -> SSAValue:
        """A core ``math`` op."""
        return self.op(CORE_OPS[name](*args))

    def fabs(self, a):
        return self.m("absf", a)

    # -- comparisons (ordered: false on NaN, except ``une``) and selection
    def cmp(self, pred: str, a, b):
        return self.op(A.CmpfOp(a, b, pred))

    def icmp(self, pred: str, a, b):
        return self.op(A.CmpiOp(a, b, pred))

    def sel(self, c, a, b):
        return self.op(A.SelectOp(c, a, b))

    def and_(self, a, b):
        return self.op(xarith.AndIOp(a, b))

    def or_(self, a, b):
        return self.op(xarith.OrIOp(a, b))

    def not_(self, a):
        return self.op(xarith.XOrIOp(a, self.const(True, a)))

    def isnan(self, a):
        return self.cmp("uno", a, a)

    def isinf(self, a):
        return self.cmp("oeq", self.fabs(a), self.const(math.inf, a))

    # -- sign bit, through the integer of the same width
    def bits(self, a):
        return self.op(tt.BitcastOp(a, tt.element_of(self.int_like(a))))

    def signbit(self, a):
        """True where ``a``'s sign bit is set (also -0.0, -inf, negative NaNs)."""
        return self.icmp("slt", self.bits(a), self.const(0, self.int_like(a)))

    def copysign(self, a, b):
        """``|a|`` with ``b``'s sign: exact, on the bits."""
        ity = self.int_like(a)
        sign = -(1 << (tt.element_of(ity).width.data - 1))  # only the top bit set
        magnitude = self.op(xarith.AndIOp(self.bits(a), self.const(~sign, ity)))
        signs = self.op(xarith.AndIOp(self.bits(b), self.const(sign, ity)))
        both = self.op(xarith.OrIOp(magnitude, signs))
        return self.op(tt.BitcastOp(both, tt.element_of(a.type)))

    def trunc(self, a):
        return self.sel(
            self.cmp("olt", a, self.const(0.0, a)), self.m("ceil", a), self.m("floor", a)
        )


# --------------------------------------------------------------------------
# Polyfills. Each takes float64 values (or the operand's own type for EXACT ones).
# --------------------------------------------------------------------------

_LN2 = math.log(2.0)
_PI = math.pi


def _expm1(b: _Emitter, x):
    """Kahan: u = e^x; u == 1 → x; u - 1 == -1 → -1; else (u - 1) * x / log(u)."""
    u = b.m("exp", x)
    one = b.const(1.0, x)
    um1 = b.sub(u, one)
    r = b.mul(um1, b.div(x, b.m("log", u)))  # x / log(u) ~ 1: no early overflow
    r = b.sel(b.cmp("oeq", um1, b.const(-1.0, x)), um1, r)
    r = b.sel(b.cmp("oeq", u, b.const(math.inf, x)), u, r)
    return b.sel(b.cmp("oeq", u, one), x, r)


def _log1p(b: _Emitter, x):
    """Kahan: u = 1 + x; u == 1 → x; else log(u) * x / (u - 1)."""
    one = b.const(1.0, x)
    u = b.add(one, x)
    r = b.mul(b.m("log", u), b.div(x, b.sub(u, one)))  # x / (u - 1) ~ 1: no early overflow
    r = b.sel(b.cmp("oeq", x, b.const(math.inf, x)), x, r)
    return b.sel(b.cmp("oeq", u, one), x, r)


def _log10(b: _Emitter, x):
    return b.mul(b.m("log", x), b.const(1.0 / math.log(10.0), x))


def _tanh(b: _Emitter, x):
    """t = expm1(-2|x|); tanh|x| = -t / (t + 2), with x's sign."""
    t = _expm1(b, b.mul(b.fabs(x), b.const(-2.0, x)))
    r = b.div(b.neg(t), b.add(t, b.const(2.0, x)))
    return b.copysign(r, x)


def _sinh(b: _Emitter, x):
    """fdlibm: t = expm1|x|, (t + t / (t + 1)) / 2 below 22; e^(|x|/2)^2 / 2 above."""
    a = b.fabs(x)
    half = b.const(0.5, x)
    t = _expm1(b, a)
    small = b.mul(half, b.add(t, b.div(t, b.add(t, b.const(1.0, x)))))
    w = b.m("exp", b.mul(half, a))
    large = b.mul(b.mul(half, w), w)  # e^|x| / 2 without overflowing early
    r = b.sel(b.cmp("olt", a, b.const(22.0, x)), small, large)
    return b.copysign(r, x)


def _cosh(b: _Emitter, x):
    """(e + 1/e) / 2 below 22; e^(|x|/2)^2 / 2 above."""
    a = b.fabs(x)
    half = b.const(0.5, x)
    e = b.m("exp", a)
    small = b.mul(half, b.add(e, b.div(b.const(1.0, x), e)))
    w = b.m("exp", b.mul(half, a))
    large = b.mul(b.mul(half, w), w)
    return b.sel(b.cmp("olt", a, b.const(22.0, x)), small, large)


def _tan(b: _Emitter, x):
    return b.div(b.m("sin", x), b.m("cos", x))


# Cephes atan.c (double): atan(x) = x + x z P(z)/Q(z), z = x², on |x| <= 0.66,
# after reducing |x| > tan(3π/8) by π/2 + atan(-1/x), the rest by π/4 + atan((x-1)/(x+1)).
_ATAN_P = (
    -8.750608600031904122785e-1,
    -1.615753718733365076637e1,
    -7.500855792314704667340e1,
    -1.228866684490136173410e2,
    -6.485021904942025371773e1,
)
_ATAN_Q = (
    1.0,
    2.485846490142306297962e1,
    1.650270098316988542046e2,
    4.328810604912902668951e2,
    4.853903996359136964868e2,
    1.945506571482613964425e2,
)
_T3P8 = 2.41421356237309504880  # tan(3π/8)
_MOREBITS = 6.123233995736765886130e-17  # π/2 - fl(π/2)


def _horner(b: _Emitter, z, coefficients: Sequence[float]):
    acc = b.const(coefficients[0], z)
    for c in coefficients[1:]:
        acc = b.add(b.mul(acc, z), b.const(c, z))
    return acc


def _atan(b: _Emitter, x):
    a = b.fabs(x)
    one = b.const(1.0, x)
    big = b.cmp("ogt", a, b.const(_T3P8, x))
    mid = b.and_(b.not_(big), b.cmp("ogt", a, b.const(0.66, x)))
    reduced = b.sel(
        big,
        b.neg(b.div(one, a)),
        b.sel(mid, b.div(b.sub(a, one), b.add(a, one)), a),
    )
    base = b.sel(big, b.const(_PI / 2, x), b.sel(mid, b.const(_PI / 4, x), b.const(0.0, x)))
    more = b.sel(
        big,
        b.const(_MOREBITS, x),
        b.sel(mid, b.const(0.5 * _MOREBITS, x), b.const(0.0, x)),
    )
    z = b.mul(reduced, reduced)
    poly = b.div(b.mul(z, _horner(b, z, _ATAN_P)), _horner(b, z, _ATAN_Q))
    r = b.add(base, b.add(b.add(b.mul(reduced, poly), reduced), more))
    return b.copysign(r, x)


def _atan2(b: _Emitter, y, x):
    """atan(min/max) over |y|, |x|, then the octant: π/2 - r, π - r, y's sign."""
    ay, ax = b.fabs(y), b.fabs(x)
    steep = b.cmp("ogt", ay, ax)
    hi = b.sel(steep, ay, ax)
    lo = b.sel(steep, ax, ay)
    zero, one = b.const(0.0, x), b.const(1.0, x)
    ratio = b.div(lo, hi)
    ratio = b.sel(b.cmp("oeq", hi, zero), zero, ratio)  # atan2(±0, ±0)
    ratio = b.sel(b.and_(b.isinf(x), b.isinf(y)), one, ratio)  # atan2(±inf, ±inf)
    r = _atan(b, ratio)
    r = b.sel(steep, b.sub(b.const(_PI / 2, x), r), r)
    r = b.sel(b.signbit(x), b.sub(b.const(_PI, x), r), r)
    r = b.copysign(r, y)
    return b.sel(b.or_(b.isnan(x), b.isnan(y)), b.add(x, y), r)


def _one_minus_square(b: _Emitter, x):
    """sqrt(1 - x²) as sqrt((1 - x)(1 + x)): no cancellation near |x| = 1."""
    one = b.const(1.0, x)
    return b.m("sqrt", b.mul(b.sub(one, x), b.add(one, x)))


def _asin(b: _Emitter, x):
    return _atan2(b, x, _one_minus_square(b, x))


def _acos(b: _Emitter, x):
    return _atan2(b, _one_minus_square(b, x), x)


_HUGE = float(2**28)  # past it, sqrt(x² ± 1) == x to working precision


def _asinh(b: _Emitter, x):
    """log1p(a + a²/(1 + sqrt(1 + a²))), log(a) + ln 2 for huge a; x's sign."""
    a = b.fabs(x)
    one = b.const(1.0, x)
    a2 = b.mul(a, a)
    small = _log1p(b, b.add(a, b.div(a2, b.add(one, b.m("sqrt", b.add(one, a2))))))
    large = b.add(b.m("log", a), b.const(_LN2, x))
    r = b.sel(b.cmp("oge", a, b.const(_HUGE, x)), large, small)
    return b.copysign(r, x)


def _acosh(b: _Emitter, x):
    """t = x - 1: log1p(t + sqrt(2t + t²)); log(x) + ln 2 for huge x; NaN below 1."""
    one = b.const(1.0, x)
    t = b.sub(x, one)
    small = _log1p(b, b.add(t, b.m("sqrt", b.add(b.add(t, t), b.mul(t, t)))))
    large = b.add(b.m("log", x), b.const(_LN2, x))
    r = b.sel(b.cmp("oge", x, b.const(_HUGE, x)), large, small)
    return b.sel(b.cmp("olt", x, one), b.const(math.nan, x), r)


def _atanh(b: _Emitter, x):
    """log1p(2a / (1 - a)) / 2, x's sign (1 - a is exact where it matters)."""
    a = b.fabs(x)
    one = b.const(1.0, x)
    r = b.mul(b.const(0.5, x), _log1p(b, b.div(b.add(a, a), b.sub(one, a))))
    return b.copysign(r, x)


def _cbrt(b: _Emitter, x):
    """e^(log|x| / 3), one Newton step, x's sign; 0 and inf pass through."""
    a = b.fabs(x)
    y = b.m("exp", b.mul(b.m("log", a), b.const(1.0 / 3.0, x)))
    # y - (y - a/y²)/3
    y = b.sub(y, b.mul(b.sub(y, b.div(a, b.mul(y, y))), b.const(1.0 / 3.0, x)))
    y = b.sel(b.or_(b.cmp("oeq", a, b.const(0.0, x)), b.isinf(a)), a, y)
    return b.copysign(y, x)


def _cbrtf_libdevice(b: _Emitter, x):
    """libdevice.cbrt on f32, scaling subnormals by 2^72 first (cube root 2^24):
    __nv_cbrtf returns NaN for them (Triton 3.6, H100)."""
    tiny = b.cmp("olt", b.fabs(x), b.const(2.0**-126, x))
    scaled = b.sel(tiny, b.mul(x, b.const(2.0**72, x)), x)
    r = b.op(tt.ExternElementwiseOp([scaled], "cbrt", x.type))
    return b.sel(tiny, b.mul(r, b.const(2.0**-24, x)), r)


def _powf(b: _Emitter, x, y):
    """C99/torch pow: |x|^y = e^(y log|x|), then the sign and special cases."""
    zero, one = b.const(0.0, x), b.const(1.0, x)
    magnitude = b.m("exp", b.mul(y, b.m("log", b.fabs(x))))
    fy = b.m("floor", y)
    integral = b.cmp("oeq", fy, y)  # also true for ±inf
    half = b.mul(y, b.const(0.5, x))
    odd = b.and_(
        b.and_(integral, b.cmp("one", b.m("floor", half), half)),
        b.cmp("olt", b.fabs(y), b.const(math.inf, x)),
    )
    r = b.sel(b.and_(b.signbit(x), odd), b.neg(magnitude), magnitude)
    # A finite negative base to a finite non-integral power is NaN.
    negative_finite = b.and_(b.cmp("olt", x, zero), b.cmp("ogt", x, b.const(-math.inf, x)))
    r = b.sel(b.and_(negative_finite, b.not_(integral)), b.const(math.nan, x), r)
    # (-1)^±inf = 1; x^0 = 1 and 1^y = 1, even for NaN.
    minus_one_inf = b.and_(b.cmp("oeq", x, b.const(-1.0, x)), b.isinf(y))
    ones = b.or_(b.or_(b.cmp("oeq", y, zero), b.cmp("oeq", x, one)), minus_one_inf)
    return b.sel(ones, one, r)


def _fpowi(b: _Emitter, x, n):
    return _powf(b, x, b.op(A.SIToFPOp(n, x.type)))


def _copysign(b: _Emitter, x, y):
    return b.copysign(x, y)


def _trunc(b: _Emitter, x):
    return b.trunc(x)


def _round(b: _Emitter, x):
    """Half away from zero: t = trunc(x), one more step away if |x - t| >= 1/2."""
    t = b.trunc(x)
    away = b.add(t, b.copysign(b.const(1.0, x), x))
    return b.sel(b.cmp("oge", b.fabs(b.sub(x, t)), b.const(0.5, x)), away, t)


def _roundeven(b: _Emitter, x):
    """Half to even: r = floor(x), up if x - r > 1/2 or == 1/2 with r odd; x's sign."""
    r = b.m("floor", x)
    d = b.sub(x, r)
    half = b.const(0.5, x)
    hr = b.mul(r, half)
    odd = b.cmp("one", b.m("floor", hr), hr)
    up = b.or_(b.cmp("ogt", d, half), b.and_(b.cmp("oeq", d, half), odd))
    return b.copysign(b.sel(up, b.add(r, b.const(1.0, x)), r), x)


def _ipowi(b: _Emitter, x, n):
    """Integer power with wraparound, by square-and-multiply over n's bits; for
    n < 0, as torch: 1 for x == 1, ±1 for x == -1, else 0."""
    element = tt.element_of(x.type)
    if not isinstance(element, IntegerType) or element == i1:
        raise NotImplementedError(f"math.ipowi of {element}: expected an integer of 8+ bits")
    zero, one = b.const(0, x), b.const(1, x)
    negative = b.icmp("slt", n, zero)
    e = b.sel(negative, zero, n)
    result, square = one, x
    width = element.width.data
    for i in range(width - 1):
        bit = b.op(xarith.AndIOp(b.op(xarith.ShRSIOp(e, b.const(i, x))), one))
        result = b.sel(b.icmp("ne", bit, zero), b.op(xarith.MuliOp(result, square)), result)
        if i < width - 2:
            square = b.op(xarith.MuliOp(square, square))
    n_odd = b.icmp("ne", b.op(xarith.AndIOp(n, one)), zero)
    minus_one = b.const(-1, x)
    of_minus_one = b.sel(n_odd, minus_one, one)
    inverse = b.sel(
        b.icmp("eq", x, one),
        one,
        b.sel(b.icmp("eq", x, minus_one), of_minus_one, zero),
    )
    return b.sel(negative, inverse, result)


POLYFILLS: dict[str, Callable[..., SSAValue]] = {
    "acos": _acos,
    "acosh": _acosh,
    "asin": _asin,
    "asinh": _asinh,
    "atan": _atan,
    "atan2": _atan2,
    "atanh": _atanh,
    "cbrt": _cbrt,
    "copysign": _copysign,
    "cosh": _cosh,
    "expm1": _expm1,
    "fpowi": _fpowi,
    "log10": _log10,
    "log1p": _log1p,
    "powf": _powf,
    "round": _round,
    "roundeven": _roundeven,
    "sinh": _sinh,
    "tan": _tan,
    "tanh": _tanh,
    "trunc": _trunc,
}
"""Core-op expansions of the ``LIBDEVICE`` ops, for Triton's interpreter."""

EXACT = frozenset({"copysign", "round", "roundeven", "trunc"})
"""Polyfills exact in any float type: computed in the operand's own type."""

SUPPORTED: frozenset[str] = frozenset(CORE_OPS) | frozenset(POLYFILLS) | {"ipowi"}
"""Every ``math`` mnemonic ``lower_math_op`` lowers (on every device)."""

__all__ = ["CORE_OPS", "LIBDEVICE", "POLYFILLS", "SUPPORTED", "lower_math_op"]
