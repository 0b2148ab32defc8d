"""Kernel variants over ranges of a symbolic size: where one plan cannot serve
every size, a few kernels, each planned for a range, and one comparison in the
wrapper that picks one (``host.variants``).

The case that needs it: a reduction whose reduced size is symbolic. A static
row of up to 4096 points is kept whole in registers (one read of the row, no
loop; a softmax or a norm reads it once instead of two or three times); a
symbolic row could be any length, so the one plan that serves every size is
the looped one (``plan.reduction_tile``). Inductor's answer is ``multi_kernel``
(``torch/_inductor/codegen/multi_kernel.py``): it compiles the persistent and
the looped kernel and, on the first call of each size hint, benchmarks both
and keeps the faster; its persistent kernel is specialized to the size hint's
RBLOCK and guarded by the size's range. Here the choice is the cost model's
and is made at compile time, per bucket:

* candidate bounds ``B`` are :data:`BOUNDS` up to the persistent threshold
  (an outer reduction's: ``plan.OUTER_PERSISTENT``);
* for each, the persistent tile of a row of ``B`` points (``reduction_tile``
  with ``rbound=B``: RBLOCK ``next_pow2(B)``, masked to the actual size) is
  estimated at ``B`` -- the bucket's largest size, where registers and lanes
  are fullest -- against the looped kernel at the same size; it is kept where
  it gains ``cost.MARGIN``;
* of two kept bounds, the smaller stays only where its kernel beats the larger
  one's at the smaller bound by the margin too (a shorter RBLOCK wastes fewer
  masked lanes on short rows);
* at most :data:`MAX_VARIANTS` persistent kernels, then the looped one.

The wrapper runs the first variant whose bound the size is within, the looped
kernel past the last (``host.variants``, one integer comparison a launch).
Output counts stay symbolic in every variant (rows a program follow the
size hints, ``hints.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import sympy

from coil.strategy.cost import MARGIN, Estimate, estimate
from coil.strategy.plan import (
    OUTER_PERSISTENT,
    PERSISTENT_THRESHOLD,
    ReductionShape,
    ReductionTile,
    reduction_tile,
    reduction_work,
)
from coil.strategy.target import Target

BOUNDS = (256, 1024, 4096)
"""Row lengths a persistent variant may be planned for (RBLOCKs of Inductor's
persistent reduction configs: 4096 is the largest it keeps whole)."""

MAX_VARIANTS = 2
"""Persistent kernels at most per reduction besides the looped one: each is a
kernel to compile (a second or so of Triton on a GPU)."""


@dataclass(frozen=True)
class RowVariant:
    """A persistent kernel for rows of at most ``bound`` points, and the estimates
    at ``bound`` that chose it."""

    bound: int
    tile: ReductionTile
    persistent_at_bound: Estimate
    looped_at_bound: Estimate

    def summary(self) -> str:
        return (
            f"rows <= {self.bound}: persistent [XBLOCK {self.tile.xblock}, RBLOCK "
            f"{self.tile.rblock}] {self.persistent_at_bound.us:.3g} us against looped "
            f"{self.looped_at_bound.us:.3g} us at {self.bound}"
        )


def _at(shape: ReductionShape, tile: ReductionTile, rnumel: int, target: Target) -> Estimate:
    """``tile``'s estimate for ``shape`` with ``rnumel`` points a row."""
    sized = replace(shape, rnumel=sympy.Integer(rnumel))
    return estimate(reduction_work(sized, tile), _parallel(target))


def row_variants(
    shape: ReductionShape,
    target: Target,
    *,
    persistent_threshold: int = PERSISTENT_THRESHOLD,
    outer_tiles: bool = True,
) -> list[RowVariant]:
    """The persistent variants worth emitting for a reduction with a symbolic row
    (see the module docstring), by ascending bound; empty where the row is
    static, or no bound gains the margin."""
    r = sympy.sympify(shape.rnumel)
    if r.is_Integer or persistent_threshold <= 0:
        return []
    looped = reduction_tile(shape, target, persistent_threshold=persistent_threshold)
    if looped.persistent:
        return []
    outer = outer_tiles and shape.access.axis == "outer"
    limit = min(persistent_threshold, OUTER_PERSISTENT if outer else persistent_threshold)
    kept: list[RowVariant] = []
    for bound in BOUNDS if not outer else (OUTER_PERSISTENT,):
        if bound > limit:
            break
        tile = reduction_tile(
            shape,
            target,
            persistent_threshold=persistent_threshold,
            outer_tiles=outer_tiles,
            rbound=bound,
        )
        if not tile.persistent:
            continue
        mine, theirs = _at(shape, tile, bound, target), _at(shape, looped, bound, target)
        if mine.seconds < theirs.seconds * (1 - MARGIN):
            kept.append(RowVariant(bound, tile, mine, theirs))
    # A smaller bound stays only where it beats the next larger one at its size.
    out: list[RowVariant] = []
    for k, v in enumerate(kept):
        nxt = kept[k + 1] if k + 1 < len(kept) else None
        if nxt is None:
            out.append(v)
            continue
        theirs = _at(shape, nxt.tile, v.bound, target)
        if v.persistent_at_bound.seconds < theirs.seconds * (1 - MARGIN):
            out.append(v)
    return out[-MAX_VARIANTS:]


def _parallel(target: Target) -> Target:
    """The GPU an interpreter target stands for (the plans are the GPU's)."""
    return replace(target, serial=False)


__all__ = ["BOUNDS", "MAX_VARIANTS", "RowVariant", "row_variants"]
