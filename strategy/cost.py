"""The cost model: how long one launch takes on a target, from what it moves.

A launch runs ``programs`` programs of ``warps`` warps. Each program waits for
its loads ``steps`` times in turn (a persistent tile loads once; a looped row
once an iteration: Triton's reduction loops are not software-pipelined, coil
and Inductor both build them with ``num_stages=1``), computes on its tile, and
stores. Three bounds, the largest of which is the estimate (a roofline with a
latency roof):

* bandwidth: the bytes it moves over the DRAM bandwidth (what is fetched: a
  load using ``efficiency`` of each 32-byte sector it touches costs
  ``1/efficiency`` of its bytes), at :data:`DRAM_EFFICIENCY` of the peak;
* latency: the programs an SM holds at once (``resident``: limited by threads,
  registers and the SM's block slots) run side by side, and those beyond run
  in later rounds; one program takes ``steps`` load latencies plus its
  arithmetic and reduction trees, so a few programs walking long rows are
  latency-bound however few bytes they move (Little's law: the bytes in
  flight are the resident programs' tiles);
* arithmetic: warp instructions over the SMs' issue rate.

The estimate is a soft maximum of the three (``SOFTNESS``): a kernel with just
enough loads in flight for the bandwidth does not reach it.

A split's finish, run by the last program of each tile in the same launch,
adds one program of the finish (``program_seconds``), its loads of the
partials hitting L2 (``L2_LATENCY``): more chunks cost a longer finish.

Launches add the target's ``launch_s`` each, where a plan compares different
numbers of launches (a split reduction against one kernel).

The model is a ranking, not a stopwatch: the plans (``plan.py``) take a
candidate over Inductor's default shape only where it is estimated at least
:data:`MARGIN` faster, the error the model showed against the measured rows it
was checked on (``benchmarks/shape_sweep.py`` reports its misses).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from coil.strategy.target import Target

DRAM_EFFICIENCY = 0.9
"""The share of the peak DRAM bandwidth a streaming kernel reaches: coil's and
Inductor's best rows of benchmarks/roofline.py on an H100 (f32 row softmax,
layer norm, pointwise chains) ran at 0.99-1.00 of a 1 GiB ``copy_``, itself at
about 90 % of the data-sheet bandwidth."""

TREE_CYCLES = 300
"""Cycles of one cross-warp ``tl.reduce`` at the end of a row (five shuffle
rounds, a shared-memory exchange, a barrier)."""

CYCLES_PER_INSTRUCTION = 4
"""Cycles between dependent arithmetic instructions of one warp."""

SM_BYTES_PER_CYCLE = 64
"""Bytes an SM moves from L2 a cycle (its load/store path): a program's own
bytes take at least this long, so few programs cannot reach the bandwidth."""

SOFTNESS = 2
"""The exponent of the soft maximum of the bounds (equal bounds cost 1.41x either)."""

REGS_BASE = 24
"""Registers a thread holds besides its points' values (indices, addresses)."""

REGS_PER_VALUE = 1
"""Registers per value a thread keeps alive. With REGS_BASE, fitted to what
ptxas allocates (``benchmarks/fit_strategy.py registers``: every kernel of
the shape sweep's grids, 280 reductions and pointwise kernels compiled for
sm_90 by Triton 3.6 without a GPU): 24 + 1 a value is within 0.32 (rms) of
the log of the registers ptxas gave, where the former 32 + 2 a value
overestimated them 1.7x on average (a welford over [64, 8] tiles: 56
estimated, 38-40 allocated), so programs of a split's many chunks were
planned at 9 a multiprocessor where 12 fit."""

STEP_LATENCY = 0.5
"""Load latencies a *pipelined* looped step waits after the first (a loop
ptxas unrolls, issuing later steps' loads ahead: ``Work.pipelined``; other
loops wait a whole latency a step). Fitted (benchmarks/fit_strategy.py) on
the shape sweeps of devlogs/6 and devlogs/12 (H200): unmasked column sums of
32768 x 2048 f32 ran 0.36 latencies a step, while the masked channels-last
means and the welford over 32768 rows, whose loops the SASS shows one step an
iteration, ran 0.8-1.2; 0.5 and 0.3 rank the grids alike."""

TAIL = True
"""A partial last round of programs costs a whole program's time (the SMs
that run it wait for their loads as long as a full round's). Fitted with
STEP_LATENCY on the same sweep: without it a 1.1-wave grid (1792 programs of a
channels-last mean, 27.6 us) ranked before a 0.6-wave one (896 programs,
11.1 us)."""

L2_LATENCY = 0.4
"""A load that hits L2 waits this share of one that goes to DRAM (public
pointer-chase microbenchmarks of Hopper and Ampere put an L2 hit at 200-270 ns
against 450-600 ns to DRAM)."""

STORE_WAIT = 1.0
"""Load latencies a program waits at its end (its stores drain)."""

MARGIN = 0.10
"""How much faster (estimated) a candidate must be to replace the default plan."""


@dataclass(frozen=True)
class Work:
    """What one launch does, as the cost model sees it."""

    programs: int
    warps: int
    bytes: float
    steps: int = 1
    step_points: int = 1024
    point_ops: int = 1
    reductions: int = 0
    efficiency: float = 1.0
    live: int = 1
    """Values per point a thread keeps in registers (accumulators, a row kept
    for a later phase)."""
    waits: int = 0
    """Further round trips to memory a program waits for (a split's finish: a
    fence and an atomic on its tile's counter)."""
    cached: bool = False
    """Its loads hit L2 (a split's partials, just written by the same launch's
    other programs): they wait ``L2_LATENCY`` of a DRAM load's latency."""
    pipelined: bool = True
    """Whether a looped program's next steps' loads issue before this step's
    arithmetic ends (ptxas unrolls the loop and hoists them: ``STEP_LATENCY``);
    otherwise each step waits a whole load latency (``reduction_work`` says
    which loops are which)."""


@dataclass(frozen=True)
class Estimate:
    """The estimate of one launch, and what bounds it."""

    bytes: float
    seconds: float
    programs: int
    resident: int
    occupancy: float
    waves: float
    bound: str
    launches: int = 1

    @property
    def us(self) -> float:
        return self.seconds * 1e6

    def plus(self, other: Estimate) -> Estimate:
        """Two launches one after the other."""
        return Estimate(
            self.bytes + other.bytes,
            self.seconds + other.seconds,
            self.programs + other.programs,
            self.resident,
            self.occupancy,
            self.waves,
            self.bound,
            self.launches + other.launches,
        )

    def summary(self) -> str:
        mb = self.bytes / 1e6
        size = f"{mb:.3g} MB" if mb >= 0.1 else f"{self.bytes / 1e3:.3g} kB"
        return (
            f"{size}, {self.us:.3g} us {self.bound}-bound, {self.programs} programs "
            f"({self.waves:.2g} waves, {self.resident}/SM, occupancy {self.occupancy:.0%})"
        )


def registers(work: Work, threads: int) -> int:
    """Registers a thread needs (estimated): some for indices and addresses, and
    the points it holds times the values each keeps alive."""
    per_thread = math.ceil(work.step_points / threads)
    return min(255, REGS_BASE + REGS_PER_VALUE * per_thread * max(1, work.live))


def program_seconds(work: Work, target: Target) -> float:
    """One program of ``work`` alone: its share of the bytes through its SM's
    load path, the first load's latency, each next looped step's
    (``STEP_LATENCY``), its arithmetic and reduction trees, and the store's and
    any further waits. The latency bound of a launch is this times its rounds;
    a split's finish run by the last program of each tile (``split-finish``)
    adds this of the finish's program to the launch."""
    warps = max(1, work.warps)
    clock = target.clock_hz
    step_instr = work.step_points / target.warp_size * max(1, work.point_ops)
    step_compute = step_instr / warps * CYCLES_PER_INSTRUCTION / clock
    own_bytes = work.bytes / max(1, work.programs) / (SM_BYTES_PER_CYCLE * clock)
    step_wait = STEP_LATENCY if work.pipelined else 1.0
    load = target.dram_latency_s * (L2_LATENCY if work.cached else 1.0)
    return (
        own_bytes
        + load  # the first load
        + (work.steps - 1) * step_wait * load  # the loop's next ones
        + work.steps * step_compute
        + work.reductions * TREE_CYCLES / clock
        + (STORE_WAIT + work.waits) * target.dram_latency_s  # the store, more waits
    )


def estimate(work: Work, target: Target, launches: int = 1) -> Estimate:
    """Seconds one launch of ``work`` takes on ``target`` (see the module docstring);
    ``launches`` > 1 counts that many launches' fixed cost (the caller's work is
    the sum of theirs)."""
    warps = max(1, work.warps)
    threads = target.warp_size * warps
    regs = registers(work, threads)
    per_sm = min(
        target.max_blocks_per_sm,
        max(1, target.max_threads_per_sm // threads),
        max(1, target.regs_per_sm // (regs * threads)),
    )
    programs = max(1, work.programs)
    slots = target.num_sms * per_sm
    waves = programs / slots
    # Programs are handed to slots as others finish; a last partial round
    # still takes a whole program's time (TAIL).
    rounds = max(1.0, math.ceil(waves - 1e-9) if TAIL else waves)
    clock = target.clock_hz
    step_instr = work.step_points / target.warp_size * max(1, work.point_ops)
    one = program_seconds(work, target)
    latency = rounds * one
    rate = target.dram_bytes_per_s * DRAM_EFFICIENCY * max(work.efficiency, 1e-3)
    bandwidth = work.bytes / rate
    compute = programs * work.steps * step_instr / (target.num_sms * 4 * clock)
    bounds = {"bandwidth": bandwidth, "latency": latency, "compute": compute}
    bound = max(bounds, key=bounds.__getitem__)
    # A soft maximum: where two bounds are close, neither is reached (loads
    # queue behind each other as the bandwidth fills).
    seconds = sum(t**SOFTNESS for t in bounds.values()) ** (1 / SOFTNESS)
    seconds += (launches - 1) * target.launch_s
    resident = min(per_sm, math.ceil(programs / target.num_sms))
    occupancy = resident * threads / target.max_threads_per_sm
    return Estimate(
        work.bytes, seconds, programs, resident, min(1.0, occupancy), waves, bound, launches
    )


def lane_ops_per_s(target: Target) -> float:
    """Arithmetic ops (one a lane) ``target`` issues a second: four warp
    schedulers an SM, as the ``compute`` bound above (33.5 T on an H100 or
    an H200)."""
    return target.num_sms * 4 * target.warp_size * target.clock_hz


def ops_per_byte(target: Target) -> float:
    """Arithmetic ops (one a lane) ``target`` runs in the time its DRAM moves
    one byte: the SMs' issue rate (:func:`lane_ops_per_s`) over the bandwidth
    a streaming kernel reaches. About 11 on an H100 or an A100, 7.7 on an
    H200 (the same SMs, 1.4x the bandwidth). ``loop-inline`` weighs
    arithmetic wasted on masked-off lanes against the store and load it would
    save with it."""
    return lane_ops_per_s(target) / (target.dram_bytes_per_s * DRAM_EFFICIENCY)


def store_seconds(target: Target, nbytes: float, read_bytes: float) -> float:
    """A tensor of ``nbytes`` stored by a kernel of its own and read back as
    ``read_bytes`` by its readers: a launch, the write and the reads at
    :data:`DRAM_EFFICIENCY` of the bandwidth (``loop-inline`` weighs it
    against recomputing the tensor in each reader)."""
    moved = nbytes + read_bytes
    return target.launch_s + moved / (target.dram_bytes_per_s * DRAM_EFFICIENCY)


SECTOR = 32
"""Bytes of an L2 sector, the least a load fetches."""
LINE = 128
"""Bytes of a cache line: runs shorter than that but at least a sector cost a
little more per byte (DRAM pages and L2 lines are used in part). On an H100 a
bf16 transpose with 64-byte tile rows took 0.0229 ms against 0.0197 with
128-byte rows (benchmarks/tile_sweep.py, lowering/loop_to_tt/tiling.py): the
curve below puts 64-byte runs at 0.87 of full lines."""


def sector_efficiency(run_bytes: float) -> float:
    """The share of the bytes fetched that a contiguous run of ``run_bytes`` uses."""
    if run_bytes >= LINE:
        return 1.0
    partial_line = (max(run_bytes, SECTOR) / LINE) ** 0.2
    return max(1e-3, min(1.0, run_bytes / SECTOR)) * partial_line


__all__ = [
    "DRAM_EFFICIENCY",
    "MARGIN",
    "Estimate",
    "Work",
    "estimate",
    "ops_per_byte",
    "program_seconds",
    "sector_efficiency",
]
