"""Seconds per pass of the default pipeline on real models, on the CPU (no GPU needed).

Captures each model's forward graph (bf16 inference, 8x512 tokens, built from
configs with random weights as in ``benchmarks/models.py``) and compiles it as
the backend does -- import, every pass of ``coil pipeline``, the final verify,
``-t python`` -- without running any kernel. Times are CPU seconds of this
process (``time.process_time``: steadier than wall time on a shared machine)
of the first compile in the process, the one a user waits for; ``--repeat N``
takes the fastest of N. ``--layers N`` rebuilds the models with N layers:
comparing 12 and 48 shows which passes grow faster than the graph.

Run: ``python benchmarks/pass_times.py [gpt2 bert ...] [--layers 12] [--repeat 1]``
(needs transformers). A pass that runs twice (canonicalize, cse, dce) is summed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))


def time_stages(gm, inputs, pipeline: str, add) -> None:
    """Compile one graph as the backend does, calling ``add(stage, cpu_seconds)``
    for the import, each pass (by name), the final verify and the emit."""
    import contextlib

    from coil import backend
    from coil.backend import emit_python, run_pipeline
    from coil.frontend.fx_importer import import_graph

    # As compile_graph does (an older coil, measured for a comparison, has none).
    scope = getattr(backend, "collector_paused", contextlib.nullcontext)
    with scope():
        start = time.process_time()
        ir = import_graph(gm, inputs)
        last = time.process_time()
        add("import", last - start)

        def observe(spec: str, _module) -> None:
            nonlocal last
            now = time.process_time()
            add(spec.split("{")[0], now - last)
            last = now

        run_pipeline(ir, pipeline, observe)
        now = time.process_time()
        add("verify", now - last)
        emit_python(ir)
        add("emit", time.process_time() - now)


def pass_times(name: str, layers: int | None, repeat: int) -> dict[str, float]:
    import models

    from coil.frontend.capture import capture_graphs
    from coil.pipeline import PIPELINES

    if layers:
        models._layers = lambda n: layers
    torch.manual_seed(0)
    module, inputs = models.MODELS[name].build()
    graphs = capture_graphs(module.eval().to(torch.bfloat16), inputs)
    best: dict[str, float] = {}
    for _ in range(repeat):
        times: dict[str, float] = {}

        def add(stage: str, seconds: float) -> None:
            times[stage] = times.get(stage, 0.0) + seconds

        for g in graphs:
            time_stages(g.gm, g.example_inputs, PIPELINES["default"], add)
        for stage, seconds in times.items():
            best[stage] = min(best.get(stage, seconds), seconds)
    best["total"] = sum(best.values())
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=["gpt2", "bert"])
    parser.add_argument("--layers", type=int, default=None, help="layers per model")
    parser.add_argument("--repeat", type=int, default=1, help="best of N compiles")
    args = parser.parse_args()
    results = {n: pass_times(n, args.layers, args.repeat) for n in args.names}
    stages = list(dict.fromkeys(s for r in results.values() for s in r))
    print("| stage | " + " | ".join(f"{n} s" for n in args.names) + " |")
    print("|---|" + "---|" * len(args.names))
    for stage in stages:
        cells = [f"{results[n].get(stage, 0.0):.3f}" for n in args.names]
        print(f"| {stage} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
