"""Fit the kernel-strategy cost model on a shape sweep's measurements.

``benchmarks/shape_sweep.py`` times, for each shape, coil's choice and a grid
of forced configs on a GPU (its CSV has every config's time). This script
asks, without a GPU, what the cost model (``strategy/cost.py``,
``strategy/plan.py``) estimates for *each* of those configs, and how well its
estimates rank them:

1. ``collect``: each shape of the sweep is compiled on the CPU for the CSV's
   device (``--target h200``) under each config of the CSV, to ``tt`` (no
   kernel runs); the kernels' plans are recorded as the cost model's inputs
   (a reduction's ``ReductionShape`` and tile, a pointwise kernel's
   ``pointwise_estimate`` arguments, which kernels a split's finish merged),
   pickled to ``--cache``. The plans are those of the code checked out; to
   fit on the configs the GPU ran, collect with the code it ran.
2. ``fit`` (the default, after ``collect``): each config's estimate is
   recomputed from the records with the model as it is *now* (edit the
   constants, run again: seconds), then compared with the measured times:
   the log error of each config, and per shape the config the model ranks
   first against the measured best (its *regret*: measured time of the
   model's pick over the best). Shapes are reported in two groups, those the
   constants were fitted on (``FITTED``) and the rest (held out). It also
   replays *coil's choice*: the plan the code checked out builds for the
   ``coil`` config (collect it again after a change: ``collect --config coil
   --fresh``), matched to the grid config timed with the same plan, whose
   measured time over the best is the choice's predicted regret (a plan no
   config was timed with is counted apart: the replay cannot say).

3. ``registers``: each config's reduction kernels compiled for sm_``--arch``
   (Triton and ptxas need no GPU), the model's register estimate against
   what ptxas allocated (``cost.REGS_BASE``, ``REGS_PER_VALUE``).

    python benchmarks/fit_strategy.py collect --csv /work/devlogs/6/shape_sweep.csv
    python benchmarks/fit_strategy.py --csv /work/devlogs/6/shape_sweep.csv
    # after a change to the model: the code's choices again, then the replay
    python benchmarks/fit_strategy.py collect --config coil --fresh --csv ...
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import math
import os
import pickle
import re
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

sys.path.insert(0, os.path.dirname(__file__))

FITTED = frozenset(
    # The shapes of the first GPU run (devlogs/6, H200): the constants of
    # strategy/cost.py marked "fitted" came from their grids.
    [
        "mean_nhwc bf16 32x256x28x28",
        "mean_nhwc bf16 32x32x130x130",
        "mean_nhwc f32 32x96x65x65",
        "se_nhwc bf16 32x96x65x65",
        "max_pool_nhwc bf16 32x64x112x112",
        "max_pool_nhwc f32 32x192x56x56",
        "gn_nhwc bf16 32x64x56x56",
        "gn_nhwc f32 32x320x14x14",
        "relu_add_nhwc bf16 32x64x56x56",
        "sum_dim1 bf16 32768x2048",
        "sum_dim1 f32 8x100003",
        "amax_dim1 bf16 1000x1000",
        "sum_dim1 f32 64x7",
        "argmax_dim1 bf16 2048x50257",
        "sum_dim0 f32 32768x2048",
        "sum_dim0 bf16 4096x768",
        "var_dim0 f32 3001x515",
        "var_dim0 bf16 32768x2048",
        "mean_all bf16 32768x2048",
        "mean_all f32 777x333",
        "silu_bias bf16 32768x4096",
        "transpose_add bf16 2048x4096",
        "gelu_odd f32 1000003",
        "nchw_to_nhwc bf16 64x256x28x28",
        "layer_norm bf16 32768x4096",
        "layer_norm bf16 128x768",
        "rms_norm f32 4096x4096",
        "softmax bf16 32768x1024",
        "softmax f32 16x50257",
        "softmax_dim0 bf16 8192x4096",
        "log_softmax bf16 4096x32000",
    ]
)


# ---------------------------------------------------------------------------
# collect: the plans of each config, as the cost model's inputs
# ---------------------------------------------------------------------------


@dataclass
class KernelRecord:
    name: str
    kind: str = ""  # "reduction" | "pointwise" | "" (no plan: a copy, a gemm)
    args: tuple = ()
    role: str = ""  # "" | "stage1" (its finish merged in) | "finish"
    plan: str = ""


@dataclass
class ConfigRecord:
    shape: str
    config: str
    kernels: list[KernelRecord] = field(default_factory=list)
    error: str = ""


class _Recorder:
    """Patches the tt lowering's calls into the strategy to record each kernel's
    final plan inputs (the last ``reduction_tile`` / ``pointwise_estimate`` call
    made while it is built)."""

    def __init__(self) -> None:
        self.kernels: list[KernelRecord] = []
        self.stack: list[KernelRecord] = []
        self.merging = 0

    @contextlib.contextmanager
    def patched(self):
        from coil.lowering.loop_to_tt import kernel as K
        from coil.lowering.loop_to_tt import split_finish as SF
        from coil.strategy import plan as P

        saved = (
            K.KernelLowering.build,
            P.reduction_tile,
            P.pointwise_estimate,
            SF.merge,
            SF.merge_one,
        )
        build, reduction_tile, pointwise_estimate, merge, merge_one = saved
        rec = self

        def build_(self_):
            r = KernelRecord(self_.name if hasattr(self_, "name") else "?")
            if rec.merging:
                r.role = "finish"
            rec.stack.append(r)
            try:
                k = build(self_)
            finally:
                rec.stack.pop()
            r.plan = k.plan
            rec.kernels.append(r)
            return k

        def reduction_tile_(shape, target, **kw):
            t = reduction_tile(shape, target, **kw)
            if rec.stack and not rec.stack[-1].kind:
                rec.stack[-1].kind = "reduction"
                rec.stack[-1].args = (shape, (t.persistent, t.xblock, t.rblock, t.warps))
            return t

        def pointwise_estimate_(*a):
            if rec.stack:
                rec.stack[-1].kind = "pointwise"
                rec.stack[-1].args = a[:6]
            return pointwise_estimate(*a)

        def merge_(first, build2, *a, **kw):
            first_rec = rec.kernels[-1] if rec.kernels else None
            start = len(rec.kernels)
            rec.merging += 1
            try:
                got = merge(first, build2, *a, **kw)
            finally:
                rec.merging -= 1
            if got is None:
                # Declined: stage 1 and its finish are built again as two
                # launches; the finishes built to try are not kernels run.
                del rec.kernels[start:]
            elif first_rec is not None:
                first_rec.role = "stage1"
            return got

        def merge_one_(first, second, *a, **kw):
            # Both kernels were built (the call's arguments) just before.
            got = merge_one(first, second, *a, **kw)
            if got is not None and len(rec.kernels) >= 2:
                rec.kernels[-2].role, rec.kernels[-1].role = "stage1", "finish"
            return got

        K.KernelLowering.build = build_
        P.reduction_tile = reduction_tile_
        P.pointwise_estimate = pointwise_estimate_
        SF.merge = merge_
        SF.merge_one = merge_one_
        try:
            yield self
        finally:
            (
                K.KernelLowering.build,
                P.reduction_tile,
                P.pointwise_estimate,
                SF.merge,
                SF.merge_one,
            ) = saved


def _config_of(label: str) -> dict | None:
    if label == "coil":
        return None
    out = {}
    for part in label.split()[1:]:
        k, v = part.split("=", 1)
        out[k] = int(v) if v.lstrip("-").isdigit() else v
    return out


def example_args(shape, target: str) -> tuple:
    """``shape``'s inputs for a trace: fake CUDA tensors for a GPU target (no
    GPU needed), so that ops whose output layout depends on the device (a
    channels-last group norm's is contiguous on CUDA, channels-last on the
    CPU) trace as the sweep's GPU run did; real CPU tensors for a CPU one."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from coil.strategy.target import named

    if not named(target).serial:
        try:
            with FakeTensorMode():
                return tuple(shape.make("cuda", False))
        except RuntimeError:  # a factory this build of torch cannot fake on CUDA
            pass
    return tuple(shape.make("cpu", False))


def compile_records(shape, config: dict | None, target: str) -> ConfigRecord:
    """The kernels ``shape`` compiles to under ``config`` for ``target``."""
    from shape_sweep import label, pipeline

    from coil.backend import _graph_pipeline, run_pipeline
    from coil.frontend.decompositions import decomposition_table
    from coil.frontend.fx_importer import import_graph
    from coil.pipeline import PIPELINES
    from coil.strategy.target import named, set_module_target
    from coil.testing import on_device

    out = ConfigRecord(shape.name, label(config))

    class M(torch.nn.Module):
        def forward(self, *xs):
            return shape.fn(*xs)

    try:
        args = example_args(shape, target)
        try:
            with torch.no_grad():
                program = torch.export.export(M(), tuple(args), strict=False)
        except RuntimeError:  # an op this build cannot trace on fake CUDA tensors
            args = tuple(shape.make("cpu", False))
            with torch.no_grad():
                program = torch.export.export(M(), args, strict=False)
        program = program.run_decompositions(dict(decomposition_table()))
        module = on_device(import_graph(program.graph_module))
        set_module_target(module, named(target))
        p = PIPELINES["default"] if config is None else pipeline(config)
        rec = _Recorder()
        with rec.patched():
            run_pipeline(module, _graph_pipeline(p, True, False, True))
        out.kernels = rec.kernels
    except Exception as e:  # a config the builder refuses: recorded, not fatal
        out.error = f"{type(e).__name__}: {str(e)[:200]}"
    return out


def read_csv(path: Path) -> dict[str, dict[str, tuple[float, str]]]:
    """shape -> config -> (measured ms, its plans where the sweep kept them);
    coil's configs only."""
    got: dict[str, dict[str, tuple[float, str]]] = {}
    with open(path) as fh:
        for row in csv.DictReader(fh):
            if not row["config"].startswith("coil"):
                continue
            ms = float(row["ms"]) if row["ms"] not in ("", "nan", "inf") else math.nan
            got.setdefault(row["shape"], {})[row["config"]] = (ms, row.get("plans") or "")
    return got


_PLAN_TOKENS = re.compile(r"\[[A-Z]+ [^\]]*\]|\d+ warps|window of \d+|\d+ programs")


def kernels_run(rec: ConfigRecord) -> list[KernelRecord]:
    """The kernels a config runs: of the finishes ``split_finish.merge`` built
    for one first stage (it may build one again with other options), and of
    the builds of one kernel, the last."""
    out: list[KernelRecord] = []
    for k in rec.kernels:
        if k.name == "probe":  # convert-loop-to-tt's trial builds (_lower_one)
            continue
        if k.role == "finish" and out and out[-1].role == "finish":
            out[-1] = k
        elif k.role != "finish" and any(o.name == k.name for o in out):
            # built again (a candidate the lowering then kept): the last build
            out = [o for o in out if o.name != k.name] + [k]
        else:
            out.append(k)
    return out


def built_plans(rec: ConfigRecord) -> str:
    """The plan lines of a config's kernels, as the sweep's CSV has them (a
    split's finish merged into its first stage's line)."""
    lines: list[str] = []
    for k in kernels_run(rec):
        if not k.plan:
            continue
        if k.role == "finish" and lines:
            lines[-1] += f"; finished by the last program: {k.plan.split(':')[0]}"
        else:
            lines.append(k.plan)
    return " | ".join(lines)


def plan_key(text: str) -> tuple[str, ...]:
    """What a plan line says of the kernels built (tiles, warps, programs), not
    its estimates: the same for the CSV's plans and the records' of one config."""
    return tuple(_PLAN_TOKENS.findall(text))


def collect(args) -> int:
    from shape_sweep import shapes

    measured = read_csv(Path(args.csv))
    by_name = {s.name: s for s in shapes()}
    cache = Path(args.cache)
    records: dict[tuple[str, str], ConfigRecord] = {}
    if cache.exists():  # --fresh collects again what it selects, keeping the rest
        records = pickle.loads(cache.read_bytes())
    start = time.monotonic()
    for name, configs in measured.items():
        if args.names and not any(n in name for n in args.names):
            continue
        shape = by_name.get(name)
        if shape is None:
            print(f"{name}: not a shape of shape_sweep.py, skipped", file=sys.stderr)
            continue
        for lab in configs:
            if args.config and lab not in args.config:
                continue
            if (name, lab) in records and not args.fresh:
                continue
            r = compile_records(shape, _config_of(lab), args.target)
            records[(name, lab)] = r
            n = len([k for k in r.kernels if k.kind])
            print(f"{name} | {lab}: {n} kernels {r.error}", flush=True)
        cache.write_bytes(pickle.dumps(records))
    print(f"{len(records)} configs in {time.monotonic() - start:.0f} s -> {cache}")
    return 0


# ---------------------------------------------------------------------------
# fit: the model as it is now, against the measurements
# ---------------------------------------------------------------------------


def config_seconds(rec: ConfigRecord, target) -> float:
    """The model's estimate of one config: its kernels one after another."""
    from coil.intmath import cdiv
    from coil.strategy.cost import Work, estimate, program_seconds
    from coil.strategy.plan import ATOMIC_S, hint, pointwise_estimate, reduction_work

    def outputs(k: KernelRecord) -> int:
        return max(1, hint(k.args[0].xnumel if k.kind == "reduction" else k.args[0]))

    total, launches = 0.0, 0
    kernels = kernels_run(rec)
    waves = 1.0  # of the last stage 1
    for n, k in enumerate(kernels):
        if k.role == "stage1" and n + 1 < len(kernels) and kernels[n + 1].role == "finish":
            # the chunks of a tile finishing in one round serialize on its counter
            nsplit = outputs(k) / outputs(kernels[n + 1])
            first = k.args[1] if k.kind == "reduction" else None
            if first is not None:
                work = replace(reduction_work(k.args[0], first), waits=2)
                waves = estimate(work, target).waves
            total += nsplit / max(1.0, math.ceil(waves - 1e-9)) * ATOMIC_S
        if k.kind == "reduction":
            shape, tile = k.args
            work = reduction_work(shape, tile)
            if k.role == "stage1":
                work = replace(work, waits=2)
            if k.role == "finish":  # run by the last program of each tile, from L2
                total += program_seconds(replace(work, cached=True), target)
                continue
            total += estimate(work, target).seconds
        elif k.kind == "pointwise":
            if k.role == "finish":  # one program of it, as above
                numel, block, warps, nbytes, ops, eff = k.args[:6]
                n = max(1, hint(numel))
                work = Work(cdiv(n, block), warps, float(n * nbytes), 1, block, max(1, ops))
                work = replace(work, cached=True)
                total += program_seconds(work, target)
                continue
            if k.role == "stage1":  # publishes its tile: a fence and an atomic
                numel, block, warps, nbytes, ops, eff = k.args[:6]
                n = max(1, hint(numel))
                work = Work(cdiv(n, block), warps, float(n * nbytes), 1, block, max(1, ops))
                total += estimate(replace(work, efficiency=eff, waits=2), target).seconds
            else:
                total += pointwise_estimate(*k.args, target).seconds
        else:
            continue
        launches += 1
    return total + max(0, launches - 1) * target.launch_s


def replay_choice(
    name: str, configs: dict[str, tuple[float, str]], rec: ConfigRecord | None
) -> tuple[str, float] | None:
    """What coil's choice *now* (the ``coil`` record, compiled with the code
    checked out) measured: the grid's configs whose timed plans are the plans
    it builds (the sweep's own ``coil`` row first, else the mean of those that
    match), over the best time of the shape's grid; None where the code now
    builds a plan that no config of the grid was timed with."""
    times = [ms for ms, _ in configs.values() if ms == ms and ms != math.inf]
    if rec is None or rec.error or not times:
        return None
    key = plan_key(built_plans(rec))
    same = [
        (lab, ms)
        for lab, (ms, plans) in configs.items()
        if plans and ms == ms and ms != math.inf and plan_key(plans) == key
    ]
    if not same:
        return None
    own = [(lab, ms) for lab, ms in same if lab == "coil"]
    lab, ms = own[0] if own else (same[0][0], sum(ms for _, ms in same) / len(same))
    return lab, ms / min(times)


def named_target(name: str):
    from coil.strategy.target import named

    return named(name)


def fit(args) -> int:
    target = named_target(args.target)
    measured = read_csv(Path(args.csv))
    records: dict[tuple[str, str], ConfigRecord] = pickle.loads(Path(args.cache).read_bytes())
    groups: dict[str, list[tuple[float, float, float]]] = {"fitted": [], "held out": []}
    choices: list[float] = []
    unmeasured: list[str] = []
    lines = []
    for name, configs in measured.items():
        if args.names and not any(n in name for n in args.names):
            continue
        choice = replay_choice(name, configs, records.get((name, "coil")))
        if choice is None:
            unmeasured.append(name)
            lines.append(f"{name}: coil's choice now is a plan the grid did not time")
        else:
            lab, regret = choice
            choices.append(regret)
            flag = "" if regret <= 1.10 else "  <-- CHOICE MISS"
            lines.append(f"{name}: coil's choice now runs as {lab!r}, regret {regret:.2f}x{flag}")
        rows = []
        for lab, (ms, plans) in configs.items():
            rec = records.get((name, lab))
            if rec is None or rec.error or not (ms == ms) or ms == math.inf:
                continue
            built = built_plans(rec)
            if plans and plan_key(plans) != plan_key(built):
                # The code collected from plans another kernel than the one timed
                # (the model changed its choice): not a measurement of it.
                lines.append(f"{name} | {lab}: now {built[:200]!r}, was timed as {plans[:200]!r}")
                continue
            est = config_seconds(rec, target) * 1e3
            rows.append((lab, ms, est))
        if not rows:
            continue
        best = min(ms for _, ms, _ in rows)
        pick = min(rows, key=lambda r: r[2])
        regret = pick[1] / best
        errs = [math.log(est / ms) for _, ms, est in rows]
        group = "fitted" if name in FITTED else "held out"
        groups[group].append((regret, sum(e * e for e in errs) / len(errs), len(rows)))
        flag = "" if regret <= 1.10 else "  <-- MISS"
        lines.append(f"{name} [{group}]: model picks {pick[0]!r}, regret {regret:.2f}x{flag}")
        if args.verbose or regret > 1.10:
            for lab, ms, est in sorted(rows, key=lambda r: r[1]):
                lines.append(
                    f"    {lab:32s} measured {ms * 1e3:8.1f} us  model {est * 1e3:8.1f} us"
                )
    print("\n".join(lines))
    if choices:
        within = sum(r <= 1.10 for r in choices)
        geo = math.exp(sum(math.log(r) for r in choices) / len(choices))
        print(
            f"coil's choice (the code's plan now, replayed as the grid config timed with "
            f"that plan): within 10 % of the best on {within} of {len(choices)} shapes "
            f"({within / len(choices):.0%}), worst {max(choices):.2f}x, geomean "
            f"{geo:.3f}x; {len(unmeasured)} shapes' plans not in the grid"
        )
    for group, vals in groups.items():
        if not vals:
            continue
        within = sum(r <= 1.10 for r, _, _ in vals) / len(vals)
        worst = max(r for r, _, _ in vals)
        rms = math.sqrt(sum(e for _, e, _ in vals) / len(vals))
        geo = math.exp(sum(math.log(r) for r, _, _ in vals) / len(vals))
        print(
            f"{group}: {len(vals)} shapes, model's pick of the grid within 10 % of the best on "
            f"{within:.0%}, worst {worst:.2f}x, geomean regret {geo:.3f}x, "
            f"rms log error {rms:.2f}"
        )
    return 0


# ---------------------------------------------------------------------------
# registers: the model's register estimate against what ptxas allocates
# ---------------------------------------------------------------------------


def _ptxas_registers(compiled) -> int | None:
    """Registers a thread of a compiled kernel uses (cuobjdump's resource usage)."""
    import subprocess
    import tempfile

    import triton

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as fh:
        fh.write(compiled.asm["cubin"])
        fh.flush()
        out = subprocess.run(
            [str(tool), "--dump-resource-usage", fh.name], capture_output=True, text=True
        ).stdout
    m = re.search(r"REG:(\d+)", out)
    return int(m.group(1)) if m else None


def registers(args) -> int:
    """Compile each shape of the CSV under each of its configs for ``--arch``
    (Triton and ptxas run without a GPU) and print, per kernel, the model's
    register estimate (``cost.registers``) against ptxas's count."""
    from shape_sweep import label, pipeline, shapes

    from coil.backend import _graph_pipeline, run_pipeline
    from coil.frontend.decompositions import decomposition_table
    from coil.frontend.fx_importer import import_graph
    from coil.pipeline import PIPELINES
    from coil.runtime.cpp_wrapper import compile_kernels
    from coil.strategy.cost import registers as estimate_registers
    from coil.strategy.plan import reduction_work
    from coil.strategy.target import named, set_module_target
    from coil.targets import triton as T
    from coil.testing import on_device

    measured = read_csv(Path(args.csv))
    by_name = {s.name: s for s in shapes()}
    errors = []
    for name, configs in measured.items():
        if args.names and not any(n in name for n in args.names):
            continue
        shape = by_name.get(name)
        if shape is None:
            continue
        for lab in configs:
            config = _config_of(lab)

            class M(torch.nn.Module):
                def forward(self, *xs):
                    return shape.fn(*xs)

            try:
                with torch.no_grad():
                    program = torch.export.export(
                        M(), tuple(shape.make("cpu", False)), strict=False
                    )
                program = program.run_decompositions(dict(decomposition_table()))
                module = on_device(import_graph(program.graph_module))
                set_module_target(module, named(args.target))
                p = PIPELINES["default"] if config is None else pipeline(config)
                rec = _Recorder()
                with rec.patched():
                    run_pipeline(module, _graph_pipeline(p, True, False, True))
                source = T.header(module) + "\n\n" + T.emit_kernels(module)
                compiled = compile_kernels(module, source, args.arch)
            except Exception as e:  # a config the builder refuses
                print(f"{name} | {label(config)}: {type(e).__name__}: {str(e)[:120]}")
                continue
            kernels = kernels_run(ConfigRecord(name, lab, rec.kernels))
            for k, kern in enumerate(kernels):
                # A merged finish names the launch; its first stage is the kernel.
                built = kern.name
                if kern.role == "stage1" and k + 1 < len(kernels):
                    built = kernels[k + 1].name
                if kern.kind != "reduction" or kern.role == "finish" or built not in compiled:
                    continue
                real = _ptxas_registers(compiled[built])
                work = reduction_work(*kern.args)
                est = estimate_registers(work, 32 * work.warps)
                if real:
                    errors.append(math.log(est / real))
                print(f"{name} | {lab} | {kern.args[1]}: model {est}, ptxas {real}", flush=True)
    if errors:
        rms = math.sqrt(sum(e * e for e in errors) / len(errors))
        bias = sum(errors) / len(errors)
        print(f"{len(errors)} kernels: rms log error {rms:.2f}, mean log(model/ptxas) {bias:.2f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "names", nargs="*", help="[collect|fit] then shapes whose name contains one"
    )
    parser.add_argument("--csv", default="shape_sweep.csv", help="a shape sweep's CSV")
    parser.add_argument("--cache", default="fit_records.pkl", help="the collected plans")
    parser.add_argument("--target", default="h200", help="the device the CSV was measured on")
    parser.add_argument("--fresh", action="store_true", help="collect again what is cached")
    parser.add_argument(
        "--config",
        action="append",
        help="collect: only this config (a CSV label, e.g. 'coil': the code's own "
        "choice, to replay it after a change); repeatable",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="every config's numbers")
    parser.add_argument("--arch", type=int, default=90, help="registers: the compute capability")
    args = parser.parse_args(argv)
    args.mode = "fit"
    if args.names and args.names[0] in ("fit", "collect", "registers"):
        args.mode, args.names = args.names[0], args.names[1:]
    modes = {"collect": collect, "registers": registers, "fit": fit}
    return modes[args.mode](args)


if __name__ == "__main__":
    # The records pickle as this module's classes, whichever way it was run.
    sys.modules.setdefault("fit_strategy", sys.modules[__name__])
    KernelRecord.__module__ = ConfigRecord.__module__ = "fit_strategy"
    sys.exit(main())
