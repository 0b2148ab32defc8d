"""Canonicalization patterns of the aten dialect.

They attach to the ops through :class:`AtenCanonicalizationPatterns` (a trait
on the ``AtenOp`` base class), which reads them from the dialect's
``CANONICALIZATION_PATTERNS`` registry: importing this module fills it. They
run in ``canonicalize``, registered here as xDSL's stock pass (the import is
what registers the patterns before any pipeline runs).

* view chains: ``view``/``_unsafe_view``/``reshape`` of one of them becomes one
  op on the original source; a view to the source's own type is dropped;
* no-op conversions: ``_to_copy``/``clone``/``alias``/``detach``/
  ``lift_fresh_copy``/``prims.convert_element_type`` whose result type (sizes,
  dtype, strides, device) equals the input's are dropped;
* identities: ``x * 1``, ``x - 0`` and integer ``x + 0`` (``alpha = 1``) when
  the result type is x's (a float ``x + 0`` turns -0.0 into +0.0: kept);
* scalar operands: a 0-d ``scalar_tensor``/``full`` operand of add/sub/mul/div
  becomes a wrapped-number ``aten.constant`` (its value rounded to its dtype)
  when it has x's dtype, so type promotion cannot differ;
* full reductions from partial ones: ``sum``/``mean``/``amax``/``amin`` of all
  of x reduces a partial reduction of x the function makes anyway (sums in
  f32/f64 only), reading the smaller result instead of x again.

Every pattern keeps results exact, aliasing included: nothing is forwarded in
a function that writes any tensor in place (a write may reach the value
through a view), and a result that eager returns as a fresh tensor is not
replaced by one that would alias an input or another output.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any

import sympy
from xdsl.dialects import func
from xdsl.dialects.builtin import NoneAttr, StringAttr, f32, f64, i64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint
from xdsl.transforms.canonicalize import CanonicalizePass as XdslCanonicalizePass

from coil.dialects.aten import AtenOp, ConstantOp, OperatorOp, TensorType
from coil.dialects.aten_base import CANONICALIZATION_PATTERNS
from coil.dialects.aten_ops import (
    Aten_ToCopyOp,
    Aten_UnsafeViewOp,
    AtenAddScalarOp,
    AtenAddTensorOp,
    AtenAliasOp,
    AtenAmaxOp,
    AtenAminOp,
    AtenCloneOp,
    AtenDetachOp,
    AtenDivScalarOp,
    AtenDivTensorOp,
    AtenFullOp,
    AtenLiftFreshCopyOp,
    AtenMeanDimOp,
    AtenMeanOp,
    AtenMulScalarOp,
    AtenMulTensorOp,
    AtenReshapeOp,
    AtenScalarTensorOp,
    AtenSubTensorOp,
    AtenSumDimIntListOp,
    AtenSumOp,
    AtenViewOp,
    PrimsConvertElementTypeOp,
)

# --------------------------------------------------------------------------
# Safety checks shared by the patterns
# --------------------------------------------------------------------------


def writes_in_place(op: Operation) -> bool:
    """Whether ``op`` may write a tensor in place (an unknown operator may)."""
    if isinstance(op, AtenOp):
        return op.schema().mutates
    if isinstance(op, OperatorOp):
        overload = op.resolve()
        return overload is None or overload._schema.is_mutable
    return False


# The in-place writer found in each function (None: there is none), per
# PatternRewriter -- one per sweep of a canonicalize run, so an entry never
# outlives the run. Walking the whole function for every forwarding candidate
# made canonicalize quadratic in the graph's size. Within a run the patterns
# here create only views and constants, never a writer, so "none" stays true;
# a found writer is re-checked (a pattern may have erased it).
# (Keyed by id: a PatternRewriter is unhashable; the weak reference drops the
# entry with the rewriter and tells a reused id apart.)
_writers: dict[int, tuple[weakref.ref, dict[Operation, Operation | None]]] = {}


def _writers_of(rewriter: PatternRewriter) -> dict[Operation, Operation | None]:
    key = id(rewriter)
    entry = _writers.get(key)
    if entry is None or entry[0]() is not rewriter:
        ref = weakref.ref(rewriter, lambda _: _writers.pop(key, None))
        entry = _writers[key] = (ref, {})
    return entry[1]


def _enclosing_function(op: Operation) -> Operation:
    fn = op.parent_op()
    while fn is not None and not isinstance(fn, func.FuncOp):
        fn = fn.parent_op()
    return fn if fn is not None else op


def _first_writer(scope: Operation) -> Operation | None:
    return next((o for o in scope.walk() if writes_in_place(o)), None)


def _function_writes_in_place(op: Operation, rewriter: PatternRewriter | None = None) -> bool:
    scope = _enclosing_function(op)
    if rewriter is None:
        return _first_writer(scope) is not None
    known = _writers_of(rewriter)
    if scope in known:
        writer = known[scope]
        if writer is None or scope.is_ancestor(writer):
            return writer is not None
    writer = known[scope] = _first_writer(scope)
    return writer is not None


def can_forward(
    op: Operation, source: SSAValue, *, fresh: bool, rewriter: PatternRewriter | None = None
) -> bool:
    """Whether uses of ``op``'s result may read ``source`` instead.

    ``fresh``: in eager, the result is a new tensor (clone, x * 1), not an alias.
    ``rewriter``: the pattern rewriter of the running canonicalization, which
    scopes a memo of the function's in-place writers.
    """
    # Any in-place write in the function may reach the source's storage
    # through a view; AOTAutograd graphs write only at their end (copy_ into
    # mutated inputs), so being conservative here costs little.
    if _function_writes_in_place(op, rewriter):
        return False
    # A fresh function result must stay fresh: forwarding would return an input,
    # or the same tensor twice, to a caller that may write into it.
    if fresh and any(isinstance(u.operation, func.ReturnOp) for u in op.results[0].uses):
        return False
    return True


def _forward(rewriter: PatternRewriter, op: Operation, source: SSAValue, *, fresh: bool) -> None:
    if op.results[0].type != source.type or not can_forward(
        op, source, fresh=fresh, rewriter=rewriter
    ):
        return
    rewriter.replace(op, [], [source])


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
            _forward(rewriter, op, source, fresh=False)  # a view aliases its source
            return
        # Both forms alias the origin's storage alike, so in-place writes do not
        # matter here.
        inner = source.owner
        if not isinstance(inner, _VIEWS):
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
        rewriter.replace(op, new)


class DropNoOpConversion(RewritePattern):
    """_to_copy / clone / alias / detach / convert_element_type to the same type -> x."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, Aten_ToCopyOp | AtenCloneOp):
            fmt = op.arg_attr("memory_format")
            if not isinstance(fmt, NoneAttr) and fmt != StringAttr("preserve_format"):
                return
            _forward(rewriter, op, op.self, fresh=True)
        elif isinstance(op, AtenLiftFreshCopyOp):
            _forward(rewriter, op, op.self, fresh=True)
        elif isinstance(op, AtenAliasOp | AtenDetachOp):
            _forward(rewriter, op, op.self, fresh=False)
        elif isinstance(op, PrimsConvertElementTypeOp):
            _forward(rewriter, op, op.a, fresh=True)


class FoldMulByOne(RewritePattern):
    """x * 1 -> x (when the product has x's type)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, AtenMulTensorOp):
            for x, one in ((op.self, op.other), (op.other, op.self)):
                if _is(constant_value(one), 1):
                    _forward(rewriter, op, x, fresh=True)
                    return
        elif isinstance(op, AtenMulScalarOp) and _is(op.arg("other"), 1):
            _forward(rewriter, op, op.self, fresh=True)


class FoldAddZero(RewritePattern):
    """x + 0 and x - 0 with alpha = 1 -> x (when the sum has x's type).

    IEEE: -0.0 + 0.0 is +0.0, so a float x + 0 is not x; x + (-0.0) and
    x - 0.0 are. Integer and bool x fold either way.
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not _is(op.arg("alpha"), 1):
            return
        if isinstance(op, AtenAddTensorOp):
            for x, zero in ((op.self, op.other), (op.other, op.self)):
                if _adds_nothing(x, constant_value(zero)):
                    _forward(rewriter, op, x, fresh=True)
                    return
        elif isinstance(op, AtenAddScalarOp) and _adds_nothing(op.self, op.arg("other")):
            _forward(rewriter, op, op.self, fresh=True)
        elif isinstance(op, AtenSubTensorOp):
            zero = constant_value(op.other)
            if _is(zero, 0) and not _is_negative_zero(zero):
                _forward(rewriter, op, op.self, fresh=True)


def _is_negative_zero(value: Any) -> bool:
    return isinstance(value, float) and value == 0 and math.copysign(1.0, value) < 0


def _adds_nothing(x: SSAValue, zero: Any) -> bool:
    if not _is(zero, 0):
        return False
    floating = isinstance(x.type, TensorType) and (
        x.type.dtype.is_floating_point or x.type.dtype.is_complex
    )
    return not floating or _is_negative_zero(zero)


# Binary ops whose Tensor overload takes a wrapped number for either operand
# (maximum or lt.Tensor, say, need a real tensor).
_BINARY = (AtenAddTensorOp, AtenSubTensorOp, AtenMulTensorOp, AtenDivTensorOp)


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
            if c.type.element_type != x.type.element_type or x.type.shape != op.result.type.shape:
                continue
            if isinstance(fill, sympy.Expr) and not fill.is_number:
                # A size: exact in an int64 or f64 tensor, as the scalar it becomes.
                if c.type.element_type not in (i64, f64):
                    continue
            else:
                import torch  # only where a 0-d constant operand is found

                # The value the 0-d tensor held: rounded to its dtype (bf16, int8 ...).
                fill = torch.tensor(fill, dtype=c.type.dtype).item()
                if not isinstance(fill, bool | int | float):
                    continue  # complex
            const = ConstantOp.from_python(fill)
            rewriter.insert_op(const, InsertPoint.before(op))
            op.operands[1 - i] = const.result
            rewriter.notify_op_modified(op)
            return


# --------------------------------------------------------------------------
# Full reductions from partial ones
# --------------------------------------------------------------------------


def _full_reduction(op: Operation) -> str | None:
    """The kind of ``op`` (sum, mean, amax or amin) where it reduces its whole
    input to a 0-d tensor of the input's dtype; else None."""
    kinds = {
        AtenSumOp: "sum",
        AtenSumDimIntListOp: "sum",
        AtenMeanOp: "mean",
        AtenMeanDimOp: "mean",
        AtenAmaxOp: "amax",
        AtenAminOp: "amin",
    }
    kind = kinds.get(type(op))
    if kind is None:
        return None
    t = op.self.type  # each of these reduces its ``self``
    if not isinstance(t, TensorType) or op.result.type.element_type != t.element_type:
        return None
    schema_args = {spec.name for spec in op.schema().props}
    if "dtype" in schema_args and not isinstance(op.arg_attr("dtype"), NoneAttr):
        return None
    if "dim" in schema_args:
        rank = len(t.shape)
        if op.arg("keepdim") or _dims(op.arg("dim"), rank) != set(range(rank)):
            return None
    return kind


def _dims(dims: Any, rank: int) -> set[int]:
    """The dimensions a reduction's ``dim`` argument names (none or [] is all)."""
    if not dims:
        return set(range(rank))
    return {d % rank for d in dims} if rank else set()


def _partial_reduction(x: SSAValue, kind: str, full: Operation) -> Operation | None:
    """Another op of ``full``'s block reducing ``x`` over some (not all) of its
    dimensions the same way, into x's dtype: the one with the fewest results."""
    t = x.type
    rank = len(t.shape)
    want = AtenSumDimIntListOp if kind in ("sum", "mean") else type(full)
    best, best_size = None, None
    for use in x.uses:
        p = use.operation
        if p is full or not isinstance(p, want) or p.parent is not full.parent:
            continue
        if isinstance(p, AtenSumDimIntListOp) and not isinstance(p.arg_attr("dtype"), NoneAttr):
            continue
        dims = _dims(p.arg("dim"), rank)
        if not dims or dims == set(range(rank)) or p.result.type.element_type != t.element_type:
            continue
        if not p.result.type.is_static:
            continue
        size = math.prod(p.result.type.shape)
        if best is None or size < best_size:
            best, best_size = p, size
    return best


class FullReductionFromPartial(RewritePattern):
    """sum(x) -> sum(sum(x, d)), mean(x) -> sum(sum(x, d)) / numel(x),
    amax(x) -> amax(amax(x, d)) (amin alike), where the function reduces x over
    dimensions d anyway: the full reduction then reads that partial result, not
    x again (``x.sum(0)`` and ``x.mean()`` of a 32768 x 2048 matrix read it
    twice, 268 MB each in f32). Sums and means only in f32/f64, whose partial
    sums keep their precision (a bf16 partial is rounded); max/min are exact.
    The partial reduction moves before the full one when it came after (both
    read x only; not where the function writes any tensor in place)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        kind = _full_reduction(op)
        if kind is None:
            return
        x = op.self
        t = x.type
        if not t.shape or not t.is_static:
            return
        if kind in ("sum", "mean") and t.element_type not in (f32, f64):
            return
        partial = _partial_reduction(x, kind, op)
        if partial is None or _function_writes_in_place(op, rewriter):
            return
        block = op.parent
        if block.get_operation_index(partial) > block.get_operation_index(op):
            partial.detach()
            rewriter.insert_op(partial, InsertPoint.before(op))
        result = TensorType([], t.element_type, None, t.device_attr.data)
        if kind in ("sum", "mean"):
            new: list[Operation] = [AtenSumOp.build_from({"self": partial.result}, {}, [result])]
            if kind == "mean":
                new[0].result.name_hint = f"{op.result.name_hint or 'mean'}_sum"
                numel = math.prod(int(n) for n in t.shape)
                new.append(
                    AtenDivScalarOp.build_from({"self": new[0].result}, {"other": numel}, [result])
                )
        else:
            new = [type(op).build_from({"self": partial.result}, {"dim": []}, [result])]
        new[-1].results[0].name_hint = op.result.name_hint
        for n in new:
            n.location = op.location
        rewriter.replace_op(op, new)


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
for _cls in (AtenSumOp, AtenSumDimIntListOp, AtenMeanOp, AtenMeanDimOp, AtenAmaxOp, AtenAminOp):
    PATTERNS[_cls] = (FullReductionFromPartial(),)
PATTERNS[AtenAddScalarOp] = (FoldAddZero(),)
for _cls in _BINARY:
    extra: tuple[RewritePattern, ...] = ()
    if _cls is AtenMulTensorOp:
        extra = (FoldMulByOne(),)
    elif _cls in (AtenAddTensorOp, AtenSubTensorOp):
        extra = (FoldAddZero(),)
    PATTERNS[_cls] = (*extra, FoldScalarTensorOperand())

CANONICALIZATION_PATTERNS.update(PATTERNS)


@dataclass(frozen=True)
class CanonicalizePass(XdslCanonicalizePass):
    """xDSL's ``canonicalize`` with the aten patterns registered (importing this
    module registers them); everything else is xDSL's pass."""

    name = "canonicalize"
