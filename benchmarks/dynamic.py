"""Dynamic shapes: coil's dynamic compile against its static one and Inductor's dynamic.

For each workload, in one process, on the same inputs at every size:

* ``coil static``: ``torch.compile(dynamic=False)``, one compile per size;
* ``coil dynamic``: ``torch.compile(dynamic=True)``, one compile for every size;
* ``inductor dynamic``: the same with Inductor;
* eager, for reference;
* ``dynamo static`` / ``dynamo dynamic``: Dynamo alone, a backend that returns
  the outputs it computed once (no kernels, no copies): the host time per
  call of Dynamo's guards and frame handling, static and ``dynamic=True``.
  Their difference is what every backend pays for ``dynamic=True`` before
  its own code runs: the first H200 profiles (sixteenth session) found
  nn.Module float attributes (LayerNorm's and BatchNorm's ``eps``,
  ``momentum``) guarded by Python lambdas under ``dynamic=True`` (C++
  equality checks when static), ~100 of them in a ResNet-50.
* with ``--automatic``: ``coil auto`` / ``inductor auto``, plain
  ``torch.compile`` (the first size compiles static, the next a dynamic
  recompile: what a user who sets nothing gets), timed from the second size.

``--shape-guards`` chooses Dynamo's symbolic-shape guards
(``torch._dynamo.config.enable_cpp_symbolic_shape_guards``): ``default`` gives
each backend what a user gets from it (coil turns on the C++ guards for its
dynamic frames, ``COIL_SHAPE_GUARDS`` in config.py; the other variants compile
with Dynamo's default, Python lambdas, even after coil has turned them on);
``cpp`` or ``python`` sets them for every variant.

Outputs are checked against eager first (relative error against the f32
eager reference, as ``benchmarks/models.py`` does), then each is timed with
``triton.testing.do_bench`` (median ms). With ``--profile [SIZES]``, coil's
static and dynamic compiles at those sizes (default: the next-to-last) are
profiled (kernel ms, launches, top kernels), to say where a dynamic kernel loses.

Workloads (``--list``): a decoder LM over sequence lengths (HF GPT-2, bf16,
batch 8), an encoder over batch and length (HF BERT), a conv net over batch and
image size (a ResNet-50 from torchvision), a batch-varying MLP.

    python benchmarks/dynamic.py [names...] [--profile [8x256,8x200]] [--smoke] [--budget S]
                                 [--no-cudagraphs]

Each size runs eager, coil static, coil dynamic and Inductor dynamic first;
the CUDA-graph compiles (coil's and Inductor's ``reduce-overhead`` over the
dynamic compile) run in a second phase over the same sizes, each call
synchronized, so a CUDA error there (sticky) names the compile, the size and
whether it recorded or replayed, and the first phase's rows are already
written (``--no-cudagraphs`` skips the phase). ``--budget S`` starts no new
size once a workload has run S seconds (the CUDA-graph phase: 1.75 S).

The table goes to stdout and ``$OUT/dynamic.md``, rows to ``$OUT/dynamic.csv``
(``dynamic-NAME.md`` and ``.csv`` when one workload is named, so that one
process per workload -- gpu.sh's way, as a CUDA error is sticky -- keeps each).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import csv
import gc
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass
class Workload:
    name: str
    build: Callable[[], torch.nn.Module]
    sizes: list[tuple]  # each: the arguments of make_inputs
    make_inputs: Callable[..., tuple]
    label: str  # what the sizes are


SMOKE = False


def _gpt2():
    import transformers

    cfg = transformers.GPT2Config(n_layer=1 if SMOKE else 12)
    return _Logits(transformers.GPT2LMHeadModel(cfg))


def _bert():
    import transformers

    cfg = transformers.BertConfig(num_hidden_layers=1 if SMOKE else 12)
    return _Hidden(transformers.BertModel(cfg))


def _resnet():
    import torchvision

    return torchvision.models.resnet50(weights=None)


def _mlp():
    return torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)
    )


class _Logits(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids):
        return self.m(ids).logits


class _Hidden(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids):
        return self.m(ids).last_hidden_state


def _ids(batch: int, seq: int) -> tuple:
    return (torch.randint(0, 30000, (batch, seq)),)


WORKLOADS = {
    w.name: w
    for w in [
        Workload(
            "gpt2", _gpt2, [(8, 128), (8, 256), (8, 384), (8, 512), (8, 200)], _ids, "batch x len"
        ),
        Workload(
            "bert", _bert, [(8, 128), (16, 256), (4, 512), (8, 77), (32, 128)], _ids, "batch x len"
        ),
        Workload(
            "resnet50",
            _resnet,
            [(8, 224), (32, 224), (16, 160), (32, 192)],
            lambda b, s: (torch.randn(b, 3, s, s),),
            "batch x image",
        ),
        Workload(
            "mlp",
            _mlp,
            [(1,), (7,), (64,), (333,), (4096,)],
            lambda b: (torch.randn(b, 1024),),
            "batch",
        ),
    ]
}


def _bench(fn) -> float:
    if not torch.cuda.is_available():
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e3
    import triton.testing

    return triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median")


def _rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.double(), ref.double()
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))


def _profile(fn, calls: int = 5) -> str:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    per: dict[str, list[float]] = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            per.setdefault(e.name, []).append(e.device_time_total / 1e3)
    total = sum(sum(v) for v in per.values()) / calls
    launches = sum(len(v) for v in per.values()) / calls
    ranked = sorted(per.items(), key=lambda kv: -sum(kv[1]))
    lines = [f"GPU kernels {total:.3f} ms, {launches:.0f} launches per call"]
    lines += [
        f"  {sum(v) / calls:8.3f} ms {len(v) / calls:4.0f}x  {k[:110]}" for k, v in ranked[:12]
    ]
    return "\n".join(lines)


PLAIN = (
    "eager",
    "coil_static",
    "coil_dynamic",
    "inductor_dynamic",
    "dynamo_static",
    "dynamo_dynamic",
    "coil_auto",
    "inductor_auto",
)
"""Timed at every size first; their rows are written before any CUDA graph runs."""
GRAPHED = ("coil_dynamic_cg", "inductor_dynamic_cg")
"""CUDA graphs over the dynamic compiles (one recording per size), timed after
every size of PLAIN: a CUDA error is sticky, and the rows measured before it
must survive it (the twelve-layer GPT-2 once failed here)."""


GRAPHED_BUDGET = 1.75
"""The CUDA-graph phase starts no new size past this many ``--budget``s."""


def _own_frame(module: torch.nn.Module) -> Callable:
    """``module``'s call in a function with a code object of its own (a fresh
    compile of the same source), so that its Dynamo cache is its own."""
    scope = {"module": module}
    exec(compile("def forward(*args):\n    return module(*args)\n", "<variant>", "exec"), scope)
    return scope["forward"]


def _stored_outputs(gm: torch.fx.GraphModule, example_inputs) -> Callable:
    """A backend that runs the graph once and then returns those outputs:
    timing it times Dynamo's own per-call work (guards, frame handling)."""
    outs: list = []

    def call(*args):
        if not outs:
            outs.append(gm(*args))
        return outs[0]

    return call


def run(
    w: Workload,
    device: str,
    profile: str | None,
    cudagraphs: bool = True,
    budget_s: float = 0.0,
    done: Callable[[list[dict]], None] = lambda rows: None,
    automatic: bool = False,
) -> tuple[list[dict], str]:
    start = time.perf_counter()
    torch.manual_seed(0)
    model = w.build().eval().to(device)  # the f32 reference
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    half = copy.deepcopy(model).to(dtype)
    torch._dynamo.reset()
    torch._dynamo.config.cache_size_limit = 64

    # Every variant compiles a frame of its own: Dynamo keeps one cache per
    # code object, and variants compiling the same module's forward share it,
    # so each call's lookup also ran the guards of the other variants' entries
    # (the second H200 run of the sixteenth session: Dynamo alone, dynamic,
    # 0.26 ms per call at GPT-2's first size, 0.54 at its second, after the
    # other variants had compiled more entries).
    def compile_(**kw):
        return torch.compile(_own_frame(half), **kw)

    runs = {
        "eager": half,
        "coil_static": compile_(backend="coil", dynamic=False),
        "coil_dynamic": compile_(backend="coil", dynamic=True),
        "inductor_dynamic": compile_(backend="inductor", dynamic=True),
        "dynamo_static": compile_(backend=_stored_outputs, dynamic=False),
        "dynamo_dynamic": compile_(backend=_stored_outputs, dynamic=True),
        "coil_auto": compile_(backend="coil"),
        "inductor_auto": compile_(backend="inductor"),
        # CUDA graphs over a dynamic compile: one recording per size seen.
        "coil_dynamic_cg": compile_(backend="coil", dynamic=True, mode="reduce-overhead"),
        "inductor_dynamic_cg": compile_(backend="inductor", dynamic=True, mode="reduce-overhead"),
    }
    if device != "cuda" or not cudagraphs:
        for name in GRAPHED:
            del runs[name]
    if device != "cuda":
        del runs["inductor_dynamic"], runs["inductor_auto"]
    if not automatic:
        runs.pop("coil_auto"), runs.pop("inductor_auto", None)
    rows, reports, sized = [], [], []
    for size in w.sizes:
        if budget_s and rows and time.perf_counter() - start > budget_s:
            print(
                f"dynamic: {w.name}: budget of {budget_s:.0f} s spent; sizes from "
                f"{'x'.join(map(str, size))} on skipped",
                flush=True,
            )
            break
        inputs = tuple(x.to(device) for x in w.make_inputs(*size))
        args = tuple(x.to(dtype) if x.is_floating_point() else x for x in inputs)
        row: dict = {"workload": w.name, "size": "x".join(map(str, size))}
        with torch.no_grad():
            ref = model(*inputs).float()
            plain = [n for n in PLAIN if n in runs]
            _measure(runs, plain, args, ref, row, device)
            wanted = profile.split(",") if profile else ["x".join(map(str, w.sizes[-2]))]
            if profile is not None and device == "cuda" and row["size"] in wanted:
                for name in ("coil_static", "coil_dynamic", "inductor_dynamic"):
                    reports.append(
                        f"== {w.name} {row['size']} / {name}: "
                        + _profile(lambda f=runs[name]: f(*args))
                    )
        print(f"dynamic: {w.name} {row['size']}: " + _fmt(row), flush=True)
        rows.append(row)
        sized.append((size, args, ref))
        done(rows)
        gc.collect()
    graphed = [n for n in GRAPHED if n in runs]
    for size, args, ref in sized if graphed else ():
        row = next(r for r in rows if r["size"] == "x".join(map(str, size)))
        if budget_s and time.perf_counter() - start > GRAPHED_BUDGET * budget_s:
            print(f"dynamic: {w.name}: CUDA graphs stop at {row['size']} (budget)", flush=True)
            break
        with torch.no_grad():
            for name in graphed:
                # Each call synchronized: a failure names the compile, the size
                # and whether it recorded (first call at a size) or replayed.
                for call in ("record", "replay"):
                    try:
                        out = runs[name](*args).clone()
                        torch.cuda.synchronize()
                    except Exception as e:
                        seen = [r["size"] for r in rows if f"{name}_ms" in r]
                        raise RuntimeError(
                            f"{name} failed at {row['size']} ({call}; sizes recorded before: "
                            f"{seen or 'none'}): {type(e).__name__}: {str(e)[:200]}"
                        ) from e
                row[f"{name}_err"] = _rel_err(out.float(), ref)
            _measure(runs, graphed, args, ref, row, device, check=False)
        print(f"dynamic: {w.name} {row['size']} CUDA graphs: " + _fmt_cg(row), flush=True)
        done(rows)
    return rows, "\n".join(reports)


SHAPE_GUARDS = "default"  # --shape-guards


@contextlib.contextmanager
def _guards_for(name: str):
    """Under ``--shape-guards default``, a variant other than coil's builds its
    frame's guards with Dynamo's default (Python) shape guards."""
    config = torch._dynamo.config
    if SHAPE_GUARDS != "default" or name.startswith("coil"):
        yield
        return
    saved = config.enable_cpp_symbolic_shape_guards
    config.enable_cpp_symbolic_shape_guards = False
    try:
        yield
    finally:
        config.enable_cpp_symbolic_shape_guards = saved


def _measure(runs, names, args, ref, row, device, check: bool = True) -> None:
    """First call (compile) time and error against ``ref`` of each of ``names``,
    then two timing rounds, the second in reverse order, keeping each one's
    lower median: the first H100 run saw every variant (eager too) 1.3-1.6x
    slower at one size than at the next larger one, a transient of the
    machine, not of a compile."""
    for name in names if check else ():
        f = runs[name]
        t = time.perf_counter()
        with _guards_for(name):  # a compile happens in this first call, if any
            out = f(*args)
        if device == "cuda":
            torch.cuda.synchronize()
        row[f"{name}_first_s"] = round(time.perf_counter() - t, 2)
        if not name.startswith("dynamo_"):  # those return the first size's outputs
            row[f"{name}_err"] = _rel_err(out.float(), ref)
    for order in (list(names), list(reversed(names))):
        for name in order:
            ms = _bench(lambda f=runs[name]: f(*args))
            row[f"{name}_ms"] = min(ms, row.get(f"{name}_ms", ms))


def _fmt_cg(r: dict) -> str:
    parts = [f"{n} {r[n + '_ms']:.3f}" for n in GRAPHED if f"{n}_ms" in r]
    return ", ".join(parts)


def _fmt(r: dict) -> str:
    s, d = r["coil_static_ms"], r["coil_dynamic_ms"]
    i = r.get("inductor_dynamic_ms")
    text = (
        f"eager {r['eager_ms']:.3f} coil static {s:.3f} coil dynamic {d:.3f} ({s / d:.2f}x static)"
    )
    if i is not None:
        text += f" inductor dynamic {i:.3f} ({i / d:.2f}x)"
    if "dynamo_dynamic_ms" in r:
        text += (
            f" dynamo alone static {r['dynamo_static_ms']:.3f} dynamic {r['dynamo_dynamic_ms']:.3f}"
        )
    for name in ("coil_auto", "inductor_auto"):
        if f"{name}_ms" in r:
            text += f" {name.replace('_', ' ')} {r[name + '_ms']:.3f}"
    return text


def _pair(r: dict, a: str, b: str) -> str:
    return " " + " / ".join(f"{r[k]:.3f}" if k in r else "-" for k in (a, b)) + " |"


def table(rows: list[dict]) -> str:
    lines = [
        "| workload | size | eager ms | coil static ms | coil dynamic ms | dynamic vs static | "
        "inductor dynamic ms | coil dyn vs inductor dyn | CUDA graphs: coil dyn / inductor dyn ms "
        "| err coil dyn / inductor dyn | Dynamo alone: static / dynamic ms "
        "| auto (first size static): coil / inductor ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        i = r.get("inductor_dynamic_ms")
        cg = (r.get("coil_dynamic_cg_ms"), r.get("inductor_dynamic_cg_ms"))
        lines.append(
            f"| {r['workload']} | {r['size']} | {r['eager_ms']:.3f} | {r['coil_static_ms']:.3f} | "
            f"{r['coil_dynamic_ms']:.3f} | {r['coil_static_ms'] / r['coil_dynamic_ms']:.2f}x | "
            + (f"{i:.3f} | {i / r['coil_dynamic_ms']:.2f}x | " if i else "- | - | ")
            + (f"{cg[0]:.3f} / {cg[1]:.3f} | " if None not in cg else "- | ")
            + f"{r['coil_dynamic_err']:.1e} / {r.get('inductor_dynamic_err', float('nan')):.1e} |"
            + _pair(r, "dynamo_static_ms", "dynamo_dynamic_ms")
            + _pair(r, "coil_auto_ms", "inductor_auto_ms")
        )
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help=f"workloads (default all): {', '.join(WORKLOADS)}")
    p.add_argument("--list", action="store_true")
    p.add_argument(
        "--profile",
        nargs="?",
        const="",
        default=None,
        metavar="SIZES",
        help="profile the next-to-last size, or the sizes given (e.g. 8x256,8x200)",
    )
    p.add_argument("--smoke", action="store_true", help="tiny models on any device")
    p.add_argument(
        "--automatic",
        action="store_true",
        help="also plain torch.compile (static first, then a dynamic recompile), coil and Inductor",
    )
    p.add_argument(
        "--shape-guards",
        choices=("default", "python", "cpp"),
        default="default",
        help="Dynamo's symbolic-shape guards: each backend's own choice (coil: C++, "
        "the others: Dynamo's Python lambdas), or Python / C++ for every variant",
    )
    p.add_argument(
        "--no-cudagraphs", action="store_true", help="skip the CUDA-graph compiles (second phase)"
    )
    p.add_argument(
        "--budget",
        type=float,
        default=0.0,
        help="seconds per workload after which no further size starts (0: none)",
    )
    args = p.parse_args()
    if args.list:
        for w in WORKLOADS.values():
            print(f"{w.name:10s} {w.label}: {', '.join('x'.join(map(str, s)) for s in w.sizes)}")
        return 0
    global SMOKE
    SMOKE = args.smoke
    global SHAPE_GUARDS
    SHAPE_GUARDS = args.shape_guards
    if SHAPE_GUARDS != "default":
        torch._dynamo.config.enable_cpp_symbolic_shape_guards = SHAPE_GUARDS == "cpp"
        # coil's backend would turn them on; python means python for all.
        os.environ["COIL_SHAPE_GUARDS"] = "python"
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" and not SMOKE:
        print("dynamic: no GPU; --smoke runs tiny models on the CPU")
        return 1
    all_rows, reports = [], []
    for name in args.names or list(WORKLOADS):
        w = WORKLOADS[name]
        if SMOKE:
            w.sizes = w.sizes[:2]
        partial: list[dict] = []

        def done(rows: list[dict], name=name, partial=partial) -> None:
            # Written after every size: a call cut at its deadline, or a sticky
            # CUDA error, keeps what was measured.
            partial[:] = rows
            write(all_rows + rows, reports, args.names)

        try:
            rows, report = run(
                w, device, args.profile, not args.no_cudagraphs, args.budget, done, args.automatic
            )
        except Exception as e:  # a failing workload is reported, not a crash
            print(f"dynamic: {name}: ERROR {type(e).__name__}: {str(e)[:400]}", flush=True)
            traceback.print_exc()
            all_rows += partial
            if "CUDA error" in str(e) or "launch failure" in str(e):
                break  # a sticky CUDA error: every later workload would fail too
            continue
        all_rows += rows
        reports.append(report)
        write(all_rows, reports, args.names)
    print(table(all_rows))
    print("\n".join(r for r in reports if r))
    return 0


def write(all_rows, reports, names):
    if not os.environ.get("OUT") or not all_rows:
        return
    out = os.environ["OUT"]
    stem = f"dynamic-{names[0]}" if len(names) == 1 else "dynamic"
    with open(os.path.join(out, stem + ".md"), "w") as fh:
        fh.write(table(all_rows) + "\n\n" + "\n".join(r for r in reports if r) + "\n")
    with open(os.path.join(out, stem + ".csv"), "w", newline="") as fh:
        writer = csv.DictWriter(fh, sorted({k for r in all_rows for k in r}))
        writer.writeheader()
        writer.writerows(all_rows)


if __name__ == "__main__":
    sys.exit(main())
