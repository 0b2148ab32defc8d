"""How a nest's accesses walk memory: strides per loop index, the orders a
kernel walks its outputs and its reduction in, and the one classification of a
reduction as inner, outer or strided.

Each access (a direct load of a tensor whose layout is known, the store) has a
*stride* per loop index (the coefficient of that index in its address, when
the address is affine in it) and a *contiguous index*: the one of stride 1.
Layouts are those of buffers (``!buffer.buffer`` strides) or, before
``bufferize`` has chosen them, those a caller predicts for a value-semantic
tensor (``strides_of``: ``loop-split-reduction`` passes the layouts
``bufferize`` will choose, ``transforms/loop_layout.py``), so the question is
asked once, of the layouts the kernel will read.

:func:`classify_reduction` is the single answer to "does this reduction read
along its rows or along its outputs": ``loop-split-reduction`` (how to cut a
reduction in chunks), ``convert-loop-to-tt`` (its tile: one long row a
program, or a wide block of contiguous outputs and a short row) and the cost
model all use it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import sympy
from xdsl.dialects import arith, builtin
from xdsl.ir import Attribute, Operation, SSAValue

from coil.dialects import loop as L
from coil.dialects.buffer import BufferType
from coil.dialects.symbolic import contiguous_strides, index_symbols, is_index_symbol
from coil.strategy import hints

StridesOf = Callable[[SSAValue], "Sequence[sympy.Expr] | None"]
"""A value's layout where its type does not say it (a value-semantic tensor whose
layout ``bufferize`` will choose); None: unknown (its loads do not vote)."""


def element_bytes(t: Attribute) -> int:
    """Bytes per element of a scalar type (``i1`` is stored as a byte)."""
    if isinstance(t, builtin.ComplexType):
        return 2 * element_bytes(t.element_type)
    width = getattr(t, "bitwidth", None)
    if not isinstance(width, int):
        width = getattr(getattr(t, "width", None), "data", None)
    if not isinstance(width, int):
        return 8  # index: a 64-bit word
    return max(1, (width + 7) // 8)


@dataclass(frozen=True)
class Access:
    """One memory access of a nest: its stride along each loop index (None where
    the address is not affine in the index) and its weight (bytes per point)."""

    strides: tuple[sympy.Expr | None, ...]
    weight: int
    what: str = ""
    repeat: bool = False
    """A load of a tensor at an index an earlier load of the nest reads (the
    same bytes: it votes in the tiling, it moves nothing more)."""


def linear_strides(
    address: sympy.Expr, syms: Sequence[sympy.Symbol], sizes: Sequence | None = None
) -> tuple:
    """The coefficient of each of ``syms`` in ``address`` (None where ``address`` is
    not of the form ``c * sym + rest`` with ``c`` free of loop indices and ``rest``
    free of ``sym``). With ``sizes`` (the symbols' static extents), an index that
    only looks non-affine -- a flattened view's ``(r floordiv 32)*512 + (r mod
    32)*16``, which is ``16*r`` -- gets its stride from probing (``_probe``)."""
    expr = sympy.expand(sympy.sympify(address))
    terms = sympy.Add.make_args(expr)
    out: list[sympy.Expr | None] = []
    for k, s in enumerate(syms):
        coeff: sympy.Expr | None = sympy.Integer(0)
        for t in terms:
            if s not in t.free_symbols:
                continue
            c, dep = t.as_independent(s, as_Add=False)
            if dep != s or any(is_index_symbol(f) for f in c.free_symbols):
                coeff = None
                break
            coeff = coeff + c
        if coeff is None and sizes is not None:
            coeff = _probe(expr, s, sizes[k], syms)
        out.append(coeff)
    return tuple(out)


def _probe(expr: sympy.Expr, sym: sympy.Symbol, size, syms) -> sympy.Expr | None:
    """The stride of ``sym`` in ``expr`` where the address moves by the same step
    at every probed point of its static range (the other indices at 0): both
    ends, the middle, and around every divisor a floor division or modulo of
    it uses. None where a step differs or the expression is not numeric."""
    size = sympy.sympify(size)
    if not size.is_Integer or int(size) < 2:
        return None
    n = int(size)
    rest = {t: 0 for t in syms if t is not sym}
    at = sympy.sympify(expr).xreplace(rest)
    if at.free_symbols - {sym}:
        return None
    points = {0, 1, n // 2 - 1, n // 2, n - 2}
    for node in sympy.preorder_traversal(at):
        if node.func.__name__ in ("FloorDiv", "PythonMod", "Mod", "ModularIndexing"):
            for a in node.args[1:]:
                if sympy.sympify(a).is_Integer:
                    d = int(a)
                    points |= {d - 2, d - 1, d, 2 * d - 1}
    steps = set()
    for v in sorted(p for p in points if 0 <= p < n - 1):
        here, there = at.xreplace({sym: v}), at.xreplace({sym: v + 1})
        if not (here.is_Integer and there.is_Integer):
            return None
        steps.add(int(there) - int(here))
        if len(steps) > 1:
            return None
    return sympy.Integer(steps.pop()) if steps else None


def address(strides: Sequence[sympy.Expr], index: Sequence[sympy.Expr]) -> sympy.Expr:
    terms = (sympy.sympify(e) * sympy.sympify(s) for e, s in zip(index, strides))
    return sum(terms, sympy.Integer(0))


def layout_of(value: SSAValue, strides_of: StridesOf | None = None) -> tuple | None:
    """The strides ``value`` is stored with: a buffer's, else what ``strides_of``
    predicts, else None."""
    t = value.type
    if isinstance(t, BufferType):
        return tuple(t.strides_attr.data)
    if strides_of is not None:
        got = strides_of(value)
        if got is not None:
            return tuple(got)
    return None


def load_access(
    op: L.LoadOp,
    syms: Sequence[sympy.Symbol],
    subs: dict | None = None,
    strides_of: StridesOf | None = None,
    sizes: Sequence | None = None,
) -> Access | None:
    """The access of a direct load whose source's layout is known (else None);
    ``sizes`` (the extents of ``syms``) let a flattened view's index count as
    the affine one it is."""
    if op.indirect:
        return None
    strides = layout_of(op.source, strides_of)
    if strides is None:
        return None
    index = [sympy.sympify(e) for e in op.index.data]
    if subs:
        index = [e.xreplace(subs) for e in index]
    bytes_ = element_bytes(op.source.type.element_type)
    return Access(linear_strides(address(strides, index), syms, sizes), bytes_, "load")


def pointwise_accesses(nest: L.PointwiseOp) -> list[Access]:
    """The nest's direct buffer loads (a load of a tensor at an index read
    before marked ``repeat``) and its store (weighted twice: contiguous writes
    matter more than reads, as Inductor weighs them)."""
    syms = index_symbols(len(nest.ranges.data))
    out: list[Access] = []
    seen: set[tuple] = set()
    for op in nest.walk():
        if isinstance(op, L.LoadOp) and (a := load_access(op, syms)) is not None:
            key = (op.source, a.strides)
            out.append(replace(a, repeat=True) if key in seen else a)
            seen.add(key)
    for buf in nest.outs:
        strides = tuple(buf.type.strides_attr.data)
        out.append(Access(strides, 2 * element_bytes(buf.type.element_type), "store"))
    return out


def nontrivial(ranges: Sequence[sympy.Expr]) -> list[int]:
    return [k for k, d in enumerate(ranges) if sympy.sympify(d) != 1]


STRIDE_HINT = 4096
"""What a size symbol without a hint (``hints.py``: the example sizes, where the
graph has them) counts as when symbolic strides are ordered: a
channels-last ``[s0, s1, s2, s3]`` tensor's strides ``[s1*s2*s3, 1, s1*s3, s1]``
order as N, H, W, C whatever the sizes (a product of more sizes is the larger
stride for any sizes of at least 2, and the hint keeps that order)."""


def _stride_key(stride: sympy.Expr) -> int | None:
    """``stride`` as a number to order by: itself where static, its value at the
    size hints (:data:`STRIDE_HINT` for a symbol without one) where symbolic; None where it does not
    evaluate to an integer."""
    if stride.is_Integer:
        return int(stride)
    if any(is_index_symbol(f) for f in stride.free_symbols):
        return None
    value = hints.substitute(stride, STRIDE_HINT)
    return int(value) if value.is_Integer else None


def order_from_strides(ranges: Sequence[sympy.Expr], strides: Sequence[sympy.Expr]) -> list[int]:
    """The dimensions in the order ``strides`` lays them out, slowest first, size-1
    dimensions first (their index is 0). Symbolic strides are ordered at a size
    hint (``_stride_key``): the order only chooses how lanes walk the output
    (every index is still computed from the flat one), and with the logical
    order a dynamic channels-last tensor walked [N, C, H, W]: 2-D tiles for
    every pointwise kernel of a dynamic conv net where the static compile ran
    1-D ones. The logical order where a stride does not evaluate."""
    n = len(ranges)
    identity = list(range(n))
    dims = nontrivial(ranges)
    keys = {k: _stride_key(sympy.sympify(strides[k])) for k in dims}
    if any(v is None for v in keys.values()):
        return identity
    ordered = sorted(dims, key=lambda k: -keys[k])  # stable: ties keep order
    return [k for k in identity if k not in dims] + ordered


def output_order(nest: Operation, n: int) -> list[int]:
    """The nest's first ``n`` loop dimensions in the order its first ``n``-D output
    lays them out in memory, slowest first (Inductor iterates a kernel in its
    output's stride order too): a channels-last output ``[N, C, H, W]`` with
    strides ``[HWC, 1, WC, C]`` gives ``[0, 2, 3, 1]``, so neighbouring lanes
    differ in C and both the output and channels-last inputs are contiguous
    along the lanes. The logical order where the output is row-major, has
    symbolic strides, or is not ``n``-D."""
    ranges = [sympy.sympify(d) for d in nest.ranges.data][:n]
    for buf in nest.outs:
        t = buf.type
        if not isinstance(t, BufferType) or len(t.shape_attr.data) != n:
            continue
        return order_from_strides(ranges, t.strides_attr.data)
    return list(range(n))


def permuted(a: Access, order: Sequence[int]) -> Access:
    """``a`` with its strides along ``order`` (a permutation of its first dims)."""
    n = len(order)
    strides = tuple(a.strides[k] for k in order) + tuple(a.strides[n:])
    return Access(strides, a.weight, a.what, a.repeat)


def footprint_share(a: Access, ranges: Sequence[sympy.Expr], dims: Sequence[int]) -> float:
    """The share of the domain's points ``a`` reads distinct elements at: 1 for
    a load moving with every dimension, 1/rows for a bias broadcast over rows
    (dynamic sizes count as ``plan.SIZE_HINT``-long; 1 where unknown)."""
    share = 1.0
    for k in dims:
        s = a.strides[k] if k < len(a.strides) else None
        if s is not None and sympy.sympify(s) == 0:
            size = sympy.sympify(ranges[k])
            # An empty dimension (no points at all) divides by 1.
            share /= max(1, int(size)) if size.is_Integer else 4096
    return share


def contiguous_dim(a: Access, ranges: Sequence[sympy.Expr]) -> int | None:
    """The loop index ``a`` is contiguous along (stride 1), counting a broadcast
    read (stride 0 along every later index) as contiguous along the last one;
    None when it has no stride-1 index (strided slices, non-affine views)."""
    dims = nontrivial(ranges)
    if not dims:
        return None
    for k in dims:
        if a.strides[k] is not None and sympy.sympify(a.strides[k]) == 1:
            later = [j for j in dims if j > k]
            if all(a.strides[j] is not None and a.strides[j] == 0 for j in later):
                return dims[-1]
            return k
    return None


# --------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------

ARG_KINDS = ("argmax", "argmin")


@dataclass(frozen=True)
class ReductionAccess:
    """How a reduction's kernel reads memory (per point of its domain, in bytes).

    ``axis`` is "outer" where more bytes are contiguous along the innermost
    output index than along the innermost reduction index (``x.sum(0)``, a
    channels-last pool or spatial mean), "inner" where the rows are read along
    the reduction (``x.sum(1)``), "strided" where neither (a gather, a strided
    slice). ``rorder`` walks the reduction dimensions in the order the loads
    lay them out (slowest first): a mean over (C, H, W) of a channels-last
    tensor walks H, W, C, so consecutive lanes read consecutive channels."""

    axis: str
    rorder: tuple[int, ...]
    inner_bytes: int
    outer_bytes: int
    strided_bytes: int
    row_bytes: int
    sector: int
    rows_contiguous: bool
    ops: int
    reused_bytes: int = 0
    """Of ``point_bytes``, those DRAM does not serve again for each point: a load
    repeated in the body (the same tensor at the same index: a softmax reads
    its row for the maximum and for the sum) and a load the same for every
    output (a layer norm's weight, read once and then from the cache). They
    count in the vote and the access's efficiency, not in the bytes moved."""
    inner_sector: int = 4
    """Bytes of an element of the narrowest load contiguous along the reduction
    (2 for a bf16 weight's rows): how many a 16-byte vector load holds."""

    @property
    def inner(self) -> bool:
        return self.axis != "outer"

    @property
    def point_bytes(self) -> int:
        """Bytes a point of the domain loads (loads that move with it)."""
        return self.inner_bytes + self.outer_bytes + self.strided_bytes

    @property
    def dram_point_bytes(self) -> int:
        """Bytes a point of the domain fetches from DRAM, once per pass over it."""
        return max(0, self.point_bytes - self.reused_bytes)


_FREE = (L.LoadOp, L.YieldOp, L.IndexOp, arith.ConstantOp)


def _bodies(nest: Operation, n: int, m: int) -> list[tuple[Operation, dict, bool]]:
    """(op, index renaming, moves with r) of what a reduction kernel computes: the
    reductions, the pointwise members over ``ranges ++ reduction_ranges`` (their
    i_{n+k} renamed r_k) and those over ``ranges`` (per row)."""
    if not isinstance(nest, L.FusedOp):
        return [(nest, {}, True)]
    out = []
    syms = index_symbols(n + m)
    rs = index_symbols(n, m)[n:]
    for op in nest.members():
        if isinstance(op, L.ReductionOp):
            out.append((op, {}, True))
        elif len(op.ranges.data) == n + m:
            out.append((op, {syms[n + k]: rs[k] for k in range(m)}, True))
        else:
            out.append((op, {}, False))
    return out


def _reduction_order(accesses: Sequence[Access], rdims: Sequence[int]) -> tuple[int, ...]:
    """``rdims`` slowest first by a vote of the accesses' static strides (each
    pair ordered by the bytes of the loads whose stride along one is larger, as
    Inductor's ``pick_loop_order``); ties keep the logical order."""
    votes: dict[tuple[int, int], int] = {}
    for a in accesses:
        for x in rdims:
            for y in rdims:
                sx, sy = a.strides[x], a.strides[y]
                if x == y or sx is None or sy is None:
                    continue
                sx, sy = sympy.sympify(sx), sympy.sympify(sy)
                if not (sx.is_Integer and sy.is_Integer) or sx == 0 or sy == 0:
                    continue
                if abs(int(sx)) > abs(int(sy)):
                    votes[(x, y)] = votes.get((x, y), 0) + a.weight  # x outside y

    def cmp(x: int, y: int) -> int:
        d = votes.get((y, x), 0) - votes.get((x, y), 0)
        return d if d else x - y

    return tuple(sorted(rdims, key=functools.cmp_to_key(cmp)))


def classify_reduction(
    nest: Operation,
    order: Sequence[int] | None = None,
    strides_of: StridesOf | None = None,
    keep_rorder: bool = False,
) -> ReductionAccess:
    """The one inner/outer/strided vote of a reduction (``loop.reduction`` or a
    ``loop.fused`` group): the bytes of its loads contiguous along the innermost
    output index (of ``order``, the output dimensions slowest first) against
    those contiguous along the innermost reduction index (of the reduction order
    the loads vote for; the logical order with ``keep_rorder``, or where an arg
    reduction's indices must count in that order). A load that does not move
    with the reduction (a per-channel scale) says nothing of the axis and is
    counted in ``row_bytes``; loads of unknown layout (indirect, or a tensor
    ``strides_of`` does not know) count as strided."""
    ranges = [sympy.sympify(d) for d in nest.ranges.data]
    rranges = [sympy.sympify(d) for d in nest.reduction_ranges.data]
    n, m = len(ranges), len(rranges)
    syms = index_symbols(n, m)
    xdims = nontrivial(ranges)
    if order is not None:
        xdims = [k for k in order if k in xdims]
    rdims = [n + k for k in nontrivial(rranges)]
    members = set(getattr(nest, "members", lambda: [])())
    member_results = {r for op in members for r in op.results}
    moving: list[Access] = []
    row_bytes = unknown = ops = reused = 0
    seen: set[tuple] = set()
    arg = False
    for body, subs, with_r in _bodies(nest, n, m):
        if isinstance(body, L.ReductionOp) and body.kind.data in ARG_KINDS:
            arg = True
        for op in body.walk():
            if op is body:
                continue
            if not isinstance(op, _FREE) and not op.regions:
                ops += 1
            if not isinstance(op, L.LoadOp) or op.source in member_results:
                continue
            a = load_access(op, syms, subs, strides_of, ranges + rranges)
            if a is None:
                unknown += element_bytes(op.source.type.element_type) if with_r else 0
                continue
            if not with_r or all(a.strides[k] == 0 for k in rdims):
                row_bytes += a.weight
                continue
            moving.append(a)
            key = (op.source, a.strides)
            if key in seen or (xdims and all(a.strides[k] == 0 for k in xdims)):
                reused += a.weight  # served by the cache: a repeat, or alike for all rows
            seen.add(key)
    rorder = tuple(rdims)
    if not keep_rorder and not arg and len(rdims) > 1:
        rorder = _reduction_order(moving, rdims)
    walk = [*xdims, *rorder]
    last_x = xdims[-1] if xdims else None
    last_r = rorder[-1] if rorder else None
    inner = outer = strided = 0
    # The vote weighs each load by the distinct bytes it fetches per point: a
    # load the same for every output column (a layer norm backward's per-row
    # mean and rstd, read beside the [rows, C] gradient and input its weight
    # gradient sums down the columns) is fetched once per row for all of them
    # (``footprint_share``). Counted whole, those two f32 rows tied with the
    # two f32 column-major reads and made the column sum an inner reduction:
    # tiles of 2 columns by 2048 rows, 8 bytes of each 32-byte sector used
    # (ViT-S f32 training: 23 us a call where Inductor's takes 5.7, H200).
    vote_inner = vote_outer = vote_strided = 0.0
    sizes: list[int] = []
    inner_sizes: list[int] = []
    votes, rows = 0, last_r is not None
    all_dims = ranges + rranges
    for a in moving:
        c = _contiguous_along(a, walk, all_dims)
        share = a.weight * footprint_share(a, all_dims, xdims)
        if c is not None and c == last_x:
            outer += a.weight
            vote_outer += share
            sizes.append(a.weight)
        elif c is not None and c == last_r:
            inner += a.weight
            vote_inner += share
            inner_sizes.append(a.weight)
        else:
            strided += a.weight
            vote_strided += share
        s = a.strides[last_r] if last_r is not None else None
        if s is None or sympy.sympify(s) != 0:
            votes += 1
            rows = rows and s is not None and sympy.sympify(s) == 1
    strided += unknown
    vote_strided += unknown
    if vote_outer > vote_inner:
        axis = "outer"
    elif inner > 0 and vote_inner >= vote_strided:
        axis = "inner"
    else:
        axis = "strided"
    return ReductionAccess(
        axis=axis,
        rorder=tuple(k - n for k in rorder),
        inner_bytes=inner,
        outer_bytes=outer,
        strided_bytes=strided,
        row_bytes=row_bytes,
        sector=min(sizes) if sizes else 4,
        rows_contiguous=rows and votes > 0,
        ops=ops,
        reused_bytes=reused,
        inner_sector=min(inner_sizes) if inner_sizes else 4,
    )


def _contiguous_along(a: Access, walk: Sequence[int], sizes: Sequence[sympy.Expr]) -> int | None:
    """The dimension (of ``walk``, the kernel's walk order over all dims) ``a`` is
    contiguous along, a broadcast counting as the last one (``contiguous_dim``)."""
    for pos, k in enumerate(walk):
        s = a.strides[k]
        if s is not None and sympy.sympify(s) == 1 and sympy.sympify(sizes[k]) != 1:
            later = walk[pos + 1 :]
            if all(a.strides[j] is not None and sympy.sympify(a.strides[j]) == 0 for j in later):
                return walk[-1]
            return k
    return None


def row_major(shape: Sequence[sympy.Expr]) -> tuple:
    return tuple(sympy.sympify(s) for s in contiguous_strides(shape))


__all__ = [
    "Access",
    "ReductionAccess",
    "StridesOf",
    "address",
    "classify_reduction",
    "contiguous_dim",
    "element_bytes",
    "linear_strides",
    "load_access",
    "nontrivial",
    "order_from_strides",
    "output_order",
    "permuted",
    "pointwise_accesses",
    "row_major",
]
