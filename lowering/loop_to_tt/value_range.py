"""The range an integer block value of a kernel is known to lie in, from the ops
that make it: what lets ``body.check_bounds`` leave out the device assert of an
index that cannot be out of range (Inductor's ``ValueRanges`` does the same
for ``assert_indirect_indexing``).

A kernel with a ``tt.assert`` is compiled with ``debug=True`` (the assert is a
no-op otherwise), which costs the whole kernel: the model sweep's DeBERTa-v2
softmax, whose two gathers read through relative-position buckets clamped to
``[0, 511]`` by the model itself, was the sweep's slowest kernel against
Inductor's (benchmarks/RESULTS.md, seventeenth session). Only the forms such
indices take are followed: constants, splats and broadcasts, sign extension,
truncation that keeps the range, ``max``/``min`` (a clamp), ``select``, sums
and differences, a remainder by a positive constant, a mask by a
non-negative constant. Anything else is unknown (``(-inf, inf)``).
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Operation, SSAValue

from coil.dialects.tt import element_of
from coil.lowering.loop_to_tt.builder import const_value

Range = tuple[float, float]
UNKNOWN: Range = (-math.inf, math.inf)
_DEPTH = 16
"""Ops followed back from the value at most (an index is a short chain)."""

_SAME = ("tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "arith.extsi")


def int_range(v: SSAValue, depth: int = _DEPTH) -> Range:
    """The closed range ``[lo, hi]`` of integer value ``v`` (a scalar or a block):
    every element lies in it."""
    c = const_value(v)
    if c is not None:
        return (c, c) if isinstance(c, int) else UNKNOWN
    op = v.owner
    if depth == 0 or not isinstance(op, Operation):
        return UNKNOWN
    name = op.name

    def arg(k: int) -> Range:
        return int_range(op.operands[k], depth - 1)

    if name in _SAME:
        return arg(0)
    if name == "arith.trunci":
        lo, hi = arg(0)
        element = element_of(v.type)
        if isinstance(element, IntegerType):
            half = 2 ** (element.width.data - 1)
            if -half <= lo and hi < half:
                return lo, hi
        return UNKNOWN
    if name in ("arith.maxsi", "arith.minsi"):
        (alo, ahi), (blo, bhi) = arg(0), arg(1)
        pick = max if name == "arith.maxsi" else min
        return pick(alo, blo), pick(ahi, bhi)
    if name == "arith.select":
        (alo, ahi), (blo, bhi) = arg(1), arg(2)
        return min(alo, blo), max(ahi, bhi)
    if name == "arith.addi":
        (alo, ahi), (blo, bhi) = arg(0), arg(1)
        return alo + blo, ahi + bhi
    if name == "arith.subi":
        (alo, ahi), (blo, bhi) = arg(0), arg(1)
        return alo - bhi, ahi - blo
    if name == "arith.remsi":
        c = const_value(op.operands[1])
        if isinstance(c, int) and c > 0:
            lo, _ = arg(0)
            return (0 if lo >= 0 else -(c - 1)), c - 1
        return UNKNOWN
    if name == "arith.andi":
        for k in (0, 1):
            c = const_value(op.operands[k])
            if isinstance(c, int) and c >= 0:
                return 0, c
        return UNKNOWN
    return UNKNOWN


def within(v: SSAValue, size: int) -> bool:
    """Whether every element of ``v`` is known to lie in ``[0, size)``."""
    lo, hi = int_range(v)
    return lo >= 0 and hi < size


__all__ = ["UNKNOWN", "int_range", "within"]
