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

The accesses' analysis (strides, orders, the inner/outer vote of a
reduction) lives in ``coil/strategy/access.py`` and reductions' tiles in
``coil/strategy/plan.py``, where ``loop-split-reduction`` asks the same
questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sympy

from coil.dialects import loop as L
from coil.intmath import next_pow2, prod
from coil.strategy.access import (
    Access,
    contiguous_dim,
    linear_strides,
    output_order,
    permuted,
    pointwise_accesses,
)
from coil.strategy.access import nontrivial as _nontrivial

# Grid y and z allow at most 65535 programs (CUDA); grid x 2**31 - 1.
MAX_GRID_Y = 65535
# Triton's and Inductor's largest x and y blocks of a pointwise tile.
MAX_XBLOCK = 4096
MAX_YBLOCK = 1024
TILE = 1024  # points of a 2-D tile (Inductor's 32 x 32)
# The larger tile, 64 x 64, where both static extents are at least 64 and no
# block is given: each tile row is then a whole 128-byte line in bf16. Whether
# it pays is the cost model's (lowering/loop_to_tt/kernel.py asks
# strategy.plan.pointwise_estimate of both): a 64-byte row costs about 0.87
# of a full line's bandwidth (strategy/cost.py LINE; on an H100 a bf16
# 2048x4096 transpose ran 0.0197 ms against 0.0229 with 32 x 32, NCHW -> NHWC
# of 64x256x28x28 0.0199 against 0.0215, the f32 transpose -- full lines
# either way -- 0.0369 against 0.0373: seventh session, tile_sweep.py), and
# a small nest gains nothing from fewer, larger programs.
LARGE_TILE = 4096


@dataclass(frozen=True)
class Tiling2D:
    """A ``[YBLOCK, XBLOCK]`` tile: ``y`` = ``ranges[:split]``, ``x`` = ``ranges[split:]``."""

    split: int
    yblock: int
    xblock: int
    num_warps: int
    grid_y: bool  # programs over grid y (else one flattened grid x)
    large: bool = False  # asked for 64 x 64 (block_sizes)


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


def can_take_large_tile(ynumel: sympy.Expr, xnumel: sympy.Expr, yblock: int, xblock: int) -> bool:
    """Whether 64 x 64 is a candidate: both extents static and at least 64 (a
    whole line per tile row either way), no block given (a sweep of one block
    keeps the other's heuristic)."""
    sizes = (sympy.sympify(ynumel), sympy.sympify(xnumel))
    return not (xblock or yblock) and all(s.is_Integer and int(s) >= 64 for s in sizes)


def block_sizes(
    ynumel: sympy.Expr, xnumel: sympy.Expr, yblock: int = 0, xblock: int = 0, large: bool = False
) -> tuple[int, int]:
    """(YBLOCK, XBLOCK): Inductor's ``triton_config(size_hints, 32, 32)`` for static
    extents (64 x 64 with ``large``, where ``can_take_large_tile``), 32 x 32
    for dynamic ones; a block given (non-zero) is only capped by its static
    extent."""
    yhint = int(ynumel) if ynumel.is_Integer else None
    xhint = int(xnumel) if xnumel.is_Integer else None
    base, target = 32, TILE
    if yhint is not None and xhint is not None:
        if large and can_take_large_tile(ynumel, xnumel, yblock, xblock):
            base, target = 64, LARGE_TILE
        elif yhint * xhint < target:
            target //= 8
    x = xblock or base
    y = yblock or base
    # Shrunk to the extents (a block the user gave too: lanes past them do nothing).
    if xhint is not None:
        x = min(x, next_pow2(xhint))
    if yhint is not None:
        y = min(y, next_pow2(yhint))
    if not xblock:
        xcap = min(next_pow2(xhint), MAX_XBLOCK) if xhint is not None else 32
        while x < xcap and x * y < target:
            x *= 2
    if not yblock:
        ycap = min(next_pow2(yhint), MAX_YBLOCK) if yhint is not None else 32
        while y < ycap and (x * y < target or (yhint is not None and y * MAX_GRID_Y < yhint)):
            y *= 2
    return y, x


def pointwise_tiling(
    nest: L.PointwiseOp,
    mode: str,
    yblock: int = 0,
    xblock: int = 0,
    order=None,
    accesses=None,
    large: bool = False,
) -> Tiling2D | None:
    """The 2-D tiling of a pointwise nest iterated in ``order`` (its dimensions,
    slowest first; the logical order when None), or None for the 1-D tile.
    ``accesses``: the nest's ``pointwise_accesses`` where already computed;
    ``large``: 64 x 64 where it can be (``block_sizes``)."""
    if mode == "off":
        return None
    ranges = [sympy.sympify(d) for d in nest.ranges.data]
    order = list(order) if order is not None else list(range(len(ranges)))
    ranges = [ranges[k] for k in order]
    if any(d == 0 for d in ranges):
        return None
    accesses = pointwise_accesses(nest) if accesses is None else accesses
    split = choose_split(ranges, [permuted(a, order) for a in accesses])
    if split is None:
        return None
    ynumel, xnumel = prod(ranges[:split]), prod(ranges[split:])
    y, x = block_sizes(ynumel, xnumel, yblock, xblock, large)
    tile = x * y
    warps = next_pow2(min(max(tile // 256, 1), 8))
    if tile >= 128:
        warps = max(warps, 4)
    ytiles = -(-int(ynumel) // y) if ynumel.is_Integer else None
    return Tiling2D(split, y, x, warps, ytiles is not None and ytiles <= MAX_GRID_Y, large)


__all__ = [
    "Access",
    "Tiling2D",
    "block_sizes",
    "choose_split",
    "contiguous_dim",
    "linear_strides",
    "output_order",
    "permuted",
    "pointwise_accesses",
    "pointwise_tiling",
]
