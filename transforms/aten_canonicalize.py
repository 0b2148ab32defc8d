"""Canonicalization patterns of the aten dialect.

They attach to the ops through :class:`AtenCanonicalizationPatterns` (a trait
on the ``AtenOp`` base class) and run in xDSL's stock ``canonicalize`` pass.

* view chains: ``view``/``_unsafe_view``/``reshape`` of one of them becomes one
  op on the original source; a view to the source's own type is dropped;
* no-op conversions: ``_to_copy``/``clone``/``alias``/``detach``/
  ``lift_fresh_copy``/``prims.convert_element_type`` whose result type (sizes,
  dtype, strides, device) equals the input's are dropped;
* identities: ``x * 1`` and ``x + 0`` (``alpha = 1``) when the result type is x's;
* scalar operands: a 0-d ``scalar_tensor``/``full`` operand of a binary pointwise
  op becomes a wrapped-number ``aten.constant`` when it has x's dtype (then
  type promotion cannot differ).

Every pattern keeps value semantics exact: none fires when the value it would
forward is mutated in place by a later op (``copy_`` into a graph input), nor
when dropping the op would make a function result alias a function argument.
"""

from __future__ import annotations

from typing import Any

import torch
from xdsl.dialects import func
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint

from coil.dialects.aten import AtenOp, ConstantOp, TensorType
from coil.dialects.aten_ops import (
    Aten_ToCopyOp,
    Aten_UnsafeViewOp,
    AtenAddScalarOp,
    AtenAddTensorOp,
    AtenAliasOp,
    AtenCloneOp,
    AtenDetachOp,
    AtenDivTensorOp,
    AtenEqTensorOp,
    AtenFullOp,
    AtenGeTensorOp,
    AtenGtTensorOp,
    AtenLeTensorOp,
    AtenLiftFreshCopyOp,
    AtenLtTensorOp,
    AtenMaximumOp,
    AtenMinimumOp,
    AtenMulScalarOp,
    AtenMulTensorOp,
    AtenNeTensorOp,
    AtenReshapeOp,
    AtenScalarTensorOp,
    AtenSubTensorOp,
    AtenViewOp,
    PrimsConvertElementTypeOp,
)

# --------------------------------------------------------------------------
# Safety checks shared by the patterns
# --------------------------------------------------------------------------


def is_mutated(value: SSAValue) -> bool:
    """Whether an op writes ``value`` in place (a mutating schema argument)."""
    for use in value.uses:
        user = use.operation
        if isinstance(user, AtenOp) and user.schema().mutates:
            for spec, values in zip(user.schema().operands, user.operand_groups().values()):
                if spec.mutated and value in values:
                    return True
    return False


def can_forward(source: SSAValue, result: SSAValue) -> bool:
    """Whether uses of ``result`` may read ``source`` instead."""
    if is_mutated(source) or is_mutated(result):
        return False
    if isinstance(source, BlockArgument):
        # A function result must not become a function argument: the caller
        # would get its own input back as an output.
        return not any(isinstance(u.operation, func.ReturnOp) for u in result.uses)
    return True


def _forward(rewriter: PatternRewriter, op: Operation, source: SSAValue) -> None:
    if op.results[0].type != source.type or not can_forward(source, op.results[0]):
        return
    rewriter.replace_op(op, [], [source])


def constant_value(value: SSAValue) -> Any:
    """The Python value of a scalar ``aten.constant`` operand, else None."""
    owner = value.owner
    if isinstance(owner, ConstantOp):
        return owner.python_value
    return None


def _is(value: Any, number: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and value == number


# --------------------------------------------------------------------------
# Patterns
# --------------------------------------------------------------------------

_VIEWS = (AtenViewOp, Aten_UnsafeViewOp, AtenReshapeOp)


class FoldViewChain(RewritePattern):
    """view(view(x, a), b) -> view(x, b); view(x, shape-of-x) -> x."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, _VIEWS):
            return
        source = op.self
        if source.type == op.result.type:
            _forward(rewriter, op, source)
            return
        inner = source.owner
        if not isinstance(inner, _VIEWS) or is_mutated(source):
            return
        origin = inner.self
        # A view of a non-contiguous tensor is only sure to exist for the
        # composed shape when the outer op may copy (reshape).
        if not isinstance(op, AtenReshapeOp):
            if not (isinstance(origin.type, TensorType) and origin.type.is_contiguous()):
                return
        (size_arg,) = op.schema().props  # "size" (view) or "shape" (reshape)
        new = type(op).build_from(
            {"self": origin}, {size_arg.name: op.arg(size_arg.name)}, [op.result.type]
        )
        new.result.name_hint = op.result.name_hint
        rewriter.replace_op(op, new)


class DropNoOpConversion(RewritePattern):
    """_to_copy / clone / alias / detach / convert_element_type to the same type -> x."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, Aten_ToCopyOp | AtenCloneOp):
            fmt = op.arg("memory_format")
            if fmt is not None and str(fmt) != "torch.preserve_format":
                return
            _forward(rewriter, op, op.self)
        elif isinstance(op, AtenAliasOp | AtenDetachOp | AtenLiftFreshCopyOp):
            _forward(rewriter, op, op.self)
        elif isinstance(op, PrimsConvertElementTypeOp):
            _forward(rewriter, op, op.a)


class FoldMulByOne(RewritePattern):
    """x * 1 -> x (when the product has x's type)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, AtenMulTensorOp):
            for x, one in ((op.self, op.other), (op.other, op.self)):
                if _is(constant_value(one), 1):
                    _forward(rewriter, op, x)
                    return
        elif isinstance(op, AtenMulScalarOp) and _is(op.arg("other"), 1):
            _forward(rewriter, op, op.self)


class FoldAddZero(RewritePattern):
    """x + 0 and x - 0 with alpha = 1 -> x (when the sum has x's type)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not _is(op.arg("alpha"), 1):
            return
        if isinstance(op, AtenAddTensorOp):
            for x, zero in ((op.self, op.other), (op.other, op.self)):
                if _is(constant_value(zero), 0):
                    _forward(rewriter, op, x)
                    return
        elif isinstance(op, AtenSubTensorOp) and _is(constant_value(op.other), 0):
            _forward(rewriter, op, op.self)
        elif isinstance(op, AtenAddScalarOp) and _is(op.arg("other"), 0):
            _forward(rewriter, op, op.self)


_BINARY = (
    AtenAddTensorOp,
    AtenSubTensorOp,
    AtenMulTensorOp,
    AtenDivTensorOp,
    AtenMaximumOp,
    AtenMinimumOp,
    AtenEqTensorOp,
    AtenNeTensorOp,
    AtenLtTensorOp,
    AtenLeTensorOp,
    AtenGtTensorOp,
    AtenGeTensorOp,
)


def _full_scalar(value: SSAValue) -> Any:
    """The fill value of a 0-d scalar_tensor/full, else None."""
    owner = value.owner
    if not isinstance(value.type, TensorType) or value.type.rank != 0:
        return None
    if isinstance(owner, AtenScalarTensorOp):
        return owner.arg("s")
    if isinstance(owner, AtenFullOp):
        return owner.arg("fill_value")
    return None


class FoldScalarTensorOperand(RewritePattern):
    """op(x, scalar_tensor(c)) -> op(x, c) when c's tensor has x's dtype.

    A 0-d tensor and a wrapped number promote alike exactly when the 0-d
    tensor's dtype equals x's: neither then changes x's dtype, and the result
    shape is x's (0-d broadcasts to anything).
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, _BINARY):
            return
        for i, (x, c) in enumerate(((op.self, op.other), (op.other, op.self))):
            fill = _full_scalar(c)
            if fill is None or not isinstance(x.type, TensorType):
                continue
            if c.type.dtype != x.type.dtype or x.type.shape != op.result.type.shape:
                continue
            if not isinstance(fill, bool | int | float):
                continue
            if c.type.dtype.is_floating_point:
                fill = float(fill)
            elif c.type.dtype != torch.bool:
                fill = int(fill)
            const = ConstantOp.from_python(fill)
            rewriter.insert_op(const, InsertPoint.before(op))
            op.operands[1 - i] = const.result
            rewriter.notify_op_modified(op)
            return


PATTERNS: dict[type[Operation], tuple[RewritePattern, ...]] = {}
for _cls in _VIEWS:
    PATTERNS[_cls] = (FoldViewChain(),)
for _cls in (
    Aten_ToCopyOp,
    AtenCloneOp,
    AtenAliasOp,
    AtenDetachOp,
    AtenLiftFreshCopyOp,
    PrimsConvertElementTypeOp,
):
    PATTERNS[_cls] = (DropNoOpConversion(),)
PATTERNS[AtenMulScalarOp] = (FoldMulByOne(),)
PATTERNS[AtenAddScalarOp] = (FoldAddZero(),)
for _cls in _BINARY:
    extra: tuple[RewritePattern, ...] = ()
    if _cls is AtenMulTensorOp:
        extra = (FoldMulByOne(),)
    elif _cls in (AtenAddTensorOp, AtenSubTensorOp):
        extra = (FoldAddZero(),)
    PATTERNS[_cls] = (*extra, FoldScalarTensorOperand())
