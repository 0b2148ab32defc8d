"""Scan kinds as tt: identities, combiners, ``tt.scan``.

Each kind's combiner takes (earlier, later) values and is used twice: as the
region of the ``tt.scan`` over a row's chunk, and elementwise to carry a
looped scan's running prefix into the next chunk (``combine(carry, chunk)``).
``sum``/``prod``/``max``/``min`` are the reductions' combiners; ``logsumexp``
is Inductor's ``log_add_exp``: ``max + log1p(exp(min - max))``, the earlier
value where both are the same infinity; ``argmax``/``argmin`` combine (value,
position) pairs, the later pair winning where its value is NaN, or where
neither is NaN and it is at least (at most) as large: ``torch.cummax``'s last
position of the extremum, NaN sticking once seen.

Every identity is neutral on the left (``combine(identity, x) == x``), so a
looped scan starts its carry there and needs no first-chunk special case.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import arith as xarith
from xdsl.dialects.builtin import AnyFloat
from xdsl.ir import Attribute, Block, Region, SSAValue

from coil.dialects import tt
from coil.dialects.tt import element_of, shape_of
from coil.lowering.loop_to_tt import reductions as R
from coil.lowering.loop_to_tt.builder import KernelBuilder, LoweringError
from coil.lowering.loop_to_tt.math import lower_math_op

ARG_KINDS = ("argmax", "argmin")


def identities(kind: str, element: Attribute) -> list[int | float]:
    """The carry a looped scan starts from, per scanned operand."""
    if kind == "logsumexp":
        return [-math.inf]
    if kind in ARG_KINDS:
        return [R.identity(kind, element), 0]
    return [R.identity(kind, element)]


def combine(
    b: KernelBuilder, kind: str, lhs: Sequence[SSAValue], rhs: Sequence[SSAValue], device: str
) -> list[SSAValue]:
    """Combine the prefix ``lhs`` with the later ``rhs`` (elementwise)."""
    if kind in ("sum", "prod", "max", "min"):
        return R.combine(b, kind, lhs, rhs)
    if kind == "logsumexp":
        return [_log_add_exp(b, lhs[0], rhs[0], device)]
    if kind in ARG_KINDS:
        return _running_arg(b, kind, lhs, rhs)
    raise LoweringError(f"convert-loop-to-tt: unknown scan kind '{kind}'")


def _math(b: KernelBuilder, name: str, x: SSAValue, device: str) -> SSAValue:
    return lower_math_op(name, [x], x.type, device, b.insert)


def _log_add_exp(b: KernelBuilder, a: SSAValue, c: SSAValue, device: str) -> SSAValue:
    lo = b.binary(xarith.MinimumfOp, a, c)
    hi = b.binary(xarith.MaximumfOp, a, c)
    element = element_of(a.type)
    inf = b.const(math.inf, element, shape_of(a.type))
    # Same infinities (both -inf: an empty prefix) keep a: inf - inf would be NaN.
    differ = b.cmpf(lo, hi, "une")
    finite = b.cmpf(_math(b, "absf", lo, device), inf, "une")
    use = b.binary(xarith.OrIOp, differ, finite)
    tail = _math(b, "log1p", _math(b, "exp", b.binary(xarith.SubfOp, lo, hi), device), device)
    return b.select(use, b.binary(xarith.AddfOp, tail, hi), a)


def _running_arg(
    b: KernelBuilder, kind: str, lhs: Sequence[SSAValue], rhs: Sequence[SSAValue]
) -> list[SSAValue]:
    (av, ai), (bv, bi) = lhs, rhs
    if isinstance(element_of(av.type), AnyFloat):
        at_least = b.cmpf(bv, av, "oge" if kind == "argmax" else "ole")
        a_num = b.cmpf(av, av, "ord")
        b_nan = b.cmpf(bv, bv, "uno")
        later = b.binary(xarith.OrIOp, b_nan, b.binary(xarith.AndIOp, a_num, at_least))
    else:
        later = b.cmpi(bv, av, "sge" if kind == "argmax" else "sle")
    return [b.select(later, bv, av), b.select(later, bi, ai)]


def scan(
    b: KernelBuilder, kind: str, srcs: Sequence[SSAValue], device: str, axis: int = 1
) -> list[SSAValue]:
    """``tt.scan`` of ``srcs`` along ``axis`` with ``kind``'s combiner."""
    elems = [element_of(s.type) for s in srcs]
    block = Block(arg_types=elems + elems)
    n = len(srcs)
    with b.at(block, isolated=True):
        outs = combine(b, kind, block.args[:n], block.args[n:], device)
        b.insert(tt.ScanReturnOp(*outs))
    op = tt.ScanOp(list(srcs), axis, Region(block))
    b.insert(op)
    for r, s in zip(op.res, srcs):
        if s.name_hint:
            r.name_hint = s.name_hint
    return list(op.res)


def last(b: KernelBuilder, v: SSAValue, is_last: SSAValue) -> SSAValue:
    """The element of each row of ``v`` (``[X, R]``) where ``is_last`` (``[1, R]``,
    one lane true) holds, as ``[X, 1]``: a sum of the row with the others zeroed
    (``tl.reduce`` may combine out of order, which a scan's combiner need not
    allow; Inductor selects the same way)."""
    shape = shape_of(v.type)
    element = element_of(v.type)
    picked = b.select(b.broadcast_to(is_last, shape), v, b.const(0, element, shape))
    (row,) = R.reduce(b, "sum", [picked])
    return b.emit(tt.ExpandDimsOp(row, 1))


__all__ = ["ARG_KINDS", "combine", "identities", "last", "scan"]
