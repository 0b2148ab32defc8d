"""Compile-time tuning of matrix products (``mode="max-autotune"``): for each
``mm``/``addmm``/``bmm``/``baddbmm`` and 1x1 convolution of an imported graph,
time cuBLAS's product (cuDNN's convolution) against the ``tt.dot`` template
in each of its candidate configs (``strategy/gemm.py``) on random operands
of the product's shapes, strides and dtype, and write the choice on the op
as ``coil.gemm = "extern"`` or ``"triton 64x64x32w4s3g8"``, which ``convert-aten-to-loop`` follows
(``aten_to_loop/gemm.py``; the config travels to the kernel as the
reduction's ``template "gemm:..."``). Inductor's ``select_algorithm.py``
(``AlgorithmSelectorCache``) is the model.

The template wins where its time beats cuBLAS's plus the round trip its
fused epilogue saves (``strategy/gemm.py``'s estimate of the consumer's
kernel, counted only where the product feeds a pointwise consumer): the
products are timed alone, as Inductor times them.

Choices are kept on disk, ``<cache_dir>/gemm_autotune/<digest>.json``, the
digest hashing the product (op, shapes, strides, dtypes), the device's name
and the Triton and torch versions and the candidate list, so a second
process (or a recompile) measures nothing. ``budget_s`` bounds the time one
graph spends measuring; products left when it runs out keep the default
estimate's choice. The measuring function is a parameter (``bench(problem,
candidate) -> milliseconds``): the default one needs a GPU, tests pass
their own.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, StringAttr, UnitAttr
from xdsl.ir import Operation

from coil.dialects import dtypes
from coil.dialects.aten import VIEW_OPS, AtenOp
from coil.lowering.aten_to_loop.gemm import FLOATS, _is_pointwise_conv
from coil.lowering.aten_to_loop.lowerer import LOWERINGS
from coil.lowering.aten_to_loop.products import CASTS, TUNED, product_epilogue
from coil.strategy import gemm as G
from coil.strategy.target import module_target

log = logging.getLogger("coil")

OPS = ("aten.mm.default", "aten.addmm.default", "aten.bmm.default", "aten.baddbmm.default")
CONV = "aten.convolution.default"  # a 1x1 one (lowering/aten_to_loop/gemm.py)
MAX_CONFIGS = 6
"""Template configs timed per product (the heuristic's first)."""
DEFAULT_BUDGET_S = 60.0

EXTERN = "extern"


@dataclass(frozen=True)
class Problem:
    """One product to time: the op and its operands' types (static sizes)."""

    op: AtenOp
    name: str
    operands: tuple[tuple[tuple[int, ...], tuple[int, ...], str], ...]  # sizes, strides, dtype
    device: str
    candidates: tuple[str, ...]  # "extern" and config keys
    epilogue_s: float  # the round trip a fused epilogue saves (0 without one)
    # Per tensor operand: a view of an argument the graph passes unchanged call
    # after call (a weight): measured so, its pad for cuBLAS is made once, as
    # in the graph (bufferize's pad-constants), not timed with the product.
    static: tuple[bool, ...] = ()

    def digest(self, device_name: str, versions: str) -> str:
        text = json.dumps(
            [self.name, self.operands, device_name, versions, self.candidates, self.static]
        )
        return hashlib.sha256(text.encode()).hexdigest()[:24]


Bench = Callable[[Problem, str], float]


@dataclass
class TuneReport:
    measured: int = 0
    cached: int = 0
    skipped: int = 0  # the budget ran out
    choices: dict[str, str] = field(default_factory=dict)


def _static(t) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    from coil.dialects.symbolic import to_expr

    sizes = [to_expr(s) for s in t.shape]
    strides = [to_expr(s) for s in t.strides] if getattr(t, "strides", None) else None
    if strides is None:
        strides, acc = [], 1
        for s in reversed(sizes):
            strides.insert(0, acc)
            acc = acc * s
    if not all(getattr(e, "is_Integer", isinstance(e, int)) for e in [*sizes, *strides]):
        return None
    return tuple(int(s) for s in sizes), tuple(int(s) for s in strides)


def problems(module: builtin.ModuleOp, allow_extern: bool = True) -> list[Problem]:
    """The module's products the template could take, with static sizes."""
    target = module_target(module)
    found = []
    for op in module.walk():
        if not isinstance(op, AtenOp):
            continue
        conv = op.name == CONV and _is_pointwise_conv(op)
        if op.name not in OPS and not conv:
            continue
        out = op.results[0].type
        tensors = [v for v in op.operands if hasattr(v.type, "element_type")]
        if out.element_type not in FLOATS or any(
            v.type.element_type != out.element_type for v in tensors
        ):
            continue
        specs = [_static(v.type) for v in tensors]
        result = _static(out)
        if result is None or any(s is None for s in specs):
            continue  # symbolic sizes: the default estimate decides
        dtype = str(out.element_type)
        operands = tuple((s[0], s[1], dtype) for s in specs if s is not None)
        sizes = result[0]
        if conv:  # rows are the output pixels, columns C_out, K is C_in
            m = sizes[0] * math.prod(sizes[2:])
            n, k, batch = sizes[1], specs[0][0][1], 1
        else:
            m, n = sizes[-2], sizes[-1]
            k = specs[-2][0][-1] if specs[-2] is not None else 1
            batch = sizes[0] if len(sizes) == 3 else 1
        shape = G.GemmShape(
            m=m,
            n=n,
            k=k,
            batch=batch,
            in_bytes=dtypes.itemsize(out.element_type),
            out_bytes=dtypes.itemsize(out.element_type),
        )
        configs = [
            c.key()
            for c in G.configs(shape, target)
            if not (conv and c.k_split > 1)  # decompose-K is the matmul lowering's
        ][:MAX_CONFIGS]
        epilogue, extra = product_epilogue(op)
        saved = 0.0
        if epilogue and not _epilogue_saves(op):
            epilogue = False
        if epilogue:
            points = shape.batch * shape.m * shape.n
            saved = points * (2 * shape.out_bytes) / target.dram_bytes_per_s + target.launch_s
        candidates = ((EXTERN,) if allow_extern else ()) + tuple(configs)
        device = getattr(out, "device_attr", None)
        found.append(
            Problem(
                op,
                op.name,
                operands,
                device.data if device is not None else "cpu",
                candidates,
                saved,
                tuple(_is_static(v) for v in tensors),
            )
        )
    return found


def _is_static(value) -> bool:
    """Whether ``value`` is (a view of) a function argument marked static or
    constant (a parameter: the same tensor call after call)."""
    from xdsl.ir import BlockArgument

    from coil.transforms.buffer_hoist_constants import STATIC_ATTRS

    while isinstance(value.owner, AtenOp) and value.owner.name in VIEW_OPS:
        value = value.owner.operands[0]
    if not isinstance(value, BlockArgument):
        return False
    fn = value.owner.parent_op()
    attrs = getattr(fn, "arg_attrs", None)
    if attrs is None or value.index >= len(attrs.data):
        return False
    return any(k in attrs.data[value.index].data for k in STATIC_ATTRS)


def _epilogue_saves(op: AtenOp) -> bool:
    """Whether fusing the product's pointwise consumer (``product_epilogue``) into the
    template saves a round trip of the product: not where a reduction reads
    what that consumer computes (through views and pointwise ops), since the
    default pipeline fuses the consumer into that reduction's kernel, which
    reads the product once either way (a residual add before a layer norm: GPT-2's projections
    were credited a round trip they do not save)."""
    value = op.results[0]
    while True:
        uses = list(value.uses)
        if len(uses) != 1 or uses[0].operation.name not in VIEW_OPS:
            break
        value = uses[0].operation.results[0]
    consumers = [u.operation for u in value.uses]
    work = [r for c in consumers for r in c.results]
    seen = 0
    while work and seen < 64:
        seen += 1
        v = work.pop()
        for use in v.uses:
            user = use.operation
            if user.name in VIEW_OPS:
                work.extend(user.results)
                continue
            lowering = LOWERINGS.get(user.name)
            module = lowering.__module__ if lowering is not None else ""
            if module.endswith("aten_to_loop.reductions"):
                return False
            if module.endswith("aten_to_loop.pointwise") or user.name in CASTS:
                work.extend(user.results)  # still at the product's points
    return True


def choose(problem: Problem, times: dict[str, float]) -> str:
    """The annotation for measured ``times`` (milliseconds by candidate)."""
    configs = {c: t for c, t in times.items() if c != EXTERN}
    if not configs:
        return EXTERN
    best = min(configs, key=configs.__getitem__)
    if EXTERN in times and times[EXTERN] + problem.epilogue_s * 1e3 <= configs[best]:
        return EXTERN
    return f"triton {best}"


def tune_module(
    module: builtin.ModuleOp,
    *,
    bench: Bench | None = None,
    budget_s: float = DEFAULT_BUDGET_S,
    cache_dir: str | Path | None = None,
    allow_extern: bool = True,
    device_name: str | None = None,
    lower: Lower | None = None,
) -> TuneReport:
    """Measure and annotate every product of ``module`` (see the module doc);
    ``bench`` times a candidate (default: :class:`CudaBench` with ``lower``,
    which compiles each product's candidates in parallel first)."""
    from coil import config

    report = TuneReport()
    todo = problems(module, allow_extern)
    if not todo:
        return report
    if bench is None:
        if lower is None:
            raise ValueError("tune_module: give bench, or lower for the default cuda_bench")
        bench = CudaBench(lower)
    if device_name is None:
        device_name = _device_name(todo[0].device)
    versions = _versions()
    root = Path(cache_dir or config.cache_dir()) / "gemm_autotune"
    start = time.perf_counter()
    for p in todo:
        path = root / f"{p.digest(device_name, versions)}.json"
        choice = _read(path)
        if choice is not None:
            report.cached += 1
        elif time.perf_counter() - start > budget_s:
            report.skipped += 1
            continue
        else:
            times: dict[str, float] = {}
            prepare = getattr(bench, "prepare", None)
            if prepare is not None:  # all candidates compiled at once
                prepare(p)
            for c in p.candidates:
                try:
                    times[c] = bench(p, c)
                except Exception as e:  # a config that fails to compile or run is left out
                    log.debug("coil: gemm autotune: %s %s failed: %s", p.name, c, e)
            release = getattr(bench, "release", None)
            if release is not None:
                release(p)
            if not times:
                report.skipped += 1
                continue
            choice = choose(p, times)
            _write(path, {"choice": choice, "times_ms": times})
            report.measured += 1
        p.op.attributes[TUNED] = StringAttr(choice)
        report.choices[f"{p.name} {p.operands}"] = choice
    if report.skipped:
        log.info(
            "coil: gemm autotune: the %.0f s budget ran out; %d products keep the default choice",
            budget_s,
            report.skipped,
        )
    return report


def _read(path: Path) -> str | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    choice = data.get("choice") if isinstance(data, dict) else None
    if not isinstance(choice, str) or not (choice == EXTERN or choice.startswith("triton ")):
        return None
    return choice


def _write(path: Path, data: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{time.time_ns()}.tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(path)
    except OSError as e:  # an unwritable cache costs the measurement next time, nothing else
        log.debug("coil: gemm autotune: cannot write %s: %s", path, e)


def _versions() -> str:
    import torch
    import triton

    return f"torch {torch.__version__} triton {triton.__version__}"


def _device_name(device: str) -> str:
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    return device


# ---- the default measurement (a GPU) ----------------------------------------


def _operands(p: Problem):
    import torch

    dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    out = []
    for sizes, strides, dtype in p.operands:
        t = torch.empty_strided(sizes, strides, dtype=dtypes[dtype], device=p.device)
        t.normal_()
        out.append(t)
    return out


Lower = Callable[[builtin.ModuleOp, "str | None"], None]
"""Lowers a module of one product to the host level, with the template in the
given config (``None``: cuBLAS's call). The driver passes it
(compile_driver.lower_product runs its pipelines): the runtime does not import
the pipeline layer."""


def standalone_module(p: Problem, config_key: str | None, lower: Lower) -> builtin.ModuleOp:
    """A module of the product alone, lowered by ``lower`` with the template in
    ``config_key`` (``None``: cuBLAS's call), at the host level."""
    op = p.op
    tensors = [v for v in op.operands if hasattr(v.type, "element_type")]
    static = p.static or (False,) * len(tensors)
    arg_attrs = ArrayAttr(
        [DictionaryAttr({"coil.static": UnitAttr()} if s else {}) for s in static]
    )
    fn = func.FuncOp(
        "forward",
        ([v.type for v in tensors], [op.results[0].type]),
        arg_attrs=arg_attrs if any(static) else None,
    )
    mapping = dict(zip(tensors, fn.body.block.args))
    block = fn.body.block
    for v in op.operands:  # scalar operands: their constants come along
        if v not in mapping and isinstance(v.owner, Operation):
            const = v.owner.clone()
            block.add_op(const)
            mapping[v] = const.results[0]
    new = op.clone(value_mapper=mapping)
    new.attributes.pop(TUNED, None)
    block.add_op(new)
    block.add_op(func.ReturnOp(new.results[0]))
    module = builtin.ModuleOp([fn])
    parent = op.get_toplevel_object()
    if isinstance(parent, builtin.ModuleOp):
        module.attributes.update(parent.attributes)
    lower(module, config_key)
    return module


class CudaBench:
    """The default measurement: each candidate lowered alone (``lower``), all of
    one product's candidates compiled at once in threads
    (:meth:`prepare`; Triton's compile runs mostly outside the GIL, as
    Inductor compiles its choices in a pool before benchmarking them), then
    each timed with ``triton.testing.do_bench`` on the same random operands."""

    def __init__(self, lower: Lower, workers: int | None = None) -> None:
        self.lower = lower
        self.workers = workers
        self._modules: dict[tuple[int, str], object] = {}
        self._args: dict[int, list] = {}

    def _module(self, p: Problem, candidate: str):
        key = (id(p), candidate)
        mod = self._modules.get(key)
        if mod is None:
            from coil.runtime.codecache import load_module
            from coil.targets.python import emit_python

            module = standalone_module(p, None if candidate == EXTERN else candidate, self.lower)
            mod = load_module(emit_python(module), interpret=not p.device.startswith("cuda"))
            self._modules[key] = mod
        return mod

    def prepare(self, p: Problem) -> None:
        """Lower every candidate of ``p`` (serially: Python) and compile their
        kernels in parallel threads. A candidate that fails to lower or
        compile is left for :meth:`__call__` to fail on, alone."""
        import os
        from concurrent.futures import ThreadPoolExecutor

        from coil.runtime.launch import _prime_triton_key, launchers

        todo = []
        for c in p.candidates:
            try:
                todo.extend(launchers(self._module(p, c)))
            except Exception as e:
                log.debug("coil: gemm autotune: %s %s did not lower: %s", p.name, c, e)
        if not p.device.startswith("cuda") or not todo:
            return
        _prime_triton_key()
        workers = self.workers or min(len(todo), os.cpu_count() or 1, 32)

        def bind(launcher) -> None:
            try:
                launcher.bind()
            except Exception as e:
                log.debug("coil: gemm autotune: %s: %s", launcher.name, e)

        with ThreadPoolExecutor(workers, thread_name_prefix="coil-gemm-tune") as pool:
            list(pool.map(bind, todo))

    def __call__(self, p: Problem, candidate: str) -> float:
        """Milliseconds of ``candidate`` on random operands."""
        mod = self._module(p, candidate)
        args = self._args.get(id(p))
        if args is None:
            args = self._args[id(p)] = _operands(p)
        if not p.device.startswith("cuda"):  # Triton's interpreter: a run, no timing
            t = time.perf_counter()
            mod.call(list(args))
            return (time.perf_counter() - t) * 1e3
        import triton.testing

        return triton.testing.do_bench(lambda: mod.call(list(args)), warmup=5, rep=25)

    def release(self, p: Problem) -> None:
        """Drop ``p``'s operands and modules (the next product's need the memory)."""
        self._args.pop(id(p), None)
        for key in [k for k in self._modules if k[0] == id(p)]:
            del self._modules[key]


def cuda_bench(p: Problem, candidate: str, lower: Lower) -> float:
    """Milliseconds of ``candidate`` on random operands (one candidate, compiled alone)."""
    return CudaBench(lower)(p, candidate)


__all__ = ["CudaBench", "Problem", "TuneReport", "choose", "cuda_bench", "problems", "tune_module"]
