"""Pointwise lowerings: elementwise math with torch's type promotion and
broadcasting. Each op is one ``loop.pointwise`` over the result's shape; the
body loads each operand (broadcast), converts it to the compute dtype (reduced
floats compute in f32), applies the op and converts to the result dtype."""

from __future__ import annotations

from collections.abc import Callable

import torch
from xdsl.ir import SSAValue

from coil.dialects.aten import AtenOp
from coil.lowering.aten_to_loop.common import (
    dtype_of,
    is_tensor,
    load_broadcast,
    python_scalar,
    result_type,
)
from coil.lowering.body_builder import BodyBuilder, compute_dtype, is_bool
from coil.lowering.convert_aten_to_loop import Lowerer, register


def promoted_dtype(*operands: SSAValue | object) -> torch.dtype:
    """torch's result type for these operands (0-d tensors and Python scalars
    promote as torch promotes them)."""
    stand_ins = []
    for v in operands:
        if is_tensor(v):
            shape = () if v.type.rank == 0 else (1,)
            stand_ins.append(torch.empty(shape, dtype=dtype_of(v)))
        else:
            py = python_scalar(v)
            stand_ins.append(py if isinstance(py, bool | int | float) else 1)
    result = stand_ins[0]
    if len(stand_ins) == 1:
        return result.dtype if isinstance(result, torch.Tensor) else torch.tensor(result).dtype
    dtype = torch.result_type(stand_ins[0], stand_ins[1])
    for s in stand_ins[2:]:
        dtype = torch.promote_types(dtype, torch.result_type(torch.empty((), dtype=dtype), s))
    return dtype


def elementwise(
    lw: Lowerer,
    op: AtenOp,
    operands: list[SSAValue | object],
    fn: Callable[..., SSAValue],
    compute: torch.dtype | None = None,
) -> SSAValue:
    """A pointwise op over ``op``'s result shape: ``fn(b, *elements)`` with each
    operand loaded (broadcast) and converted to ``compute`` (default: the
    result dtype's compute dtype)."""
    out = result_type(op)
    shape, dtype = out.shape, out.dtype
    compute = compute or compute_dtype(dtype)

    def body(b: BodyBuilder, idx):
        elems = [load_broadcast(lw, b, v, shape, idx, compute) for v in operands]
        return fn(b, *elems)

    return lw.pointwise(shape, dtype, body)


def _binary(name: str, fn: Callable[..., SSAValue]) -> None:
    for overload in ("Tensor", "Scalar"):

        @register(f"aten.{name}.{overload}")
        def lower(lw: Lowerer, op: AtenOp, fn=fn):
            a, other = op.operands[0], op.operands[1] if len(op.operands) > 1 else op.arg("other")
            return [elementwise(lw, op, [a, other], fn)]


def _add_like(sign: int):
    def fn_factory(lw: Lowerer, op: AtenOp):
        a = op.operands[0]
        other = op.operands[1] if len(op.operands) > 1 else op.arg("other")
        alpha = op.arg("alpha")

        def fn(b: BodyBuilder, x, y):
            if alpha not in (None, 1):
                y = b.mul(y, b.const_like(alpha, y))
            return b.add(x, y) if sign > 0 else b.sub(x, y)

        return [elementwise(lw, op, [a, other], fn)]

    return fn_factory


register("aten.add.Tensor", "aten.add.Scalar")(_add_like(+1))
register("aten.sub.Tensor", "aten.sub.Scalar")(_add_like(-1))
_binary("mul", lambda b, x, y: b.andi(x, y) if is_bool(x.type) else b.mul(x, y))


@register("aten.div.Tensor", "aten.div.Scalar")
def _div(lw: Lowerer, op: AtenOp):
    other = op.operands[1] if len(op.operands) > 1 else op.arg("other")
    return [elementwise(lw, op, [op.operands[0], other], lambda b, x, y: b.truediv(x, y))]


def _unary_math(aten_name: str, math_name: str) -> None:
    @register(f"aten.{aten_name}.default")
    def lower(lw: Lowerer, op: AtenOp):
        return [elementwise(lw, op, [op.operands[0]], lambda b, x: b.math(math_name, x))]


for _aten, _math in (("exp", "exp"), ("log", "log"), ("tanh", "tanh"), ("erf", "erf")):
    _unary_math(_aten, _math)


def _comparison(name: str) -> None:
    for overload in ("Tensor", "Scalar"):

        @register(f"aten.{name}.{overload}")
        def lower(lw: Lowerer, op: AtenOp):
            a = op.operands[0]
            other = op.operands[1] if len(op.operands) > 1 else op.arg("other")
            compute = compute_dtype(promoted_dtype(a, other))
            return [elementwise(lw, op, [a, other], lambda b, x, y: b.cmp(name, x, y), compute)]


for _cmp in ("eq", "ne", "lt", "le", "gt", "ge"):
    _comparison(_cmp)


@register("aten.where.self")
def _where(lw: Lowerer, op: AtenOp):
    cond, a, other = op.operands
    out = result_type(op)
    compute = compute_dtype(out.dtype)
    shape = out.shape

    def body(b: BodyBuilder, idx):
        c = load_broadcast(lw, b, cond, shape, idx, torch.bool)
        x = load_broadcast(lw, b, a, shape, idx, compute)
        y = load_broadcast(lw, b, other, shape, idx, compute)
        return b.select(c, x, y)

    return [lw.pointwise(shape, out.dtype, body)]
