"""Helpers shared by the loop-level passes (loop-inline, loop-fuse,
loop-simplify-indexing, buffer-hoist-constants) and bufferize: where index
expressions live on body ops, which values a nest captures, positions of ops in
a function block, and building or recognizing an identity copy nest."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import sympy
from xdsl.dialects import arith, builtin, func
from xdsl.dialects.builtin import LocationAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from coil.dialects import buffer as B
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


def zero_constant(t: Attribute) -> arith.ConstantOp:
    """``arith.constant 0`` of the scalar type ``t`` (what a masked-off load reads)."""
    if isinstance(t, builtin.IntegerType | builtin.IndexType):
        return arith.ConstantOp(builtin.IntegerAttr(0, t))
    assert isinstance(t, builtin.AnyFloat), t
    return arith.ConstantOp(builtin.FloatAttr(0.0, t))


def function_blocks(module: builtin.ModuleOp) -> Iterator[Block]:
    """The body block of each function in ``module``."""
    for op in module.walk():
        if isinstance(op, func.FuncOp) and op.body.blocks:
            yield op.body.block


def substitute_in_body(block: Block, sub: dict[sympy.Symbol, sympy.Expr]) -> None:
    """``xreplace`` ``sub`` into every index expression held by ops under ``block``."""
    for op in block.walk():
        map_exprs(op, lambda e: e.xreplace(sub))


def squeeze_unit_ranges(nest: L.PointwiseOp | L.ReductionOp) -> L.PointwiseOp | L.ReductionOp:
    """Rebuild a tensor-level nest without its size-1 outer ranges.

    Its results lose those dimensions: loads of them in bodies drop the matching
    (always 0) indices, other uses read a ``loop.view`` with the old shape. Returns
    the new nest (``nest`` itself when it has no unit range)."""
    ranges = nest.ranges.data
    keep = [k for k, r in enumerate(ranges) if r != 1]
    if len(keep) == len(ranges) or nest.is_bufferized:
        return nest
    n_red = len(nest.reduction_ranges.data) if isinstance(nest, L.ReductionOp) else 0
    new_ranges = [ranges[k] for k in keep]
    old_syms = L.index_symbols(len(ranges))
    sub: dict[sympy.Symbol, sympy.Expr] = {
        s: (L.index_symbols(len(keep))[keep.index(k)] if k in keep else sympy.Integer(0))
        for k, s in enumerate(old_syms)
    }
    old_block = nest.body.block
    new_block = L.new_body(len(keep), n_red)
    for k, arg in enumerate(old_block.args[: len(ranges)]):
        if k in keep:
            arg.replace_all_uses_with(new_block.args[keep.index(k)])
        elif arg.uses:
            zero = arith.ConstantOp(builtin.IntegerAttr(0, builtin.IndexType()))
            zero.location = nest.location
            new_block.add_op(zero)
            arg.replace_all_uses_with(zero.result)
    for old, new in zip(old_block.args[len(ranges) :], new_block.args[len(keep) :]):
        old.replace_all_uses_with(new)
    for op in list(old_block.ops):
        op.detach()
        new_block.add_op(op)
    substitute_in_body(new_block, sub)
    props = dict(nest.properties)
    props["ranges"] = ShapeAttr(new_ranges)
    new_types = [L.LoopTensorType(new_ranges, r.type.element_type) for r in nest.res]
    new_nest = type(nest).build(
        operands=[[]], result_types=[new_types], properties=props, regions=[Region(new_block)]
    )
    new_nest.location = nest.location
    Rewriter.insert_op(new_nest, InsertPoint.before(nest))
    for old, new in zip(nest.res, new_nest.res):
        new.name_hint = old.name_hint
        for use in list(old.uses):
            user = use.operation
            if isinstance(user, L.LoadOp) and use.index == 0:
                index = [user.index.data[k] for k in keep]
                load = L.LoadOp(new, index, list(user.indirect), user.mask)
                load.result.name_hint = user.result.name_hint
                load.location = user.location
                Rewriter.insert_op(load, InsertPoint.before(user))
                user.result.replace_all_uses_with(load.result)
                Rewriter.erase_op(user)
        if old.uses:
            view = L.ViewOp(new, [L.index_symbols(len(ranges))[k] for k in keep], old.type)
            view.result.name_hint = old.name_hint
            view.location = nest.location
            Rewriter.insert_op(view, InsertPoint.after(new_nest))
            old.replace_all_uses_with(view.result)
    Rewriter.erase_op(nest)
    return new_nest


def identity_copy_source(value: SSAValue) -> SSAValue | None:
    """``x`` where ``value`` is ``loop.pointwise { yield x[i0, i1, ...] }`` of the
    same element type (an ``aten.clone`` that only changes the layout)."""
    nest = value.owner
    if not isinstance(nest, L.PointwiseOp) or len(nest.res) != 1:
        return None
    ops = list(nest.body.block.ops)
    if len(ops) != 2 or not isinstance(ops[0], L.LoadOp) or not isinstance(ops[1], L.YieldOp):
        return None
    load = ops[0]
    source = load.source
    if load.indirect or load.mask is not None or ops[1].operands[0] is not load.result:
        return None
    rank = len(nest.ranges.data)
    if list(load.index.data) != L.index_symbols(rank):
        return None
    t = source.type
    if (
        not isinstance(t, L.LoopTensorType | B.BufferType)
        or t.element_type != value.type.element_type
    ):
        return None
    if list(t.shape) != list(value.type.shape):
        return None
    return source


def copy_nest(
    source: SSAValue,
    dest: SSAValue,
    index: Sequence[sympy.Expr] | None = None,
    location: LocationAttr | None = None,
) -> L.PointwiseOp:
    """``loop.pointwise outs(%dest) { yield source[index] }`` (index over dest's
    i0..; the identity by default). Its ops carry ``location`` (default: that of
    the op producing ``source``), so the copy kernel names the user line."""
    shape = dest.type.shape
    block = L.new_body(len(shape))
    idx = list(index) if index is not None else L.index_symbols(len(shape))
    load = L.LoadOp(source, idx)
    block.add_op(load)
    block.add_op(L.YieldOp(load.result))
    nest = L.PointwiseOp.build(
        operands=[[dest]],
        result_types=[[]],
        properties={"ranges": ShapeAttr(shape)},
        regions=[Region(block)],
    )
    if location is None and isinstance(source.owner, Operation):
        location = source.owner.location
    if location is not None:
        for op in nest.walk():
            op.location = location
    return nest
