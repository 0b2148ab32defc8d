"""Helpers shared by the loop-level fusion passes (loop-inline, loop-fuse,
loop-simplify-indexing): where index expressions live on body ops, which values a
nest captures, and positions of ops in a function block."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import sympy
from xdsl.dialects import arith, builtin
from xdsl.ir import Attribute, Block, Operation, SSAValue

from coil.dialects import loop as L
from coil.dialects.symbolic import ShapeAttr

EXPR_PROPERTIES: dict[type[Operation], str] = {
    L.LoadOp: "index",
    L.IndexOp: "expr",
    L.RandOp: "offset",
    L.RandnOp: "offset",
    L.ViewOp: "index",
}
"""The property holding an op's index expressions (a ``#coil.shape`` list)."""


def exprs_of(op: Operation) -> tuple[sympy.Expr, ...] | None:
    """The index expressions ``op`` holds, or None for ops without any."""
    name = EXPR_PROPERTIES.get(type(op))
    if name is None:
        return None
    attr = op.properties[name]
    assert isinstance(attr, ShapeAttr)
    return attr.data


def set_exprs(op: Operation, exprs: tuple[sympy.Expr, ...] | list[sympy.Expr]) -> None:
    op.properties[EXPR_PROPERTIES[type(op)]] = ShapeAttr(exprs)


def map_exprs(op: Operation, fn: Callable[[sympy.Expr], sympy.Expr]) -> bool:
    """Apply ``fn`` to each of ``op``'s index expressions; True when one changed."""
    exprs = exprs_of(op)
    if exprs is None:
        return False
    new = tuple(sympy.sympify(fn(e)) for e in exprs)
    if new == exprs:
        return False
    set_exprs(op, new)
    return True


def captured_values(op: Operation) -> set[SSAValue]:
    """Values ``op`` (its operands and everything nested in it) uses but does not define."""
    defined: set[SSAValue] = set()
    used: list[SSAValue] = []
    for inner in op.walk():
        used.extend(inner.operands)
        defined.update(inner.results)
        for region in inner.regions:
            for block in region.blocks:
                defined.update(block.args)
    defined.difference_update(op.results)
    return {v for v in used if v not in defined}


def ancestor_in(op: Operation, block: Block) -> Operation | None:
    """The ancestor of ``op`` (or ``op`` itself) that lies directly in ``block``."""
    current: Operation | None = op
    while current is not None and current.parent_block() is not block:
        current = current.parent_op()
    return current


def positions(block: Block) -> dict[Operation, int]:
    return {op: k for k, op in enumerate(block.ops)}


def nest_of_use(op: Operation) -> L.LoopOp | None:
    """The innermost loop nest whose body holds ``op``."""
    return L.enclosing_loop(op)


def body_ops(nest: L.LoopOp) -> Iterator[Operation]:
    """Every op nested in ``nest``'s body (members' bodies included for groups)."""
    for op in nest.body.walk():
        yield op


def zero_constant(t: Attribute) -> arith.ConstantOp:
    """``arith.constant 0`` of the scalar type ``t`` (what a masked-off load reads)."""
    if isinstance(t, builtin.IntegerType | builtin.IndexType):
        return arith.ConstantOp(builtin.IntegerAttr(0, t))
    assert isinstance(t, builtin.AnyFloat), t
    return arith.ConstantOp(builtin.FloatAttr(0.0, t))


def top_level_nests(block: Block) -> list[L.LoopOp]:
    return [op for op in block.ops if isinstance(op, L.PointwiseOp | L.ReductionOp | L.FusedOp)]


def function_blocks(module: builtin.ModuleOp) -> Iterator[Block]:
    """The body block of each function in ``module``."""
    from xdsl.dialects import func

    for op in module.walk():
        if isinstance(op, func.FuncOp) and op.body.blocks:
            yield op.body.block
