"""``coil demo``: the built-in examples through the whole compiler.

For each example (an MLP block and a softmax): ``torch.compile`` with coil's
backend traces it with AOTAutograd, imports the graph into the aten dialect and
runs the default pipeline down to Triton kernels and a host wrapper; the demo
prints the stages in brief (ops per level after each pass, the kernels
generated), runs the compiled model on fresh random inputs on the GPU when
there is one (else on the CPU, where the kernels run under Triton's
interpreter), compares it with eager and, on the GPU, times both.
"""

from __future__ import annotations

import copy
import warnings
from collections import Counter

import torch
from xdsl.dialects.builtin import ModuleOp

from coil.compile_driver import compile_graph
from coil.examples.models import build
from coil.frontend.capture import aot_backend
from coil.ir import print_module

EXAMPLES = ("mlp", "softmax")

_TOP_LEVEL = ("func.func", "host.func")


def summarize(module: ModuleOp) -> str:
    """The module in one line: aten ops, loop nests, buffers, kernels, extern calls."""
    from coil.dialects import buffer as B
    from coil.dialects import host as H
    from coil.dialects import loop as L
    from coil.dialects import tt as TT

    counts: Counter = Counter()
    peak = None
    for op in module.walk():
        parent = op.parent_op()
        top = parent is not None and parent.name in _TOP_LEVEL
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
        elif isinstance(op, B.ExternOp | H.ExternOp):
            counts["extern calls"] += 1
        elif isinstance(op, TT.FuncOp):
            counts["triton kernels"] += 1
        elif isinstance(op, H.LaunchOp):
            counts["launches"] += 1
        elif isinstance(op, H.EmptyStridedOp):
            counts["allocs"] += 1
        elif isinstance(op, H.ReinterpretOp):
            counts["views"] += 1
        if op.name in _TOP_LEVEL and "coil.peak_bytes" in op.attributes:
            peak = op.attributes["coil.peak_bytes"]
    parts = [f"{n} {what}" for what, n in counts.items()]
    if peak is not None:
        from coil.dialects.symbolic import format_expr

        parts.append(f"peak {format_expr(peak.data)} bytes")
    return ", ".join(parts) or "empty"


def _time_ms(fn, *args) -> float:
    """Median time of ``fn(*args)`` on the GPU (Triton's do_bench)."""
    import triton.testing

    return triton.testing.do_bench(lambda: fn(*args), return_mode="median")


def run_demo(verbose: bool = True) -> int:
    """Run the examples; ``verbose=False`` (``coil demo -q``) prints only each
    example's summary (kernels, where it ran, the check against eager)."""
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    failures = 0
    for name in EXAMPLES:
        model, inputs = build(name)
        model = model.to(device)
        eager = copy.deepcopy(model)
        stages: list[tuple[str, str]] = []  # (pass, summary), in order: passes repeat
        texts: list[str] = []
        sources: list[str] = []

        def observe(stage: str, module: ModuleOp, stages=stages, texts=texts) -> None:
            stages.append((stage, summarize(module)))
            texts.append(print_module(module))

        def compile_fn(gm, example, observe=observe, sources=sources):
            run = compile_graph(gm, example, observe=observe)
            sources.append(getattr(run, "coil_source", ""))
            return run

        torch._dynamo.reset()
        compiled = torch.compile(model, backend=aot_backend(compile_fn), fullgraph=True)
        fresh = tuple(torch.randn_like(x).to(device) for x in inputs)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = compiled(*fresh)
            expected = eager(*fresh)
            timing = ""
            if device == "cuda":
                t_eager, t_coil = _time_ms(eager, *fresh), _time_ms(compiled, *fresh)
                timing = f"; eager {t_eager:.3f} ms, coil {t_coil:.3f} ms"
        err = (out.double() - expected.double()).abs().max().item()
        ok = torch.allclose(out, expected, rtol=1.3e-5, atol=1e-5)
        failures += not ok
        if verbose:
            print(f"== {name}: as imported ==\n{texts[0]}")
            print(f"== {name}: the generated module (-t python) ==\n{sources[-1]}")
            print(f"== {name}: stages ==")
            for stage, summary in stages:
                print(f"  {stage:28s} {summary}")
        kernels = [ln.split("(")[0][4:] for ln in sources[-1].splitlines() if ln.startswith("def ")]
        kernels = [k for k in kernels if k != "call" and "_combine" not in k]
        where = "GPU" if device == "cuda" else "CPU, Triton interpreter"
        print(f"{name}: kernels generated: {', '.join(kernels) or 'none'}")
        print(
            f"{name}: ran on {where}; max |coil - eager| = {err:.2e} "
            f"{'ok' if ok else 'MISMATCH'}{timing}\n"
        )
    torch._dynamo.reset()
    return 1 if failures else 0
