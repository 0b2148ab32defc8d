"""Launch configs of one reduction workload, measured: what tile would be best.

For each workload of ``roofline.py`` named on the command line (a substring of
its name, e.g. ``"var_dim0 bf16"``), in one process on the GPU: Inductor's
time and its kernels' configs (the ``@triton_heuristics`` lines and tile
constants of the code it generated, to ``$OUT/tile_sweep_inductor.py``), then
coil's time under its heuristic and under each config of a small grid of
``convert-loop-to-tt`` / ``loop-split-reduction`` options (xblock, rblock,
num_warps, split, eviction), each checked against eager first, then timed in
rounds over all of them (the best of three do_bench medians each). The
options apply to every kernel of the graph: the workloads are single
reductions, whose first stage dominates.

    python benchmarks/tile_sweep.py "var_dim0 bf16" "mean_all bf16"
"""

from __future__ import annotations

import itertools
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from roofline import _close, selected

from coil.pipeline import PIPELINES

# 0 / "": the heuristic's choice. Options apply to every kernel of the graph.
EVICT = ["", "stream", "off"]  # "" = the default ("auto": Inductor's rules)
GRIDS = {
    # an outer reduction split along the rows: [XBLOCK columns x RBLOCK rows]
    "var_dim0": dict(split=[0, 64], eviction=EVICT),
    "sum_dim0": dict(split=[0, 64], eviction=EVICT),
    # an inner reduction of 2048-element rows: persistent (rblock 0) or looped
    "sum_dim1": dict(xblock=[0, 1], rblock=[0, 1024], eviction=EVICT),
    "amax_dim1": dict(rblock=[0, 1024], eviction=EVICT),
    "var_dim1": dict(rblock=[0, 1024], eviction=EVICT),
    # a full reduction: stage one reduces chunks
    "mean_all": dict(eviction=EVICT),
    "amax_all": dict(eviction=EVICT),
    # rows and pointwise kernels: where the hints apply besides reductions
    "layer_norm": dict(eviction=EVICT),
    "row_softmax": dict(eviction=EVICT),
    "col_softmax": dict(eviction=EVICT),
    "cross_entropy": dict(eviction=EVICT),
    # a 512-wide softmax over two gathers, one across rows: rows per program, warps
    "rel_pos_softmax": dict(xblock=[0, 1, 2, 32], rblock=[0, 128], num_warps=[0, 4]),
    "pointwise_chain": dict(eviction=EVICT),
    # matrix-vector products (batch-1 Linears): rows per program, a looped row
    "linear_b1": dict(xblock=[0, 2, 4], rblock=[0, 1024], num_warps=[0, 8]),
    "strided_linear_b1": dict(xblock=[0, 2, 4], rblock=[0, 1024], num_warps=[0, 8]),
    # GPT-2's [K, N] weight: an outer reduction, columns x rows a step
    "addmm_rowmajor_b1": dict(xblock=[0, 32, 64], rblock=[0, 32], split=[0, 4]),
    # 2-D tiles of transposes: [YBLOCK, XBLOCK] and warps
    "transpose_add_relu": dict(yblock=[0, 64], xblock=[0, 64], num_warps=[0, 8]),
    "nchw_to_nhwc": dict(yblock=[0, 64], xblock=[0, 64], num_warps=[0, 8]),
}
ROUNDS = 3  # each config's time is its best do_bench median over the rounds


def pipeline(xblock=0, rblock=0, num_warps=0, split=0, autotune=0, eviction="", yblock=0) -> str:
    tt = [
        f"{k}={v}"
        for k, v in (
            ("xblock", xblock),
            ("yblock", yblock),
            ("rblock", rblock),
            ("num_warps", num_warps),
            ("autotune", autotune),
            ("eviction", eviction),
        )
        if v
    ]
    p = PIPELINES["default"]
    if tt:
        p = p.replace("convert-loop-to-tt", "convert-loop-to-tt{" + " ".join(tt) + "}")
    if split:
        p = p.replace("loop-split-reduction", f"loop-split-reduction{{split={split}}}")
    return p


def inductor_configs(fn, args) -> str:
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    _, codes = run_and_get_code(torch.compile(fn), *args)
    keep = []
    for code in codes:
        for line in code.splitlines():
            s = line.strip()
            if (
                s.startswith(
                    (
                        "@triton_heuristics",
                        "def triton_",
                        "size_hints",
                        "xnumel =",
                        "r0_numel =",
                        "rnumel =",
                        "XBLOCK",
                        "R0_BLOCK",
                        "RBLOCK",
                        "triton_poi",
                        "triton_red",
                        "triton_per",
                    )
                )
                or "grid(" in s
                or ".run(" in s
            ):
                keep.append(line)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "tile_sweep_inductor.py"), "a") as fh:
            fh.write("\n\n".join(codes) + "\n")
    return "\n".join(keep)


def main() -> int:
    from triton.testing import do_bench

    torch._dynamo.config.cache_size_limit = 256
    names = sys.argv[1:]
    rows = []
    for w in selected(names):
        args = w.make()
        want = w.fn(*args)
        print(f"== {w.name}: inductor kernels\n{inductor_configs(w.fn, args)}", flush=True)
        torch._dynamo.reset()
        inductor = torch.compile(w.fn)
        inductor(*args)
        key = w.name.split()[0]
        grid = GRIDS.get(key, {})
        configs = [None] + [
            cfg
            for v in itertools.product(*grid.values())
            if any((cfg := dict(zip(grid, v))).values())
        ]
        compiled = [("inductor", inductor)]
        for cfg in configs:
            torch._dynamo.reset()
            label = (
                "coil heuristic"
                if cfg is None
                else "coil " + " ".join(f"{k}={v}" for k, v in cfg.items() if v)
            )
            options = {} if cfg is None else {"pipeline": pipeline(**cfg)}
            try:
                f = torch.compile(w.fn, backend="coil", options=options)
                bad = _close(f(*args), want, w)
            except Exception as e:  # a config the kernel builder refuses
                f, bad = None, f"{type(e).__name__}: {str(e)[:80]}"
            if bad:
                rows.append((w.name, f"{label} WRONG {bad}", float("nan")))
            else:
                compiled.append((label, f))
        # Rounds over all configs in turn: one do_bench median can double at
        # random (a disturbance on the machine), the best of three cannot.
        best = {label: float("inf") for label, _ in compiled}
        for _ in range(ROUNDS):
            for label, f in compiled:
                best[label] = min(best[label], do_bench(lambda f=f: f(*args)))
        ind = best["inductor"]
        for label, ms in best.items():
            rows.append((w.name, label, ms))
            print(f"{w.name} | {label} | {ms:.4f} | {ind / ms:.2f}x", flush=True)
    print("\n| workload | config | ms | inductor / this |\n|---|---|---|---|")
    best_of: dict[str, tuple[float, str]] = {}
    ind_ms = {n: ms for n, label, ms in rows if label == "inductor"}
    for name, label, ms in rows:
        if label != "inductor" and ms == ms and (name not in best_of or ms < best_of[name][0]):
            best_of[name] = (ms, label)
    for name, (ms, label) in best_of.items():
        heur = next(m for n, lab, m in rows if n == name and lab == "coil heuristic")
        print(f"| {name} | inductor | {ind_ms[name]:.4f} | 1.00x |")
        print(f"| {name} | coil heuristic | {heur:.4f} | {ind_ms[name] / heur:.2f}x |")
        print(f"| {name} | best: {label} | {ms:.4f} | {ind_ms[name] / ms:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
