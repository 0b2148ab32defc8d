"""``coil demo``: the built-in examples through everything coil has so far.

For each example (an MLP block and a softmax): ``torch.compile`` with coil's
backend traces it with AOTAutograd, imports the graph into the aten dialect
and runs the default pipeline down to the buffer level; the demo prints the
stages in brief (ops per level after each pass), the imported and the final
IR, runs the compiled model on fresh random inputs and compares it with eager.
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


def summarize(module: ModuleOp) -> str:
    """The module in one line: aten ops, top-level loop nests, buffers, extern calls."""
    from coil.dialects import buffer as B
    from coil.dialects import loop as L

    counts: Counter = Counter()
    peak = None
    for op in module.walk():
        parent = op.parent_op()
        top = parent is not None and parent.name == "func.func"
        if op.name.startswith(("aten.", "prims.")) and top:
            counts["aten ops"] += 1
        elif isinstance(op, L.FusedOp) and top:
            counts["fused groups"] += 1
        elif isinstance(op, L.LoopOp) and top:
            counts["loop nests"] += 1
        elif isinstance(op, L.ViewOp | B.ViewOp):
            counts["views"] += 1
        elif isinstance(op, B.AllocOp):
            counts["allocs"] += 1
        elif isinstance(op, B.ReuseOp):
            counts["reuses"] += 1
        elif isinstance(op, B.ExternOp):
            counts["extern calls"] += 1
        if op.name == "func.func" and "coil.peak_bytes" in op.attributes:
            peak = op.attributes["coil.peak_bytes"]
    parts = [f"{n} {what}" for what, n in counts.items()]
    if peak is not None:
        from coil.dialects.symbolic import format_expr

        parts.append(f"peak {format_expr(peak.data)} bytes")
    return ", ".join(parts) or "empty"


def run_demo(verbose: bool = True) -> int:
    torch.manual_seed(0)
    failures = 0
    for name in EXAMPLES:
        model, inputs = build(name)
        eager = copy.deepcopy(model)
        stages: list[tuple[str, str]] = []  # (pass, summary), in order: passes repeat
        texts: list[str] = []

        def observe(stage: str, module: ModuleOp, stages=stages, texts=texts) -> None:
            stages.append((stage, summarize(module)))
            texts.append(print_module(module))

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
        if verbose:
            print(f"== {name}: as imported ==\n{texts[0]}")
            print(f"== {name}: after `{PIPELINES['default']}` ==\n{texts[-1]}")
        print(f"== {name}: stages ==")
        for stage, summary in stages:
            print(f"  {stage:28s} {summary}")
        print(
            f"{name}: ran in {elapsed * 1e3:.1f} ms on {fresh[0].device}; "
            f"max |coil - eager| = {err:.2e} {'ok' if ok else 'MISMATCH'}\n"
        )
    torch._dynamo.reset()
    print(
        "kernels generated: none yet (Triton code generation is the next stage); "
        "the buffer-level IR ran through the reference executor"
    )
    return 1 if failures else 0
