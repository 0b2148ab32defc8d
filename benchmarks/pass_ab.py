"""A pass option A/B in one process: coil's default pipeline against the same
pipeline with pass options changed, and Inductor, on sweep rows and roofline
workloads (GPU machine).

``python benchmarks/pass_ab.py --variant 'loop-inline{recompute-margin=4}'
[--variant ...] NAME...``: NAME is a row of ``sweep.py`` (``hf:deberta_v2``,
bf16 inference at its batch) or a roofline workload whose name starts with it
(``"rel_pos_softmax"``). Each variant is one or more ``pass{key=value ...}``
joined by ``;``, added to the default pipeline by ``pipeline.with_pass_option``
(a key the pipeline already gives is left). Every variant's output is checked
against eager first (relative error, as sweep.py does), then timed with
``triton.testing.do_bench`` (median ms), all variants of a row in the same
process, one after another, in two rounds (the best kept); the kernels' plans
that differ from the default's are printed. A rule is measured where it acts,
against the code without it, without a second checkout.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, os.path.dirname(__file__))


def variant_pipeline(spec: str) -> str:
    """The default pipeline with ``spec``'s options (``pass{k=v k2=v2};pass2{...}``)."""
    from coil.pipeline import PIPELINES, with_pass_option

    p = PIPELINES["default"]
    for part in filter(None, (s.strip() for s in spec.split(";"))):
        m = re.fullmatch(r"([\w-]+)\{([^}]*)\}", part)
        if m is None:
            raise SystemExit(f"pass_ab: variant {part!r} is not pass{{key=value ...}}")
        for option in m.group(2).split():
            p = with_pass_option(p, m.group(1), option)
    return p


def _build(name: str):
    """(module or function, bf16 CUDA args, f32 reference output)."""
    if ":" in name:
        import sweep

        module, inputs = sweep.build(sweep.ENTRIES[name])
        ref = sweep.main_output(module.eval().cuda()(*(x.cuda() for x in inputs))).float()
        module = module.to(torch.bfloat16)
        args = tuple((x.to(torch.bfloat16) if x.is_floating_point() else x).cuda() for x in inputs)
        return module, args, ref, sweep.main_output
    from roofline import workloads

    w = next(w for w in workloads("cuda", smoke=False) if w.name.startswith(name))
    args = w.make()
    ref = w.fn(*(x.float() if x.is_floating_point() else x for x in args))
    return w.fn, args, ref, lambda out: out[0] if isinstance(out, tuple) else out


def _plans(dump: str) -> list[str]:
    return [
        line.split("# plan: ", 1)[1].strip()
        for path in sorted(Path(dump).glob("*/kernels.py"))
        for line in path.read_text().splitlines()
        if "# plan: " in line
    ]


def run(name: str, variants: list[str]) -> list[str]:
    import triton.testing

    fn, args, ref, main = _build(name)
    runs: dict[str, object] = {}
    plans: dict[str, list[str]] = {}
    errors: dict[str, float] = {}
    for label, spec in [("coil", None), *((v, v) for v in variants), ("inductor", None)]:
        torch._dynamo.reset()
        if label == "inductor":
            f = torch.compile(fn)
        else:
            options: dict = {"cache": False, "dump_dir": tempfile.mkdtemp(prefix="pass_ab-")}
            if spec is not None:
                options["pipeline"] = variant_pipeline(spec)
            f = torch.compile(fn, backend="coil", options=options)
        with torch.no_grad():
            out = main(f(*args)).float()
        errors[label] = float((out - ref).norm() / ref.norm().clamp_min(1e-30))
        if label != "inductor":
            plans[label] = _plans(options["dump_dir"])
        runs[label] = f
    best = {label: math.inf for label in runs}
    with torch.no_grad():
        for _ in range(2):
            for label, f in runs.items():
                ms = triton.testing.do_bench(
                    lambda f=f: f(*args), warmup=25, rep=200, return_mode="median"
                )
                best[label] = min(best[label], ms)
    lines = []
    for label in runs:
        ratio = best["inductor"] / best[label]
        lines.append(
            f"| {name} | {label} | {best[label]:.4f} | {ratio:.2f}x | {errors[label]:.1e} |"
        )
    for label, got in plans.items():
        if label == "coil":
            continue
        base = plans["coil"]
        if got != base:
            lines.append(f"plans of {label} ({len(got)} kernels, default {len(base)}):")
            lines += [f"  - {p}" for p in base if p not in got]
            lines += [f"  + {p}" for p in got if p not in base]
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="+", help="sweep rows (zoo:name) or roofline workload prefixes")
    p.add_argument("--variant", action="append", default=[], help="pass{key=value ...}[;...]")
    args = p.parse_args()
    for spec in args.variant:
        variant_pipeline(spec)  # a bad spec fails before any compile
    print("| row | variant | ms | inductor / this | rel. error |")
    print("|---|---|---|---|---|")
    status = 0
    for name in args.names:
        try:
            for line in run(name, args.variant):
                print(line, flush=True)
        except Exception as e:  # one row's failure is a line, not the end of the run
            print(f"| {name} | ERROR {type(e).__name__}: {str(e)[:160]} |", flush=True)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
