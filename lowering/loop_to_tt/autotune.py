"""Candidate launch configs of one nest, for ``convert-loop-to-tt{autotune=N}``.

Each candidate is an :class:`Options` the kernel builder takes; the pass builds
them in order (the heuristic first), drops those whose built tile and launch
config repeat an earlier one, and keeps up to ``N``. The sets follow Inductor's
``triton_heuristics`` in spirit, kept small:

* pointwise: ``XBLOCK`` in {heuristic, 256, 512, 1024, 2048} x ``num_warps`` in
  {4, 8} (``XBLOCK`` capped by the static point count); a nest the heuristic
  tiles in 2-D (``tiling.py``) tries ``[YBLOCK, XBLOCK]`` in Inductor's 2-D set
  {32 x 32, 64 x 64, 256 x 16, 16 x 256} (each grown to the extents as the
  heuristic is), then the 1-D tile;
* reductions and fused groups: *persistent* tiles (whole rows in registers,
  only for static rows within the pass's ``persistent-threshold``) with
  ``XBLOCK`` in {1, 2, 4, ...} near the heuristic's, interleaved with *looped*
  tiles with ``RBLOCK`` in {64, 256, 1024, 2048} and a small ``XBLOCK``.

An option the user set (non-zero) is kept in every candidate; only the
heuristic ones vary.

A kernel that reads what it writes (an ``in_out`` pointer, an out that shares
storage with an input through views or a reused buffer) or accumulates with
atomics is never autotuned: timing runs it several times, and each run would
start from the previous one's result.
"""

from __future__ import annotations

import math
from dataclasses import replace

import sympy
from xdsl.ir import SSAValue

from coil.dialects import loop as L
from coil.dialects import tt
from coil.dialects.buffer import BufferType
from coil.intmath import next_pow2, prod
from coil.lowering.loop_to_tt.kernel import Kernel, Options
from coil.transforms.extern_effects import storage_holders

POINTWISE = [(1024, 4), (512, 4), (2048, 8), (256, 4), (1024, 8), (512, 8), (2048, 4), (256, 8)]
# (YBLOCK, XBLOCK, num_warps) of 2-D pointwise tiles (Inductor's 2-D pointwise set).
POINTWISE_2D = [(32, 32, 4), (64, 64, 8), (16, 256, 4), (256, 16, 4), (32, 32, 8), (64, 64, 4)]
LOOPED_RBLOCKS = (1024, 256, 2048, 64)
# The largest persistent tile (XBLOCK x RBLOCK) a candidate may ask for.
PERSISTENT_TILE = 4096


def config_key(k: Kernel) -> tuple:
    """What makes two built kernels the same candidate."""
    return (k.persistent, k.yblock, k.xblock, k.rblock, k.num_warps, k.num_stages)


def _cap(block: int, numel: sympy.Expr) -> int:
    return min(block, next_pow2(int(numel))) if numel.is_Integer else block


def _warps(tile: int) -> int:
    return 16 if tile >= 16384 else 8 if tile >= 4096 else 4


def _fix(base: Options, **heuristic: int) -> Options:
    """``base`` with the heuristic fields set, except those the user fixed."""
    fields = {k: v for k, v in heuristic.items() if not getattr(base, k)}
    return replace(base, **fields)


def candidate_options(nest: L.LoopOp, base: Options, heuristic: Kernel) -> list[Options]:
    """Candidates after the heuristic one, best guesses first (may repeat it)."""
    xnumel = prod(nest.ranges.data)
    if isinstance(nest, L.PointwiseOp):
        flat = [_fix(base, xblock=_cap(x, xnumel), num_warps=w) for x, w in POINTWISE]
        if not heuristic.yblock:
            return flat
        tiles = [_fix(base, yblock=y, xblock=x, num_warps=w) for y, x, w in POINTWISE_2D]
        return tiles + [replace(o, tile2d="off") for o in flat[:2]]
    rnumel = prod(nest.reduction_ranges.data)
    persistent: list[Options] = []
    if rnumel.is_Integer and int(rnumel) <= base.persistent_threshold:
        rblock = next_pow2(int(rnumel))
        h = max(1, heuristic.xblock)
        blocks = [x for x in (1, 2, 4, 8, 16, 32, 64) if x * rblock <= max(PERSISTENT_TILE, rblock)]
        blocks = sorted({_cap(x, xnumel) for x in blocks}, key=lambda x: (abs(math.log2(x / h)), x))
        persistent = [_fix(base, xblock=x, num_warps=_warps(x * rblock)) for x in blocks]
    looped: list[Options] = []
    for rblock in LOOPED_RBLOCKS:
        rblock = _cap(rblock, rnumel)
        xblock = _cap(max(1, min(8, 1024 // rblock)), xnumel)
        tiles = _fix(base, xblock=xblock, rblock=rblock, num_warps=_warps(2 * xblock * rblock))
        looped.append(replace(tiles, persistent_threshold=-1))  # every row loops
    out: list[Options] = []
    for k in range(max(len(persistent), len(looped))):
        out += persistent[k : k + 1] + looped[k : k + 1]
    # The same tiles with the other warp count, last.
    out += [replace(o, num_warps=8 if o.num_warps <= 4 else 4) for o in out if not base.num_warps]
    return out


def rereads_its_outputs(outs: list[SSAValue], kernel: Kernel) -> bool:
    """Whether running ``kernel`` twice differs from running it once: it writes storage
    it also reads, or accumulates with atomics."""
    # A buffer both loaded and stored is an in_out pointer (kernel ABI).
    if any((arg.name_hint or "").startswith("in_out_ptr") for arg in kernel.func.body.block.args):
        return True
    reads = [a for a in kernel.args if isinstance(a.type, BufferType) and a not in outs]
    read_roots = set().union(set(), *(storage_holders(b) for b in reads))
    if any(storage_holders(o) & read_roots for o in outs):
        return True
    return any(isinstance(op, tt.AtomicRMWOp) for op in kernel.func.walk())
