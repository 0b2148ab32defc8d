"""Size hints: the number a size symbol stands for where the strategy needs one.

A graph compiled with symbolic sizes still has example inputs: Dynamo's
ShapeEnv holds, for every size symbol, the value it had when the graph was
traced (``var_to_val``; Inductor's ``V.graph.sizevars.size_hint`` reads the
same table). The importer writes them on the function::

    func.func @forward(...) attributes {coil.size_hints = {s0 = 8 : i64, s1 = 512 : i64}}

and every pass that weighs sizes (fusion costs, reduction tiles and splits,
pointwise tiles, GEMM templates, stride orders) asks :func:`value` or
:func:`substitute`, which put each symbol's hint in and fall back to the
caller's constant for a symbol without one (IR written by hand, a graph
traced on coil's own FakeEnv): the constants that were the only answer before
(``plan.SIZE_HINT``, ``access.STRIDE_HINT``, ``loop_cost.SIZE_HINT``, the GEMM
lowering's 4096).

Hints only ever choose between correct programs: a kernel planned at a hint
computes the same values at every size, only faster or slower. What one plan
cannot serve at every size is :mod:`coil.strategy.variants`' (kernels keyed
on size ranges, chosen at run time).

The hints in force are a :class:`contextvars.ContextVar`, set for the length
of one pass's ``apply`` by :func:`with_size_hints` (every function of the
module: a module holds one graph, and a symbol without a hint keeps the
constant). A context, not an argument threaded down, because the numbers are
read at the leaves of the strategy (``plan.hint``, ``access._stride_key``,
``loop_cost.estimate``), below dozens of call sites in passes that know
nothing of sizes; the pass that sets it is the one xDSL runs, so ``fx-opt -p``
replays exactly what the backend does.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any

import sympy
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp
from xdsl.ir import Operation

from coil.dialects.symbolic import SIZE_HINTS_ATTR, size_hints_attr, symbol

_NONE: Mapping[sympy.Symbol, int] = MappingProxyType({})
_CURRENT: ContextVar[Mapping[sympy.Symbol, int]] = ContextVar("coil_size_hints", default=_NONE)


def read_size_hints(op: Operation) -> dict[sympy.Symbol, int]:
    """The hints on ``op`` (a function), empty where it has none."""
    attr = op.attributes.get(SIZE_HINTS_ATTR)
    if not isinstance(attr, DictionaryAttr):
        return {}
    return {symbol(k): v.value.data for k, v in attr.data.items() if isinstance(v, IntegerAttr)}


def module_hints(module: ModuleOp) -> dict[sympy.Symbol, int]:
    """Every function's hints (the first function's value where two disagree)."""
    out: dict[sympy.Symbol, int] = {}
    for op in module.walk():
        if SIZE_HINTS_ATTR in op.attributes:
            for k, v in read_size_hints(op).items():
                out.setdefault(k, v)
    return out


def current() -> Mapping[sympy.Symbol, int]:
    """The hints in force (empty outside a pass that sets them)."""
    return _CURRENT.get()


@contextlib.contextmanager
def using(hints: Mapping[sympy.Symbol, int]) -> Iterator[None]:
    """``hints`` in force inside the block (tests; :func:`with_size_hints`)."""
    token = _CURRENT.set(dict(hints))
    try:
        yield
    finally:
        _CURRENT.reset(token)


def with_size_hints(apply: Callable[..., Any]) -> Callable[..., Any]:
    """A ``ModulePass.apply`` run with its module's hints in force."""

    @functools.wraps(apply)
    def run(self: Any, ctx: Any, op: ModuleOp) -> Any:
        with using(module_hints(op)):
            return apply(self, ctx, op)

    return run


def substitute(expr: sympy.Expr | int, default: int) -> sympy.Expr:
    """``expr`` with each size symbol at its hint, ``default`` where it has none."""
    e = sympy.sympify(expr)
    if not e.free_symbols:
        return e
    known = _CURRENT.get()
    return e.xreplace({s: sympy.Integer(known.get(s, default)) for s in e.free_symbols})


def value(expr: sympy.Expr | int, default: int) -> int:
    """``expr`` as a number: :func:`substitute`'s, or ``default`` where that still
    does not evaluate to an integer (a ``Max`` of something unknown)."""
    e = substitute(expr, default)
    try:
        return int(e)
    except TypeError:
        return default


__all__ = [
    "SIZE_HINTS_ATTR",
    "current",
    "module_hints",
    "read_size_hints",
    "size_hints_attr",
    "substitute",
    "using",
    "value",
    "with_size_hints",
]
