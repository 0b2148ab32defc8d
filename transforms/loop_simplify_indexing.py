"""``loop-simplify-indexing``: simplify index expressions with the ranges of the
nest they sit in, using Inductor's ``SizeVarAllocator.simplify_with_ranges``.

Floor division and modulo of a provably nonnegative dividend are first rewritten
to Inductor's ``ModularIndexing`` (``(a floordiv b) mod m`` and ``a mod m``), so its
range-based patterns apply; they are turned back into ``floordiv``/``mod`` after.
A reshape followed by its inverse thus reads ``x[i0, i1]`` again.

Inductor (and torch with it) is imported only when some expression can hold
floor division or modulo, i.e. once torch's sympy functions are loaded; until
then every expression is affine and simplifying it is expanding it, which is
what ``simplify_with_ranges`` returns for an affine expression.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from coil.dialects import loop as L
from coil.dialects.symbolic import loaded_torch_sympy
from coil.transforms.loop_utils import exprs_of, function_blocks, set_exprs


class _Simplifier:
    def __init__(self) -> None:
        from torch._inductor.sizevars import SizeVarAllocator

        self.sizevars = SizeVarAllocator()

    def bounds(self, ranges: dict[sympy.Symbol, sympy.Expr], expr: sympy.Expr) -> Any:
        from torch.utils._sympy.value_ranges import ValueRanges, bound_sympy

        vr: dict[sympy.Symbol, ValueRanges] = {}
        for s in expr.free_symbols:
            if s in ranges:
                size = sympy.sympify(ranges[s])
                vr[s] = ValueRanges(0, max(int(size) - 1, 0) if size.is_number else sympy.oo)
            elif L.is_index_symbol(s):
                vr[s] = ValueRanges(-sympy.oo, sympy.oo)  # indirect values
            else:
                vr[s] = ValueRanges(1, sympy.oo)  # size symbols are >= 1
        return bound_sympy(expr, vr)

    def nonnegative(self, ranges: dict, expr: sympy.Expr) -> bool:
        if expr.is_nonnegative:
            return True
        try:
            lower = self.bounds(ranges, expr).lower
            return bool(lower >= 0) if lower.is_number else False
        except Exception:  # bound analysis is best effort
            return False

    def to_modular(self, expr: sympy.Expr, ranges: dict) -> sympy.Expr:
        from torch.utils._sympy.functions import FloorDiv, ModularIndexing, PythonMod

        if not expr.args:
            return expr
        args = [self.to_modular(a, ranges) for a in expr.args]
        if isinstance(expr, PythonMod):
            a, m = args
            if isinstance(a, FloorDiv) and self.nonnegative(ranges, a.args[0]):
                return ModularIndexing(a.args[0], a.args[1], m)
            if self.nonnegative(ranges, a):
                return ModularIndexing(a, 1, m)
        return expr.func(*args)

    @staticmethod
    def from_modular(expr: sympy.Expr) -> sympy.Expr:
        from torch.utils._sympy.functions import FloorDiv, ModularIndexing, PythonMod

        if not expr.args:
            return expr
        args = [_Simplifier.from_modular(a) for a in expr.args]
        if isinstance(expr, ModularIndexing):
            base, div, mod = args
            inner = base if div == 1 else FloorDiv(base, div)
            return PythonMod(inner, mod)
        return expr.func(*args)

    def simplify(self, expr: sympy.Expr, ranges: dict) -> sympy.Expr:
        from torch.utils._sympy.functions import FloorDiv, ModularIndexing

        e = self.to_modular(sympy.sympify(expr), ranges)
        # simplify_with_ranges wants integer-valued ranges for the index symbols.
        e = self.sizevars.simplify_with_ranges(e, ranges)
        e = self.from_modular(sympy.expand(e) if not e.has(ModularIndexing, FloorDiv) else e)
        return e


@dataclass(frozen=True)
class LoopSimplifyIndexingPass(ModulePass):
    """Simplify every index expression (``loop.load``, ``loop.index``, random
    offsets, ``loop.view``) with the ranges of its enclosing nest (a view's: its
    result shape). Size symbols count as >= 1. The IR is otherwise unchanged and
    every expression keeps its value at every point of its nest."""

    name = "loop-simplify-indexing"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        # Affine expressions only (torch's floordiv/mod never loaded): expand.
        simplifier = _Simplifier() if loaded_torch_sympy() is not None else None
        for block in function_blocks(op):
            for inner in block.walk():
                ranges = _ranges_for(inner)
                if ranges is None:
                    continue
                exprs = exprs_of(inner)
                assert exprs is not None
                new = tuple(
                    simplifier.simplify(e, ranges) if simplifier else sympy.expand(e) for e in exprs
                )
                if new != exprs:
                    set_exprs(inner, new)


def _ranges_for(op: Operation) -> dict[sympy.Symbol, sympy.Expr] | None:
    if isinstance(op, L.ViewOp):
        shape = op.result.type.shape_attr.data
        return dict(zip(L.index_symbols(len(shape)), shape))
    if exprs_of(op) is None:
        return None
    nest = L.enclosing_loop(op)
    if nest is None:
        return None
    sizes = list(nest.ranges.data)
    if isinstance(nest, L.ReductionOp):
        sizes += list(nest.reduction_ranges.data)
    return dict(zip(nest.index_symbols(), sizes))
