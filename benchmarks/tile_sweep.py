"""Launch configs of one reduction workload, measured: what tile would be best.

For each workload of ``roofline.py`` named on the command line (a substring of
its name, e.g. ``"var_dim0 bf16"``), in one process on the GPU: Inductor's
time and its kernels' configs (the ``@triton_heuristics`` lines and tile
constants of the code it generated, to ``$OUT/tile_sweep_inductor.py``), then
coil's time under its heuristic and under each config of a small grid of
``convert-loop-to-tt`` / ``loop-split-reduction`` options (xblock, rblock,
num_warps, split), each checked against eager first. The options apply to
every kernel of the graph: the workloads are single reductions, whose first
stage dominates.

    python benchmarks/tile_sweep.py "var_dim0 bf16" "mean_all bf16"
"""

from __future__ import annotations

import itertools
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from roofline import _close, workloads  # noqa: E402

from coil.pipeline import PIPELINES  # noqa: E402

GRIDS = {
    # an outer reduction split along the rows: [XBLOCK columns x RBLOCK rows]
    "var_dim0": dict(xblock=[64, 128, 256], rblock=[4, 8, 16], num_warps=[4, 8], split=[0]),
    "sum_dim0": dict(xblock=[64, 128, 256], rblock=[4, 8, 16], num_warps=[4, 8], split=[0]),
    # an inner reduction of 2048-element rows
    "sum_dim1": dict(xblock=[1, 2, 4, 8], rblock=[0], num_warps=[4, 8, 16], split=[0]),
    # a full reduction: stage one reduces chunks
    "mean_all": dict(xblock=[1], rblock=[2048, 4096], num_warps=[4, 8, 16], split=[0, 1024]),
    "amax_all": dict(xblock=[1], rblock=[2048, 4096], num_warps=[4, 8, 16], split=[0, 1024]),
}


def pipeline(xblock: int, rblock: int, num_warps: int, split: int) -> str:
    tt = [f"xblock={xblock}", f"num_warps={num_warps}"] + ([f"rblock={rblock}"] if rblock else [])
    p = PIPELINES["default"].replace("convert-loop-to-tt", "convert-loop-to-tt{" + " ".join(tt) + "}")
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
            if s.startswith(("@triton_heuristics", "def triton_", "size_hints", "xnumel =", "r0_numel =",
                             "rnumel =", "XBLOCK", "R0_BLOCK", "RBLOCK", "triton_poi", "triton_red",
                             "triton_per")) or "grid(" in s or ".run(" in s:
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
    for w in workloads("cuda", smoke=False):
        if not any(n in w.name for n in names):
            continue
        args = w.make()
        want = w.fn(*args)
        print(f"== {w.name}: inductor kernels\n{inductor_configs(w.fn, args)}", flush=True)
        torch._dynamo.reset()
        ind = do_bench(lambda: torch.compile(w.fn)(*args))
        rows.append((w.name, "inductor", ind))
        key = w.name.split()[0]
        grid = GRIDS.get(key, {})
        configs = [None] + [dict(zip(grid, v)) for v in itertools.product(*grid.values())]
        for cfg in configs:
            torch._dynamo.reset()
            label = "coil heuristic" if cfg is None else "coil " + " ".join(
                f"{k}={v}" for k, v in cfg.items()
            )
            options = {} if cfg is None else {"pipeline": pipeline(**cfg)}
            try:
                f = torch.compile(w.fn, backend="coil", options=options)
                bad = _close(f(*args), want, w)
                ms = float("nan") if bad else do_bench(lambda: f(*args))
            except Exception as e:  # a config the kernel builder refuses
                bad, ms = f"{type(e).__name__}: {str(e)[:80]}", float("nan")
            rows.append((w.name, label + (f" WRONG {bad}" if bad else ""), ms))
            print(f"{w.name} | {label} | {ms:.4f} | {ind / ms:.2f}x", flush=True)
    print("\n| workload | config | ms | inductor / this |\n|---|---|---|---|")
    best: dict[str, tuple[float, str]] = {}
    ind_ms = {n: ms for n, label, ms in rows if label == "inductor"}
    for name, label, ms in rows:
        if label != "inductor" and ms == ms and (name not in best or ms < best[name][0]):
            best[name] = (ms, label)
    for name, (ms, label) in best.items():
        heur = next(m for n, lab, m in rows if n == name and lab == "coil heuristic")
        print(f"| {name} | inductor | {ind_ms[name]:.4f} | 1.00x |")
        print(f"| {name} | coil heuristic | {heur:.4f} | {ind_ms[name] / heur:.2f}x |")
        print(f"| {name} | best: {label} | {ms:.4f} | {ind_ms[name] / ms:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
