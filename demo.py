"""``coil demo``: the built-in examples through everything coil has so far.

For each example (an MLP block and a softmax): ``torch.compile`` with coil's
backend traces it with AOTAutograd, imports the graph into the aten dialect
and runs the default pipeline; the demo prints the IR of both stages, runs
the compiled model on fresh random inputs and compares it with eager.
"""

from __future__ import annotations

import copy
import time
import warnings
from collections import Counter

import torch
from xdsl.dialects.builtin import ModuleOp

from coil.backend import compile_graph
from coil.examples.models import build
from coil.frontend.capture import aot_backend
from coil.ir import print_module
from coil.pipeline import PIPELINES

EXAMPLES = ("mlp", "softmax")


def _op_counts(module: ModuleOp) -> str:
    counts = Counter(op.name for op in module.walk() if op.name.startswith(("aten.", "prims.")))
    return f"{sum(counts.values())} ops ({len(counts)} kinds)"


def run_demo(verbose: bool = True) -> int:
    torch.manual_seed(0)
    failures = 0
    for name in EXAMPLES:
        model, inputs = build(name)
        eager = copy.deepcopy(model)
        stages: dict[str, str] = {}

        def observe(stage: str, module: ModuleOp, stages=stages, name=name) -> None:
            stages[stage] = _op_counts(module)
            if verbose:
                title = "as imported" if stage == "import" else f"after `{PIPELINES['default']}`"
                print(f"== {name}: aten IR {title} ==\n{print_module(module)}")

        backend = aot_backend(
            lambda gm, ex, observe=observe: compile_graph(gm, ex, observe=observe)
        )
        torch._dynamo.reset()
        compiled = torch.compile(model, backend=backend, fullgraph=True)
        fresh = tuple(torch.randn_like(x) for x in inputs)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled(*inputs)  # compile
            start = time.perf_counter()
            out = compiled(*fresh)
            elapsed = time.perf_counter() - start
            expected = eager(*fresh)
        err = (out.double() - expected.double()).abs().max().item()
        ok = torch.allclose(out, expected, rtol=1.3e-5, atol=1e-5)
        failures += not ok
        print(
            f"{name:8s} imported {stages['import']}, after the pipeline {stages['pipeline']}; "
            f"ran in {elapsed * 1e3:.1f} ms on {fresh[0].device}; "
            f"max |coil - eager| = {err:.2e} {'ok' if ok else 'MISMATCH'}"
        )
    torch._dynamo.reset()
    print(
        "kernels generated: none yet (the loop/buffer/Triton stages are not built); "
        "the aten IR ran through the reference executor"
    )
    return 1 if failures else 0
