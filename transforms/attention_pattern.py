"""The attention pattern: finding ``softmax(q @ kᵀ · scale + mask) @ v`` in an
aten-level graph, however it was spelled, and proving what it computes.

What people write reaches the aten level as two batched products with views
around them: ``q @ k.transpose(-1, -2)`` is ``bmm(view(expand(q)),
view(expand(permute(k))))`` and a view back, ``einsum`` adds unsqueezes and
permutes, ``repeat_interleave``/``expand`` of k and v (grouped-query attention)
is ``view(clone(expand(unsqueeze(k))))``, ``baddbmm`` a product plus a scaled
add, ``masked_fill`` a ``where``. Matching op shapes would need one pattern per
spelling (Inductor's fuse_attention.py has thirty). This module instead follows
*what each view does to the elements*: a :data:`Layout` (CuTe's shape:stride
algebra) says, for each dimension of a value, which elements of a root tensor
it walks, with broadcast dimensions at stride 0. Two values read the same
elements in the same positions exactly when their normalized layouts relative
to the same root are equal -- a proof, with symbolic sizes, not a heuristic.

The matcher (:func:`match_attention`), anchored at the second product
``P @ V``, checks:

* the scores path from the first product ``Q @ Kᵀ`` to ``P``: view ops,
  multiplications/divisions by constants (the scale, on the scores or on q
  or k), additive masks, ``where``/``masked_fill`` fills, casts up to float32
  and back, the softmax over the key dimension, dropout after it; every
  value on it has one use (scores read by anything else stay as they are);
  the layout of ``P`` is the scores' own (no transposed or reshuffled
  probabilities), and the softmax runs over the key dimension;
* that ``Q``, ``Kᵀ`` and ``V`` are batch-flattened views of tensors shaped
  ``[*batch, L, E]``, ``[*batch, S, E]`` and ``[*batch, S, Ev]`` -- the
  operands SDPA takes -- k and v possibly with fewer heads, each repeated
  ``G`` times in place (``repeat_interleave`` order: SDPA's ``enable_gqa``);
* which masks can be handed to SDPA unchanged in meaning (see
  :class:`MaskTerm` and :class:`AttentionSpec` for the semantics kept: where a
  row of keys is fully masked, eager PyTorch gives NaN (-inf fills and masks)
  or uniform weights (a finite fill such as ``finfo.min``) while SDPA's
  kernels give zeros; the replacement restores eager's rows).

Nothing here imports torch or xDSL: the matcher reads a graph through
:class:`GraphView`, which the aten dialect (``aten_fuse_attention.py``) and
FX graphs (``frontend/attention.py``, for training) implement, so inference
and training rewrite exactly the same patterns.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import sympy

V = TypeVar("V")

# --------------------------------------------------------------------------
# Layouts: which elements of a root tensor each dimension walks
# --------------------------------------------------------------------------

Piece = tuple[sympy.Expr, sympy.Expr]
"""(size, stride) of one mode of a dimension; stride 0 is a broadcast."""
Dim = tuple[Piece, ...]
"""A dimension as modes in row-major order (outer first); () has size 1."""
Layout = tuple[Dim, ...]


class NotALayout(Exception):
    """The op's view cannot be expressed on the layout (the match fails)."""


def _expr(x: Any) -> sympy.Expr:
    if isinstance(x, bool):
        raise NotALayout("a bool is not a size")
    if isinstance(x, int):
        return sympy.Integer(x)
    if isinstance(x, sympy.Expr):
        return x
    raise NotALayout(f"not a size: {x!r}")


def _eq(a: Any, b: Any) -> bool:
    a, b = _expr(a), _expr(b)
    if a.is_Integer and b.is_Integer or a == b:  # the common cases, without expanding
        return bool(a == b)
    return sympy.expand(a - b) == 0


def _quotient(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr | None:
    """``a / b`` when it is a whole (possibly symbolic) number, else None."""
    q = sympy.cancel(a / b)
    num, den = sympy.fraction(q)
    if den != 1 or (q.is_number and not q.is_integer):
        return None
    return sympy.expand(q)


def identity(shape: Sequence[Any]) -> Layout:
    """The layout of a contiguous tensor of ``shape`` over itself."""
    dims: list[Dim] = []
    stride: sympy.Expr = sympy.Integer(1)
    for size in reversed([_expr(s) for s in shape]):
        dims.append(((size, stride),))
        stride = sympy.expand(stride * size)
    return tuple(reversed(dims))


def dim_size(dim: Dim) -> sympy.Expr:
    out: sympy.Expr = sympy.Integer(1)
    for size, _ in dim:
        out = out * size
    return sympy.expand(out)


def shape_of(layout: Layout) -> tuple[sympy.Expr, ...]:
    return tuple(dim_size(d) for d in layout)


def normalize(layout: Layout) -> Layout:
    """Size-1 modes dropped, adjacent modes of a dimension merged where they
    walk memory as one (``(n1, n2·s), (n2, s)`` is ``(n1·n2, s)``)."""
    out: list[Dim] = []
    for dim in layout:
        modes: list[Piece] = []
        for size, stride in dim:
            if _eq(size, 1):
                continue
            stride = sympy.expand(stride)
            if modes and _eq(modes[-1][1], size * stride):
                modes[-1] = (sympy.expand(modes[-1][0] * size), stride)
            else:
                modes.append((sympy.expand(size), stride))
        out.append(tuple(modes))
    return tuple(out)


def same_layout(a: Layout, b: Layout) -> bool:
    a, b = normalize(a), normalize(b)
    if len(a) != len(b):
        return False
    for da, db in zip(a, b):
        if len(da) != len(db):
            return False
        for (sa, ta), (sb, tb) in zip(da, db):
            if not (_eq(sa, sb) and _eq(ta, tb)):
                return False
    return True


def _dim(d: int, rank: int) -> int:
    if not -rank <= d < max(rank, 1):
        raise NotALayout(f"dimension {d} out of range for rank {rank}")
    return d % rank if rank else 0


def permute(layout: Layout, dims: Sequence[int]) -> Layout:
    rank = len(layout)
    order = [_dim(d, rank) for d in dims]
    if sorted(order) != list(range(rank)):
        raise NotALayout("not a permutation")
    return tuple(layout[d] for d in order)


def transpose(layout: Layout, a: int, b: int) -> Layout:
    rank = len(layout)
    a, b = _dim(a, rank), _dim(b, rank)
    dims = list(layout)
    dims[a], dims[b] = dims[b], dims[a]
    return tuple(dims)


def unsqueeze(layout: Layout, d: int) -> Layout:
    d = _dim(d, len(layout) + 1)
    return (*layout[:d], (), *layout[d:])


def squeeze(layout: Layout, dims: Iterable[int] | None) -> Layout:
    rank = len(layout)
    chosen = set(range(rank)) if dims is None else {_dim(d, rank) for d in dims}
    return tuple(dim for i, dim in enumerate(layout) if not (i in chosen and _eq(dim_size(dim), 1)))


def expand(layout: Layout, sizes: Sequence[Any]) -> Layout:
    if len(sizes) < len(layout):
        raise NotALayout("expand to fewer dimensions")
    lead = len(sizes) - len(layout)
    out: list[Dim] = [((_expr(s), sympy.Integer(0)),) for s in sizes[:lead]]
    for dim, size in zip(layout, sizes[lead:]):
        if isinstance(size, int) and size == -1:
            out.append(dim)
            continue
        size = _expr(size)
        old = dim_size(dim)
        if _eq(old, size):
            out.append(dim)
        elif _eq(old, 1):
            out.append(((size, sympy.Integer(0)),))
        else:
            raise NotALayout("expand of a dimension that is not 1")
    return tuple(out)


def reshape(layout: Layout, sizes: Sequence[Any]) -> Layout:
    """Row-major reshape (``view``, ``reshape``, ``_unsafe_view``): the logical
    element order is kept, whatever the strides (a copy's values are the
    view's)."""
    total = sympy.Integer(1)
    for d in shape_of(layout):
        total = total * d
    sizes = list(sizes)
    if any(isinstance(s, int) and s == -1 for s in sizes):
        known = sympy.Integer(1)
        for s in sizes:
            if not (isinstance(s, int) and s == -1):
                known = known * _expr(s)
        inferred = _quotient(sympy.expand(total), sympy.expand(known))
        if inferred is None:
            raise NotALayout("cannot infer the -1 size")
        sizes = [inferred if isinstance(s, int) and s == -1 else s for s in sizes]
    modes = [m for dim in layout for m in dim if not _eq(m[0], 1)]
    out: list[Dim] = []
    for target in sizes:
        need = _expr(target)
        dim: list[Piece] = []
        while not _eq(need, 1):
            if not modes:
                raise NotALayout("reshape to more elements")
            size, stride = modes[0]
            if _eq(size, need):
                dim.append(modes.pop(0))
                need = sympy.Integer(1)
                continue
            bigger = _quotient(need, size)
            if bigger is not None:
                dim.append(modes.pop(0))
                need = bigger
                continue
            inner = _quotient(size, need)
            if inner is None:
                raise NotALayout("reshape splits a dimension unevenly")
            dim.append((need, sympy.expand(stride * inner)))
            modes[0] = (inner, stride)
            need = sympy.Integer(1)
        out.append(tuple(dim))
    if modes:
        raise NotALayout("reshape to fewer elements")
    return tuple(out)


# --------------------------------------------------------------------------
# The graph, as the matcher reads it
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Const:
    """A compile-time scalar operand (``aten.constant``, a Python number in FX)."""

    value: Any


class GraphView(Protocol, Generic[V]):
    """What the matcher needs from a graph of aten ops; values are opaque."""

    def op(self, v: V) -> str | None:
        """The producing op's overload name (``"aten.bmm.default"``), or
        ``"coil.dropout"`` for a dropout the graph knows as one op, or None
        (a graph input, a constant, an op the view does not expose)."""

    def result_index(self, v: V) -> int:
        """Which result of its op ``v`` is."""

    def operand(self, v: V, name: str) -> V | Const | None:
        """The tensor operand ``name`` of ``v``'s op (a :class:`Const` where it is a
        compile-time scalar), or None if absent."""

    def arg(self, v: V, name: str) -> Any:
        """The non-tensor argument ``name`` of ``v``'s op as a Python value (sizes
        as ints or sympy expressions; dtypes by torch's name, ``"float32"``)."""

    def scalar(self, v: V | Const) -> float | None:
        """``v`` as a compile-time number if it is one (a :class:`Const`, a 0-d
        ``scalar_tensor``/``full``), else None."""

    def shape(self, v: V) -> tuple[Any, ...]: ...

    def dtype(self, v: V) -> str: ...

    def device(self, v: V) -> str: ...

    def users(self, v: V) -> list[V | None]:
        """One entry per use of ``v``: the using op's (first) result, or None
        for a use that is not an op of the graph (a return)."""

    def nameable(self, v: V) -> bool:
        """Whether a rewrite may read ``v`` (FX: it is a Dynamo node's output)."""


# --------------------------------------------------------------------------
# What the rewrite computes
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class MaskTerm:
    """One mask the scores get, in order.

    ``kind``: ``"add"`` (``scores + coef·mask``, computed in ``dtype``),
    ``"keep"`` (bool: True keeps the key, as SDPA's bool masks), ``"drop"``
    (bool: True masks the key, as ``masked_fill``'s). ``unflatten``: the mask
    is given over the flattened ``[N, L, S]`` products and its first
    dimension (N) is split into the batch dimensions."""

    kind: str
    coef: float = 1.0
    dtype: str | None = None
    unflatten: bool = False


@dataclass(frozen=True)
class AttentionSpec:
    """Everything the replacement needs besides its tensors (hashable, and as a
    tuple of plain values, :meth:`as_tuple`, printable in FX code).

    * ``batch_rank``: dimensions before ``[L, E]`` (0 for ``mm``, 1 for 3-D
      ``bmm``, 2 for ``[B, H, L, E]``): SDPA gets 4-D operands, which its
      fused kernels need;
    * ``k_transposed``: the key tensor is given as ``[*, E, S]``;
    * ``gqa``: k and v have ``H / G`` heads, each used by ``G`` query heads;
    * ``fill``: ``"none"``, ``"neg_inf"`` (masks or fills that may leave a row
      all -inf: eager gives NaN there, SDPA zeros, so the replacement writes
      NaN where no key is left) or ``"finite"`` (one ``masked_fill`` with a
      finite value ≤ -1e4, such as ``finfo.min``, the last mask: eager's
      weights are uniform over a fully masked row, so the replacement writes
      ``mean(v)`` there; after additive masks the fill, in the bool term's
      ``coef``, is the masked keys' value in SDPA's float mask instead,
      :data:`ABSORBING_FILL`);
    * ``flatten_out``: the value replaced is the ``[N, L, Ev]`` product, not its
      ``[*batch, L, Ev]`` view.
    """

    batch_rank: int
    scale: float
    dropout_p: float = 0.0
    k_transposed: bool = False
    gqa: bool = False
    terms: tuple[MaskTerm, ...] = ()
    fill: str = "none"
    flatten_out: bool = False

    def as_tuple(self) -> tuple:
        terms = tuple((t.kind, t.coef, t.dtype, t.unflatten) for t in self.terms)
        return (
            self.batch_rank,
            self.scale,
            self.dropout_p,
            self.k_transposed,
            self.gqa,
            terms,
            self.fill,
            self.flatten_out,
        )

    @classmethod
    def from_tuple(cls, t: Sequence[Any]) -> AttentionSpec:
        br, scale, p, kt, gqa, terms, fill, flat = t
        return cls(br, scale, p, kt, gqa, tuple(MaskTerm(*x) for x in terms), fill, flat)


@dataclass
class AttentionMatch(Generic[V]):
    """A proven attention: SDPA of ``query, key, value`` with ``masks`` (one per
    term of ``spec``) computes ``target``."""

    query: V
    key: V
    value: V
    masks: list[V]
    target: V
    spec: AttentionSpec
    region: list[V] = field(default_factory=list)
    """The values between the products that the rewrite makes dead."""


# --------------------------------------------------------------------------
# Op families
# --------------------------------------------------------------------------

_VIEWS = {
    "aten.view.default",
    "aten._unsafe_view.default",
    "aten.reshape.default",
    "aten.expand.default",
    "aten.permute.default",
    "aten.transpose.int",
    "aten.t.default",
    "aten.unsqueeze.default",
    "aten.squeeze.dim",
    "aten.squeeze.dims",
    "aten.squeeze.default",
    "aten.clone.default",
    "aten.alias.default",
    "aten.detach.default",
    "aten.lift_fresh_copy.default",
    "aten.contiguous.default",
    "aten._to_copy.default",  # only without a dtype or device change (_is_view)
}
_PRODUCTS = {"aten.bmm.default", "aten.mm.default"}
_BADDBMM = "aten.baddbmm.default"
"""A first product with a scale and an additive term of its own (kept whole
by the decomposition table, see ``frontend/decompositions.py``)."""
_SCALES = {"aten.mul.Tensor", "aten.mul.Scalar", "aten.div.Tensor", "aten.div.Scalar"}
_SOFTMAX = "aten._softmax.default"
_FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
_DTYPE_MAX = {
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
    "float32": 3.4028234663852886e38,
    "float64": 1.7976931348623157e308,
}
FINITE_FILL_LIMIT = -1e4
"""A finite fill at or below this masks like -inf everywhere but a fully masked
row: a masked weight is ``exp(fill − max)``, which underflows float32's
exp to exactly 0 once ``fill − max < −104``, so below -1e4 only scores within
~1e4 of the fill could tell them apart."""

ABSORBING_FILL = 1e30
"""A finite fill after additive masks (ALiBi or relative-position biases, then
``masked_fill(mask, finfo.min)``: MPT, Bloom) is handed to SDPA as the value of
the masked keys in its float mask, which SDPA adds to the scaled scores. At
this magnitude or more (``finfo.min`` of float32 and bfloat16) a float32 sum
rounds any score below ~1e22 away, so the masked keys get exactly the fill as
in eager, and a fully masked row's weights are uniform over its masked keys
as eager's are; float16's -65504 is not absorbed, and such a block stays."""


def _is_view(g: GraphView[V], v: V) -> bool:
    op = g.op(v)
    if op not in _VIEWS:
        return False
    if op == "aten._to_copy.default":
        src = g.operand(v, "self")
        if isinstance(src, Const) or src is None:
            return False
        return g.dtype(src) == g.dtype(v) and g.device(src) == g.device(v)
    return True


def _view_layout(g: GraphView[V], v: V, layout: Layout) -> Layout:
    """The layout of ``v`` (a view op's result) given its input's."""
    op = g.op(v)
    if op in ("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default"):
        sizes = g.arg(v, "size") if op != "aten.reshape.default" else g.arg(v, "shape")
        return reshape(layout, list(sizes))
    if op == "aten.expand.default":
        return expand(layout, list(g.arg(v, "size")))
    if op == "aten.permute.default":
        return permute(layout, list(g.arg(v, "dims")))
    if op == "aten.transpose.int":
        return transpose(layout, int(g.arg(v, "dim0")), int(g.arg(v, "dim1")))
    if op == "aten.t.default":
        return transpose(layout, 0, 1) if len(layout) == 2 else layout
    if op == "aten.unsqueeze.default":
        return unsqueeze(layout, int(g.arg(v, "dim")))
    if op == "aten.squeeze.dim":
        return squeeze(layout, [int(g.arg(v, "dim"))])
    if op == "aten.squeeze.dims":
        return squeeze(layout, [int(d) for d in g.arg(v, "dim")])
    if op == "aten.squeeze.default":
        return squeeze(layout, None)
    return layout  # clone, alias, copies: the same elements


def _tensor(g: GraphView[V], v: V, name: str) -> V | None:
    x = g.operand(v, name)
    return None if isinstance(x, Const) else x


def _scale_factor(g: GraphView[V], v: V) -> tuple[V, float] | None:
    """``(x, c)`` when ``v = x · c`` for a compile-time number ``c`` (a
    multiplication or a division by a constant), else None."""
    op = g.op(v)
    if op not in _SCALES:
        return None
    x, other = g.operand(v, "self"), g.operand(v, "other")
    if op.endswith(".Scalar"):
        other = Const(g.arg(v, "other"))
    c = g.scalar(other) if other is not None else None
    if c is None and op == "aten.mul.Tensor" and x is not None:
        # A constant may come first: c * x.
        c2 = g.scalar(x)
        if c2 is not None and other is not None and not isinstance(other, Const):
            x, c = other, c2
    if c is None or isinstance(x, Const) or x is None:
        return None
    if op.startswith("aten.div"):
        if c == 0:
            return None
        c = 1.0 / c
    if not math.isfinite(c):
        return None
    return x, float(c)


# --------------------------------------------------------------------------
# The scores path: P back to Q @ Kᵀ
# --------------------------------------------------------------------------


@dataclass
class _Step:
    value: Any  # the op's result on the path
    source: Any  # its operand on the path
    kind: str  # view | scale | add | fill | cast | softmax | dropout
    factor: float = 1.0  # scale
    other: Any = None  # add: the mask; fill: the condition
    coef: float = 1.0  # add
    fill_value: float = 0.0  # fill
    masked_when: bool = True  # fill: the condition value that masks


def _same_shape(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(_eq(x, y) for x, y in zip(a, b))


def _walk_scores(
    g: GraphView[V], p: V, seen_softmax: bool = False, depth: int = 0
) -> tuple[V, list[_Step]] | None:
    """From ``p`` (the left operand of the second product) back to the first
    product: ``(product, steps)`` with steps in backward order, or None."""
    steps: list[_Step] = []
    x = p
    while True:
        if depth + len(steps) > 64:
            return None
        op = g.op(x)
        if op in _PRODUCTS:
            return (x, steps) if seen_softmax else None
        if op == _BADDBMM:
            # beta·bias + alpha·(q @ kᵀ): the product, its scale, then an
            # additive mask (backward order: the add first). beta = 0 ignores
            # the bias, as ATen does.
            if not seen_softmax:
                return None
            alpha, beta = g.arg(x, "alpha"), g.arg(x, "beta")
            alpha = 1.0 if alpha is None else float(alpha)
            beta = 1.0 if beta is None else float(beta)
            if not math.isfinite(alpha) or not math.isfinite(beta):
                return None
            if beta != 0.0:
                bias = _tensor(g, x, "self")
                if bias is None:
                    return None
                steps.append(_Step(x, x, "add", other=bias, coef=beta))
            if alpha != 1.0:
                steps.append(_Step(x, x, "scale", factor=alpha))
            return x, steps
        if op is None:
            return None
        if _is_view(g, x):
            steps.append(_Step(x, _tensor(g, x, "self"), "view"))
        elif op == _SOFTMAX:
            if seen_softmax:
                return None
            seen_softmax = True
            steps.append(_Step(x, _tensor(g, x, "self"), "softmax"))
        elif op == "aten._to_copy.default":
            src = _tensor(g, x, "self")
            if src is None or g.device(src) != g.device(x):
                return None
            steps.append(_Step(x, src, "cast"))
        elif op == "coil.dropout" or (
            op == "aten.native_dropout.default" and g.result_index(x) == 0
        ):
            if seen_softmax:
                return None  # dropout before the softmax is not attention's
            train = g.arg(x, "train") if op == "aten.native_dropout.default" else True
            if train is False:
                steps.append(_Step(x, _tensor(g, x, "input"), "view"))
            else:
                p_drop = float(g.arg(x, "p"))
                steps.append(_Step(x, _tensor(g, x, "input"), "dropout", factor=p_drop))
        elif not seen_softmax:
            return None  # after the softmax: only views, casts and dropout
        elif (sf := _scale_factor(g, x)) is not None:
            steps.append(_Step(x, sf[0], "scale", factor=sf[1]))
        elif op in ("aten.add.Tensor", "aten.sub.Tensor"):
            alpha = g.arg(x, "alpha")
            alpha = 1.0 if alpha is None else float(alpha)
            a, b = _tensor(g, x, "self"), _tensor(g, x, "other")
            if a is None or b is None:
                return None
            # The scores are whichever operand leads back to a product: the
            # left one first (scores + mask), then the right (mask + scores,
            # only as a plain sum).
            choices = [(a, b, -alpha if op == "aten.sub.Tensor" else alpha)]
            if op == "aten.add.Tensor" and alpha == 1.0:
                choices.append((b, a, 1.0))
            for path, mask, coef in choices:
                if not _same_shape(g.shape(path), g.shape(x)):
                    continue  # the mask would broadcast the scores larger
                rest = _walk_scores(g, path, True, depth + len(steps) + 1)
                if rest is None:
                    continue
                steps.append(_Step(x, path, "add", other=mask, coef=coef))
                return rest[0], steps + rest[1]
            return None
        elif op in ("aten.where.self", "aten.where.ScalarOther", "aten.where.ScalarSelf"):
            cond = _tensor(g, x, "condition")
            a, b = g.operand(x, "self"), g.operand(x, "other")
            if op == "aten.where.ScalarSelf":
                a = Const(g.arg(x, "self"))
            if op == "aten.where.ScalarOther":
                b = Const(g.arg(x, "other"))
            fa = g.scalar(a) if a is not None else None
            fb = g.scalar(b) if b is not None else None
            if cond is None:
                return None
            if fa is not None and fb is None and b is not None and not isinstance(b, Const):
                steps.append(_Step(x, b, "fill", other=cond, fill_value=fa, masked_when=True))
            elif fb is not None and fa is None and a is not None and not isinstance(a, Const):
                steps.append(_Step(x, a, "fill", other=cond, fill_value=fb, masked_when=False))
            else:
                return None
        elif op in ("aten.masked_fill.Scalar", "aten.masked_fill.Tensor"):
            cond = _tensor(g, x, "mask")
            if op.endswith("Scalar"):
                value = g.scalar(Const(g.arg(x, "value")))
            else:
                operand = g.operand(x, "value")
                value = g.scalar(operand) if operand is not None else None
            src = _tensor(g, x, "self")
            if cond is None or value is None or src is None:
                return None
            steps.append(_Step(x, src, "fill", other=cond, fill_value=value, masked_when=True))
        else:
            return None
        step = steps[-1]
        if step.kind in ("fill",) and not _same_shape(g.shape(step.source), g.shape(x)):
            return None  # the condition would broadcast the scores larger
        x = step.source
        if x is None:
            return None


# --------------------------------------------------------------------------
# The operands: Q, Kᵀ, V as views of SDPA-shaped tensors
# --------------------------------------------------------------------------


def _operand_chain(g: GraphView[V], v: V, allow_scale: bool) -> list[tuple[V, float, list[V]]]:
    """Candidates for the tensor ``v`` is a view of, nearest first:
    ``(candidate, scale, ops)`` where ``v = scale · ops(candidate)`` and ``ops``
    are the view results from the candidate to ``v`` (in forward order)."""
    out = [(v, 1.0, [])]
    ops: list[V] = []
    scale = 1.0
    x = v
    for _ in range(32):
        if _is_view(g, x):
            ops = [x, *ops]
            x = _tensor(g, x, "self")
        elif allow_scale and (sf := _scale_factor(g, x)) is not None:
            scale *= sf[1]
            x = sf[0]
        else:
            break
        if x is None:
            break
        out.append((x, scale, list(ops)))
    return out


def _layout_after(g: GraphView[V], start: V, ops: list[V]) -> Layout | None:
    try:
        layout = identity(g.shape(start))
        for o in ops:
            layout = _view_layout(g, o, layout)
        return layout
    except NotALayout:
        return None


@dataclass
class _Operand:
    value: Any
    scale: float
    gqa: bool = False
    transposed: bool = False


def _find_operand(
    g: GraphView[V],
    product_operand: V,
    batch: Sequence[Any],
    role: str,
    allow_gqa: bool,
) -> _Operand | None:
    """The SDPA operand behind one operand of a product. ``role``: ``"q"``
    (``[*b, L, E]``), ``"k"`` (the product reads ``[*b, E, S]``: the tensor is
    ``[*b, S, E]``, or ``[*b, E, S]`` given transposed) or ``"v"``.
    Deeper candidates first: through views and constant scales to the tensor
    the user wrote."""
    target_shape = list(g.shape(product_operand))
    # (gqa, flip): flip = the product reads the candidate's last two dims swapped.
    variants = [(False, role == "k")]
    if role == "k":
        variants.append((False, False))
    if allow_gqa and role != "q" and len(batch) == 2:
        variants = [(True, flip) for _, flip in variants] + variants
    for cand, scale, ops in reversed(_operand_chain(g, product_operand, role != "v")):
        if not g.nameable(cand):
            continue
        shape = list(g.shape(cand))
        if len(shape) != len(batch) + 2:
            continue
        actual = _layout_after(g, cand, ops)
        if actual is None:
            continue
        for gqa, flip in variants:
            try:
                expected = identity(shape)
                if gqa:
                    heads, kv_heads = _expr(batch[-1]), _expr(shape[-3])
                    groups = _quotient(heads, kv_heads)
                    if groups is None or _eq(groups, 1) or not _eq(shape[0], batch[0]):
                        continue
                    expected = unsqueeze(expected, 2)
                    expected = expand(expected, [batch[0], kv_heads, groups, *shape[-2:]])
                    expected = reshape(expected, [*batch, *shape[-2:]])
                elif not _same_shape(shape[:-2], batch):
                    continue
                if flip:
                    expected = transpose(expected, -1, -2)
                expected = reshape(expected, target_shape)
            except NotALayout:
                continue
            if same_layout(actual, expected):
                return _Operand(cand, scale, gqa, role == "k" and not flip)
    return None


# --------------------------------------------------------------------------
# The match
# --------------------------------------------------------------------------


def _classify(
    layout: Layout, root_shape: Sequence[Any], shape: Sequence[Any]
) -> tuple[str, tuple[Any, ...]] | None:
    """Where a value on the scores path stands: ``("root", ())`` when it is the
    ``[N, L, S]`` product itself, ``("batched", batch)`` when it is the product
    with N split into ``batch`` (``[*batch, L, S]``), else None."""
    try:
        if same_layout(layout, identity(root_shape)) and len(shape) == len(root_shape):
            return "root", ()
        if len(shape) >= 2 and all(_eq(a, b) for a, b in zip(shape[-2:], root_shape[-2:])):
            if same_layout(layout, reshape(identity(root_shape), list(shape))):
                return "batched", tuple(shape[:-2])
    except NotALayout:
        return None
    return None


def match_attention(
    g: GraphView[V], product: V, *, allow_gqa: bool = True
) -> AttentionMatch[V] | None:
    """The attention whose second product is ``product`` (a ``bmm``/``mm``
    result), or None. See the module docstring for what is proven."""
    if g.op(product) not in _PRODUCTS:
        return None
    p_operand = _tensor(g, product, "self")
    v_operand = _tensor(g, product, "mat2")
    if p_operand is None or v_operand is None:
        return None
    walked = _walk_scores(g, p_operand)
    if walked is None:
        return None
    first, back_steps = walked
    steps = list(reversed(back_steps))
    if g.op(first) == _BADDBMM:
        q_operand, k_operand = _tensor(g, first, "batch1"), _tensor(g, first, "batch2")
    else:
        q_operand, k_operand = _tensor(g, first, "self"), _tensor(g, first, "mat2")
    if q_operand is None or k_operand is None:
        return None
    # Every value from the first product to P has one use: the next step.
    for value in dict.fromkeys([first, *(s.value for s in steps)]):
        if len(g.users(value)) != 1:
            return None

    root_shape = list(g.shape(first))  # [N, L, S] or [L, S]
    layout = identity(root_shape)
    q_dtype = g.dtype(q_operand)
    if q_dtype not in _FLOAT_DTYPES:
        return None
    scale = 1.0
    dropout = 0.0
    terms: list[tuple[_Step, str, tuple[Any, ...], str]] = []  # step, where, batch, dtype
    later_scales: list[float] = []  # per term: the product of the scales after it
    # per term: the largest magnitude every dtype from it to the softmax holds
    # (a fill beyond it overflows to -inf on the way: NaN rows in eager)
    ranges: list[float] = []
    allowed = {q_dtype} | ({"float32"} if q_dtype in ("float16", "bfloat16") else set())
    softmax_at: tuple[str, tuple[Any, ...]] | None = None
    after_softmax = False
    for step in steps:
        x = step.value
        if g.dtype(x) not in allowed:
            return None  # scores or weights in another precision than q's or float32
        if not after_softmax and step.kind != "softmax":
            ranges = [min(r, _DTYPE_MAX[g.dtype(x)]) for r in ranges]
        if step.kind == "view":
            try:
                layout = _view_layout(g, x, layout)
            except NotALayout:
                return None
            continue
        if step.kind == "scale":
            if after_softmax or (terms and step.factor <= 0):
                return None
            scale *= step.factor
            later_scales = [f * step.factor for f in later_scales]
            continue
        if step.kind == "cast":
            continue
        if step.kind == "dropout":
            # two dropouts: one keeping with the product of their probabilities
            dropout = step.factor if not dropout else 1.0 - (1.0 - dropout) * (1.0 - step.factor)
            continue
        where = _classify(layout, root_shape, g.shape(x))
        if where is None:
            return None
        if step.kind == "softmax":
            dim = g.arg(x, "dim")
            rank = len(g.shape(x))
            if rank == 0 or int(dim) % rank != rank - 1:
                return None  # a softmax over anything but the keys
            softmax_at = where
            after_softmax = True
            continue
        if after_softmax:
            return None
        terms.append((step, where[0], where[1], g.dtype(x)))
        later_scales.append(1.0)
        ranges.append(_DTYPE_MAX[g.dtype(x)])
    if softmax_at is None:
        return None
    if not same_layout(layout, identity(root_shape)):
        return None  # P is not the scores' own layout
    p_dtype = g.dtype(p_operand)
    if p_dtype != q_dtype or g.dtype(v_operand) != q_dtype or g.dtype(k_operand) != q_dtype:
        return None

    # The batch the SDPA operands get: the softmax's, if it ran batched.
    if len(root_shape) == 2:
        batch: tuple[Any, ...] = ()
    elif softmax_at[0] == "batched":
        batch = softmax_at[1]
    else:
        batch = (root_shape[0],)

    # The masks, with the semantics of fully masked rows.
    mask_terms: list[MaskTerm] = []
    masks: list[Any] = []
    kinds: set[str] = set()
    for (step, where, tbatch, dtype), after, limit in zip(terms, later_scales, ranges):
        other = step.other
        if other is None or not g.nameable(other):
            return None
        mshape = list(g.shape(other))
        unflatten = False
        if where == "batched" and not _same_shape(tbatch, batch):
            return None  # a mask over another split of the batch
        if where == "root" and len(root_shape) == 3 and len(batch) != 1:
            # [N, L, S] coordinates, the SDPA operands [*batch, L, S]: a mask
            # over N must be split like the products' batch.
            if len(mshape) == 3 and not _eq(mshape[0], 1):
                if not _eq(mshape[0], root_shape[0]):
                    return None
                unflatten = True
        if step.kind == "add":
            if dtype != q_dtype:
                # The add promotes the scores (bf16 scores + an f32 ALiBi table:
                # MPT): SDPA takes a float mask in the query's dtype only (CUDA's
                # fused kernels gave NaN for an f32 mask with bf16 operands), and
                # the bias cast to it would lose what eager's f32 sum keeps.
                return None
            mask_terms.append(MaskTerm("add", step.coef * after, dtype=dtype, unflatten=unflatten))
            kinds.add("add")
        else:
            if g.dtype(other) != "bool":
                return None
            masked_when = step.masked_when
            # ~mask and mask.logical_not(): the mask itself, read the other way.
            while g.op(other) in ("aten.bitwise_not.default", "aten.logical_not.default"):
                inner = _tensor(g, other, "self")
                if inner is None or not g.nameable(inner) or g.dtype(inner) != "bool":
                    break
                other, masked_when = inner, not masked_when
            # The fill in the scores' dtype, scaled as the scores are after it:
            # -1e9 in float16, or finfo.min times 2, is -inf.
            value = step.fill_value
            if abs(value) > _DTYPE_MAX[dtype]:
                value = math.copysign(math.inf, value)
            value *= after
            if abs(value) > limit:
                value = math.copysign(math.inf, value)
            if value == -math.inf:
                kinds.add("neg_inf")
            elif math.isfinite(value) and value <= FINITE_FILL_LIMIT:
                kinds.add("finite")
            else:
                return None  # a fill that does not mask (0, a small value, +inf)
            kind = "drop" if masked_when else "keep"
            # A finite fill's value (as the softmax sees it) rides in coef: the
            # replacement needs it where adds come before it (AttentionSpec).
            coef = value if math.isfinite(value) else 1.0
            mask_terms.append(MaskTerm(kind, coef, unflatten=unflatten))
        masks.append(other)
    if "finite" in kinds:
        if dropout or any(t.kind != "add" for t in mask_terms[:-1]):
            return None  # uniform rows are eager's only for one fill, last, no dropout
        if len(mask_terms) > 1 and abs(mask_terms[-1].coef) < ABSORBING_FILL:
            return None  # SDPA adds the fill to the scores: they must vanish in it
        fill = "finite"
    elif kinds:
        fill = "neg_inf"
    else:
        fill = "none"

    q = _find_operand(g, q_operand, batch, "q", False)
    if q is None:
        return None
    k = _find_operand(g, k_operand, batch, "k", allow_gqa)
    v = _find_operand(g, v_operand, batch, "v", allow_gqa)
    if k is None or v is None or k.gqa != v.gqa:
        return None
    operands = (q.value, k.value, v.value)
    if len({g.device(o) for o in operands}) != 1:
        return None
    if any(g.dtype(o) != q_dtype for o in operands):
        return None

    target, flatten_out = _find_target(g, product, batch)
    if target is None:
        return None
    spec = AttentionSpec(
        batch_rank=len(batch),
        scale=float(scale * q.scale * k.scale),
        dropout_p=float(dropout),
        k_transposed=k.transposed,
        gqa=k.gqa,
        terms=tuple(mask_terms),
        fill=fill,
        flatten_out=flatten_out,
    )
    region = list(dict.fromkeys([first, *(s.value for s in steps), p_operand, product]))
    return AttentionMatch(q.value, k.value, v.value, masks, target, spec, region)


def _find_target(g: GraphView[V], product: V, batch: Sequence[Any]) -> tuple[V | None, bool]:
    """The value to replace: the product's ``[*batch, L, Ev]`` view when it has
    one (what a 4-D matmul returns), else the ``[N, L, Ev]`` product itself."""
    shape = list(g.shape(product))
    if len(batch) >= 2:
        x = product
        ops: list[V] = []
        for _ in range(8):
            users = g.users(x)
            if len(users) != 1 or users[0] is None or not _is_view(g, users[0]):
                break
            x = users[0]
            ops.append(x)
            xs = g.shape(x)
            if len(xs) != len(batch) + 2 or not g.nameable(x):
                continue
            layout = _layout_after(g, product, ops)
            if layout is None:
                break
            try:
                want = reshape(identity(shape), [*batch, shape[-2], shape[-1]])
            except NotALayout:
                break
            if same_layout(layout, want):
                return x, False
    if g.nameable(product):
        return product, len(batch) >= 2
    return None, False


# --------------------------------------------------------------------------
# The replacement (torch): what a match computes, through SDPA
# --------------------------------------------------------------------------


def _to4(t: Any, batch_rank: int) -> Any:
    """``[*batch, X, Y]`` as SDPA's 4-D ``[B, H, X, Y]``."""
    if batch_rank == 0:
        return t.unsqueeze(0).unsqueeze(0)
    if batch_rank == 1:
        return t.unsqueeze(0)
    if batch_rank == 2:
        return t
    return t.flatten(0, batch_rank - 2)


def _mask4(m: Any, batch: Sequence[Any], batch_rank: int) -> Any:
    """A mask broadcastable to ``[*batch, L, S]`` as one broadcastable to the
    4-D operands (SDPA broadcasts masks of lower rank from the right; with
    more than two batch dimensions, those flattened into one are flattened
    in the mask too)."""
    if batch_rank > 2 and m.dim() > 3:
        m = m.expand(*batch, *m.shape[-2:]).flatten(0, batch_rank - 2)
    if m.dim() in (2, 4):
        return m
    # torch's CPU flash kernel takes 2-D and 4-D masks only.
    return m[(None,) * (4 - m.dim())]


def sdpa_operands(q: Any, k: Any, v: Any, *masks: Any, spec: Sequence[Any]) -> tuple:
    """``(q4, k4, v4, attn_mask, keep)`` for ``torch.nn.functional.
    scaled_dot_product_attention``: the 4-D operands, the combined mask (bool:
    True keeps a key; or float, added), and the bool ``keep`` mask of the
    fills (None without fills)."""
    import torch

    s = AttentionSpec.from_tuple(spec)
    nb = s.batch_rank
    if s.k_transposed:
        k = k.transpose(-1, -2)
    batch = q.shape[:nb]
    added = None
    keep = None
    fill_value = float("-inf")
    for term, m in zip(s.terms, masks, strict=True):
        if term.unflatten:
            m = m.view(*batch, *m.shape[1:])
        if term.kind == "add":
            if term.dtype is not None and str(m.dtype) != f"torch.{term.dtype}":
                m = m.to(getattr(torch, term.dtype))
            if term.coef != 1.0:
                m = m * term.coef
            added = m if added is None else added + m
        else:
            kept = m if term.kind == "keep" else m.logical_not()
            keep = kept if keep is None else keep & kept
            if s.fill == "finite":
                fill_value = term.coef
    if added is not None and keep is not None:
        # A finite fill after the adds masks with its own value (ABSORBING_FILL).
        mask = torch.where(keep, added, fill_value)
    else:
        mask = added if added is not None else keep
    if mask is not None:
        mask = _mask4(mask, batch, nb)
    if keep is not None:
        keep = _mask4(keep, batch, nb)
    return _to4(q, nb), _to4(k, nb), _to4(v, nb), mask, keep


def attention_replacement(q: Any, k: Any, v: Any, *masks: Any, spec: Sequence[Any]) -> Any:
    """SDPA computing what a matched attention computes (``spec`` is
    :meth:`AttentionSpec.as_tuple`): torch's ``scaled_dot_product_attention``,
    which picks flash, memory-efficient, cuDNN or math for the operands as it
    does in eager, and the rows SDPA computes differently from the unfused
    softmax restored (see :class:`AttentionSpec`). Returns a contiguous tensor
    shaped like the value it replaces."""
    import torch
    import torch.nn.functional as F

    s = AttentionSpec.from_tuple(spec)
    nb = s.batch_rank
    q4, k4, v4, mask, keep = sdpa_operands(q, k, v, *masks, spec=spec)
    out = F.scaled_dot_product_attention(
        q4, k4, v4, attn_mask=mask, dropout_p=s.dropout_p, scale=s.scale, enable_gqa=s.gqa
    )
    if s.fill == "neg_inf":
        # eager's softmax over a row of -inf is NaN; SDPA's kernels give 0.
        alive = (mask if mask.dtype == torch.bool else mask > float("-inf")).any(-1, True)
        out = torch.where(alive, out, float("nan"))
    elif s.fill == "finite" and mask.dtype != torch.bool:
        # The fill after additive masks, passed as its value: SDPA's weights are
        # eager's (uniform over a row's masked keys where its kept keys are
        # -inf or absent); a row with neither is -inf everywhere, NaN in eager.
        alive = (mask > float("-inf")).any(-1, True)
        out = torch.where(alive, out, float("nan"))
    elif s.fill == "finite":
        # eager's weights over a row filled with one finite value are uniform.
        mean = v4.mean(-2, keepdim=True)
        if s.gqa:
            mean = mean.repeat_interleave(q4.shape[1] // v4.shape[1], dim=1)
        out = torch.where(keep.any(-1, True), out, mean)
    if nb == 0:
        out = out[0, 0]
    elif nb == 1:
        out = out[0]
    elif nb > 2:
        out = out.unflatten(0, q.shape[: nb - 1])
    if s.flatten_out and nb >= 2:
        out = out.flatten(0, nb - 1)
    return out.contiguous()
