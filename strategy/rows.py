"""Matrix products of a few rows, ``[M, K] @ [K, N]`` with M small (a decode
step's batch): cuBLAS's product, or the matrix-vector form that streams the
``[N, K]`` weight once for all M rows (``lowering/aten_to_loop/matvec.py``;
the kernel computes every row a program, ``loop_to_tt/kernel_group.py``
``_shared_rows``).

:func:`choose` compares the two on the cost model. The streamed form is the
reduction's own plan (``plan.reduction_tile`` of N rows of K points, M
accumulators a lane, the weight read from DRAM once and the rows of ``x``
from the cache), its pointwise epilogue (bias, activation, residual) fused;
the extern is cuBLAS's product at the copy bandwidth (``gemm.product_seconds``
over ``cost.DRAM_EFFICIENCY``: it cannot stream faster than a copy) plus,
where a pointwise epilogue follows, the kernel that reads the product back
and its launch (``gemm.extern_seconds``). The weight's bytes dominate both,
so the choice turns on what the streamed form saves (the epilogue's round
trip and launch) against what its tile loses to latency.
"""

from __future__ import annotations

import sympy

from coil.strategy import gemm as G
from coil.strategy.access import ReductionAccess
from coil.strategy.cost import DRAM_EFFICIENCY, MARGIN
from coil.strategy.plan import ReductionShape, reduction_tile
from coil.strategy.target import Target

MAX_ROWS = 16
"""The most rows a product takes the streamed form with (the kernel's
``SHARED_ROWS``): each row is an accumulator a lane."""


def streamed_seconds(m: int, n: int, k: int, elem: int, target: Target, extra: int = 0) -> float:
    """The streamed form's kernel: N outputs of a K-long row of the weight, M
    rows of ``x`` (the same for every output: from the cache), M accumulators;
    ``extra`` bytes an output the epilogue reads besides."""
    access = ReductionAccess(
        axis="inner",
        rorder=(0,),
        inner_bytes=elem * (1 + m),
        outer_bytes=0,
        strided_bytes=0,
        row_bytes=m * extra,
        sector=4,
        rows_contiguous=True,
        ops=2 * m + 1,  # a multiply and an add a row, the weight's cast once
        reused_bytes=elem * m,
        inner_sector=elem,
    )
    shape = ReductionShape(
        sympy.Integer(n),
        sympy.Integer(k),
        access,
        accumulators=m,
        out_bytes=elem * m,
        reductions=m,
    )
    return reduction_tile(shape, target).estimate.seconds


def extern_seconds(m: int, n: int, k: int, elem: int, target: Target, epilogue: bool, extra: int):
    """cuBLAS's product at the copy bandwidth, and the epilogue's kernel after it."""
    s = G.GemmShape(m, n, k, in_bytes=elem, out_bytes=elem, epilogue_reads=extra)
    copy = G.dataclasses.replace(target, dram_bytes_per_s=target.dram_bytes_per_s * DRAM_EFFICIENCY)
    return G.extern_seconds(s, copy, epilogue)


def choose(
    m: int, n: int, k: int, elem: int, target: Target, epilogue: bool, extra: int = 0
) -> tuple[bool, str]:
    """(streamed?, why) for ``[m, k] @ [k, n]`` of ``elem``-byte elements."""
    if target.serial:
        return False, "the CPU interpreter: ATen's product is faster"
    if not 2 <= m <= MAX_ROWS:
        return False, f"{m} rows (the streamed form takes 2 to {MAX_ROWS})"
    st = streamed_seconds(m, n, k, elem, target, extra)
    ext = extern_seconds(m, n, k, elem, target, epilogue, extra)
    why = f"streamed {st * 1e6:.3g} us against cuBLAS{' + epilogue' if epilogue else ''} "
    why += f"{ext * 1e6:.3g} us"
    return st < ext * (1 - MARGIN), why


__all__ = ["MAX_ROWS", "choose", "extern_seconds", "streamed_seconds"]
