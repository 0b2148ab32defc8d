"""Scatter lowerings: ``scatter``/``scatter_add``/``scatter_reduce`` and
``index_put`` (``index_add`` and ``embedding_dense_backward`` reach it through
torch's decompositions) as a ``loop.scatter`` into a copy of ``self``
(Inductor's ``scatter_``/``index_put_`` with ``ir.Scatter``).

* One source per element (the index has size 1 along ``dim`` and ``self``'s
  sizes elsewhere: cross-entropy's backward, a gather's backward) stays a
  pointwise ``select`` (``_scatter_one``), fusable with its producers.
* Otherwise a ``loop.scatter`` over the index's shape: the body loads the
  index (``t0``) and the source, and the element ``self[.., t0, ..]`` is
  overwritten (``store``: one of several sources wins, as on a GPU) or
  combined atomically (``add`` for ``scatter_add``, ``sum``, ``index_put``
  with ``accumulate``; ``max``/``min`` for ``amax``/``amin``). ``mean`` is a
  sum and a count (two scatters) divided by ``max(count, 1)``, floored for
  integers, as ATen. ``include_self=False`` first stores the reduction's
  identity where the index points.
* Atomics work on f32 for reduced floats and i32 for 8/16-bit integers (a copy
  of ``self`` is widened first and the result rounded back once: exact for
  ``max``/``min``, and integer sums wrap as they would); bool accumulation and
  ``prod`` (no atomic multiply) go to ATen, as in Inductor.
* ``index_put`` indexes as ``aten.index`` does (adjacent index tensors replace
  their dims in place, separated ones come first; negative indices wrap); a
  single boolean mask with one value is a pointwise ``where`` (Inductor's
  ``index_put_as_masked_fill``), other boolean masks need ``nonzero`` (a
  data-dependent shape) and go to ATen.
* Under ``torch.use_deterministic_algorithms`` (the pass's ``deterministic``
  option) every scatter whose result could depend on the order of its updates
  calls ATen's deterministic kernel.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.dialects import builtin
from xdsl.ir import Attribute, SSAValue

from coil.dialects import dtypes
from coil.dialects import loop as L
from coil.dialects.aten import AtenOp
from coil.dialects.body_builder import BodyBuilder, CannotLower, check_supported, is_float
from coil.dialects.symbolic import SymInt, to_expr
from coil.lowering.aten_to_loop.common import (
    broadcast_index,
    dtype_of,
    python_scalar,
    result_type,
    shape_of,
)
from coil.lowering.aten_to_loop.lowerer import Lowerer, register
from coil.lowering.aten_to_loop.views import norm_dim

# ---- helpers ------------------------------------------------------------------------


def _index_value(b: BodyBuilder, v: SSAValue) -> SSAValue:
    if v.type == builtin.i1 or not isinstance(v.type, builtin.IntegerType):
        raise CannotLower("indices must be integer tensors")
    return b.cast(v, dtypes.i64)


def _number(b: BodyBuilder, value: object, dtype: Attribute) -> SSAValue:
    value = python_scalar(value)
    if isinstance(value, SSAValue):
        raise CannotLower("a scalar computed at run time")
    if isinstance(value, sympy.Expr):
        if not value.is_number:
            return b.cast(b.index(value), dtype)
        value = int(value) if value.is_Integer else float(value)
    return b.const(value, dtype)


def _work_dtype(dtype: Attribute, mode: str) -> Attribute:
    """The dtype a scatter of ``mode`` runs in: atomics have no 16-bit floats
    (bf16 needs sm90) nor 8/16-bit integers; a store needs none."""
    check_supported(dtype)
    if mode == "store":
        return dtype
    if dtype == dtypes.i1:
        raise CannotLower(f"scatter {mode} of booleans")
    if dtype in (dtypes.f16, dtypes.bf16):
        return dtypes.f32
    if dtype in (dtypes.i8, dtypes.i16):
        return dtypes.i32
    return dtype


def _cast_all(lw: Lowerer, x: SSAValue, dtype: Attribute) -> SSAValue:
    if dtype_of(x) == dtype:
        return x
    return lw.pointwise(shape_of(x), dtype, lambda b, idx: b.cast(b.load(x, list(idx)), dtype))


def _identity(mode: str, dtype: Attribute) -> int | float:
    """What an element holds before the first of its sources is combined in."""
    if mode == "add":
        return 0
    big = float("inf") if is_float(dtype) else 2 ** (dtype.width.data - 1) - 1
    return -big - (0 if is_float(dtype) else 1) if mode == "max" else big


def _check_deterministic(lw: Lowerer, what: str) -> None:
    if lw.deterministic:
        raise CannotLower(
            f"{what} under torch.use_deterministic_algorithms: ATen's deterministic kernel"
        )


# ---- scatter along a dim ------------------------------------------------------------


def _scatter_one(lw: Lowerer, op: AtenOp, add: bool) -> SSAValue | None:
    """``scatter``/``scatter_add`` whose index has size 1 along ``dim`` and
    self's sizes elsewhere: each output element has at most one source, the
    one whose index names its own position, so the scatter is a pointwise
    ``select(index[.., 0, ..] == i_dim, new, self)``. This is the form of
    cross-entropy's backward (``full_like(0).scatter(1, target, -1.0)``) and of
    a gather's backward: Inductor rewrites the constant-background case to a
    ``where`` (``scatter_upon_const_tensor``); as a nest any ``self`` fuses
    with its producer, and no full-size buffer is written twice. None where
    the index has another shape."""
    self_, index_t = op.operands[0], op.operands[1]
    out = result_type(op)
    shape = shape_of(self_)
    rank = len(shape)
    dim = norm_dim(op.arg("dim"), rank)
    index_shape = shape_of(index_t)
    if to_expr(index_shape[dim]) != 1 or any(
        to_expr(index_shape[d]) != to_expr(shape[d]) for d in range(rank) if d != dim
    ):
        return None
    src = op.operands[2] if len(op.operands) > 2 else None

    def body(b: BodyBuilder, idx):
        at = list(idx)
        at[dim] = sympy.Integer(0)
        hit = b.cmp("eq", _index_value(b, b.load(index_t, at)), b.index(idx[dim]))
        old = b.cast(b.load(self_, list(idx)), out.element_type)
        if src is None:
            new = _number(b, op.arg("value"), out.element_type)
        else:
            new = b.cast(b.load(src, at, mask=hit), out.element_type)
        return b.select(hit, b.add(old, new) if add else new, old)

    return lw.pointwise(out.shape, out.element_type, body)


def _along_dim(
    lw: Lowerer,
    op: AtenOp,
    init: SSAValue,
    mode: str,
    value: object,
    dim: int,
) -> SSAValue:
    """``init`` updated at ``[.., index[p], ..]`` (``index`` along ``dim``) for each
    point ``p`` of the index by ``value`` (a tensor read at ``p``, or a number)."""
    index_t = op.operands[1]
    ranges = shape_of(index_t)
    dtype = dtype_of(init)
    at = [
        L.indirect_symbol(0) if d == dim else s for d, s in enumerate(L.index_symbols(len(ranges)))
    ]

    def body(b: BodyBuilder, idx):
        t = _index_value(b, b.load(index_t, list(idx)))
        if isinstance(value, SSAValue) and hasattr(value.type, "shape_attr"):
            v = b.cast(b.load(value, list(idx)), dtype)
        else:
            v = _number(b, value, dtype)
        return v, [t]

    return lw.scatter(mode, init, ranges, at, body)


def _scatter_reduce(
    lw: Lowerer, op: AtenOp, reduce: str, src: object, include_self: bool = True
) -> SSAValue:
    """``self`` scattered along ``dim`` by ``src`` with ``reduce`` (None: store)."""
    self_, index_t = op.operands[0], op.operands[1]
    out = result_type(op).element_type
    rank = len(shape_of(self_))
    if rank == 0 or index_t.type.rank != rank:
        raise CannotLower("scatter of a 0-d tensor")
    dim = norm_dim(op.arg("dim"), rank)
    mode = {None: "store", "sum": "add", "mean": "add", "amax": "max", "amin": "min"}.get(reduce)
    if mode is None:
        raise CannotLower(f"scatter_reduce '{reduce}' (no atomic for it)")
    _check_deterministic(lw, "a scatter")
    work = _work_dtype(out, mode)
    base = _cast_all(lw, self_, work)
    if not include_self:
        base = _along_dim(lw, op, base, "store", _identity(mode, work), dim)
    result = _along_dim(lw, op, base, mode, src, dim)
    if reduce == "mean":
        ones = lw.pointwise(
            shape_of(self_), work, lambda b, idx: b.const(1 if include_self else 0, work)
        )
        counts = _along_dim(lw, op, ones, "add", 1, dim)

        def mean(b: BodyBuilder, idx):
            total, n = b.load(result, list(idx)), b.load(counts, list(idx))
            n = b.select(b.cmp("eq", n, b.const(0, work)), b.const(1, work), n)
            return b.truediv(total, n) if is_float(work) else b.floordivsi(total, n)

        result = lw.pointwise(shape_of(self_), work, mean)
    return _cast_all(lw, result, out)


@register("aten.scatter.src", "aten.scatter.value", "aten.scatter_add.default")
def _scatter(lw: Lowerer, op: AtenOp):
    add = op.name == "aten.scatter_add.default"
    rank = len(shape_of(op.operands[0]))
    if rank and op.operands[1].type.rank == rank:
        one = _scatter_one(lw, op, add)
        if one is not None:
            return [one]
    src = op.operands[2] if len(op.operands) > 2 else op.arg("value")
    return [_scatter_reduce(lw, op, "sum" if add else None, src)]


@register("aten.scatter.reduce", "aten.scatter.value_reduce")
def _scatter_legacy_reduce(lw: Lowerer, op: AtenOp):
    """The deprecated ``reduce="add"|"multiply"`` forms."""
    reduce = {"add": "sum"}.get(op.arg("reduce"))
    if reduce is None:
        raise CannotLower(f"scatter reduce='{op.arg('reduce')}' (no atomic multiply)")
    src = op.operands[2] if len(op.operands) > 2 else op.arg("value")
    return [_scatter_reduce(lw, op, reduce, src)]


@register("aten.scatter_reduce.two")
def _scatter_reduce_two(lw: Lowerer, op: AtenOp):
    reduce = op.arg("reduce")
    include_self = op.arg("include_self") is not False
    return [_scatter_reduce(lw, op, reduce, op.operands[2], include_self)]


# ---- index_put ------------------------------------------------------------------------


def _broadcast_shapes(shapes: Sequence[Sequence[SymInt]]) -> list[SymInt]:
    rank = max(len(s) for s in shapes)
    out: list[SymInt] = [1] * rank
    for s in shapes:
        for k, n in enumerate(s):
            at = rank - len(s) + k
            if to_expr(n) != 1:
                out[at] = n
    return out


def _masked_fill(
    lw: Lowerer, self_: SSAValue, mask: SSAValue, values: SSAValue, accumulate: bool
) -> SSAValue:
    """``self[mask] = v`` (``+=``) with one value ``v``: ``where(mask, v, self)``."""
    shape = shape_of(self_)
    dtype = dtype_of(self_)
    k = mask.type.rank
    if accumulate and dtype == dtypes.i1:
        raise CannotLower("index_put accumulate of booleans")

    def body(b: BodyBuilder, idx):
        old = b.load(self_, list(idx))
        hit = b.cast(b.load(mask, list(idx[:k])), dtypes.i1)
        v = b.cast(b.load(values, [sympy.Integer(0)] * values.type.rank), dtype)
        return b.select(hit, b.add(old, v) if accumulate else v, old)

    return lw.pointwise(shape, dtype, body)


def _lower_index_put(lw: Lowerer, op: AtenOp) -> SSAValue:
    self_ = op.operands[0]
    groups = op.operand_groups()
    indices = list(groups["indices"])
    (values,) = groups["values"]
    accumulate = bool(op.arg("accumulate"))
    in_shape = shape_of(self_)
    rank = len(in_shape)
    if rank == 0 or len(indices) > rank:
        raise CannotLower("index_put of a 0-d tensor or with too many indices")
    present = [k for k, t in enumerate(indices) if t is not None]
    if not present:
        raise CannotLower("index_put with no index tensors")
    masks = [k for k in present if dtypes.name_of(dtype_of(indices[k])) in ("bool", "uint8")]
    if masks:
        one_value = all(to_expr(n) == 1 for n in shape_of(values))
        if present == [0] and one_value:
            return _masked_fill(lw, self_, indices[0], values, accumulate)
        raise CannotLower("a boolean mask index needs nonzero (a data-dependent shape)")
    for k in present:
        if dtype_of(indices[k]) not in (dtypes.i64, dtypes.i32):
            raise CannotLower("index tensors must be int32 or int64")
    _check_deterministic(lw, "index_put")
    out = result_type(op).element_type
    mode = "add" if accumulate else "store"
    work = _work_dtype(out, mode)
    b_shape = _broadcast_shapes([shape_of(indices[k]) for k in present])
    n_b = len(b_shape)
    adjacent = present == list(range(present[0], present[-1] + 1))
    b_start = present[0] if adjacent else 0
    free_dims = [d for d in range(rank) if d >= len(indices) or indices[d] is None]
    free_sizes = [in_shape[d] for d in free_dims]
    ranges = [*free_sizes[:b_start], *b_shape, *free_sizes[b_start:]]
    syms = L.index_symbols(len(ranges))
    b_syms = syms[b_start : b_start + n_b]
    free_syms = iter(syms[:b_start] + syms[b_start + n_b :])
    at: list[sympy.Expr] = []
    order: list[int] = []  # the index tensor of each t<k>
    for d in range(rank):
        if d in present:
            at.append(L.indirect_symbol(len(order)))
            order.append(d)
        else:
            at.append(next(free_syms))

    def body(b: BodyBuilder, idx):
        ts = []
        for d in order:
            t = indices[d]
            v = _index_value(b, b.load(t, broadcast_index(shape_of(t), b_shape, b_syms)))
            size = _number(b, to_expr(in_shape[d]), dtypes.i64)
            negative = b.cmp("lt", v, b.const(0, dtypes.i64))
            ts.append(b.select(negative, b.add(v, size), v))
        value = b.load(values, broadcast_index(shape_of(values), ranges, list(idx)))
        return b.cast(b.cast(value, out), work), ts

    result = lw.scatter(mode, _cast_all(lw, self_, work), ranges, at, body)
    return _cast_all(lw, result, out)


@register("aten.index_put.default", "aten._unsafe_index_put.default")
def _index_put(lw: Lowerer, op: AtenOp):
    return [_lower_index_put(lw, op)]
