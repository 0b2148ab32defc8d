"""View lowerings: every view is a ``loop.view`` -- an index map on its
producer, never a copy.

Each lowering writes, for every dimension of the source, the index that
element ``[i0, i1, ...]`` of the result reads, as a sympy expression over the
result's indices (``loop.index_symbols``). Shapes come from the op's result
type, where torch has already resolved ``-1`` sizes and clamped slice bounds.
Views of views compose: a view's source may itself be a ``loop.view``.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.ir import SSAValue

from coil.dialects import loop as L
from coil.dialects.aten import AtenOp, TensorType
from coil.dialects.body_builder import CannotLower
from coil.dialects.symbolic import SymInt, contiguous_strides, sym_eq, to_expr, torch_sympy
from coil.intmath import numel
from coil.lowering.aten_to_loop.common import broadcast_index, result_type, shape_of
from coil.lowering.aten_to_loop.lowerer import Lowerer, register

IndexMap = list[sympy.Expr]


# ---- index maps (shared with data_movement) ---------------------------------------


def norm_dim(dim: int, rank: int) -> int:
    """``dim`` in ``[0, rank)`` (torch wraps negative dims; a 0-d tensor takes -1/0)."""
    if rank == 0 and dim in (-1, 0):
        return 0
    return dim + rank if dim < 0 else dim


def linear_index(shape: Sequence[SymInt], idx: Sequence[sympy.Expr]) -> sympy.Expr:
    """Row-major position of element ``idx`` of a tensor of ``shape``."""
    return sympy.expand(
        sum((i * to_expr(s) for i, s in zip(idx, contiguous_strides(shape))), sympy.Integer(0))
    )


def unravel(flat: sympy.Expr, shape: Sequence[SymInt]) -> IndexMap:
    """The index of row-major position ``flat`` in a tensor of ``shape``."""
    out: IndexMap = []
    if any(to_expr(size) == 0 for size in shape):
        # An empty tensor: no position is ever read (its strides hold zeros,
        # and a floordiv or mod by them is undefined).
        return [sympy.Integer(0) for _ in shape]
    strides = contiguous_strides(shape)
    for k, (size, stride) in enumerate(zip(shape, strides)):
        size, stride = to_expr(size), to_expr(stride)
        if size == 1:
            out.append(sympy.Integer(0))
            continue
        j = torch_sympy().FloorDiv(flat, stride) if stride != 1 else flat
        if k > 0:
            j = torch_sympy().PythonMod(j, size)
        out.append(j)
    return out


def reshape_index(
    src_shape: Sequence[SymInt], dst_shape: Sequence[SymInt], idx: Sequence[sympy.Expr]
) -> IndexMap:
    """Index into a row-major tensor of ``src_shape`` read by element ``idx`` of its
    reshape to ``dst_shape``.

    Dimensions are grouped into the smallest runs whose sizes multiply to the same
    product on both sides (``[B, S, H*D] -> [B, S, H, D]`` gives three groups), so
    the maps stay simple: only dims inside a split or merged group need
    ``floordiv``/``mod``. Size-1 dims read index 0 and join no group."""
    src = [to_expr(s) for s in src_shape]
    dst = [to_expr(d) for d in dst_shape]
    out: IndexMap = [sympy.Integer(0)] * len(src)
    a_dims = [k for k, s in enumerate(src) if s != 1]
    b_dims = [k for k, d in enumerate(dst) if d != 1]
    ia = ib = 0
    while ia < len(a_dims) or ib < len(b_dims):
        na, nb = len(a_dims) - ia, len(b_dims) - ib
        found = (na, nb)
        for total in range(2, na + nb + 1):
            hits = [
                (ka, total - ka)
                for ka in range(1, total)
                if ka <= na
                and 0 < total - ka <= nb
                and sym_eq(
                    numel(src[a] for a in a_dims[ia : ia + ka]),
                    numel(dst[b] for b in b_dims[ib : ib + total - ka]),
                )
            ]
            if hits:
                found = hits[0]
                break
        ka, kb = found
        group_a, group_b = a_dims[ia : ia + ka], b_dims[ib : ib + kb]
        ia, ib = ia + ka, ib + kb
        flat = linear_index([dst[b] for b in group_b], [idx[b] for b in group_b])
        for a, j in zip(group_a, unravel(flat, [src[a] for a in group_a])):
            out[a] = j
    return out


def permute_index(dims: Sequence[int], idx: Sequence[sympy.Expr]) -> IndexMap:
    """Source index for ``permute(dims)``: result dim k is source dim ``dims[k]``."""
    rank = len(dims)
    out: IndexMap = [sympy.Integer(0)] * rank
    for k, d in enumerate(dims):
        out[norm_dim(d, rank)] = idx[k]
    return out


def slice_start(start: SymInt | None, size: SymInt) -> sympy.Expr:
    """``start`` as torch normalizes it: None is 0, negatives count from the end,
    then clamped to ``[0, size]`` (exactly when sizes are static)."""
    if start is None:
        return sympy.Integer(0)
    s, n = to_expr(start), to_expr(size)
    if s.is_number and s < 0:
        s = s + n
    if s.is_number and n.is_number:
        return sympy.Integer(min(max(int(s), 0), int(n)))
    if s.is_number and s < 0:
        return sympy.Integer(0)
    return s


def select_index(index: SymInt, size: SymInt) -> sympy.Expr:
    i = to_expr(index)
    return i + to_expr(size) if i.is_number and i < 0 else i


def _view(lw: Lowerer, op: AtenOp, src: SSAValue, index: IndexMap, k: int = 0) -> SSAValue:
    shape = result_type(op, k).shape
    return lw.view(src, [sympy.sympify(e) for e in index], shape)


def _result_idx(op: AtenOp, k: int = 0) -> list[sympy.Symbol]:
    return L.index_symbols(len(result_type(op, k).shape))


# ---- reshapes ---------------------------------------------------------------------


@register(
    "aten.view.default",
    "aten.reshape.default",
    "aten._unsafe_view.default",
    "aten.flatten.using_ints",
    "prims.reshape.default",
)
def _reshape(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    out = result_type(op).shape
    return [_view(lw, op, src, reshape_index(shape_of(src), out, _result_idx(op)))]


@register("aten.alias.default", "aten.detach.default", "aten.lift_fresh.default")
def _alias(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    return [_view(lw, op, src, list(_result_idx(op)))]


# ---- permutations ------------------------------------------------------------------


@register("aten.permute.default")
def _permute(lw: Lowerer, op: AtenOp):
    return [_view(lw, op, op.operands[0], permute_index(op.arg("dims"), _result_idx(op)))]


def _swap(rank: int, d0: int, d1: int) -> list[int]:
    dims = list(range(rank))
    d0, d1 = norm_dim(d0, rank), norm_dim(d1, rank)
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return dims


@register("aten.transpose.int", "prims.transpose.default")
def _transpose(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    rank = len(shape_of(src))
    if op.name == "prims.transpose.default":
        dims = list(op.arg("permutation"))
    else:
        dims = _swap(rank, op.arg("dim0"), op.arg("dim1"))
    return [_view(lw, op, src, permute_index(dims, _result_idx(op)))]


@register("aten.t.default")
def _t(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    rank = len(shape_of(src))
    dims = _swap(rank, 0, 1) if rank == 2 else list(range(rank))
    return [_view(lw, op, src, permute_index(dims, _result_idx(op)))]


@register("aten.movedim.int", "aten.movedim.intlist")
def _movedim(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    rank = len(shape_of(src))
    source, dest = op.arg("source"), op.arg("destination")
    source = [source] if isinstance(source, int) else list(source)
    dest = [dest] if isinstance(dest, int) else list(dest)
    source = [norm_dim(d, rank) for d in source]
    dest = [norm_dim(d, rank) for d in dest]
    dims: list[int | None] = [None] * rank
    for s, d in zip(source, dest):
        dims[d] = s
    rest = iter(d for d in range(rank) if d not in source)
    dims = [d if d is not None else next(rest) for d in dims]
    return [_view(lw, op, src, permute_index(dims, _result_idx(op)))]


# ---- broadcasting and unit dims -------------------------------------------------------


@register("aten.expand.default", "aten.expand_as.default")
def _expand(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    out = result_type(op).shape
    return [_view(lw, op, src, broadcast_index(shape_of(src), out, _result_idx(op)))]


@register(
    "aten.squeeze.default",
    "aten.squeeze.dim",
    "aten.squeeze.dims",
    "prims.squeeze.default",
)
def _squeeze(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    in_shape = [to_expr(s) for s in shape_of(src)]
    rank = len(in_shape)
    if op.name == "aten.squeeze.default":
        dims = set(range(rank))
    else:
        arg = op.arg("dim") if op.name != "prims.squeeze.default" else op.arg("dimensions")
        arg = [arg] if isinstance(arg, int) else list(arg)
        dims = {norm_dim(d, rank) for d in arg}
    removed = [k for k in range(rank) if k in dims and in_shape[k] == 1]
    if rank - len(removed) != len(result_type(op).shape):
        raise CannotLower("squeeze of a dimension whose size is not known to be 1")
    idx = iter(_result_idx(op))
    index = [sympy.Integer(0) if k in removed else next(idx) for k in range(rank)]
    return [_view(lw, op, src, index)]


@register("aten.unsqueeze.default")
def _unsqueeze(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    rank = len(shape_of(src)) + 1
    dim = norm_dim(op.arg("dim"), rank)
    idx = _result_idx(op)
    return [_view(lw, op, src, idx[:dim] + idx[dim + 1 :])]


# ---- slicing -------------------------------------------------------------------------


@register("aten.slice.Tensor")
def _slice(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    shape = shape_of(src)
    dim = norm_dim(op.arg("dim"), len(shape))
    step = to_expr(op.arg("step"))
    start = slice_start(op.arg("start"), shape[dim])
    index = list(_result_idx(op))
    index[dim] = start + step * index[dim]
    return [_view(lw, op, src, index)]


@register("aten.narrow.default")
def _narrow(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    shape = shape_of(src)
    dim = norm_dim(op.arg("dim"), len(shape))
    index = list(_result_idx(op))
    index[dim] = select_index(op.arg("start"), shape[dim]) + index[dim]
    return [_view(lw, op, src, index)]


@register("aten.select.int")
def _select(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    shape = shape_of(src)
    dim = norm_dim(op.arg("dim"), len(shape))
    idx = _result_idx(op)
    at = select_index(op.arg("index"), shape[dim])
    return [_view(lw, op, src, [*idx[:dim], at, *idx[dim:]])]


@register(
    "aten.split.Tensor",
    "aten.split.default",
    "aten.split.sizes",
    "aten.split_with_sizes.default",
)
def _split(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    dim = norm_dim(op.arg("dim"), len(shape_of(src)))
    views, offset = [], sympy.Integer(0)
    for k in range(len(op.results)):
        idx = _result_idx(op, k)
        index = list(idx)
        index[dim] = offset + idx[dim]
        views.append(_view(lw, op, src, index, k))
        offset = sympy.expand(offset + to_expr(result_type(op, k).shape[dim]))
    return views


@register("aten.unbind.int")
def _unbind(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    dim = norm_dim(op.arg("dim"), len(shape_of(src)))
    views = []
    for k in range(len(op.results)):
        idx = _result_idx(op, k)
        views.append(_view(lw, op, src, [*idx[:dim], sympy.Integer(k), *idx[dim:]], k))
    return views


@register("aten.unfold.default")
def _unfold(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    dim = norm_dim(op.arg("dimension"), len(shape_of(src)))
    idx = _result_idx(op)
    index = list(idx[:-1])
    if index:
        index[dim] = index[dim] * to_expr(op.arg("step")) + idx[-1]
    else:  # a 0-d tensor unfolds to [1]
        index = []
    return [_view(lw, op, src, index)]


@register("aten.diagonal.default")
def _diagonal(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    rank = len(shape_of(src))
    d1, d2 = norm_dim(op.arg("dim1"), rank), norm_dim(op.arg("dim2"), rank)
    if d1 == d2:
        raise CannotLower("diagonal of one dimension with itself")
    offset = int(op.arg("offset"))
    idx = _result_idx(op)
    rest = iter(idx[:-1])
    index = [next(rest) if k not in (d1, d2) else None for k in range(rank)]
    index[d1] = idx[-1] + max(-offset, 0)
    index[d2] = idx[-1] + max(offset, 0)
    return [_view(lw, op, src, index)]


# ---- as_strided ------------------------------------------------------------------------


def _is_contiguous_storage(lw: Lowerer, value: SSAValue) -> bool:
    """Whether ``value``'s storage, as eager has it, is exactly its row-major
    elements from offset 0: the fresh result of a loop nest that eager lays out
    row-major. A graph input is not: its storage offset is only known at run
    time, and as_strided's offset counts from the storage's start."""
    t = lw.aten_types.get(value)
    if not isinstance(value.owner, L.LoopOp) or not isinstance(t, TensorType):
        return False
    # A dimension of size 1 may carry any stride (a mean with keepdim over a
    # channels-last input: strides [768, 1, 768, 768] for [2, 768, 1, 1]).
    row_major = contiguous_strides(t.shape)
    return all(n == 1 or s == r for n, s, r in zip(t.shape, t.strides, row_major))


@register("aten.as_strided.default")
def _as_strided(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    if not _is_contiguous_storage(lw, src):
        raise CannotLower("as_strided of a tensor whose storage is not its own row-major data")
    idx = _result_idx(op)
    offset = op.arg("storage_offset")
    flat = to_expr(offset if offset is not None else 0)
    for i, stride in zip(idx, op.arg("stride")):
        flat = flat + i * to_expr(stride)
    return [_view(lw, op, src, unravel(sympy.expand(flat), shape_of(src)))]


__all__ = [
    "linear_index",
    "norm_dim",
    "permute_index",
    "reshape_index",
    "select_index",
    "slice_start",
    "unravel",
]
