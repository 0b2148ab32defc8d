"""The range a block value of a kernel is known to lie in, from the ops that
make it: what lets ``body.check_bounds`` leave out the device assert of an
index that cannot be out of range (Inductor's ``ValueRanges`` does the same
for ``assert_indirect_indexing``).

A kernel with a ``tt.assert`` is compiled with ``debug=True`` (the assert is a
no-op otherwise), which costs the whole kernel: the model sweep's DeBERTa-v2
softmax (two gathers through relative-position buckets the model clamps to
``[0, 511]``) and SegFormer's bilinear upsamples (indices computed from the
output position, clamped) were the sweep's slowest kernels against Inductor's
(benchmarks/RESULTS.md, seventeenth session). The forms such indices take are
followed: constants, splats and broadcasts, integer casts, int <-> float
conversions, ``max``/``min`` (a clamp), a ``select`` (one arm, where its
comparison is decided by the ranges), sums, differences, products and
quotients by constants, remainders, masks by a non-negative constant; and the
values a kernel seeds (``known``: ``xindex`` of a tile over ``n`` points lies in
``[0, n)`` on every lane the assert checks). Anything else is unknown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Operation, SSAValue

from coil.dialects.tt import element_of
from coil.lowering.loop_to_tt.builder import const_value

Range = tuple[float, float]
UNKNOWN: Range = (-math.inf, math.inf)
_DEPTH = 40
"""Ops followed back from the value at most (an index is a short chain)."""

_SAME = (
    "tt.splat",
    "tt.broadcast",
    "tt.expand_dims",
    "tt.reshape",
    "arith.extsi",
    "arith.extf",
)

_ULP = 2.0**-10
"""Relative widening of a float result's range (more than bf16's rounding of
one op): a rounded sum can land past its exact bound, and a truncation of it
past an integer; the widened range keeps such an index's assert."""


def _widen(r: Range) -> Range:
    lo, hi = r
    return lo - abs(lo) * _ULP - 1e-30, hi + abs(hi) * _ULP + 1e-30


def _cmp_decided(op: Operation, known: Mapping, depth: int) -> bool | None:
    """The value of comparison ``op`` on every lane, where the ranges decide it."""
    if op.name not in ("arith.cmpi", "arith.cmpf"):
        return None
    (alo, ahi), (blo, bhi) = (value_range(o, known, depth - 1) for o in op.operands)
    pred = getattr(op, "predicate", None)
    name = {0: "eq", 1: "ne", 2: "slt", 3: "sle", 4: "sgt", 5: "sge"}.get(
        pred.value.data if pred is not None and op.name == "arith.cmpi" else -1
    )
    if name in ("sgt", "sge"):  # a > b is b < a
        (alo, ahi), (blo, bhi) = (blo, bhi), (alo, ahi)
        name = "slt" if name == "sgt" else "sle"
    if name == "slt":
        if ahi < blo:
            return True
        if alo >= bhi:
            return False
    if name == "sle":
        if ahi <= blo:
            return True
        if alo > bhi:
            return False
    return None


def decided(cmp: Operation, known: Mapping[SSAValue, Range] | None = None) -> bool | None:
    """The value of the comparison ``cmp`` on every lane where the ranges of its
    operands decide it (None otherwise)."""
    return _cmp_decided(cmp, known or {}, _DEPTH)


def value_range(
    v: SSAValue, known: Mapping[SSAValue, Range] | None = None, depth: int = _DEPTH
) -> Range:
    """The closed range ``[lo, hi]`` every element of ``v`` (a scalar or a block,
    integer or float) lies in."""
    known = known or {}
    if v in known:
        return known[v]
    c = const_value(v)
    if c is not None:
        return (c, c) if isinstance(c, int | float) and not math.isnan(c) else UNKNOWN
    op = v.owner
    if depth == 0 or not isinstance(op, Operation):
        return UNKNOWN
    name = op.name

    def arg(k: int) -> Range:
        return value_range(op.operands[k], known, depth - 1)

    def const(k: int) -> float | None:
        c = const_value(op.operands[k])
        return c if isinstance(c, int | float) else None

    if name in _SAME:
        return arg(0)
    if name in ("arith.sitofp", "arith.truncf"):
        return _widen(arg(0))
    if name == "arith.trunci":
        lo, hi = arg(0)
        element = element_of(v.type)
        if isinstance(element, IntegerType):
            half = 2 ** (element.width.data - 1)
            if -half <= lo and hi < half:
                return lo, hi
        return UNKNOWN
    if name == "arith.fptosi":  # toward zero
        return tuple(math.trunc(x) if math.isfinite(x) else x for x in arg(0))
    if name in ("arith.maxsi", "arith.maximumf", "arith.maxnumf"):
        (alo, ahi), (blo, bhi) = arg(0), arg(1)
        return max(alo, blo), max(ahi, bhi)
    if name in ("arith.minsi", "arith.minimumf", "arith.minnumf"):
        (alo, ahi), (blo, bhi) = arg(0), arg(1)
        return min(alo, blo), min(ahi, bhi)
    if name == "arith.select":
        cond = op.operands[0].owner
        decided = _cmp_decided(cond, known, depth) if isinstance(cond, Operation) else None
        if decided is True:
            return arg(1)
        if decided is False:
            return arg(2)
        (alo, ahi), (blo, bhi) = arg(1), arg(2)
        return min(alo, blo), max(ahi, bhi)
    floating = name.endswith("f")
    if name in ("arith.addi", "arith.addf"):
        (alo, ahi), (blo, bhi) = arg(0), arg(1)
        r = alo + blo, ahi + bhi
        return _widen(r) if floating else r
    if name in ("arith.subi", "arith.subf"):
        (alo, ahi), (blo, bhi) = arg(0), arg(1)
        r = alo - bhi, ahi - blo
        return _widen(r) if floating else r
    if name in ("arith.muli", "arith.mulf"):
        for k in (0, 1):
            c = const(k)
            if c is not None and c >= 0:
                lo, hi = arg(1 - k)
                r = (lo * c, hi * c) if c > 0 else (0, 0)
                return _widen(r) if floating else r
        return UNKNOWN
    if name == "arith.divf":
        c = const(1)
        if c is not None and c > 0:
            lo, hi = arg(0)
            return _widen((lo / c, hi / c))
        return UNKNOWN
    if name in ("arith.divsi", "arith.floordivsi"):
        c = const(1)
        lo, hi = arg(0)
        if isinstance(c, int) and c > 0 and lo >= 0:
            return lo // c if math.isfinite(lo) else lo, hi // c if math.isfinite(hi) else hi
        return UNKNOWN
    if name == "arith.remsi":
        c = const(1)
        if isinstance(c, int) and c > 0:
            lo, hi = arg(0)
            if lo >= 0:
                return 0, min(hi, c - 1)
            return -(c - 1), c - 1
        return UNKNOWN
    if name == "arith.andi":
        for k in (0, 1):
            c = const(k)
            if isinstance(c, int) and c >= 0:
                return 0, c
        return UNKNOWN
    return UNKNOWN


def within(v: SSAValue, size: int, known: Mapping[SSAValue, Range] | None = None) -> bool:
    """Whether every element of ``v`` is known to lie in ``[0, size)``."""
    lo, hi = value_range(v, known)
    return lo >= 0 and hi < size


__all__ = ["UNKNOWN", "value_range", "within"]
