"""How a one-query (decode) attention is cut into programs: the KV-split count.

A decode step's attention has a handful of query rows per (batch, head) --
one token's query, or the ``R`` query heads of a grouped-query group packed as
rows (``frontend/decode_attention.py``) -- and a long key/value cache. One
program per (batch, head) walks the whole cache: ``B * H`` programs (4 for a
batch-1 Llama with 4 key/value heads) on a GPU of a hundred-odd SMs, each waiting for
``L / BLOCK_L`` loads in turn. Flash-decoding (Dao et al., 2023; Inductor's
``flex_decoding`` template) splits the keys across ``S`` programs per head,
each keeping its own running max, sum and weighted values, and a second
kernel combines the ``S`` partials: ``S`` times the programs, ``1/S`` of the
loop, one more launch.

The split count is chosen with the cost model's terms (``strategy/cost.py``):
a program's time is its first load's latency, then :data:`~coil.strategy.cost.
STEP_LATENCY` of one for each further block, then its stores; programs beyond
what the SMs hold at once run in later rounds; the bytes (keys, values, and the
partials written and read back) over the bandwidth bound it from below; a split
adds the combine kernel's launch and its own latency. Only splits of whole
``BLOCK_L`` blocks, at least :data:`MIN_BLOCKS_PER_SPLIT` each, are considered.
A step of the key loop costs :data:`STEP_LATENCIES` DRAM latencies, measured
(not the generic loop's half latency): each step loads the mask, then keys and
values behind it, and reduces across the tile three times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from coil.strategy.cost import DRAM_EFFICIENCY, MARGIN, STORE_WAIT
from coil.strategy.target import Target

BLOCK_L = 64
"""The most keys a program loads per step: a ``[BLOCK_L, D]`` tile of keys and
of values (8 KiB each in bf16 at D = 64), the key block of Inductor's
flex-decoding template; fewer where the ``[rows, BLOCK_L, D]`` product tile
would pass :data:`TILE_ELEMENTS`."""

TILE_ELEMENTS = 16384
"""The largest ``[rows, BLOCK_L, D]`` f32 product tile a program of 4 warps
holds (128 values a thread: the register budget of Inductor's largest
persistent-reduction tiles)."""


def block_keys(rows: int, width: int) -> int:
    """Keys a step loads: ``BLOCK_L`` or fewer, so ``rows x keys x width`` stays
    within ``TILE_ELEMENTS`` (at least 16: Triton's smallest useful block)."""
    keys = BLOCK_L
    while keys > 16 and rows * keys * width > TILE_ELEMENTS:
        keys //= 2
    return keys


MIN_BLOCKS_PER_SPLIT = 1
"""The fewest key blocks a split walks (a split of no whole block only adds
partials to combine)."""

MAX_SPLITS = 64
"""The most splits per (batch, head): the combine kernel holds one max and sum
per split and query row in registers."""

STEP_LATENCIES = 7.0
"""DRAM latencies a step of the key loop takes. Measured (benchmarks/RESULTS.md,
seventeenth session: decode.py's profile on an H200, cache of 248 slots, one
split): the ~1B Llama's kernel ([8, 32, 64] tiles, 8 steps) 34.2 us a call, the
~150M's ([4, 64, 64], 4 steps) 12.9 us: 7.9 and 6.5 latencies a step against
the 0.5 (``cost.STEP_LATENCY``) of a streaming loop, which had estimated 3.3
us and kept one split; at 7 a split of one block a program is chosen there."""

PROGRAMS_PER_SM = 4
"""Attention programs an SM runs at once (4 warps each: 16 of 64 warp slots;
their ``[rows, BLOCK_L, D]`` f32 products take the registers)."""


@dataclass(frozen=True)
class SplitPlan:
    """The chosen split count and the estimates behind it, for the kernel's plan."""

    splits: int
    seconds: float
    one_program_seconds: float

    def summary(self) -> str:
        return (
            f"decode attention: {self.splits} split(s) of the keys, est. "
            f"{self.seconds * 1e6:.2f} us (unsplit {self.one_program_seconds * 1e6:.2f} us)"
        )


def estimate(
    splits: int,
    heads: int,
    rows: int,
    width: int,
    keys: int,
    key_bytes: int,
    target: Target,
    block_l: int = BLOCK_L,
) -> float:
    """Seconds for ``heads`` (batch x heads) programs per split, each walking
    ``keys / splits`` keys in ``BLOCK_L`` steps (``key_bytes``: one key's and one
    value's bytes; ``width``: a value's elements), plus the combine kernel when
    ``splits > 1``."""
    lat = target.dram_latency_s
    steps = max(1, math.ceil(math.ceil(keys / splits) / block_l))
    program = lat * (1 + STEP_LATENCIES * (steps - 1) + STORE_WAIT)
    programs = heads * splits
    resident = max(1, target.num_sms * PROGRAMS_PER_SM)
    rounds = math.ceil(programs / resident)
    moved = heads * keys * key_bytes
    if splits > 1:
        moved += 2 * heads * splits * rows * (width + 2) * 4  # f32 partials out and back
    bandwidth = moved / (target.dram_bytes_per_s * DRAM_EFFICIENCY)
    t = max(rounds * program, bandwidth)
    if splits > 1:  # the combine: one launch, one load round, its stores
        t += target.launch_s + lat * (1 + STORE_WAIT)
    return t


def plan_splits(
    heads: int,
    rows: int,
    width: int,
    keys: int,
    key_bytes: int,
    target: Target,
    block_l: int = BLOCK_L,
) -> SplitPlan:
    """The split count of least estimated time (one split unless a split is
    estimated at least ``MARGIN`` faster); one on a serial target (the
    interpreter runs programs one after another)."""
    one = estimate(1, heads, rows, width, keys, key_bytes, target, block_l)
    if target.serial or keys <= block_l * MIN_BLOCKS_PER_SPLIT:
        return SplitPlan(1, one, one)
    most = min(MAX_SPLITS, max(1, keys // (block_l * MIN_BLOCKS_PER_SPLIT)))
    best, best_t = 1, one
    s = 2
    while s <= most:
        t = estimate(s, heads, rows, width, keys, key_bytes, target, block_l)
        if t < best_t:
            best, best_t = s, t
        s *= 2
    if best_t > one * (1 - MARGIN):
        return SplitPlan(1, one, one)
    return SplitPlan(best, best_t, one)


__all__ = ["BLOCK_L", "SplitPlan", "block_keys", "estimate", "plan_splits"]
