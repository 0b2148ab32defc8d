"""Data movement as pointwise index math (cat, pad, flip, roll, gather ...),
factories (arange, full ...), random ops and in-place copies into inputs.

Every op here is one ``loop.pointwise`` over its result (two for
``native_dropout``; a short sum for the replication pads' backward): the
body computes which source element an output element reads -- an index
expression, or a data-dependent one through an indirect
load -- and where an output element may come from several sources or none
(cat, pad), loads under a mask and picks with ``arith.select``. Random ops
draw counter-based numbers: offset = the op's own range of counters
(``Lowerer.random_offsets``) + the element's row-major position.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.dialects import builtin
from xdsl.ir import Attribute, BlockArgument, SSAValue

from coil.dialects import dtypes
from coil.dialects import loop as L
from coil.dialects.aten import AtenOp
from coil.dialects.body_builder import (
    BodyBuilder,
    CannotLower,
    check_supported,
    compute_dtype,
    is_float,
)
from coil.dialects.symbolic import SymInt, to_expr, torch_sympy
from coil.intmath import numel
from coil.lowering.aten_to_loop.common import (
    broadcast_index,
    dtype_of,
    load_broadcast,
    result_type,
    shape_of,
)
from coil.lowering.aten_to_loop.lowerer import Lowerer, register
from coil.lowering.aten_to_loop.views import (
    linear_index,
    norm_dim,
    select_index,
    slice_start,
    unravel,
)

# ---- body helpers -------------------------------------------------------------------


def _cmp_index(b: BodyBuilder, pred: str, lhs: SymInt, rhs: SymInt) -> SSAValue:
    """``lhs <pred> rhs`` for index expressions, as an i1."""
    return b.cmp(pred, b.index(sympy.expand(to_expr(lhs) - to_expr(rhs))), b.const(0, builtin.i64))


def _all(b: BodyBuilder, conds: Sequence[SSAValue]) -> SSAValue | None:
    out = None
    for c in conds:
        out = c if out is None else b.andi(out, c)
    return out


def _number(b: BodyBuilder, value: object, dtype: Attribute) -> SSAValue:
    """A Python number or size expression as a constant of ``dtype``."""
    t = dtype
    if isinstance(value, sympy.Expr) and not value.is_number:
        return b.cast(b.index(value), t)
    if isinstance(value, sympy.Expr):
        value = int(value) if value.is_Integer else float(value)
    if isinstance(value, SSAValue):
        raise CannotLower("a scalar computed at run time")
    return b.const(value, t)


def _index_value(b: BodyBuilder, v: SSAValue) -> SSAValue:
    if v.type == builtin.i1 or not isinstance(v.type, builtin.IntegerType):
        raise CannotLower("indices must be integer tensors")
    return b.cast(v, dtypes.i64)


def _copy_from(lw: Lowerer, op: AtenOp, src: SSAValue, index_fn) -> SSAValue:
    """A pointwise copy: result element ``idx`` is ``src[index_fn(idx)]``."""
    out = result_type(op)

    def body(b: BodyBuilder, idx):
        return b.load(src, index_fn(idx))

    return lw.pointwise(out.shape, out.element_type, body)


# ---- copies ---------------------------------------------------------------------------


@register("aten.lift_fresh_copy.default")  # clone is a cast in pointwise.py
def _clone(lw: Lowerer, op: AtenOp):
    return [_copy_from(lw, op, op.operands[0], list)]


@register("aten.copy.default")
def _copy(lw: Lowerer, op: AtenOp):
    self_, src = op.operands[0], op.operands[1]
    out = result_type(op)

    def body(b: BodyBuilder, idx):
        return load_broadcast(lw, b, src, shape_of(self_), idx, out.element_type)

    return [lw.pointwise(out.shape, out.element_type, body)]


@register("aten.copy_.default")
def _copy_inplace(lw: Lowerer, op: AtenOp):
    """``copy_`` into a graph input (AOTAutograd's input mutation): the value is
    broadcast and cast to the input's shape and dtype, then ``loop.copy`` writes
    it; later uses read the input."""
    dest, src = op.operands[0], op.operands[1]
    fn_block = lw.fn.body.block
    if not (isinstance(dest, BlockArgument) and dest.owner is fn_block):
        raise CannotLower("copy_ into something other than a graph input")
    shape, dtype = shape_of(dest), dtype_of(dest)

    def body(b: BodyBuilder, idx):
        return load_broadcast(lw, b, src, shape, idx, dtype)

    value = lw.pointwise(shape, dtype, body, name=f"{dest.name_hint or 'input'}_new")
    lw.insert(L.CopyOp(value, dest))
    return [dest]


# ---- cat and pad -----------------------------------------------------------------------


@register("aten.cat.default", "prims.cat.default")
def _cat(lw: Lowerer, op: AtenOp):
    out = result_type(op)
    rank = len(out.shape)
    dim = norm_dim(op.arg("dim"), rank)
    # torch skips legacy empty 1-d inputs and inputs empty along the cat dim.
    inputs = [
        v
        for v in op.operands
        if not (v.type.rank == 1 and rank != 1 and to_expr(shape_of(v)[0]) == 0)
        and to_expr(shape_of(v)[dim]) != 0
    ]
    if not inputs:
        raise CannotLower("cat of empty tensors only")
    bounds, offset = [], sympy.Integer(0)
    for v in inputs:
        end = sympy.expand(offset + to_expr(shape_of(v)[dim]))
        bounds.append((offset, end))
        offset = end

    def body(b: BodyBuilder, idx):
        i = idx[dim]
        # below[k]: the element lies before the end of input k (one compare each).
        below = [_cmp_index(b, "lt", i, hi) for _, hi in bounds[:-1]]
        values = []
        for k, (v, (lo, _)) in enumerate(zip(inputs, bounds)):
            conds = []
            if k > 0:
                conds.append(b.logical_not(below[k - 1]))
            if k < len(inputs) - 1:
                conds.append(below[k])
            index = list(idx)
            index[dim] = i - lo
            values.append(b.cast(b.load(v, index, mask=_all(b, conds)), out.element_type))
        value = values[-1]
        for k in range(len(inputs) - 2, -1, -1):
            value = b.select(below[k], values[k], value)
        return value

    return [lw.pointwise(out.shape, out.element_type, body)]


def _maybe_positive(v: sympy.Expr) -> bool:
    return not (v.is_number and v <= 0)


@register("aten.constant_pad_nd.default")
def _constant_pad(lw: Lowerer, op: AtenOp):
    """Negative pads crop: the source index shifts, no mask is needed there."""
    src = op.operands[0]
    out = result_type(op)
    in_shape = shape_of(src)
    rank = len(in_shape)
    pad = [to_expr(p) for p in op.arg("pad")]
    if len(pad) % 2 or len(pad) // 2 > rank:
        raise CannotLower("malformed pad list")
    value = op.arg("value")

    def body(b: BodyBuilder, idx):
        index, conds = list(idx), []
        for k in range(len(pad) // 2):
            d = rank - 1 - k
            lo, hi = pad[2 * k], pad[2 * k + 1]
            index[d] = idx[d] - lo
            if _maybe_positive(lo):
                conds.append(_cmp_index(b, "ge", index[d], 0))
            if _maybe_positive(hi):
                conds.append(_cmp_index(b, "lt", index[d], in_shape[d]))
        mask = _all(b, conds)
        x = b.cast(b.load(src, index, mask=mask), out.element_type)
        if mask is None:
            return x
        return b.select(mask, x, _number(b, value, out.element_type))

    return [lw.pointwise(out.shape, out.element_type, body)]


@register(
    "aten.replication_pad1d_backward.default",
    "aten.replication_pad2d_backward.default",
    "aten.replication_pad3d_backward.default",
)
def _replication_pad_backward(lw: Lowerer, op: AtenOp):
    """A gather: input position ``i`` of a padded dim (size ``n``, pads ``lo``,
    ``hi``) was copied to output ``i + lo``, and the edges also to the pads:
    it sums the gradient over ``[start(i), end(i))``, ``start = (i + lo) *
    min(i, 1)`` (0 at the first element) and ``end = i + lo + 1 + hi * (1 -
    min(n - 1 - i, 1))`` (through the high pad at the last), a reduction over
    the longest such range (``max(lo, hi) + 1``; ``lo + hi + 1`` where ``n``
    may be 1) with each element's tail masked. Inductor calls ATen for it."""
    grad, self_ = op.operands[0], op.operands[1]
    out = result_type(op)
    dtype = out.element_type
    check_supported(dtype)
    if not is_float(dtype):
        raise CannotLower(f"a padding gradient of {dtypes.name_of(dtype)} values")
    acc = compute_dtype(dtype)
    shape = [to_expr(s) for s in shape_of(self_)]
    pad = [to_expr(p) for p in op.arg("padding")]
    if len(pad) % 2 or len(pad) // 2 > len(shape) or not all(p.is_Integer for p in pad):
        raise CannotLower("a replication pad that is not static")
    rank = len(shape)
    # Padded dims, innermost first in `pad`: (dim, lo, hi).
    dims = [(rank - 1 - k, int(pad[2 * k]), int(pad[2 * k + 1])) for k in range(len(pad) // 2)]
    dims = sorted((d, lo, hi) for d, lo, hi in dims if lo or hi)  # r0 the outermost
    if any(lo < 0 or hi < 0 for _, lo, hi in dims):
        raise CannotLower("a negative replication pad")
    extent = []
    for d, lo, hi in dims:
        n = shape[d]
        extent.append(max(lo, hi) + 1 if n.is_Integer and n > 1 else lo + hi + 1)

    def body(b: BodyBuilder, idx):
        index, conds = list(idx[:rank]), []
        for (d, lo, hi), r in zip(dims, idx[rank:]):
            i, n = idx[d], shape[d]
            start = (i + lo) * sympy.Min(i, 1)
            end = i + lo + 1 + hi * (1 - sympy.Min(n - 1 - i, 1))
            index[d] = sympy.expand(start + r)
            conds.append(_cmp_index(b, "lt", index[d], end))
        mask = _all(b, conds)
        g = b.cast(b.load(grad, index, mask=mask), acc)
        return g if mask is None else b.select(mask, g, b.const(0, acc))

    (total,) = lw.reduction("sum", out.shape, extent, acc, body)
    if acc == dtype:
        return [total]
    return [lw.pointwise(out.shape, dtype, lambda b, idx: b.load(total, list(idx)))]


# ---- reorderings ------------------------------------------------------------------------


@register("aten.flip.default")
def _flip(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    shape = shape_of(src)
    dims = {norm_dim(d, len(shape)) for d in op.arg("dims")}

    def index(idx):
        return [to_expr(shape[d]) - 1 - i if d in dims else i for d, i in enumerate(idx)]

    return [_copy_from(lw, op, src, index)]


def _rotate(i: sympy.Expr, shift: SymInt, size: SymInt) -> sympy.Expr:
    """Source position of output position ``i`` after rolling by ``shift``."""
    s, n = to_expr(shift), to_expr(size)
    if s.is_number and n.is_number:
        k = (-int(s)) % int(n) if int(n) else 0
        return torch_sympy().PythonMod(i + k, n) if k else i
    return torch_sympy().PythonMod(i - s, n)


@register("aten.roll.default")
def _roll(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    shape = shape_of(src)
    shifts, dims = list(op.arg("shifts")), list(op.arg("dims") or [])

    if not dims:
        if len(shifts) != 1:
            raise CannotLower("roll without dims takes one shift")

        def index(idx):
            flat = _rotate(linear_index(shape, idx), shifts[0], numel(map(to_expr, shape)))
            return unravel(flat, shape)

    else:
        if len(shifts) != len(dims):
            raise CannotLower("roll needs one shift per dim")
        by_dim: dict[int, sympy.Expr] = {}
        for s, d in zip(shifts, dims):
            d = norm_dim(d, len(shape))
            by_dim[d] = sympy.expand(by_dim.get(d, 0) + to_expr(s))

        def index(idx):
            return [
                _rotate(i, by_dim[d], shape[d]) if d in by_dim else i for d, i in enumerate(idx)
            ]

    return [_copy_from(lw, op, src, index)]


@register("aten.repeat.default")
def _repeat(lw: Lowerer, op: AtenOp):
    src = op.operands[0]
    shape = [to_expr(s) for s in shape_of(src)]
    offset = len(result_type(op).shape) - len(shape)

    def index(idx):
        return [
            # size 1 broadcasts; size 0 repeats into an empty result (no element).
            sympy.Integer(0) if s in (0, 1) else torch_sympy().PythonMod(idx[offset + k], s)
            for k, s in enumerate(shape)
        ]

    return [_copy_from(lw, op, src, index)]


# ---- indirect loads ------------------------------------------------------------------------


@register("aten.index_select.default")
def _index_select(lw: Lowerer, op: AtenOp):
    src, index_t = op.operands[0], op.operands[1]
    out = result_type(op)
    dim = norm_dim(op.arg("dim"), len(shape_of(src)))

    def body(b: BodyBuilder, idx):
        # A 0-d source has a 0-d result: its one-element index is read at 0.
        at = ([idx[dim]] if idx else [sympy.Integer(0)]) if index_t.type.rank == 1 else []
        t = _index_value(b, b.load(index_t, at))
        index = list(idx)
        if index:
            index[dim] = L.indirect_symbol(0)
        return b.load(src, index, indirect=[t])

    return [lw.pointwise(out.shape, out.element_type, body)]


@register("aten.gather.default")
def _gather(lw: Lowerer, op: AtenOp):
    src, index_t = op.operands[0], op.operands[1]
    out = result_type(op)
    rank = len(shape_of(src))
    if index_t.type.rank != rank:
        raise CannotLower("gather of a 0-d tensor")
    dim = norm_dim(op.arg("dim"), rank)

    def body(b: BodyBuilder, idx):
        t = _index_value(b, b.load(index_t, list(idx)))
        index = list(idx)
        index[dim] = L.indirect_symbol(0)
        return b.load(src, index, indirect=[t])

    return [lw.pointwise(out.shape, out.element_type, body)]


@register("aten.embedding.default")
def _embedding(lw: Lowerer, op: AtenOp):
    weight, indices = op.operands[0], op.operands[1]
    out = result_type(op)
    if weight.type.rank != 2:
        raise CannotLower("embedding weight must be 2-d")
    n = indices.type.rank

    def body(b: BodyBuilder, idx):
        t = _index_value(b, b.load(indices, list(idx[:n])))
        return b.load(weight, [L.indirect_symbol(0), idx[n]], indirect=[t])

    return [lw.pointwise(out.shape, out.element_type, body)]


@register("aten.index.Tensor", "aten._unsafe_index.Tensor")
def _index(lw: Lowerer, op: AtenOp):
    """Advanced indexing: the index tensors broadcast to one shape B. Adjacent
    indexed dims are replaced by B in place; separated ones put B first.
    Negative indices count from the end."""
    src = op.operands[0]
    groups = op.operand_groups()
    indices = groups["indices"]
    in_shape = shape_of(src)
    rank = len(in_shape)
    out = result_type(op)
    if len(indices) > rank:
        raise CannotLower("too many indices")
    present = [k for k, t in enumerate(indices) if t is not None]
    if not present:
        raise CannotLower("index with no index tensors")
    for k in present:
        if dtype_of(indices[k]) not in (dtypes.i64, dtypes.i32):
            raise CannotLower("boolean/byte masks need nonzero (data-dependent shape)")
    n_free = rank - len(present)
    n_b = len(out.shape) - n_free
    adjacent = present == list(range(present[0], present[-1] + 1))
    b_start = present[0] if adjacent else 0
    b_shape = out.shape[b_start : b_start + n_b]

    def body(b: BodyBuilder, idx):
        b_idx = idx[b_start : b_start + n_b]
        free = iter(idx[:b_start] + idx[b_start + n_b :])
        index: list[sympy.Expr] = []
        values: list[SSAValue] = []
        for d in range(rank):
            t = indices[d] if d < len(indices) else None
            if t is None:
                index.append(next(free))
                continue
            v = _index_value(b, b.load(t, broadcast_index(shape_of(t), b_shape, b_idx)))
            size = _number(b, to_expr(in_shape[d]), dtypes.i64)
            negative = b.cmp("lt", v, b.const(0, builtin.i64))
            v = b.select(negative, b.add(v, size), v)
            index.append(L.indirect_symbol(len(values)))
            values.append(v)
        return b.load(src, index, indirect=values)

    return [lw.pointwise(out.shape, out.element_type, body)]


# ---- scatters into a copy ------------------------------------------------------------------


@register("aten.slice_scatter.default")
def _slice_scatter(lw: Lowerer, op: AtenOp):
    self_, src = op.operands[0], op.operands[1]
    out = result_type(op)
    shape = shape_of(self_)
    dim = norm_dim(op.arg("dim"), len(shape))
    start = slice_start(op.arg("start"), shape[dim])
    step = to_expr(op.arg("step"))
    count = to_expr(shape_of(src)[dim])

    def body(b: BodyBuilder, idx):
        rel = idx[dim] - start
        conds = [_cmp_index(b, "ge", rel, 0), _cmp_index(b, "lt", rel, step * count)]
        if step != 1:
            conds.append(_cmp_index(b, "eq", torch_sympy().PythonMod(rel, step), 0))
        inside = _all(b, conds)
        index = list(idx)
        index[dim] = torch_sympy().FloorDiv(rel, step) if step != 1 else rel
        new = b.cast(b.load(src, index, mask=inside), out.element_type)
        return b.select(inside, new, b.cast(b.load(self_, list(idx)), out.element_type))

    return [lw.pointwise(out.shape, out.element_type, body)]


@register("aten.select_scatter.default")
def _select_scatter(lw: Lowerer, op: AtenOp):
    self_, src = op.operands[0], op.operands[1]
    out = result_type(op)
    shape = shape_of(self_)
    dim = norm_dim(op.arg("dim"), len(shape))
    at = select_index(op.arg("index"), shape[dim])

    def body(b: BodyBuilder, idx):
        hit = _cmp_index(b, "eq", idx[dim], at)
        new = b.cast(b.load(src, [*idx[:dim], *idx[dim + 1 :]], mask=hit), out.element_type)
        return b.select(hit, new, b.cast(b.load(self_, list(idx)), out.element_type))

    return [lw.pointwise(out.shape, out.element_type, body)]


# ---- factories ------------------------------------------------------------------------------


def _fill(lw: Lowerer, op: AtenOp, value: object) -> list[SSAValue]:
    out = result_type(op)
    dtype = out.element_type
    return [lw.pointwise(out.shape, dtype, lambda b, idx: _number(b, value, dtype))]


@register(
    "aten.zeros.default",
    "aten.zeros_like.default",
    "aten.new_zeros.default",
    # Any values are fine for empty tensors; zeros make runs reproducible.
    "aten.empty.memory_format",
    "aten.empty_like.default",
    "aten.empty_strided.default",
    "aten.new_empty.default",
    "aten.new_empty_strided.default",
    "prims.empty.default",
    "prims.empty_permuted.default",
    "prims.empty_strided.default",
)
def _zeros(lw: Lowerer, op: AtenOp):
    return _fill(lw, op, 0)


@register("aten.ones.default", "aten.ones_like.default", "aten.new_ones.default")
def _ones(lw: Lowerer, op: AtenOp):
    return _fill(lw, op, 1)


@register(
    "aten.full.default",
    "aten.full_like.default",
    "aten.new_full.default",
    "prims.full.default",
    "prims.full_like.default",
)
def _full(lw: Lowerer, op: AtenOp):
    return _fill(lw, op, op.arg("fill_value"))


@register("aten.fill.Scalar", "prims.fill.default")
def _fill_scalar(lw: Lowerer, op: AtenOp):
    return _fill(lw, op, op.arg("value"))


@register("aten.fill.Tensor")
def _fill_tensor(lw: Lowerer, op: AtenOp):
    value = op.operands[1]
    if value.type.rank != 0:
        raise CannotLower("fill with a tensor that is not 0-d")
    out = result_type(op)
    return [lw.pointwise(out.shape, out.element_type, lambda b, idx: b.load(value, []))]


@register("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def _arange(lw: Lowerer, op: AtenOp):
    out = result_type(op)
    names = {s.name for s in op.schema().props}
    start = op.arg("start") if "start" in names else 0
    step = op.arg("step") if "step" in names else 1
    return [_ramp(lw, out.shape, out.element_type, start, step)]


@register("prims.iota.default")
def _iota(lw: Lowerer, op: AtenOp):
    out = result_type(op)
    return [_ramp(lw, out.shape, out.element_type, op.arg("start"), op.arg("step"))]


def _ramp(
    lw: Lowerer, shape: Sequence[SymInt], dtype: Attribute, start: object, step: object
) -> SSAValue:
    """``start + step * i0``: exact in i64 for integer starts and steps, else in
    f64 (as torch's CPU kernel computes ``start + step * i`` in double)."""
    ints = all(isinstance(v, int | sympy.Expr) and not isinstance(v, bool) for v in (start, step))
    if ints and any(isinstance(v, sympy.Expr) and not v.is_integer for v in (start, step)):
        ints = False

    def body(b: BodyBuilder, idx):
        if ints:
            return b.index(sympy.expand(to_expr(start) + to_expr(step) * idx[0]))
        f64 = dtypes.f64
        i = b.cast(b.index(idx[0]), f64)
        return b.add(_number(b, start, f64), b.mul(_number(b, step, f64), i))

    return lw.pointwise(shape, dtype, body)


# ---- random ---------------------------------------------------------------------------------


def _random_body(lw: Lowerer, shape: Sequence[SymInt], normal: bool):
    """A body drawing one f32 number per element from a fresh counter range."""
    seed = lw.seed()
    base = lw.random_offsets(numel(map(to_expr, shape)))

    def draw(b: BodyBuilder, idx) -> SSAValue:
        offset = sympy.expand(base + linear_index(shape, idx))
        cls = L.RandnOp if normal else L.RandOp
        rand = cls(seed, offset)
        b.block.add_op(rand)
        return rand.result

    return draw


def _random(lw: Lowerer, op: AtenOp, normal: bool) -> list[SSAValue]:
    out = result_type(op)
    if not is_float(out.element_type):
        raise CannotLower(f"random {out.element_type} values")
    check_supported(out.element_type)
    draw = _random_body(lw, out.shape, normal)
    return [lw.pointwise(out.shape, out.element_type, draw)]


@register("aten.rand.default", "aten.rand_like.default")
def _rand(lw: Lowerer, op: AtenOp):
    return _random(lw, op, normal=False)


@register("aten.randn.default", "aten.randn_like.default")
def _randn(lw: Lowerer, op: AtenOp):
    return _random(lw, op, normal=True)


@register("aten.bernoulli.p", "aten.bernoulli.default")
def _bernoulli(lw: Lowerer, op: AtenOp):
    """1 where a uniform draw falls below p (a number, or the input's element)."""
    self_ = op.operands[0]
    out = result_type(op)
    check_supported(out.element_type)
    p_tensor = op.name == "aten.bernoulli.default"
    if p_tensor:
        check_supported(dtype_of(self_))
    draw = _random_body(lw, out.shape, normal=False)

    def body(b: BodyBuilder, idx):
        u = draw(b, idx)
        if p_tensor:
            p = b.load(self_, list(idx))
            compute = dtypes.f64 if dtype_of(self_) == dtypes.f64 else dtypes.f32
            u, p = b.cast(u, compute), b.cast(p, compute)
        else:
            p = b.const(float(op.arg("p")), builtin.f32)
        return b.cmp("lt", u, p)

    return [lw.pointwise(out.shape, out.element_type, body)]


@register("aten.native_dropout.default")
def _native_dropout(lw: Lowerer, op: AtenOp):
    """As torch's decomposition: keep = rand > p, out = keep * x / (1 - p); both
    results read the same draws (same counters)."""
    x = op.operands[0]
    out = result_type(op)
    shape = out.shape
    p, train = float(op.arg("p")), op.arg("train")
    check_supported(out.element_type)

    if not train or p == 0:
        value = lw.pointwise(shape, out.element_type, lambda b, idx: b.load(x, list(idx)))
        mask = lw.pointwise(shape, dtypes.i1, lambda b, idx: b.const(True, builtin.i1))
        return [value, mask]
    if p == 1:
        value = lw.pointwise(shape, out.element_type, lambda b, idx: b.const(0, out.element_type))
        mask = lw.pointwise(shape, dtypes.i1, lambda b, idx: b.const(False, builtin.i1))
        return [value, mask]
    draw = _random_body(lw, shape, normal=False)
    compute = dtypes.f64 if out.element_type == dtypes.f64 else dtypes.f32
    scale = 1.0 / (1.0 - p)

    def keep(b: BodyBuilder, idx):
        return b.cmp("gt", draw(b, idx), b.const(p, builtin.f32))

    def value_body(b: BodyBuilder, idx):
        k = b.cast(keep(b, idx), compute)
        v = b.cast(b.load(x, list(idx)), compute)
        return b.mul(b.mul(k, v), b.const(scale, compute))

    value = lw.pointwise(shape, out.element_type, value_body)
    mask = lw.pointwise(shape, dtypes.i1, keep)
    return [value, mask]
