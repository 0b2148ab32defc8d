"""Tile selection from access strides: 2-D pointwise tiles and outer reductions.

A kernel walks its output dimensions in the output's memory order
(``output_order``, as Inductor picks a loop order from the output's strides):
a channels-last ``[N, C, H, W]`` output is walked as ``(N, H, W, C)``. Below,
"the last loop index" means the last in that order. A pointwise nest lowers to
a 1-D tile over its flattened ``ranges``: lanes next to each other differ in
the last loop index, so an access is coalesced when its stride along that
index is 1. A transpose (``x.t().contiguous()``), a permute
(NCHW <-> NHWC) or an add of a transposed input has loads and a store that
disagree on their contiguous loop index, and one of them is strided across the
whole tile. As Inductor's ``SIMDScheduling.candidate_tilings`` does, such a
nest is tiled ``[YBLOCK, XBLOCK]`` over two groups of loop dimensions split at
``s``: ``y`` = ``ranges[:s]`` (block axis 0) and ``x`` = ``ranges[s:]`` (axis
1). An access whose contiguous index is the last of ``x`` is contiguous along
axis 1, one whose contiguous index is the last of ``y`` (``s - 1``) along axis
0; Triton's coalescing pass gives each load and store the layout of its
contiguous axis (and moves values between layouts through shared memory), so
both are coalesced.

Each access (a direct load of a buffer, the store) has a *stride* per loop
index (the coefficient of that index in its address, when the address is
affine in it) and a *contiguous index*: the one of stride 1. The splits tried
are those the accesses propose (``s = c + 1`` for an access contiguous along
``c`` that is not the last index); each is scored by the bytes of the accesses
it makes contiguous along one of the two axes (a store counting twice, as
Inductor's "contiguous writes matter more than reads"), and the best one is
taken when it scores more than the 1-D tile does. Broadcast reads (stride 0
after their contiguous index) count as contiguous in either tiling and propose
nothing, as in Inductor.

Block sizes follow Inductor's ``triton_config(size_hints, 32, 32)``: a tile
of 1024 points (128 when the whole nest is smaller; 64 x 64 from 2**20 static
points on where both extents are at least 64, as Inductor's autotuning finds
larger tiles there), shrunk to the extents
when they are static and smaller, then grown along ``x`` and then ``y`` where
an extent allows (and ``y`` until the ``y`` tiles fit grid y). Programs run
over a 2-D grid ``[x tiles, y tiles, 1]`` (as Inductor's: grid x allows 2**31 -
1 programs, grid y 65535); when the number of ``y`` tiles is dynamic or still
above 65535, the grid is flattened to ``[x tiles * y tiles, 1, 1]`` and the
kernel splits its program id (``pid % x tiles``, ``pid // x tiles``).

Reductions whose loads are contiguous along the last *output* index rather than
the reduction index (``x.sum(0)`` of a row-major matrix, an outer reduction)
keep the ``[XBLOCK, RBLOCK]`` tile but take the shape of Inductor's outer
reductions (``outer_config_opt``): a wide ``XBLOCK`` over contiguous columns
(at least a 32-byte sector of each row) and a short looped ``RBLOCK`` (a whole
row in registers only up to 64), where the inner heuristic would keep one or a
few whole columns per program and read them with a stride.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sympy
from xdsl.ir import Operation

from coil.dialects import loop as L
from coil.dialects.buffer import BufferType
from coil.dialects.symbolic import index_symbols, is_index_symbol

# Grid y and z allow at most 65535 programs (CUDA); grid x 2**31 - 1.
MAX_GRID_Y = 65535
# Triton's and Inductor's largest x and y blocks of a pointwise tile.
MAX_XBLOCK = 4096
MAX_YBLOCK = 1024
TILE = 1024  # points of a 2-D tile (Inductor's 32 x 32)
# Nests of at least LARGE_TILE_NUMEL static points, both extents at least 64,
# take 64 x 64 tiles (unless a block is given): each row
# of a tile is then a whole 128-byte line in bf16. On an H100 (seventh session,
# tile_sweep.py) a bf16 2048x4096 transpose ran 0.0197 ms against 0.0229 with
# 32 x 32 (Inductor, which autotunes its tile: 0.0225), NCHW -> NHWC of
# 64x256x28x28 0.0199 against 0.0215, and the f32 transpose 0.0369 against 0.0373.
LARGE_TILE = 4096
LARGE_TILE_NUMEL = 1 << 20


@dataclass(frozen=True)
class Access:
    """One memory access of a nest: its stride along each loop index (None where
    the address is not affine in the index) and its weight (bytes per point)."""

    strides: tuple[sympy.Expr | None, ...]
    weight: int
    what: str = ""


def _element_bytes(t) -> int:
    width = getattr(t, "bitwidth", None) or getattr(getattr(t, "width", None), "data", None)
    return max(1, (width or 32) // 8)


def linear_strides(address: sympy.Expr, syms: Sequence[sympy.Symbol]) -> tuple:
    """The coefficient of each of ``syms`` in ``address`` (None where ``address`` is
    not of the form ``c * sym + rest`` with ``c`` free of loop indices and ``rest``
    free of ``sym``)."""
    expr = sympy.expand(sympy.sympify(address))
    terms = sympy.Add.make_args(expr)
    out: list[sympy.Expr | None] = []
    for s in syms:
        coeff: sympy.Expr | None = sympy.Integer(0)
        for t in terms:
            if s not in t.free_symbols:
                continue
            c, dep = t.as_independent(s, as_Add=False)
            if dep != s or any(is_index_symbol(f) for f in c.free_symbols):
                coeff = None
                break
            coeff = coeff + c
        out.append(coeff)
    return tuple(out)


def _address(buffer_type: BufferType, index: Sequence[sympy.Expr]) -> sympy.Expr:
    strides = buffer_type.strides_attr.data
    return sum((sympy.sympify(e) * s for e, s in zip(index, strides)), sympy.Integer(0))


def _load_access(op: L.LoadOp, syms: Sequence[sympy.Symbol], subs=None) -> Access | None:
    if op.indirect or not isinstance(op.source.type, BufferType):
        return None
    index = [sympy.sympify(e) for e in op.index.data]
    if subs:
        index = [e.xreplace(subs) for e in index]
    strides = linear_strides(_address(op.source.type, index), syms)
    return Access(strides, _element_bytes(op.source.type.element_type), "load")


def pointwise_accesses(nest: L.PointwiseOp) -> list[Access]:
    """The nest's direct buffer loads and its store (weighted twice)."""
    syms = index_symbols(len(nest.ranges.data))
    out = [a for op in nest.walk() if isinstance(op, L.LoadOp) if (a := _load_access(op, syms))]
    for buf in nest.outs:
        strides = tuple(buf.type.strides_attr.data)
        out.append(Access(strides, 2 * _element_bytes(buf.type.element_type), "store"))
    return out


def _nontrivial(ranges: Sequence[sympy.Expr]) -> list[int]:
    return [k for k, d in enumerate(ranges) if sympy.sympify(d) != 1]


def output_order(nest: Operation, n: int) -> list[int]:
    """The nest's first ``n`` loop dimensions in the order its first ``n``-D output
    lays them out in memory, slowest first (Inductor iterates a kernel in its
    output's stride order too): a channels-last output ``[N, C, H, W]`` with
    strides ``[HWC, 1, WC, C]`` gives ``[0, 2, 3, 1]``, so neighbouring lanes
    differ in C and both the output and channels-last inputs are contiguous
    along the lanes. Size-1 dimensions come first (their index is 0); the
    logical order where the output is row-major, has symbolic strides, or is
    not ``n``-D."""
    identity = list(range(n))
    ranges = [sympy.sympify(d) for d in nest.ranges.data][:n]
    for buf in nest.outs:
        t = buf.type
        if not isinstance(t, BufferType) or len(t.shape_attr.data) != n:
            continue
        strides = [sympy.sympify(st) for st in t.strides_attr.data]
        dims = _nontrivial(ranges)
        if any(not strides[k].is_Integer for k in dims):
            return identity
        ordered = sorted(dims, key=lambda k: -int(strides[k]))  # stable: ties keep order
        return [k for k in identity if k not in dims] + ordered
    return identity


def permuted(a: Access, order: Sequence[int]) -> Access:
    """``a`` with its strides along ``order`` (a permutation of its first dims)."""
    n = len(order)
    return Access(tuple(a.strides[k] for k in order) + tuple(a.strides[n:]), a.weight, a.what)


def contiguous_dim(a: Access, ranges: Sequence[sympy.Expr]) -> int | None:
    """The loop index ``a`` is contiguous along (stride 1), counting a broadcast
    read (stride 0 along every later index) as contiguous along the last one;
    None when it has no stride-1 index (strided slices, non-affine views)."""
    dims = _nontrivial(ranges)
    if not dims:
        return None
    for k in dims:
        if a.strides[k] is not None and sympy.sympify(a.strides[k]) == 1:
            later = [j for j in dims if j > k]
            if all(a.strides[j] is not None and a.strides[j] == 0 for j in later):
                return dims[-1]
            return k
    return None


@dataclass(frozen=True)
class Tiling2D:
    """A ``[YBLOCK, XBLOCK]`` tile: ``y`` = ``ranges[:split]``, ``x`` = ``ranges[split:]``."""

    split: int
    yblock: int
    xblock: int
    num_warps: int
    grid_y: bool  # programs over grid y (else one flattened grid x)


def _numel(values: Sequence[sympy.Expr]) -> sympy.Expr:
    out = sympy.Integer(1)
    for v in values:
        out = out * v
    return out


def _pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def choose_split(ranges: Sequence[sympy.Expr], accesses: Sequence[Access]) -> int | None:
    """The split of the best 2-D tiling, or None when the 1-D tile coalesces as
    many bytes (see the module docstring)."""
    dims = _nontrivial(ranges)
    if len(dims) < 2:
        return None
    last = dims[-1]
    contig = [(contiguous_dim(a, ranges), a.weight) for a in accesses]
    flat = sum(w for c, w in contig if c == last)
    best, best_score = None, flat
    for split in sorted({c + 1 for c, _ in contig if c is not None and c != last}):
        score = sum(w for c, w in contig if c is not None and (c == last or c == split - 1))
        if score > best_score:
            best, best_score = split, score
    return best


def block_sizes(
    ynumel: sympy.Expr, xnumel: sympy.Expr, yblock: int = 0, xblock: int = 0
) -> tuple[int, int]:
    """(YBLOCK, XBLOCK): Inductor's ``triton_config(size_hints, 32, 32)`` for static
    extents (64 x 64 from ``LARGE_TILE_NUMEL`` points on where both extents are
    at least 64 and no block is given), 32 x 32 for dynamic ones; a block given
    (non-zero) is only capped by its static extent."""
    yhint = int(ynumel) if ynumel.is_Integer else None
    xhint = int(xnumel) if xnumel.is_Integer else None
    base, target = 32, TILE
    if yhint is not None and xhint is not None:
        # The larger tile where it was measured: both extents at least 64 (a
        # whole line per tile row either way) and no block given (a sweep of
        # one block keeps the other's heuristic).
        large = yhint * xhint >= LARGE_TILE_NUMEL and min(yhint, xhint) >= 64
        if large and not (xblock or yblock):
            base, target = 64, LARGE_TILE
        elif yhint * xhint < target:
            target //= 8
    x = xblock or base
    y = yblock or base
    # Shrunk to the extents (a block the user gave too: lanes past them do nothing).
    if xhint is not None:
        x = min(x, _pow2(xhint))
    if yhint is not None:
        y = min(y, _pow2(yhint))
    if not xblock:
        xcap = min(_pow2(xhint), MAX_XBLOCK) if xhint is not None else 32
        while x < xcap and x * y < target:
            x *= 2
    if not yblock:
        ycap = min(_pow2(yhint), MAX_YBLOCK) if yhint is not None else 32
        while y < ycap and (x * y < target or (yhint is not None and y * MAX_GRID_Y < yhint)):
            y *= 2
    return y, x


def pointwise_tiling(
    nest: L.PointwiseOp, mode: str, yblock: int = 0, xblock: int = 0, order=None
) -> Tiling2D | None:
    """The 2-D tiling of a pointwise nest iterated in ``order`` (its dimensions,
    slowest first; the logical order when None), or None for the 1-D tile."""
    if mode == "off":
        return None
    ranges = [sympy.sympify(d) for d in nest.ranges.data]
    order = list(order) if order is not None else list(range(len(ranges)))
    ranges = [ranges[k] for k in order]
    if any(d == 0 for d in ranges):
        return None
    split = choose_split(ranges, [permuted(a, order) for a in pointwise_accesses(nest)])
    if split is None:
        return None
    ynumel, xnumel = _numel(ranges[:split]), _numel(ranges[split:])
    y, x = block_sizes(ynumel, xnumel, yblock, xblock)
    tile = x * y
    warps = _pow2(min(max(tile // 256, 1), 8))
    if tile >= 128:
        warps = max(warps, 4)
    ytiles = -(-int(ynumel) // y) if ynumel.is_Integer else None
    return Tiling2D(split, y, x, warps, ytiles is not None and ytiles <= MAX_GRID_Y)


# --------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------


def reduction_loads(nest: Operation, n: int, m: int) -> list[Access]:
    """The direct buffer loads of the nest's reductions, with strides along
    ``i0..i{n-1}, r0..r{m-1}``."""
    syms = index_symbols(n, m)
    reds = [nest] if isinstance(nest, L.ReductionOp) else []
    if isinstance(nest, L.FusedOp):
        reds = [op for op in nest.members() if isinstance(op, L.ReductionOp)]
    out = []
    for red in reds:
        for op in red.walk():
            if isinstance(op, L.LoadOp) and (a := _load_access(op, syms)):
                out.append(a)
    return out


def is_outer_reduction(nest: Operation, order: Sequence[int] | None = None) -> int:
    """Whether the nest's reductions read more bytes contiguously along the last
    output index (of ``order``, the output dimensions slowest first) than along
    the last reduction index (``x.sum(0)``; a channels-last max pool's window):
    the smallest element size (bytes) of those loads, or 0 when it is not."""
    ranges = [sympy.sympify(d) for d in nest.ranges.data]
    rranges = [sympy.sympify(d) for d in nest.reduction_ranges.data]
    n = len(ranges)
    xdims = _nontrivial(ranges)
    if order is not None:
        xdims = [k for k in order if k in xdims]
    rdims = [n + k for k in _nontrivial(rranges)]
    if not xdims or not rdims:
        return 0
    outer = inner = 0
    sizes = []
    for a in reduction_loads(nest, n, len(rranges)):
        if all(a.strides[k] == 0 for k in rdims):
            continue  # one value per output (a per-channel scale): no vote
        c = contiguous_dim(a, ranges + rranges)
        if c == xdims[-1]:
            outer += a.weight
            sizes.append(a.weight)
        elif c == rdims[-1]:
            inner += a.weight
    return min(sizes) if outer > inner else 0


def outer_reduction_tile(
    xnumel: sympy.Expr, rnumel: sympy.Expr, element_bytes: int = 4
) -> tuple[int, int]:
    """(XBLOCK, RBLOCK) of a looped outer reduction, after Inductor's
    ``outer_config_opt``: 64 x 8 for many columns, narrower (down to a 32-byte
    sector of each row) while that keeps fewer than 256 programs, RBLOCK
    growing to keep about 512 points a step. Inductor narrows to 2 columns for
    fewer than 1024 columns because it splits such reductions; here a row read
    stays at least a whole sector (splitting is the loop-split-reduction pass's)."""
    narrowest = max(8, 32 // max(1, element_bytes))
    xblock = 64
    if xnumel.is_Integer:
        while xblock > narrowest and int(xnumel) // xblock < 256:
            xblock //= 2
        xblock = min(xblock, _pow2(int(xnumel)))
    rblock = max(8, min(64, 512 // xblock))
    if rnumel.is_Integer:
        rblock = min(rblock, _pow2(int(rnumel)))
    return xblock, rblock


# The longest static row an outer reduction keeps whole (Inductor: 64).
OUTER_PERSISTENT = 64


__all__ = [
    "Access",
    "Tiling2D",
    "block_sizes",
    "choose_split",
    "contiguous_dim",
    "is_outer_reduction",
    "linear_strides",
    "outer_reduction_tile",
    "output_order",
    "permuted",
    "pointwise_accesses",
    "pointwise_tiling",
]
