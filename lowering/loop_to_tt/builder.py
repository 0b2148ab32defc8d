"""The kernel builder: where convert-loop-to-tt puts ops, and its small helpers.

``KernelBuilder`` appends ops to a current block, keeps a stack of scopes for
CSE (constants, index expressions, splatted pointers, materialized group
members), and knows Triton's shape rules: elementwise operands must have the
same block shape, so ``broadcast_to`` splats scalars and stretches size-1
dimensions (a splat constant is rebuilt at the wanted shape instead).

``emit_index`` turns a sympy index expression (torch's ``FloorDiv`` /
``ModularIndexing`` / ``PythonMod`` / ``Max`` / ``Min`` included) into integer
ops of the kernel's index type, once per expression and scope.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import sympy
from torch.utils._sympy.functions import FloorDiv, ModularIndexing, PythonMod
from torch.utils._sympy.functions import Max as TorchMax
from torch.utils._sympy.functions import Min as TorchMin
from torch.utils._sympy.functions import Mod as TorchMod
from xdsl.dialects import arith as xarith
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    TensorType,
    i1,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from coil.dialects import arith as A
from coil.dialects import tt
from coil.dialects.tt import block_of, element_of, shape_of

Shape = tuple[int, ...]


class LoweringError(DiagnosticException):
    """A nest convert-loop-to-tt cannot lower, with a sentence saying why."""


def const_value(v: SSAValue) -> int | float | None:
    """The value of a scalar or splat ``arith.constant``, else None."""
    op = v.owner
    if not isinstance(op, xarith.ConstantOp):
        return None
    attr = op.value
    if isinstance(attr, IntegerAttr | FloatAttr):
        return attr.value.data
    if isinstance(attr, DenseIntOrFPElementsAttr):
        return A.splat_value(attr)
    return None


@functools.lru_cache(maxsize=4096)
def _splat_attr(
    key: str, value: int | float, element: Attribute, shape: tuple[int, ...]
) -> DenseIntOrFPElementsAttr:
    # A block constant holds every element; building (and verifying) the same
    # one per use was a visible part of the pass on large graphs. ``key`` is
    # repr(value), so 0.0 and -0.0 (equal, and equal hashes) stay apart.
    return DenseIntOrFPElementsAttr.from_list(TensorType(element, list(shape)), [value])


def broadcast_shapes(shapes: Sequence[Shape]) -> Shape:
    """Triton's rule as coil uses it: scalars go with anything; blocks of one rank
    stretch their size-1 dimensions."""
    out: Shape = ()
    for s in shapes:
        if not s:
            continue
        if not out:
            out = s
            continue
        if len(s) != len(out):
            raise LoweringError(f"convert-loop-to-tt: cannot combine blocks {s} and {out}")
        merged = []
        for a, b in zip(out, s):
            if a != b and 1 not in (a, b):
                raise LoweringError(f"convert-loop-to-tt: cannot combine blocks {s} and {out}")
            merged.append(max(a, b))
        out = tuple(merged)
    return out


class KernelBuilder:
    """Ops go to ``self.block``; caches live in scopes (one per nested block)."""

    def __init__(self, block: Block, index_type: IntegerType):
        self.block = block
        self.index_type = index_type
        self.ranges: dict[SSAValue, tuple[float, float]] = {}
        """Values whose range the kernel knows (``value_range.py``'s seeds)."""
        self._scopes: list[dict[Hashable, Any]] = [{}]
        self._isolated: list[int] = [0]

    # ---- insertion and scopes ----

    def insert(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def emit(self, op: Operation) -> SSAValue:
        self.insert(op)
        return op.results[0]

    @contextmanager
    def at(self, block: Block, isolated: bool = False) -> Iterator[None]:
        """Emit into ``block`` (a loop body, a combiner) with a fresh cache scope;
        an isolated one sees nothing of the enclosing scopes (tt.reduce combiners
        become separate functions)."""
        saved = self.block
        self.block = block
        self._scopes.append({})
        if isolated:
            self._isolated.append(len(self._scopes) - 1)
        try:
            yield
        finally:
            if isolated:
                self._isolated.pop()
            self._scopes.pop()
            self.block = saved

    def lookup(self, key: Hashable) -> Any:
        for scope in reversed(self._scopes[self._isolated[-1] :]):
            if key in scope:
                return scope[key]
        return None

    def remember(self, key: Hashable, value: Any, outer: bool = False) -> Any:
        (self._scopes[0] if outer else self._scopes[-1])[key] = value
        return value

    def cached(self, key: Hashable, make: Callable[[], Any]) -> Any:
        found = self.lookup(key)
        if found is not None:
            return found
        return self.remember(key, make())

    # ---- constants and shapes ----

    def const(self, value: int | float | bool, element: Attribute, shape: Shape = ()) -> SSAValue:
        if isinstance(element, AnyFloat):
            value = float(value)
        else:
            value = int(value)
        key = ("const", repr(value), element, tuple(shape))

        def make() -> SSAValue:
            if shape:
                attr = _splat_attr(repr(value), value, element, tuple(shape))
            elif isinstance(element, AnyFloat):
                attr = FloatAttr(value, element)
            else:
                attr = IntegerAttr(value, element)
            v = self.emit(xarith.ConstantOp(attr))
            return v

        return self.cached(key, make)

    def broadcast_to(self, v: SSAValue, shape: Shape) -> SSAValue:
        have = shape_of(v.type)
        if have == tuple(shape):
            return v
        value = const_value(v)
        if value is not None:
            return self.const(value, element_of(v.type), shape)
        if not have:
            return self.cached(("splat", v, shape), lambda: self.emit(tt.SplatOp(v, shape)))
        if len(have) != len(shape):
            raise LoweringError(
                f"convert-loop-to-tt: cannot broadcast a block {list(have)} to {list(shape)}"
            )
        return self.cached(("bcast", v, shape), lambda: self.emit(tt.BroadcastOp(v, shape)))

    def common(self, *values: SSAValue) -> list[SSAValue]:
        shape = broadcast_shapes([shape_of(v.type) for v in values])
        return [self.broadcast_to(v, shape) for v in values]

    # ---- arithmetic with broadcasting ----

    def binary(self, cls: type[Operation], a: SSAValue, b: SSAValue) -> SSAValue:
        a, b = self.common(a, b)
        return self.emit(cls(a, b))

    def cmpi(self, a: SSAValue, b: SSAValue, predicate: str) -> SSAValue:
        a, b = self.common(a, b)
        return self.emit(A.CmpiOp(a, b, predicate))

    def cmpf(self, a: SSAValue, b: SSAValue, predicate: str) -> SSAValue:
        a, b = self.common(a, b)
        return self.emit(A.CmpfOp(a, b, predicate))

    def select(self, c: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        c, a, b = self.common(c, a, b)
        return self.emit(A.SelectOp(c, a, b))

    def and_(self, a: SSAValue | None, b: SSAValue | None) -> SSAValue | None:
        if a is None or b is None:
            return b if a is None else a
        return self.cached(("and", a, b), lambda: self.binary(xarith.AndIOp, a, b))

    def cast_int(self, v: SSAValue, element: Attribute) -> SSAValue:
        """Sign-extend or truncate an integer (or index-typed) value to ``element``."""
        have = element_of(v.type)
        if have == element:
            return v
        value = const_value(v)
        if value is not None:
            return self.const(value, element, shape_of(v.type))
        target = block_of(element, shape_of(v.type))
        if isinstance(have, IndexType) or isinstance(element, IndexType):
            return self.emit(xarith.IndexCastOp(v, target))
        if have == i1:
            return self.emit(A.ExtUIOp(v, target))
        if have.width.data < element.width.data:
            return self.emit(A.ExtSIOp(v, target))
        return self.emit(A.TruncIOp(v, target))

    def to_float(self, v: SSAValue, element: Attribute) -> SSAValue:
        target = block_of(element, shape_of(v.type))
        have = element_of(v.type)
        if have == element:
            return v
        if isinstance(have, AnyFloat):
            width = lambda t: t.bitwidth  # noqa: E731
            cls = xarith.ExtFOp if width(have) < width(element) else xarith.TruncFOp
            return self.emit(cls(v, target))
        return self.emit(A.SIToFPOp(v, target))

    # ---- index expressions ----

    def bind(self, sym: sympy.Symbol, value: SSAValue) -> None:
        """``sym`` means ``value`` in this scope (an index of the tile, a size argument)."""
        self.remember(("sym", sym), value)

    def emit_index(self, expr: sympy.Expr) -> SSAValue:
        """The value of ``expr`` in the index type (a scalar when it uses only sizes)."""
        expr = sympy.sympify(expr)
        found = self.lookup(("expr", expr))
        if found is not None:
            return found
        return self.remember(("expr", expr), self._emit_index(expr))

    def _emit_index(self, e: sympy.Expr) -> SSAValue:
        it = self.index_type
        if e.is_Integer:
            return self.const(int(e), it)
        if e.is_Symbol:
            v = self.lookup(("sym", e))
            if v is None:
                raise LoweringError(f"convert-loop-to-tt: index symbol {e} has no value here")
            return self.cast_int(v, it)
        if isinstance(e, sympy.Add):
            terms = sorted(e.args, key=lambda t: (t.is_Number, sympy.default_sort_key(t)))
            acc = None
            for t in terms:
                coeff, rest = t.as_coeff_Mul()
                negative = coeff < 0
                v = self.emit_index(-t if negative else t)
                if acc is None:
                    acc = self.binary(xarith.SubiOp, self.const(0, it), v) if negative else v
                else:
                    acc = self.binary(xarith.SubiOp if negative else xarith.AddiOp, acc, v)
            return acc
        if isinstance(e, sympy.Mul):
            coeff, rest = e.as_coeff_Mul()
            factors = list(sympy.Mul.make_args(rest))
            acc = None
            for f in factors:
                v = self.emit_index(f)
                acc = v if acc is None else self.binary(xarith.MuliOp, acc, v)
            if coeff != 1:
                if not coeff.is_Integer:
                    raise LoweringError(f"convert-loop-to-tt: non-integer index expression {e}")
                acc = self.binary(xarith.MuliOp, acc, self.const(int(coeff), it))
            return acc
        if isinstance(e, sympy.Pow):
            base, exp = e.args
            if not (exp.is_Integer and int(exp) > 0):
                raise LoweringError(f"convert-loop-to-tt: cannot lower index power {e}")
            v = self.emit_index(base)
            acc = v
            for _ in range(int(exp) - 1):
                acc = self.binary(xarith.MuliOp, acc, v)
            return acc
        if isinstance(e, FloorDiv):
            # Index math is over nonnegative values: truncating division is floor.
            a, b = e.args
            return self.binary(xarith.DivSIOp, self.emit_index(a), self.emit_index(b))
        if isinstance(e, PythonMod | TorchMod | sympy.Mod):
            a, b = e.args
            return self.binary(xarith.RemSIOp, self.emit_index(a), self.emit_index(b))
        if isinstance(e, ModularIndexing):
            base, div, mod = e.args
            q = self.emit_index(FloorDiv(base, div)) if div != 1 else self.emit_index(base)
            return self.binary(xarith.RemSIOp, q, self.emit_index(mod))
        if isinstance(e, sympy.Max | sympy.Min | TorchMax | TorchMin):
            cls = xarith.MaxSIOp if isinstance(e, sympy.Max | TorchMax) else xarith.MinSIOp
            args = [self.emit_index(a) for a in e.args]
            acc = args[0]
            for v in args[1:]:
                acc = self.binary(cls, acc, v)
            return acc
        raise LoweringError(
            f"convert-loop-to-tt: cannot lower index expression {e} ({type(e).__name__})"
        )
