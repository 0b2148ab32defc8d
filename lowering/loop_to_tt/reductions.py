"""Reduction kinds as tt: identities, elementwise combiners, ``tt.reduce``.

Every kind has one combiner, used twice: elementwise on ``[XBLOCK, RBLOCK]``
accumulators inside a looped reduction, and as the region of the final
``tt.reduce`` over axis 1. ``max``/``min`` propagate NaN as torch does
(``arith.maximumf``/``minimumf``); ``argmax``/``argmin`` reduce (value, index)
pairs keeping the first index on ties, a NaN winning over any number;
``welford`` reduces (mean, m2, weight) triples with Chan's parallel combine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import arith as xarith
from xdsl.dialects.builtin import AnyFloat, i1
from xdsl.ir import Attribute, Block, Region, SSAValue

from coil.dialects import tt
from coil.dialects.tt import element_of
from coil.lowering.loop_to_tt.builder import KernelBuilder, LoweringError

ARG_KINDS = ("argmax", "argmin")


def identity(kind: str, element: Attribute) -> int | float:
    """The value a masked-off lane contributes (neutral for the combiner)."""
    is_float = isinstance(element, AnyFloat)
    if kind in ("sum", "any"):
        return 0
    if kind in ("prod", "all"):
        return 1
    width = getattr(getattr(element, "width", None), "data", 64)
    if kind in ("max", "argmax"):
        return -math.inf if is_float else (0 if element == i1 else -(2 ** (width - 1)))
    if kind in ("min", "argmin"):
        return math.inf if is_float else (1 if element == i1 else 2 ** (width - 1) - 1)
    raise LoweringError(f"convert-loop-to-tt: no identity for reduction kind '{kind}'")


def combine(
    b: KernelBuilder, kind: str, lhs: Sequence[SSAValue], rhs: Sequence[SSAValue]
) -> list[SSAValue]:
    """Combine two partial results (``lhs`` covers earlier indices than ``rhs``)."""
    element = element_of(lhs[0].type)
    is_float = isinstance(element, AnyFloat)
    a, c = lhs[0], rhs[0]
    if kind == "sum":
        return [b.binary(xarith.AddfOp if is_float else xarith.AddiOp, a, c)]
    if kind == "prod":
        return [b.binary(xarith.MulfOp if is_float else xarith.MuliOp, a, c)]
    if kind == "max":
        return [b.binary(xarith.MaximumfOp if is_float else xarith.MaxSIOp, a, c)]
    if kind == "min":
        return [b.binary(xarith.MinimumfOp if is_float else xarith.MinSIOp, a, c)]
    if kind == "any":
        return [b.binary(xarith.OrIOp, a, c)]
    if kind == "all":
        return [b.binary(xarith.AndIOp, a, c)]
    if kind in ARG_KINDS:
        return _arg_combine(b, kind, is_float, lhs, rhs)
    if kind == "welford":
        return _welford_combine(b, lhs, rhs)
    raise LoweringError(f"convert-loop-to-tt: unknown reduction kind '{kind}'")


def _arg_combine(
    b: KernelBuilder, kind: str, is_float: bool, lhs: Sequence[SSAValue], rhs: Sequence[SSAValue]
) -> list[SSAValue]:
    (av, ai), (bv, bi) = lhs, rhs
    first = b.cmpi(ai, bi, "slt")
    if is_float:
        better = b.cmpf(av, bv, "ogt" if kind == "argmax" else "olt")
        equal = b.cmpf(av, bv, "oeq")
        a_nan = b.cmpf(av, av, "uno")
        b_num = b.cmpf(bv, bv, "ord")
        plain = b.binary(xarith.OrIOp, better, b.binary(xarith.AndIOp, equal, first))
        # A NaN wins over a number; between two NaNs the first index wins.
        nan_wins = b.binary(xarith.AndIOp, a_nan, b.binary(xarith.OrIOp, b_num, first))
        a_wins = b.binary(xarith.OrIOp, plain, nan_wins)
    else:
        better = b.cmpi(av, bv, "sgt" if kind == "argmax" else "slt")
        equal = b.cmpi(av, bv, "eq")
        a_wins = b.binary(xarith.OrIOp, better, b.binary(xarith.AndIOp, equal, first))
    return [b.select(a_wins, av, bv), b.select(a_wins, ai, bi)]


def _welford_combine(
    b: KernelBuilder, lhs: Sequence[SSAValue], rhs: Sequence[SSAValue]
) -> list[SSAValue]:
    """Chan et al.'s pairwise update of (mean, m2, weight)."""
    (ma, m2a, wa), (mb, m2b, wb) = lhs, rhs
    element = element_of(ma.type)
    n = b.binary(xarith.AddfOp, wa, wb)
    delta = b.binary(xarith.SubfOp, mb, ma)
    empty = b.cmpf(n, b.const(0.0, element), "oeq")
    frac = b.select(empty, b.const(0.0, element), b.binary(xarith.DivfOp, wb, n))
    mean = b.binary(xarith.AddfOp, ma, b.binary(xarith.MulfOp, delta, frac))
    spread = b.binary(xarith.MulfOp, b.binary(xarith.MulfOp, delta, delta), wa)
    m2 = b.binary(
        xarith.AddfOp,
        b.binary(xarith.AddfOp, m2a, m2b),
        b.binary(xarith.MulfOp, spread, frac),
    )
    return [mean, m2, n]


def welford_step(b: KernelBuilder, acc: Sequence[SSAValue], x: SSAValue) -> list[SSAValue]:
    """Welford's update of per-lane (mean, m2, weight) with one more value ``x``."""
    mean, m2, weight = acc
    element = element_of(mean.type)
    w1 = b.binary(xarith.AddfOp, weight, b.const(1.0, element))
    delta = b.binary(xarith.SubfOp, x, mean)
    mean1 = b.binary(xarith.AddfOp, mean, b.binary(xarith.DivfOp, delta, w1))
    m21 = b.binary(
        xarith.AddfOp, m2, b.binary(xarith.MulfOp, delta, b.binary(xarith.SubfOp, x, mean1))
    )
    return [mean1, m21, w1]


def reduce(b: KernelBuilder, kind: str, srcs: Sequence[SSAValue], axis: int = 1) -> list[SSAValue]:
    """``tt.reduce`` of ``srcs`` along ``axis`` with ``kind``'s combiner."""
    elems = [element_of(s.type) for s in srcs]
    block = Block(arg_types=elems + elems)
    n = len(srcs)
    with b.at(block, isolated=True):
        outs = combine(b, kind, block.args[:n], block.args[n:])
        b.insert(tt.ReduceReturnOp(*outs))
    op = tt.ReduceOp(list(srcs), axis, Region(block))
    b.insert(op)
    for r, s in zip(op.res, srcs):
        if s.name_hint:
            r.name_hint = s.name_hint
    return list(op.res)
