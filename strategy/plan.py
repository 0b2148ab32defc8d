"""Kernel plans: what shape a nest's kernel takes, with the estimate behind it.

Reductions (:func:`reduction_tile`). The tile *shapes* follow the access
pattern (``access.classify_reduction``) and are Inductor's configs:

* a short static row is *persistent* (all of it in registers): up to the
  pass's ``persistent-threshold`` (4096 points) for rows read along the
  reduction, up to :data:`OUTER_PERSISTENT` for outer reductions;
* a long row read along its contiguous dimension loops with RBLOCK 2048, one
  row a program (Inductor's inner-reduction config);
* an outer reduction (loads contiguous along the outputs) takes a wide XBLOCK
  of contiguous outputs (at least a 32-byte sector of each row) and a short
  looped RBLOCK, about 512 points a step (Inductor's ``outer_config_opt``);
* anything else loops RBLOCK 64 over up to 2048 points a step.

The *quantities* the old rules fixed by hand are the cost model's
(``cost.py``): how many rows a persistent program takes (fewer where that
spreads few rows over more SMs, and the estimate gains at least
``cost.MARGIN``), how narrow an outer tile gets, and -- in
:func:`split_plan` -- whether a reduction is split in two stages and into how
many chunks: the stage-1 kernel plus the finish against the one kernel, each
by the same :func:`reduction_tile` the back end uses, so the split pass and
``convert-loop-to-tt`` never disagree on what a kernel looks like.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import sympy

from coil.dialects.symbolic import torch_sympy
from coil.intmath import cdiv, next_pow2
from coil.strategy import hints
from coil.strategy.access import ReductionAccess
from coil.strategy.cost import (
    MARGIN,
    Estimate,
    Work,
    estimate,
    program_seconds,
    sector_efficiency,
)
from coil.strategy.target import Target

OUTER_PERSISTENT = 64
"""The longest static row an outer reduction keeps whole (Inductor: 64)."""

INNER_RBLOCK = 2048
"""RBLOCK of a long row read along its contiguous dimension (Inductor's inner
reductions; the roofline's f32/bf16 sum, amax and var over dim 1 of 32768 x
2048 ran at 89-92 % of the copy bandwidth with it)."""

PERSISTENT_THRESHOLD = 4096
"""The longest static row kept whole in registers (``convert-loop-to-tt``'s
``persistent-threshold``): 4096 f32 points is 16 values a thread at 8 warps,
Inductor's largest persistent reduction (``triton_heuristics``' RBLOCK cap)."""

SIZE_HINT = 4096
"""What a size symbol without a hint counts as in an estimate (IR written by
hand, or traced on coil's own FakeEnv); a graph from Dynamo or export carries
its example sizes (``hints.py``), which take precedence."""

MIN_XBLOCK_SECTOR = 32
"""Bytes of each row an outer tile reads at least: a whole 32-byte sector."""


def floor_pow2(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


def hint(e: sympy.Expr | int) -> int:
    """``e`` at the size hints in force (``hints.py``), :data:`SIZE_HINT` per
    symbol without one."""
    return hints.value(e, SIZE_HINT)


@dataclass(frozen=True)
class ReductionShape:
    """What the plan of a reduction kernel depends on."""

    xnumel: sympy.Expr
    rnumel: sympy.Expr
    access: ReductionAccess
    phases: int = 1
    """Loops over the row a looped kernel runs (a softmax: max with sum, then the
    outputs)."""
    accumulators: int = 1
    """Values a lane accumulates (welford: 3, an arg reduction: 2)."""
    out_bytes: int = 4
    """Bytes written per output (all of the kernel's per-row results)."""
    point_out_bytes: int = 0
    """Bytes written per point of the domain (a softmax's or a norm's output)."""
    reductions: int = 1
    """Reductions a row ends with (trees)."""
    welford: int = 0
    """Welford reductions among them (a variance, a norm's statistics): a looped
    row updates (mean, m2, weight) at every point, a division among them; a
    persistent row holds the row and reduces it in two passes
    (``kernel_rows._reduce_row``: a sum, then the squared deviations)."""


@dataclass(frozen=True)
class ReductionTile:
    """A reduction kernel's tile and launch, and why."""

    persistent: bool
    xblock: int
    rblock: int
    warps: int
    inner: bool
    outer: bool
    estimate: Estimate
    notes: tuple[str, ...] = field(default=())

    def summary(self) -> str:
        kind = "persistent" if self.persistent else "looped"
        axis = "outer" if self.outer else "inner rows" if self.inner else "rows"
        text = (
            f"reduction {axis}, {kind} [XBLOCK {self.xblock}, RBLOCK {self.rblock}], "
            f"{self.warps} warps: {self.estimate.summary()}"
        )
        return text + "".join(f"; {n}" for n in self.notes)


def warps_for(xblock: int, rblock: int, inner: bool) -> int:
    # A whole 4096-wide row in one program wants all of a CTA's warps (8
    # values per thread per live tile), as Inductor's persistent configs do.
    warps = 16 if rblock >= 4096 else 8 if xblock * rblock >= 4096 else 4
    if inner and xblock * rblock >= 2048:
        warps = 8
    return warps


BODY_OPS_PER_THREAD = 512
"""A thread's points a step times the body's ops per point, at most. A heavy
body (DeBERTa's disentangled attention: 82 ops a point, the log-bucketed
relative positions in 64-bit integers, two gathers, one across rows; about 200
SASS instructions a point) compiles to one long instruction stream per
thread, and past a few points ptxas interleaves their chains less (fewer loads
in flight) or spills. Measured on an H200 (``tile_sweep.py rel_pos_softmax``,
96 x 512 x 512 bf16; registers from ptxas for sm_90): [1, 512] at 4 warps
(4 points, 328 op-points, 44 registers) 0.223 ms, [2, 512] (8 points, 656,
80 registers) 0.241, [8, 512] at 8 warps (16 points, 1312, 68 registers)
0.365, at 4 warps (32 points) 0.346 with 776 bytes spilled, [32, 512] (64
points) 1.60; Inductor 0.228. None of the 59 plans of the shape sweep the
strategy was fitted on moves (replayed on the CPU)."""


def body_ops(shape: ReductionShape) -> int:
    """The ops a point of ``shape`` runs, as :data:`BODY_OPS_PER_THREAD` weighs
    them; 0 (no bound) where a load is contiguous along the rows (an outer or
    transposed read: rows a program share its sectors, so fewer rows would
    fetch more; Whisper's GELU, position add and layer norm over a conv1d's
    channel-major output, 44 ops a point, keeps its [8, 512])."""
    return 0 if shape.access.outer_bytes else shape.access.ops


def body_rows(xb: int, rb: int, inner: bool, ops: int, warp_size: int = 32) -> int:
    """``xb`` rows a program halved until a thread's points times ``ops`` fit
    :data:`BODY_OPS_PER_THREAD` (with the warps :func:`warps_for` gives each)."""

    def op_points(xb: int) -> int:
        return xb * rb // (warp_size * warps_for(xb, rb, inner)) * ops

    while xb > 1 and ops and op_points(xb) > BODY_OPS_PER_THREAD:
        xb //= 2
    return xb


def reduction_work(shape: ReductionShape, tile: ReductionTile | tuple) -> Work:
    """The cost model's view of ``shape`` run with a tile ``(persistent, xblock,
    rblock, warps)``."""
    if isinstance(tile, ReductionTile):
        tile = (tile.persistent, tile.xblock, tile.rblock, tile.warps)
    persistent, xblock, rblock, warps = tile
    acc = shape.access
    x, r = hint(shape.xnumel), hint(shape.rnumel)
    reads = 1 if persistent else max(1, shape.phases)
    steps = 1 if persistent else max(1, shape.phases) * cdiv(max(r, 1), rblock)
    rows = min(xblock, max(x, 1))
    runs = (
        (acc.outer_bytes, sector_efficiency(rows * acc.sector)),
        (acc.inner_bytes, sector_efficiency(min(rblock, max(r, 1)) * max(1, acc.sector))),
        (acc.strided_bytes, 1 / 8),  # a sector per element, partly reused from L2
    )
    moved = sum(b for b, _ in runs)
    fetched = sum(b / e for b, e in runs)
    efficiency = moved / fetched if fetched else 1.0
    nbytes = x * r * (acc.dram_point_bytes * reads + shape.point_out_bytes) + x * (
        acc.row_bytes + shape.out_bytes
    )
    return Work(
        programs=cdiv(max(x, 1), xblock),
        warps=warps,
        bytes=float(nbytes),
        steps=steps,
        step_points=xblock * rblock,
        point_ops=max(1, acc.ops),
        reductions=shape.reductions,
        efficiency=efficiency,
        live=shape.accumulators + (1 if persistent and shape.point_out_bytes else 0),
        pipelined=pipelined_loop(shape, rblock),
    )


def pipelined_loop(shape: ReductionShape, rblock: int) -> bool:
    """Whether ptxas runs a looped row's next loads ahead of its arithmetic: it
    unrolls a loop over whole RBLOCKs (no ``rmask``) that accumulates one value
    a lane, and then issues several steps' loads at once. A masked loop or one
    carrying several accumulators (welford's three, an arg reduction's two,
    an online softmax's max and sum) stays one step an iteration, each waiting
    its load. Read from the SASS of the shape sweep's kernels (sm_90, Triton
    3.6: the loop body's LDG count against a step's): unmasked sums over dim 0
    of 32768 x 2048 f32 hold 9-10 steps' loads an iteration, masked means of
    channels-last 65 x 65 and 130 x 130 planes, a welford over 32768 rows, an
    argmax and a column softmax's max-and-sum one; the unrolled loops' steps
    measured 0.36 of a load latency, the others 0.8-1.2 (benchmarks/
    fit_strategy.py on devlogs/12's H200 sweep)."""
    r = sympy.sympify(shape.rnumel)
    unmasked = r.is_Integer and int(r) > 0 and int(r) % max(1, rblock) == 0
    return unmasked and shape.accumulators == 1 and shape.phases == 1


def outer_candidates(xnumel: sympy.Expr, rnumel: sympy.Expr, sector: int) -> list[tuple[int, int]]:
    """(XBLOCK, RBLOCK) candidates of a looped outer reduction, after Inductor's
    ``outer_config_opt``: 64 columns a program, or narrower down to a 32-byte
    sector of each row (more programs for few columns), RBLOCK growing to keep
    about 512 points a step. Which one is the cost model's (``reduction_tile``);
    splitting such reductions along the rows is ``split_plan``'s."""
    narrowest = max(8, MIN_XBLOCK_SECTOR // max(1, sector))
    out = []
    xblock = 64
    while xblock >= narrowest:
        xb = min(xblock, next_pow2(int(xnumel))) if xnumel.is_Integer else xblock
        rblock = max(8, min(64, 512 // xb))
        if rnumel.is_Integer:
            rblock = min(rblock, next_pow2(int(rnumel)))
        if (xb, rblock) not in out:
            out.append((xb, rblock))
        xblock //= 2
    return out


def outer_persistent_tiles(
    shape: ReductionShape, target: Target, rnumel: int, sector: int
) -> list[ReductionTile]:
    """Outer tiles holding the whole row (RBLOCK ``next_pow2(rnumel)``), XBLOCK
    from a 32-byte sector of each row up to 64 columns within a persistent
    row's budget of 4096 points a program (``reduction_tile``'s rows)."""
    rb = next_pow2(rnumel)
    narrowest = max(8, MIN_XBLOCK_SECTOR // max(1, sector))
    out = []
    xb = narrowest
    while xb <= 64 and xb * rb <= 4096:
        out.append(_tile(shape, target, True, xb, rb, False, True))
        xb *= 2
    return out


def outer_scan_tile(
    xnumel: sympy.Expr, rnumel: sympy.Expr, sector: int, target: Target
) -> tuple[int, int]:
    """(XBLOCK, RBLOCK) of a looped outer scan (``x.cumsum(0)``): the widest of
    ``outer_candidates`` that still gives every SM of ``target`` two programs,
    the narrowest (a 32-byte sector of each row) where none does. Inductor's
    ``outer_config_opt`` narrows while fewer than 256 programs (about two per SM
    of the GPUs it was tuned on); a scan keeps its chunks' carries in registers,
    so it is not split and its programs come from the columns alone."""
    shapes = outer_candidates(xnumel, rnumel, sector)
    if not xnumel.is_Integer:
        return shapes[0]
    for xb, rb in shapes:
        if cdiv(int(xnumel), xb) >= 2 * target.num_sms:
            return xb, rb
    return shapes[-1]


def reduction_tile(
    shape: ReductionShape,
    target: Target,
    *,
    xblock: int = 0,
    rblock: int = 0,
    persistent_threshold: int = PERSISTENT_THRESHOLD,
    outer_tiles: bool = True,
    rbound: int = 0,
) -> ReductionTile:
    """The tile of a reduction kernel (see the module docstring); ``xblock`` and
    ``rblock`` (non-zero) are given by the user and kept. ``rbound`` (non-zero)
    says a symbolic reduced size is at most that (a variant the wrapper runs
    only then, ``variants.py``): the row is planned as a static one of that
    length, masked to the actual size."""
    acc = shape.access
    x, r = sympy.sympify(shape.xnumel), sympy.sympify(shape.rnumel)
    if rbound and not r.is_Integer:
        tile = reduction_tile(
            replace(shape, rnumel=sympy.Integer(rbound)),
            target,
            xblock=xblock,
            rblock=rblock,
            persistent_threshold=persistent_threshold,
            outer_tiles=outer_tiles,
        )
        return replace(tile, notes=(*tile.notes, f"rows of at most {rbound}"))
    # An interpreter target plans the GPU's tiles, but never more programs only
    # to spread rows over SMs (it runs programs one after another).
    spread = not target.serial
    target = _parallel(target)
    notes: tuple[str, ...] = ()
    outer = outer_tiles and acc.axis == "outer"
    threshold = min(persistent_threshold, OUTER_PERSISTENT) if outer else persistent_threshold
    persistent = r.is_Integer and int(r) <= threshold
    inner = not persistent and not outer and not xblock and acc.rows_contiguous
    if persistent:
        rb = next_pow2(int(r))
    elif rblock:
        rb = next_pow2(rblock)
    elif outer:
        rb = 0  # with XBLOCK, below
    elif inner:
        rb = INNER_RBLOCK if not r.is_Integer else min(INNER_RBLOCK, next_pow2(int(r)))
    else:
        rb = 64 if not r.is_Integer else min(64, next_pow2(int(r)))
    if xblock:
        xb = next_pow2(xblock)
        if outer and not persistent and not rb:
            rb = max(8, min(64, 512 // xb))
            rb = min(rb, next_pow2(int(r))) if r.is_Integer else rb
    elif outer and not persistent:
        shapes = outer_candidates(x, r, acc.sector)
        tiles = [_tile(shape, target, False, a, b, False, True) for a, b in shapes]
        if rblock:
            tiles = [_tile(shape, target, False, t.xblock, rb, False, True) for t in tiles]
        elif shape.phases > 1 and r.is_Integer and int(r) <= persistent_threshold:
            # A looped row of more than one phase (a norm's statistics, then
            # its outputs) reads the row once a phase; held whole it is read
            # once. Past OUTER_PERSISTENT that costs registers a lane, so the
            # model weighs both: ViT's first layer norm, whose input is the
            # patch convolution's output transposed (each token's channels
            # 196 elements apart), is outer and two phases, estimated (H100)
            # 29 us looped [8, 64] against 18 us whole [8, 512].
            tiles += outer_persistent_tiles(shape, target, int(r), acc.sector)
        return min(tiles, key=lambda t: t.estimate.seconds)
    elif inner and rb >= 256:
        xb = 1
    else:
        budget = 4096 if persistent else 2048
        xb = floor_pow2(min(64, budget // rb))
        if x.is_Integer:
            xb = min(xb, next_pow2(int(x)))
        ops = body_ops(shape)
        heavy = body_rows(xb, rb, inner, ops, target.warp_size)
        if heavy < xb:
            notes = (f"{xb} -> {heavy} rows a program: a heavy body ({ops} ops a point)",)
            xb = heavy
    default = _tile(shape, target, persistent, xb, rb, inner, outer)
    if notes:
        default = replace(default, notes=notes)
    if not xblock and not rblock and spread and _streams_rows(shape, target):
        streamed = stream_tile(shape, target, default)
        if streamed is not default:
            return streamed
    if xblock or not persistent or not x.is_Integer or not spread or xb == 1:
        return default
    # Fewer rows a program, where that spreads few rows over more SMs.
    best = default
    k = xb // 2
    while k >= 1:
        cand = _tile(shape, target, persistent, k, rb, inner, outer)
        if cand.estimate.seconds < best.estimate.seconds:
            best = cand
        k //= 2
    if best is not default and best.estimate.seconds < default.estimate.seconds * (1 - MARGIN):
        note = f"{xb} -> {best.xblock} rows a program ({default.estimate.us:.3g} us at {xb})"
        return replace(best, notes=(*best.notes, note))
    return default


STREAM_MAX_POINTS = 4096
"""The most points a streaming tile takes a step (XBLOCK x RBLOCK): Inductor's
largest reduction tile, 16 values a thread at 8 warps."""

STREAM_MAX_PER_THREAD = 32
"""Points a thread holds a step at most (f32 accumulators in registers): the
largest the register fit of ``cost.registers`` saw (the shape sweep's
kernels, sm_90) is Inductor's 4096-point tile at 4 warps."""

STREAM_MIN_VECTOR = 16
"""Bytes a thread loads of a row at least, one 16-byte vector (``ld.global.v4``):
fewer leaves each load instruction moving part of what it can."""


def _streams_rows(shape: ReductionShape, target: Target) -> bool:
    """Whether ``shape`` streams many rows once, each read along the reduction: a
    matrix-vector product (a weight's rows against one cached vector), a row
    sum. One pass over the rows (no softmax's second read, no per-point
    output), static sizes, at least a row for every SM and rows of at least a
    16-byte vector a lane of a warp.

    Not a Welford row: the streaming tiles (few warps, many points a thread)
    were fitted on one-accumulator sums and products, and looped they run a
    Welford update, a division among its ops, at every point. ``x.var(1)`` of
    32768 x 2048 (the roofline on an H200, RESULTS.md, twentieth session) streamed as looped [XBLOCK
    32, RBLOCK 64] at 2 warps ran 81.7 us in bf16 and 101.4 in f32, estimated
    45 and 68, Inductor 68 and 84; as the persistent two-pass row it ran at
    1.35x (bf16) and 0.97x (f32) Inductor on an H100 (the eighth session)."""
    acc = shape.access
    x, r = sympy.sympify(shape.xnumel), sympy.sympify(shape.rnumel)
    return (
        shape.welford == 0
        and acc.axis != "outer"
        and acc.rows_contiguous
        and shape.phases == 1
        and shape.point_out_bytes == 0
        and x.is_Integer
        and r.is_Integer
        and int(x) >= target.num_sms
        and int(r) * max(1, acc.inner_sector) >= target.warp_size * STREAM_MIN_VECTOR
    )


def stream_candidates(shape: ReductionShape, target: Target) -> list[tuple[bool, int, int, int]]:
    """(persistent, XBLOCK, RBLOCK, warps) a streaming reduction may take: a whole
    row in registers (RBLOCK the row) or a loop over it in steps that divide it
    (unmasked, so ptxas can issue the next steps' loads ahead), each step at
    most :data:`STREAM_MAX_POINTS` points, every thread loading at least a
    16-byte vector of a row a step (:data:`STREAM_MIN_VECTOR`), rows of a
    step at least a 128-byte line, a thread's points times the body's ops at
    most :data:`BODY_OPS_PER_THREAD`."""
    x, r = int(shape.xnumel), int(shape.rnumel)
    elem = max(1, shape.access.inner_sector)
    out: list[tuple[bool, int, int, int]] = []
    rblocks = [(True, next_pow2(r))] if next_pow2(r) <= PERSISTENT_THRESHOLD else []
    rb = max(16, LINE_BYTES // elem)
    while rb < r and rb <= INNER_RBLOCK:
        if r % rb == 0:
            rblocks.append((False, rb))
        rb *= 2
    for persistent, rb in rblocks:
        xb = 1
        while xb * rb <= STREAM_MAX_POINTS and xb <= min(64, next_pow2(x)):
            for warps in (2, 4, 8, 16):
                per_thread = xb * rb // (target.warp_size * warps)
                if per_thread * elem < STREAM_MIN_VECTOR or per_thread > STREAM_MAX_PER_THREAD:
                    continue
                if per_thread * body_ops(shape) > BODY_OPS_PER_THREAD:
                    continue
                out.append((persistent, xb, rb, warps))
            xb *= 2
    return out


def stream_tile(shape: ReductionShape, target: Target, default: ReductionTile) -> ReductionTile:
    """The tile of a streaming reduction (``_streams_rows``) with the best
    estimate among :func:`stream_candidates`, where it beats ``default`` by
    ``cost.MARGIN``; else ``default``. What the model weighs: the bytes each
    SM's programs have in flight against the DRAM latency (more rows or longer
    steps a program, more programs an SM), the programs' fixed costs (the
    first load, the trees, the stores) against the bytes they move, and the
    rounds of programs (a grid of just under one wave pays no partial last
    round). Each choice is the target's: its SMs, bandwidth and latency."""
    best = default
    for persistent, xb, rb, warps in stream_candidates(shape, target):
        est = estimate(reduction_work(shape, (persistent, xb, rb, warps)), target)
        if est.seconds < best.estimate.seconds:
            inner = not persistent and xb == 1
            best = ReductionTile(persistent, xb, rb, warps, inner, False, est)
    if best is default or best.estimate.seconds >= default.estimate.seconds * (1 - MARGIN):
        return default
    kind = "persistent" if default.persistent else "looped"
    note = (
        f"streamed rows, {default.estimate.us:.3g} us {kind} "
        f"[XBLOCK {default.xblock}, RBLOCK {default.rblock}] {default.warps} warps"
    )
    return replace(best, notes=(*best.notes, note))


LINE_BYTES = 128
"""A cache line: a looped step reads at least this much of each row."""


def _tile(
    shape: ReductionShape,
    target: Target,
    persistent: bool,
    xb: int,
    rb: int,
    inner: bool,
    outer: bool,
) -> ReductionTile:
    warps = warps_for(xb, rb, inner)
    est = estimate(reduction_work(shape, (persistent, xb, rb, warps)), target)
    return ReductionTile(persistent, xb, rb, warps, inner, outer, est)


# --------------------------------------------------------------------------
# Splitting a reduction in two stages
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SplitPlan:
    """How to cut a reduction's domain: ``nsplit`` chunks of ``chunk`` steps of
    the split dimension (``dim`` steps of ``unit`` points each, the reduction
    dimensions in ``rorder``: the outermost one, or all flattened), and the
    estimates that chose it."""

    nsplit: sympy.Expr
    chunk: sympy.Expr
    dim: sympy.Expr
    unit: sympy.Expr
    flatten: bool
    masked: bool
    rorder: tuple[int, ...]
    estimate: Estimate | None = field(default=None, compare=False)
    unsplit: Estimate | None = field(default=None, compare=False)

    def summary(self) -> str:
        text = f"split into {self.nsplit} chunks of {self.chunk}"
        if self.unit != 1:
            text += f" x {self.unit}"
        if self.estimate is not None and self.unsplit is not None:
            text += f": {self.estimate.us:.3g} us in two stages"
            text += f" against {self.unsplit.us:.3g} us unsplit"
        return text


INNER_CHUNKS = (2048, 4096, 8192, 16384)
"""Points per chunk an inner split considers (4096: one persistent row)."""
OUTER_CHUNKS = (64, 128, 256, 512, 1024, 2048)
"""Points per chunk an outer split considers (rows of consecutive outputs)."""


def _prefer_divisor(d: int, n: int) -> int:
    """A split count near ``n`` that divides ``d`` (no masks), else ``n``."""
    if n < 2 or d % n == 0:
        return n
    for delta in range(1, max(1, n // 4) + 1):
        for cand in (n - delta, n + delta):
            if 2 <= cand <= d and d % cand == 0:
                return cand
    return n


def _candidate(
    rranges, order: list[int], target_points: int, max_split: int, forced: int = 0
) -> SplitPlan | None:
    """Chunks of about ``target_points`` points (``forced`` chunks when given),
    at most ``max_split``, cut along the outermost reduction dimension (of
    ``order``) when the rest is a small static block (no index division), else
    along the flattened domain."""
    ordered = [sympy.sympify(rranges[k]) for k in order]
    rest = sympy.Mul(*ordered[1:]) if len(ordered) > 1 else sympy.Integer(1)
    rnumel = sympy.Mul(*ordered) if ordered else sympy.Integer(1)
    if not rnumel.is_Integer and not forced:
        # A dynamic size: the chunk is fixed and the number of chunks follows
        # the size at run time (as Inductor's split does from its size hint); a
        # small size then runs one program a stage, a large one fills the GPU.
        flatten = len(ordered) > 1 and not (rest.is_Integer and int(rest) * 2 <= target_points)
        dim, unit = (
            (rnumel, sympy.Integer(1)) if flatten or len(ordered) <= 1 else (ordered[0], rest)
        )
        per = max(1, cdiv(target_points, int(unit))) if unit.is_Integer else 1
        count = torch_sympy().FloorDiv(dim + (per - 1), per)
        return SplitPlan(count, sympy.Integer(per), dim, unit, flatten, True, tuple(order))
    if forced:
        nsplit = forced
        points = target_points
    else:
        nsplit = min(max_split, cdiv(int(rnumel), target_points))
        points = cdiv(int(rnumel), max(1, nsplit))
    flatten = len(ordered) > 1 and not (rest.is_Integer and int(rest) <= points)
    dim, unit = (rnumel, sympy.Integer(1)) if flatten or len(ordered) <= 1 else (ordered[0], rest)
    if dim.is_Integer:
        d = int(dim)
        nsplit = _prefer_divisor(d, min(nsplit, d))
        if nsplit < 2:
            return None
        rows_per = cdiv(d, nsplit)
        nsplit = cdiv(d, rows_per)  # no empty chunk
        if nsplit < 2:
            return None
        masked = rows_per * nsplit != d
        return SplitPlan(
            sympy.Integer(nsplit), sympy.Integer(rows_per), dim, unit, flatten, masked, tuple(order)
        )
    if nsplit < 2:
        return None
    chunk = torch_sympy().FloorDiv(dim + (nsplit - 1), nsplit)
    return SplitPlan(sympy.Integer(nsplit), chunk, dim, unit, flatten, True, tuple(order))


def stage1_tile(
    shape: ReductionShape,
    plan: SplitPlan,
    target: Target,
    persistent_threshold: int = PERSISTENT_THRESHOLD,
    sizes: dict | None = None,
) -> tuple[ReductionShape, ReductionTile]:
    """The first stage of ``plan`` (each chunk of every output reduced to its
    partials) and its kernel's tile."""
    sizes = sizes or {}
    nsplit = hint(sympy.sympify(plan.nsplit).xreplace(sizes))
    chunk_points = hint(sympy.sympify(plan.chunk * plan.unit).xreplace(sizes))
    stage1 = replace(
        shape,
        xnumel=sympy.Integer(nsplit) * shape.xnumel,
        rnumel=sympy.Integer(chunk_points),
        out_bytes=4 * shape.accumulators,
        point_out_bytes=0,
        phases=1,
    )
    return stage1, reduction_tile(stage1, target, persistent_threshold=persistent_threshold)


def split_estimate(
    shape: ReductionShape,
    plan: SplitPlan,
    target: Target,
    persistent_threshold: int = PERSISTENT_THRESHOLD,
    sizes: dict | None = None,
) -> Estimate:
    """Both stages of ``plan``: stage 1 reduces each chunk of every output (its
    kernel ``reduction_tile``'s), stage 2 the chunks' partials; one launch where
    the finish runs in stage 1's kernel (``split-finish``: static chunk and
    output counts), at the cost of the last program's wait. ``sizes`` gives
    dynamic sizes a value."""
    sizes = sizes or {}
    acc_bytes = 4 * shape.accumulators
    nsplit = hint(sympy.sympify(plan.nsplit).xreplace(sizes))
    stage1, t1 = stage1_tile(shape, plan, target, persistent_threshold, sizes)
    # The partials are stored [nsplit, outputs] (the split's stage-1 ranges),
    # outputs contiguous: with several outputs the finish reads them as an
    # outer reduction (the back end's vote on that layout), a full
    # reduction's as one contiguous row.
    many = hint(shape.xnumel) > 1
    partial = replace(
        shape.access,
        axis="outer" if many else "inner",
        inner_bytes=0 if many else acc_bytes,
        outer_bytes=acc_bytes if many else 0,
        strided_bytes=0,
        row_bytes=0,
        sector=4,
        rows_contiguous=not many,
        reused_bytes=0,
    )
    stage2 = ReductionShape(
        shape.xnumel, sympy.Integer(nsplit), partial, 1, shape.accumulators, shape.out_bytes
    )
    t2 = reduction_tile(stage2, target, persistent_threshold=persistent_threshold)
    # One launch where the back end can run the finish in stage 1's kernel
    # (static chunk and output counts, and stage 1's output tiles line up:
    # ``finish_tiles``); a column sum of 100003 x 17 in [8, 64] tiles does not
    # (17 outputs, three tiles of 8) and was priced for counter atomics it
    # never pays, against the launch it does.
    one_launch = (
        sympy.sympify(plan.nsplit).is_Integer
        and sympy.sympify(shape.xnumel).is_Integer
        and finish_tiles(hint(shape.xnumel), t1.xblock, t2.estimate.programs) is not None
    )
    if one_launch:  # each program then publishes its partials: a fence and an atomic
        work = replace(reduction_work(stage1, t1), waits=2)
        t1 = replace(t1, estimate=estimate(work, target))
        # The last program of each tile finishes after the others: the launch
        # takes one program of the finish more (its loads of the tile's
        # partials, a looped walk where there are many chunks).
        finish = program_seconds(replace(reduction_work(stage2, t2), cached=True), target)
        # The chunks of a tile that finish in the same round increment its
        # counter one after another (same-address atomics serialize in L2).
        together = nsplit / max(1.0, math.ceil(t1.estimate.waves - 1e-9))
        finish += together * ATOMIC_S
        extra = replace(t2.estimate, seconds=finish, launches=0)
        return t1.estimate.plus(extra)
    return t1.estimate.plus(replace(t2.estimate, seconds=t2.estimate.seconds + target.launch_s))


MAX_SERIAL = 16
"""The most stage-2 programs one last program runs one after another (a
split's outputs fewer than stage 1's XBLOCK: one counter, ``split_finish``)."""


def finish_tiles(n_out: int, xblock: int, finish_programs: int) -> tuple[int, int] | None:
    """Where a split's finish runs in stage 1's kernel (``split_finish.merge``):
    ``(tiles, programs a tile)``, a counter for each tile of ``xblock``
    consecutive outputs of the ``n_out``, whose last program to arrive runs the
    finish's programs for that tile; None where the tiles do not line up and
    the finish is a launch of its own. ``finish_programs`` is how many programs
    stage 2 takes where it is one tile (``n_out < xblock``); where ``xblock``
    divides ``n_out`` it is built with stage 1's XBLOCK, one program a tile."""
    if xblock < 1:
        return None
    if n_out % xblock == 0:
        return n_out // xblock, 1
    if n_out < xblock and finish_programs <= MAX_SERIAL:
        return 1, finish_programs
    return None


ATOMIC_S = 50e-9
"""Seconds one of a tile's chunks holds its counter (an acquire-release
``atomic_add`` on one address: they serialize in L2). Chunks of one tile that
finish in the same round of programs wait for each other: a bf16 column sum
of 4096 x 768 in 64 chunks, one round of 768 programs, ran 12.9 us on an H200
against 9.6 in 16 chunks (devlogs/6), with the same bytes and programs.
Over devlogs/12's sweep 25 and 50 ns rank the grids alike, 100 ns loses four
shapes (full means, a 3-row sum, the welford): an upper bound, to be measured
on its own (a counter contended by N programs) on the next GPU run."""

TIE = 0.02
"""Estimates this close are equal to the model (it ranks, it does not measure)."""

DYNAMIC_HINT = 1 << 20
"""What a dynamic reduced size counts as when a split is planned, the example
size (``hints.py``) notwithstanding: one plan serves every size, and a split
whose chunk count follows the size costs a small size one program a stage but
cuts a long one's time by the machine's width, so it is planned for a long one
(at a short example size the model would decline the split that a later long
size needs)."""

FORCED_SHAPE = {True: 4096, False: 256}
"""Points per chunk (inner, outer) that decide which dimension a forced split
(``split=N``) cuts: the outermost one where the rest is at most half of it."""


def split_plan(
    shape: ReductionShape,
    rranges,
    target: Target,
    *,
    forced: int = 0,
    max_split: int = 4096,
    persistent_threshold: int = PERSISTENT_THRESHOLD,
    num_sms: int = 0,
    explain: list[str] | None = None,
) -> SplitPlan | None:
    """Whether to split the reduction ``shape`` (its reduction ranges ``rranges``)
    in two stages, and how: the chunk size with the best estimate for both
    stages, taken where it beats the one kernel by ``cost.MARGIN``; ``forced``
    chunks when given (a test's ``split=N``). Dynamic output counts are not
    split; a dynamic reduced size takes the chunk the model picks for a long
    row (:data:`DYNAMIC_HINT`) and as many chunks as the size needs at run time.
    ``explain`` (a list) receives a sentence saying why."""
    why = explain if explain is not None else []
    acc = shape.access
    m = len(rranges)
    # The split walks the reduction dimensions in the order the loads lay them
    # out (size-1 dimensions last: their index is 0).
    order = [k for k in acc.rorder if 0 <= k < m]
    order += [k for k in range(m) if k not in order]
    r = sympy.sympify(shape.rnumel)
    if forced:
        if r.is_Integer and int(r) < forced:
            return None
        return _candidate(rranges, order, FORCED_SHAPE[acc.inner], max_split, forced)
    if target.serial:
        target = _parallel(target)
    if num_sms:
        target = replace(target, num_sms=num_sms)
    x = sympy.sympify(shape.xnumel)
    if not x.is_Integer:
        why.append("dynamic outputs")
        return None
    points = INNER_CHUNKS if acc.inner else OUTER_CHUNKS
    sizes = {s: sympy.Integer(DYNAMIC_HINT) for s in r.free_symbols}
    rh = r.xreplace(sizes)
    if not rh.is_Integer or int(rh) <= min(points):
        why.append(f"rows of at most {min(points)}")
        return None
    sized = replace(shape, rnumel=rh)
    base = reduction_tile(sized, target, persistent_threshold=persistent_threshold).estimate
    found: list[tuple[SplitPlan, Estimate]] = []
    if not acc.inner:
        points = _chunk_points(rranges, order, points, max_split)
    for p in points:
        if int(rh) < 2 * p:
            continue
        cand = _candidate(rranges, order, p, max_split)
        if cand is None or any(c == cand for c, _ in found):
            continue
        found.append((cand, split_estimate(sized, cand, target, persistent_threshold, sizes)))
    if not found:
        why.append(f"{base.us:.3g} us unsplit; no chunking applies")
        return None
    fastest = min(e.seconds for _, e in found)
    # Within the model's resolution, the fewest chunks: on the first shape
    # sweep (devlogs/6, H200) every reduction whose forced chunk counts
    # measured apart ran fastest with fewer chunks than the most the model
    # tied (a column softmax of 8192 x 4096: 16 chunks 72.7 us, 32 82.7,
    # 128 108; a bf16 column sum of 4096 x 768: 16 chunks 9.6 us, 64 12.9;
    # channels-last means: 7 chunks of 64 columns 11.1 us, of 32 27.6):
    # each chunk adds partials to write and read and programs to schedule.
    near = [(c, e) for c, e in found if e.seconds <= fastest * (1 + TIE)]
    best, best_est = min(near, key=lambda ce: hint(ce[0].nsplit.xreplace(sizes)))
    if best_est.seconds >= base.seconds * (1 - MARGIN):
        why.append(
            f"{base.us:.3g} us unsplit, {best_est.us:.3g} us in {best.nsplit} chunks "
            f"(a split must gain {MARGIN:.0%})"
        )
        return None
    plan = replace(best, estimate=best_est, unsplit=base)
    why.append(plan.summary())
    return plan


SLICE_CANDIDATES = 256
"""The most slice counts :func:`_chunk_points` lists for a split in whole slices."""


def _chunk_points(
    rranges, order: list[int], points: tuple[int, ...], max_split: int
) -> tuple[int, ...]:
    """Points per chunk an outer split considers: ``points``, and where it cuts
    the outermost reduction dimension in whole slices of the rest (a
    channels-last mean over 65 x 65 planes cut along H, 65 points a slice),
    every whole number of slices within ``points``' range: the power-of-two
    targets, rounded to slices and to divisors, reach only a few chunk counts
    there (65, 33, 13, 9, 5 of 65 rows), and the one between that fills the
    machine in one round may be missing. A mean over 32 x 96 x 65 x 65 f32
    channels-last ran 27.6 us in 5 chunks (the targets' best), 21.9 in 22
    chunks of 3 rows (devlogs/30, H200)."""
    out = list(points)
    first = _candidate(rranges, order, max(points), max_split)
    if first is None or first.flatten or not sympy.sympify(first.unit).is_Integer:
        return points
    unit, dim = int(first.unit), sympy.sympify(first.dim)
    if unit <= 1 or not dim.is_Integer or int(dim) > SLICE_CANDIDATES:
        return points
    for rows in range(1, int(dim) // 2 + 1):
        p = rows * unit
        if min(points) <= p <= max(points) and p not in out:
            out.append(p)
    return tuple(sorted(out))


def _parallel(target: Target) -> Target:
    """The GPU an interpreter target stands for (splits are the GPU's)."""
    return replace(target, serial=False)


# --------------------------------------------------------------------------
# Pointwise
# --------------------------------------------------------------------------


def pointwise_estimate(
    numel: sympy.Expr,
    block: int,
    warps: int,
    nbytes: int,
    ops: int,
    efficiency: float,
    target: Target,
) -> Estimate:
    """A pointwise kernel: ``numel`` points in tiles of ``block``, moving ``nbytes``
    bytes a point."""
    n = hint(numel)
    work = Work(
        programs=cdiv(max(n, 1), block),
        warps=warps,
        bytes=float(n * nbytes),
        steps=1,
        step_points=block,
        point_ops=max(1, ops),
        efficiency=efficiency,
    )
    return estimate(work, target)


WINDOW_MIN_XBLOCK = 64
"""The narrowest tile :func:`window_tile` takes: the narrowest window tile the
shape sweep timed (devlogs/30, H200: a split mean's separate finish, a window
of 25 partials over 3000 outputs, ran 14.0 us in all at XBLOCK 1024 -- three
programs -- and 11.6 at 64, 47 programs)."""


def window_tile(
    xnumel: sympy.Expr, nbytes: int, ops: int, target: Target
) -> tuple[int, int, Estimate, str]:
    """(XBLOCK, warps, estimate, note) of a window reduced in registers, one
    output a lane (``kernel_group``'s unrolled windows): Inductor's 1024 points
    a program, or a narrower tile where that spreads few outputs, each reading
    a whole window, over more SMs and is estimated at least ``cost.MARGIN``
    faster (the note says from what). ``nbytes``: bytes a point moves (its
    window's reads, its store)."""
    default = min(1024, next_pow2(int(xnumel))) if xnumel.is_Integer else 1024

    def at(xb: int) -> tuple[int, int, Estimate]:
        warps = warps_for(xb, 1, False)
        return xb, warps, pointwise_estimate(xnumel, xb, warps, nbytes, ops, 1.0, target)

    first = at(default)
    if not xnumel.is_Integer or target.serial:
        return (*first, "")
    best = first
    xb = default // 2
    while xb >= WINDOW_MIN_XBLOCK:
        cand = at(xb)
        if cand[2].seconds < best[2].seconds:
            best = cand
        xb //= 2
    if best[2].seconds < first[2].seconds * (1 - MARGIN):
        note = f"{default} -> {best[0]} outputs a program ({first[2].us:.3g} us at {default})"
        return (*best, note)
    return (*first, "")


__all__ = [
    "OUTER_PERSISTENT",
    "ReductionShape",
    "ReductionTile",
    "SplitPlan",
    "outer_candidates",
    "outer_scan_tile",
    "pointwise_estimate",
    "reduction_tile",
    "reduction_work",
    "split_estimate",
    "split_plan",
    "window_tile",
]
