"""The kernel strategy against a grid of launch configs, over many shapes.

For each shape (reductions over either axis, pointwise with broadcasts and
transposes, norms, softmax, channels-last pools, means and group norms,
softmaxes of heavy bodies; tiny to large and odd sizes; bf16 and f32), in one
process on the GPU:

1. coil's own choice (the default pipeline: ``coil/strategy``'s plan; its
   kernels' ``# plan:`` lines are kept in the CSV);
2. the same graph under each config of a small grid of ``loop-split-reduction``
   / ``convert-loop-to-tt`` options (never split, forced chunk counts,
   XBLOCK, RBLOCK, warps, 2-D tiles off: ``GRIDS``), each checked against
   eager first;
3. Inductor.

All are timed as CUDA graph replays after an L2 flush (``--timer graph``:
the GPU's time, without the host's; ``do_bench`` of the call where a graph
cannot be captured, or with ``--timer events``), the best of ``--rounds``
medians, rounds over all configs in turn. A shape's *miss* is coil's time
over the best of its grid (the choice included): the table reports how often
the choice is within 10 % of the best and the worst miss, and coil against
Inductor. ``--budget`` seconds bound the run (default 420: seven minutes on
one GPU with compiles); shapes past it are listed as skipped. The shapes of
``held_out()`` were added after the cost model was fitted on the others
(``benchmarks/fit_strategy.py``): the table reports the two groups apart.

    python benchmarks/shape_sweep.py                 # all shapes (a GPU machine)
    python benchmarks/shape_sweep.py mean_nhwc gn_   # those whose name contains one
    python benchmarks/shape_sweep.py --smoke         # tiny sizes, 2 shapes' grids, CPU too
    python benchmarks/shape_sweep.py --target a100   # plan for another GPU than this one

The CSV (one row per shape and config) and the table go to ``--out``, else to
``$OUT`` where set (``shape_sweep.csv``, ``shape_sweep.md``), else to the
current directory.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from roofline import rel_pos_softmax

BF16, F16, F32 = torch.bfloat16, torch.float16, torch.float32
CL = torch.channels_last


@dataclass
class Shape:
    name: str
    fn: Callable
    make: Callable[[str, bool], tuple]
    grid: str
    tol: float = 1e-2


def _randn(device: str, smoke: bool, dtype, *shape, memory_format=None):
    if smoke:  # tiny, keeping rank and oddness
        shape = tuple(min(s, 37) if i == len(shape) - 1 else min(s, 9) for i, s in enumerate(shape))
    x = torch.randn(*shape, device=device, dtype=dtype)
    return x.to(memory_format=memory_format) if memory_format is not None else x


def _shape(name, fn, dtype, *dims, grid, memory_format=None, extra=(), transposed=False):
    """A shape: ``fn`` of a random ``dims`` tensor (channels-last with
    ``memory_format``; with ``transposed``, the transpose of a contiguous
    ``dims[::-1]`` tensor: a strided input) and of ``extra`` tensors made from it."""

    def make(device: str, smoke: bool) -> tuple:
        if transposed:
            x = _randn(device, smoke, dtype, *dims[::-1]).t()
        else:
            x = _randn(device, smoke, dtype, *dims, memory_format=memory_format)
        return (x,) + tuple(e(x) for e in extra)

    tag = {BF16: "bf16", F16: "f16"}.get(dtype, "f32")
    size = "x".join(map(str, dims)) + ("^T" if transposed else "")
    return Shape(f"{name} {tag} {size}", fn, make, grid)


def _bias(x):
    return torch.randn(x.shape[-1], device=x.device, dtype=x.dtype)


def _same(x):
    return torch.randn_like(x)


def _weight(x):
    return torch.randn(x.shape[1], device=x.device, dtype=x.dtype)


def _row_weight(x):
    return torch.randn(x.shape[-1], device=x.device, dtype=x.dtype)


def shapes() -> list[Shape]:
    s = _shape
    return [
        # channels-last: the model sweep's slowest kernels
        s(
            "mean_nhwc",
            lambda x: x.mean((2, 3)),
            BF16,
            32,
            256,
            28,
            28,
            grid="outer",
            memory_format=CL,
        ),
        s(
            "mean_nhwc",
            lambda x: x.mean((2, 3)),
            BF16,
            32,
            32,
            130,
            130,
            grid="outer",
            memory_format=CL,
        ),
        s(
            "mean_nhwc",
            lambda x: x.mean((2, 3)),
            F32,
            32,
            96,
            65,
            65,
            grid="outer",
            memory_format=CL,
        ),
        s(
            "se_nhwc",
            lambda x: x * torch.sigmoid(F.silu(x).mean((2, 3), keepdim=True)),
            BF16,
            32,
            96,
            65,
            65,
            grid="outer",
            memory_format=CL,
        ),
        s(
            "max_pool_nhwc",
            lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True),
            BF16,
            32,
            64,
            112,
            112,
            grid="pointwise",
            memory_format=CL,
        ),
        s(
            "max_pool_nhwc",
            lambda x: F.max_pool2d(x, 3, 2, 1),
            F32,
            32,
            192,
            56,
            56,
            grid="pointwise",
            memory_format=CL,
        ),
        s(
            "gn_nhwc",
            lambda x, w: F.group_norm(x, 1, w),
            BF16,
            32,
            64,
            56,
            56,
            grid="inner",
            memory_format=CL,
            extra=(_weight,),
        ),
        s(
            "gn_nhwc",
            lambda x, w: F.group_norm(x, 1, w),
            F32,
            32,
            320,
            14,
            14,
            grid="inner",
            memory_format=CL,
            extra=(_weight,),
        ),
        s(
            "relu_add_nhwc",
            lambda x, y: torch.relu(x) + y,
            BF16,
            32,
            64,
            56,
            56,
            grid="pointwise",
            memory_format=CL,
            extra=(_same,),
        ),
        # reductions along the rows (inner) and the columns (outer)
        s("sum_dim1", lambda x: x.sum(1), BF16, 32768, 2048, grid="inner"),
        s("sum_dim1", lambda x: x.sum(1), F32, 8, 100003, grid="inner"),
        s("amax_dim1", lambda x: x.amax(1), BF16, 1000, 1000, grid="inner"),
        s("sum_dim1", lambda x: x.sum(1), F32, 64, 7, grid="inner"),
        s("argmax_dim1", lambda x: x.argmax(1), BF16, 2048, 50257, grid="inner"),
        s("sum_dim0", lambda x: x.sum(0), F32, 32768, 2048, grid="outer"),
        s("sum_dim0", lambda x: x.sum(0), BF16, 4096, 768, grid="outer"),
        s("var_dim0", lambda x: x.var(0), F32, 3001, 515, grid="outer"),
        s("var_dim0", lambda x: x.var(0), BF16, 32768, 2048, grid="outer"),
        s("mean_all", lambda x: x.mean(), BF16, 32768, 2048, grid="inner"),
        s("mean_all", lambda x: x.mean(), F32, 777, 333, grid="inner"),
        # pointwise: broadcasts, transposes, odd sizes
        s(
            "silu_bias",
            lambda x, b: x * torch.sigmoid(x) + b,
            BF16,
            32768,
            4096,
            grid="pointwise",
            extra=(_bias,),
        ),
        s(
            "transpose_add",
            lambda x, y: x.t() + y,
            BF16,
            2048,
            4096,
            grid="tile2d",
            extra=(lambda x: torch.randn(x.shape[1], x.shape[0], device=x.device, dtype=x.dtype),),
        ),
        s("gelu_odd", lambda x: F.gelu(x), F32, 1000003, grid="pointwise"),
        s(
            "nchw_to_nhwc",
            lambda x: x.permute(0, 2, 3, 1).contiguous(),
            BF16,
            64,
            256,
            28,
            28,
            grid="tile2d",
        ),
        # norms and softmax
        s(
            "layer_norm",
            lambda x, w: F.layer_norm(x, x.shape[-1:], w),
            BF16,
            32768,
            4096,
            grid="rows",
            extra=(_row_weight,),
        ),
        s(
            "layer_norm",
            lambda x, w: F.layer_norm(x, x.shape[-1:], w),
            BF16,
            128,
            768,
            grid="rows",
            extra=(_row_weight,),
        ),
        s(
            "rms_norm",
            lambda x: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6),
            F32,
            4096,
            4096,
            grid="rows",
        ),
        s("softmax", lambda x: torch.softmax(x, -1), BF16, 32768, 1024, grid="rows"),
        s("softmax", lambda x: torch.softmax(x, -1), F32, 16, 50257, grid="rows"),
        s("softmax_dim0", lambda x: torch.softmax(x, 0), BF16, 8192, 4096, grid="outer"),
        s("log_softmax", lambda x: torch.log_softmax(x, -1), BF16, 4096, 32000, grid="rows"),
        # Held out: added after the cost model's constants were fitted on the
        # shapes above (benchmarks/fit_strategy.py reports them apart): odd
        # and tiny sizes, strided (transposed) inputs, f16 too.
        *held_out(),
    ]


def _rel_pos(dtype, heads: int, seq: int) -> Shape:
    """``rel_pos_softmax`` of [heads, seq, seq] scores and c2p/p2c scores of the
    same shape (square at every size: --smoke takes 3 x 16 x 16)."""

    def make(device: str, smoke: bool) -> tuple:
        h, n = (3, 16) if smoke else (heads, seq)
        return tuple(torch.randn(h, n, n, device=device, dtype=dtype) for _ in range(3))

    tag = {BF16: "bf16", F16: "f16"}.get(dtype, "f32")
    return Shape(f"rel_pos_softmax {tag} {heads}x{seq}x{seq}", rel_pos_softmax, make, "heavy")


def alibi_softmax(x):
    """Attention probabilities with ALiBi's bias computed in the graph (MPT's
    and BLOOM's slopes 2^(-8h/H) times the key's distance), softmax in f32."""
    heads, q, k = x.shape[1], x.shape[-2], x.shape[-1]
    h = torch.arange(1, heads + 1, device=x.device, dtype=torch.float32)
    slopes = torch.pow(2.0, -8.0 * h / heads)
    key, query = torch.arange(k, device=x.device), torch.arange(q, device=x.device)
    bias = slopes[:, None, None] * (key[None, None, :] - query[None, :, None]).float()
    return torch.softmax(x.float() + bias, -1).to(x.dtype)


def held_out() -> list[Shape]:
    s = _shape
    return [
        s("sum_dim1", lambda x: x.sum(1), F16, 4099, 1531, grid="inner"),
        s("sum_dim1", lambda x: x.sum(1), F32, 3, 333333, grid="inner"),
        s("amax_dim1", lambda x: x.amax(1), F16, 50000, 96, grid="inner"),
        s("var_dim1", lambda x: x.var(1), F32, 1023, 4095, grid="inner"),
        s("sum_dim0", lambda x: x.sum(0), F32, 100003, 17, grid="outer"),
        s("mean_dim0", lambda x: x.mean(0), F16, 2000, 3000, grid="outer"),
        # transposed inputs: a reduction along the strided dimension, and one
        # along the contiguous dimension of a transposed view
        s("sum_dim1", lambda x: x.sum(1), BF16, 2048, 4096, grid="outer", transposed=True),
        s("sum_dim0", lambda x: x.sum(0), F32, 3000, 1000, grid="inner", transposed=True),
        s(
            "mean_nhwc",
            lambda x: x.mean((2, 3)),
            F16,
            16,
            512,
            7,
            7,
            grid="outer",
            memory_format=CL,
        ),
        s(
            "mean_nhwc",
            lambda x: x.mean((2, 3)),
            BF16,
            8,
            1280,
            9,
            9,
            grid="outer",
            memory_format=CL,
        ),
        s(
            "gn32_nhwc",
            lambda x, w: F.group_norm(x, math.gcd(32, x.shape[1]), w),
            F16,
            16,
            128,
            33,
            33,
            grid="inner",
            memory_format=CL,
            extra=(_weight,),
        ),
        s(
            "layer_norm",
            lambda x, w: F.layer_norm(x, x.shape[-1:], w),
            F32,
            4000,
            1000,
            grid="rows",
            extra=(_row_weight,),
        ),
        s(
            "layer_norm",
            lambda x, w: F.layer_norm(x, x.shape[-1:], w),
            F16,
            56,
            1027,
            grid="rows",
            extra=(_row_weight,),
        ),
        s("softmax", lambda x: torch.softmax(x, -1), F16, 8192, 128, grid="rows"),
        s("softmax", lambda x: torch.softmax(x, -1), BF16, 4, 151936, grid="rows"),
        s("log_softmax", lambda x: torch.log_softmax(x, -1), F32, 777, 3001, grid="rows"),
        s("softmax_dim0", lambda x: torch.softmax(x, 0), F32, 1000, 999, grid="outer"),
        # heavy bodies (plan.BODY_OPS_PER_THREAD): DeBERTa's disentangled
        # attention (82 ops a point), at the size it was set on and a smaller
        # one; an ALiBi softmax whose bias is computed in the kernel (MPT, BLOOM)
        _rel_pos(BF16, 96, 512),
        _rel_pos(F16, 48, 256),
        s("alibi_softmax", alibi_softmax, BF16, 8, 12, 512, 512, grid="heavy"),
        s(
            "add_col_bcast",
            lambda x, y: x + y[:, None],
            F16,
            3001,
            4097,
            grid="pointwise",
            extra=(lambda x: torch.randn(x.shape[0], device=x.device, dtype=x.dtype),),
        ),
        s(
            "scale_copy",
            lambda x: (x * 2).contiguous(),
            F32,
            1531,
            2053,
            grid="tile2d",
            transposed=True,
        ),
        s("tiny_add", lambda x, y: x + y, F32, 17, 33, grid="pointwise", extra=(_same,)),
        s(
            "max_pool_nhwc",
            lambda x: F.max_pool2d(x, 3, 2, 1),
            F16,
            8,
            96,
            57,
            57,
            grid="pointwise",
            memory_format=CL,
        ),
        s("gelu_odd", lambda x: F.gelu(x), BF16, 777, 1001, grid="pointwise"),
        # Matrix-vector products of one token (a ~1B Llama's projections at
        # batch 1; matvec=auto lowers them on CUDA): streamed tiles
        # (plan.stream_tile) against the default and forced tiles.
        *(
            s(f"linear_b1 n{n}", _linear, BF16, 1, k, grid="matvec", extra=(_matvec_weight(n),))
            for n, k in ((5632, 2048), (32000, 2048), (2048, 5632), (2048, 2048))
        ),
        s(
            "gated_b1 n5632",
            lambda x, wg, wu: F.silu(F.linear(x, wg)) * F.linear(x, wu),
            BF16,
            1,
            2048,
            grid="matvec",
            extra=(_matvec_weight(5632), _matvec_weight(5632)),
        ),
        # Two dependent 8 MB products (a 1B Llama's o_proj then a product of
        # the same size), weights static as a model's parameters: the one
        # shape whose CUDA graph holds two kernels, so the grid's pdl=true
        # row (the second kernel's weight rows loaded under the first's tail,
        # lowering/loop_to_tt/pdl.py) can differ from coil's; in the
        # one-kernel shapes the pdl=true row is a control (the first launch
        # of a graph never waits on an earlier kernel).
        s(
            "chain_b1 n2048",
            lambda x, w1, w2: F.linear(F.linear(x, w1), w2),
            BF16,
            1,
            2048,
            grid="matvec",
            extra=(_static_square_weight, _static_square_weight),
        ),
    ]


def _linear(x, w):
    return F.linear(x, w)


def _matvec_weight(n: int):
    """A ``Linear`` weight of ``n`` rows for the row ``x`` (9 rows under
    ``--smoke``, whose ``x`` is shrunk), scaled by 1/sqrt(K)."""

    def make(x):
        k = x.shape[-1]
        rows = n if k > 37 else 9
        return torch.randn(rows, k, device=x.device, dtype=x.dtype) / k**0.5

    return make


def _static_square_weight(x):
    """A ``K x K`` weight for the row ``x``, marked static (as a parameter is):
    what ``convert-loop-to-tt{pdl=true}`` may load before its wait."""
    k = x.shape[-1]
    w = torch.randn(k, k, device=x.device, dtype=x.dtype) / k**0.5
    torch._dynamo.mark_static_address(w)
    return w


# Alternatives to coil's own choice, per kind of shape: options of
# loop-split-reduction (split: 1 never, N forced chunks) and of
# convert-loop-to-tt; each applies to every kernel of the graph. Outer
# reductions also force 32 and 64 chunks: the refit on devlogs/12 plans
# 16-128 chunks for them by what a chunk's finish and counter cost against
# the rounds of programs it saves, and those counts were between the grid's.
GRIDS: dict[str, list[dict]] = {
    "inner": [dict(split=1), dict(split=16), dict(split=128), dict(rblock=1024)],
    "outer": [*(dict(split=n) for n in (1, 16, 32, 64, 128)), dict(xblock=64)],
    "rows": [dict(xblock=1), dict(persistent_threshold=0)],
    # rows a program of a heavy body, around BODY_OPS_PER_THREAD's choice
    "heavy": [
        *(dict(xblock=n) for n in (1, 2, 4, 8)),
        # a reused producer (DeBERTa's relative-position tables) recomputed for
        # every head (margin 0) and stored wherever that saves anything (0.5),
        # around loop-inline's recompute-margin (4)
        dict(recompute_margin=0),
        dict(recompute_margin=0, xblock=1),
        dict(recompute_margin=0.5),
        dict(recompute_margin=0.5, xblock=4),
    ],
    "pointwise": [dict(xblock=512), dict(num_warps=8)],
    "tile2d": [dict(tile2d="off"), dict(yblock=64, xblock=64)],
    # The tiles before streamed ones (one or two persistent rows a program)
    # and streamed ones the H100/H200/A100 plans take for some of the shapes.
    "matvec": [
        dict(xblock=1),
        dict(xblock=2),
        dict(xblock=2, rblock=256, num_warps=2),
        dict(xblock=2, rblock=512, num_warps=2),
        dict(xblock=16, rblock=128, num_warps=2),
        dict(xblock=8, rblock=256, num_warps=4),
        # Rows up to 8192 wide held whole (every load of a program issued at
        # once): the down projection's 5632-wide rows loop in 2048-wide steps
        # under the 4096 threshold, 12.4 us for 23 MB (44 % of copy bandwidth)
        # on an H200 at 3f36e89, and no config above differs from it there.
        dict(persistent_threshold=8192),
        dict(xblock=1, persistent_threshold=8192, num_warps=8),
        # Programmatic dependent launch (sm90+): only the chain shape has a
        # second kernel for it to overlap; elsewhere a control.
        dict(pdl="true"),
    ],
}

SPLIT_OPTIONS = ("split",)
INLINE_OPTIONS = ("recompute_margin",)


def pipeline(config: dict) -> str:
    from coil.pipeline import PIPELINES, with_pass_option

    p = PIPELINES["default"]
    for key, value in config.items():
        name = (
            "loop-split-reduction"
            if key in SPLIT_OPTIONS
            else "loop-inline"
            if key in INLINE_OPTIONS
            else "convert-loop-to-tt"
        )
        p = with_pass_option(p, name, f"{key.replace('_', '-')}={value}")
    return p


def label(config: dict | None) -> str:
    if config is None:
        return "coil"
    return "coil " + " ".join(f"{k}={v}" for k, v in config.items())


def close(got, want, tol: float) -> str | None:
    got = got if isinstance(got, tuple | list) else (got,)
    want = want if isinstance(want, tuple | list) else (want,)
    for g, w in zip(got, want):
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"shape/dtype {tuple(g.shape)} {g.dtype} vs {tuple(w.shape)} {w.dtype}"
        atol, rtol = (0.1, 0.05) if g.dtype == BF16 else (tol, tol)
        if not torch.allclose(g.float(), w.float(), atol=atol, rtol=rtol, equal_nan=True):
            return f"max abs error {(g.float() - w.float()).abs().max().item():.3e}"
    return None


def plans_of(dump: Path) -> str:
    """The ``# plan:`` lines of a dump's kernels (``kernels.py``)."""
    lines = []
    for path in sorted(dump.glob("*/kernels.py")):
        lines += [
            ln[len("# plan: ") :]
            for ln in path.read_text().splitlines()
            if ln.startswith("# plan: ")
        ]
    return " | ".join(lines)


@dataclass
class Row:
    shape: str
    config: str
    ms: float
    plans: str = ""
    error: str = ""
    extra: dict = field(default_factory=dict)


def graph_bench(f: Callable, reps: int = 20) -> float:
    """Milliseconds of the GPU work of ``f``: ``f`` captured in a CUDA graph,
    each replay after the L2 is flushed (as ``do_bench`` does), the median of
    ``reps``. The host's time (guards, the wrapper) stays out: the cost model
    estimates kernels, and a few-microsecond kernel timed with its host call
    measures the call (the first sweep timed ``x.sum(1)`` of 64 x 7 floats at
    52-60 us for every config). Raises where ``f`` cannot be captured."""
    from triton import runtime

    cache = runtime.driver.active.get_empty_cache_for_benchmark()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            f()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        f()
    graph.replay()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        runtime.driver.active.clear_cache(cache)
        starts[i].record()
        graph.replay()
        ends[i].record()
    torch.cuda.synchronize()
    times = sorted(a.elapsed_time(b) for a, b in zip(starts, ends))
    return times[len(times) // 2]


def bench_fn(device: str, timer: str = "graph") -> Callable[[Callable], float]:
    if device == "cuda":
        from triton.testing import do_bench

        def events(f: Callable) -> float:
            return do_bench(f, warmup=5, rep=20, return_mode="median")

        if timer == "events":
            return events

        def graph_or_events(f: Callable) -> float:
            try:
                return graph_bench(f)
            except Exception:  # not capturable: the call with its host side
                torch.cuda.synchronize()
                graph_or_events.fell_back += 1
                return events(f)

        graph_or_events.fell_back = 0

        return graph_or_events

    def cpu(f: Callable) -> float:
        f()
        t = time.perf_counter()
        f()
        return (time.perf_counter() - t) * 1e3

    return cpu


def run_shape(
    shape: Shape,
    device: str,
    smoke: bool,
    rounds: int,
    target: str,
    grid_on: bool,
    timer: str = "graph",
) -> list[Row]:
    args = shape.make(device, smoke)
    want = shape.fn(*args)
    if smoke:  # the sizes actually run
        shape = replace(shape, name=f"{shape.name} (smoke: {'x'.join(map(str, args[0].shape))})")
    rows: list[Row] = []
    compiled: list[tuple[str, Callable]] = []
    base = {"cache": False, "target": target}
    configs: list[dict | None] = [None] + (GRIDS[shape.grid] if grid_on else [])
    for config in configs:
        torch._dynamo.reset()
        options = dict(base)
        if config is not None:
            options["pipeline"] = pipeline(config)
        plans = ""
        try:
            with tempfile.TemporaryDirectory() as dump:
                # every config's plans (benchmarks/fit_strategy.py checks its
                # records against them)
                options["dump_dir"] = dump
                f = torch.compile(shape.fn, backend="coil", options=options)
                bad = close(f(*args), want, shape.tol)
                plans = plans_of(Path(dump))
        except Exception as e:  # a config the builder refuses: a row, not a crash
            f, bad = None, f"{type(e).__name__}: {str(e)[:100]}"
        if bad or f is None:
            rows.append(Row(shape.name, label(config), math.nan, plans, f"WRONG {bad}"))
            continue
        compiled.append((label(config), f))
        rows.append(Row(shape.name, label(config), math.inf, plans))
    if device == "cuda" and not smoke:
        torch._dynamo.reset()
        inductor = torch.compile(shape.fn)
        inductor(*args)
        compiled.append(("inductor", inductor))
        rows.append(Row(shape.name, "inductor", math.inf))
    bench = bench_fn(device, timer)
    best = {name: math.inf for name, _ in compiled}
    events_timed: set[str] = set()  # not capturable in a CUDA graph
    for _ in range(rounds):
        for name, f in compiled:
            before = getattr(bench, "fell_back", 0)
            best[name] = min(best[name], bench(lambda f=f: f(*args)))
            if getattr(bench, "fell_back", 0) > before:
                events_timed.add(name)
    for row in rows:
        if row.config in best:
            row.ms = best[row.config]
            if row.config in events_timed:
                row.extra["timer"] = "events"
    return rows


def _verdict(misses: list[float], what: str) -> str:
    within = sum(m <= 1.10 for m in misses) / len(misses)
    geo = math.exp(sum(map(math.log, misses)) / len(misses))
    return (
        f"coil's choice within 10 % of its grid's best on {within:.0%} of {len(misses)} "
        f"{what}; worst miss {max(misses):.2f}x; geomean miss {geo:.3f}x"
    )


def summary(rows: list[Row], skipped: list[str], held: frozenset[str] = frozenset()) -> str:
    by_shape: dict[str, list[Row]] = {}
    for r in rows:
        by_shape.setdefault(r.shape, []).append(r)
    out = [
        "| shape | coil ms | best of grid | best config | miss | inductor ms | inductor / coil |",
        "|---|---|---|---|---|---|---|",
    ]
    misses, versus = [], []
    groups: dict[bool, list[float]] = {False: [], True: []}
    for name, rs in by_shape.items():
        coil = next((r for r in rs if r.config == "coil"), None)
        grid = [r for r in rs if r.config.startswith("coil") and r.ms == r.ms and r.ms < math.inf]
        ind = next((r for r in rs if r.config == "inductor"), None)
        if coil is None or not (coil.ms == coil.ms) or coil.ms == math.inf or not grid:
            out.append(f"| {name} | failed: {coil.error if coil else '?'} | | | | | |")
            continue
        best = min(grid, key=lambda r: r.ms)
        miss = coil.ms / best.ms
        misses.append(miss)
        groups[name.split(" (smoke")[0] in held].append(miss)
        ind_text = ratio = ""
        if ind is not None and ind.ms < math.inf:
            ind_text, ratio = f"{ind.ms:.4f}", f"{ind.ms / coil.ms:.2f}x"
            versus.append(ind.ms / coil.ms)
        out.append(
            f"| {name} | {coil.ms:.4f} | {best.ms:.4f} | {best.config} | {miss:.2f}x "
            f"| {ind_text} | {ratio} |"
        )
    if misses:
        out.append("")
        out.append(_verdict(misses, "shapes"))
        if groups[True] and groups[False]:
            out.append(_verdict(groups[False], "shapes the model was fitted on"))
            out.append(_verdict(groups[True], "held-out shapes"))
    if versus:
        geo = math.exp(sum(map(math.log, versus)) / len(versus))
        out.append(
            f"coil vs Inductor (inductor ms / coil ms): geomean {geo:.2f}x, min {min(versus):.2f}x"
        )
    if skipped:
        out.append(f"skipped (past the budget): {', '.join(skipped)}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="run the shapes whose name contains one")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, also on the CPU")
    parser.add_argument("--rounds", type=int, default=2, help="do_bench rounds, the best kept")
    parser.add_argument("--budget", type=float, default=420.0, help="seconds before skipping")
    parser.add_argument("--target", default="auto", help="backend option target (auto: read)")
    parser.add_argument(
        "--timer",
        default="graph",
        choices=("graph", "events"),
        help="graph: GPU time of a CUDA graph replay (host excluded; events where it "
        "cannot be captured); events: do_bench of the call",
    )
    parser.add_argument("--no-grid", action="store_true", help="coil's choice and Inductor only")
    parser.add_argument("--out", default=None, help="folder for the CSV and table ($OUT, else .)")
    args = parser.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    chosen = [s for s in shapes() if not args.names or any(n in s.name for n in args.names)]
    if args.smoke and not args.names:  # a channels-last case, a reduction, a pointwise one
        chosen = [chosen[0], next(s for s in chosen if s.grid == "inner"), chosen[-1]]
    torch._dynamo.config.cache_size_limit = 256
    start = time.monotonic()
    rows: list[Row] = []
    skipped: list[str] = []
    for k, shape in enumerate(chosen):
        if time.monotonic() - start > args.budget:
            skipped.append(shape.name)
            continue
        grid_on = not args.no_grid and (not args.smoke or k < 2)
        got = run_shape(shape, device, args.smoke, args.rounds, args.target, grid_on, args.timer)
        rows += got
        coil = next(r for r in got if r.config == "coil")
        print(f"{coil.shape}: coil {coil.ms:.4f} ms {coil.error}  [{coil.plans[:160]}]", flush=True)
    table = summary(rows, skipped, frozenset(h.name for h in held_out()))
    print("\n" + table)
    out = Path(args.out or os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "shape_sweep.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["shape", "config", "ms", "error", "plans", "device", "target", "timer"])
        name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
        timer = args.timer if device == "cuda" else "cpu"
        for r in rows:
            w.writerow(
                [
                    r.shape,
                    r.config,
                    f"{r.ms:.5f}",
                    r.error,
                    r.plans,
                    name,
                    args.target,
                    r.extra.get("timer", timer),
                ]
            )
    (out / "shape_sweep.md").write_text(table + "\n")
    print(f"\n{len(rows)} rows in {time.monotonic() - start:.0f} s -> {out / 'shape_sweep.csv'}")
    failed = [r for r in rows if r.error and r.config == "coil"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
