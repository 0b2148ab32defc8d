"""Helpers shared by the aten -> loop lowerings: operand access, broadcasting."""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.ir import Attribute, SSAValue

from coil.dialects.aten import AtenOp
from coil.dialects.body_builder import BodyBuilder, CannotLower, check_supported
from coil.dialects.loop import is_tensor_like
from coil.dialects.symbolic import SymInt, sym_eq, to_expr
from coil.lowering.aten_to_loop.lowerer import Lowerer


def is_tensor(v: SSAValue | object) -> bool:
    return isinstance(v, SSAValue) and is_tensor_like(v.type)


def shape_of(v: SSAValue) -> tuple[SymInt, ...]:
    return v.type.shape


def dtype_of(v: SSAValue) -> Attribute:
    """The element type of a tensor value (the lowering's dtype: no torch)."""
    return v.type.element_type


def result_type(op: AtenOp, k: int = 0) -> Attribute:
    """The aten-level type of result ``k`` (shape, dtype, eager's strides)."""
    return op.results[k].type


def tensor_arg(op: AtenOp, name: str) -> SSAValue | None:
    group = op.operand_groups()[name]
    return group[0] if group else None


def broadcast_index(
    in_shape: Sequence[SymInt], out_shape: Sequence[SymInt], idx: Sequence[sympy.Expr]
) -> list[sympy.Expr]:
    """Index into a tensor broadcast (right-aligned) to ``out_shape``: size-1
    dimensions that broadcast read element 0.

    A symbolic size that is neither 1 nor provably the result's (a slice's
    ``(s0 + 1) // 3`` against ``s0``) is one or the other at run time, as the
    trace guarded: its index is ``i * Min(1, size - 1)``, element 0 where the
    size is 1. (Indexing it by ``i`` read past its end where it was 1.)"""
    offset = len(out_shape) - len(in_shape)
    if offset < 0:
        raise CannotLower("operand has more dimensions than the result")
    index = []
    for k, size in enumerate(in_shape):
        s, out_size = to_expr(size), to_expr(out_shape[offset + k])
        i = idx[offset + k]
        if s == 1 and out_size != 1:
            index.append(sympy.Integer(0))
        elif out_size == 1 or sym_eq(s, out_size) or s.is_Integer:
            index.append(i)
        else:
            index.append(i * sympy.Min(1, s - 1))
    return index


def load_broadcast(
    lw: Lowerer,
    b: BodyBuilder,
    value: SSAValue | bool | int | float,
    out_shape: Sequence[SymInt],
    idx: Sequence[sympy.Expr],
    to: Attribute | None = None,
) -> SSAValue:
    """The element of operand ``value`` (tensor, broadcast; or scalar) at ``idx``,
    converted to ``to`` when given."""
    if is_tensor(value):
        check_supported(dtype_of(value))
        v = b.load(value, broadcast_index(shape_of(value), out_shape, idx))
        return b.cast(v, to) if to is not None else v
    if to is None:
        raise CannotLower("a scalar operand needs a target dtype")
    return lw.scalar(b, value, to)


def python_scalar(value: SSAValue | object) -> object:
    """A non-tensor operand as a Python value where it is a known constant."""
    from coil.dialects.aten import ConstantOp

    if isinstance(value, SSAValue) and isinstance(value.owner, ConstantOp):
        return value.owner.python_value
    return value
