"""The torch.compile backend, registered as ``backend="coil"``.

Modelled on Inductor's ``compile_fx``: AOTAutograd with coil's decomposition
table hands each graph (the forward; in training also the backward) to
:func:`compile_graph`, which imports it into the aten dialect, runs the default
pipeline (``pipeline.PIPELINES["default"]``, the string ``coil pipeline``
prints) down to Triton kernels and a host wrapper, emits them as one Python
module (``-t python``), loads it through the code cache and returns its
``call``. On a GPU the kernels compile through Triton; on the CPU the same
kernels run under Triton's interpreter (correct, not fast).

Each graph goes through the graph cache (:mod:`coil.runtime.graphcache`): a
hit skips the pipeline and the emitter. ``COIL_LOG=timing`` prints each
stage's seconds, and a long compile reports its stages (:mod:`coil.timing`).

``COIL_DUMP_DIR=dir`` (or ``options={"dump_dir": dir}``) writes, per graph, the
IR after import and after every pass (one ``.mlir`` file each), the kernels
(``kernels.py``), their static costs (``costs.txt``: bytes read and written,
loads, ops), the wrapper module (``wrapper.py``) and ``repro.sh``, the
``fx-opt`` line that rebuilds ``wrapper.py`` from the imported IR.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import logging
import os
import re
import shlex
import shutil
import warnings
from collections.abc import Callable, Iterator, Sequence
from itertools import count
from pathlib import Path
from typing import Any

import torch
import torch.fx
from xdsl.dialects.builtin import ModuleOp

from coil import config
from coil.config import FALLBACKS
from coil.frontend.capture import aot_backend
from coil.frontend.fx_importer import constant_inputs, import_graph
from coil.frontend.partition import DEFAULT as DEFAULT_PARTITION
from coil.frontend.partition import check as check_partition
from coil.frontend.partition import partition_function
from coil.pipeline import (
    PIPELINES,
    available_passes,
    parse_pipeline,
    unknown_name,
    with_pass_option,
    without_pass_option,
)
from coil.runtime.aotcache import AotCache
from coil.runtime.compiled import (
    Recipe,
    TokenSpec,
    compile_kernels,
    rebuild,
    runner,
    stand_ins,
    with_cudagraphs,
)
from coil.strategy.gemm import GEMM_MODES
from coil.strategy.target import TARGETS, module_device, set_module_target
from coil.strategy.target import resolve as resolve_target
from coil.timing import CompileTrace, next_graph_label

log = logging.getLogger("coil")

Observer = Callable[[str, ModuleOp], None]
"""Called with (stage name, module): "import", then the spec of each pass run."""

OPTIONS = {
    "pipeline": "a pass-pipeline string replacing the default one",
    "dump_dir": "write every stage's IR, the kernels, the wrapper and repro.sh here",
    "fallback": "how far coil may fall back, most lenient first: 'eager' (default; an op "
    "with no lowering calls ATen, and a graph coil fails to compile runs in eager PyTorch "
    "after one warning naming the cause), 'extern' (an op with no lowering calls ATen; a "
    "failed compilation raises) or 'error' (nothing falls back: an op with no lowering "
    "fails compilation, naming it); COIL_FALLBACK sets the default",
    "cache": "False: compile every graph, bypassing the graph cache (default True; "
    "COIL_DISABLE_CACHE=1 does the same)",
    "progress": "False: no progress lines on long compiles; a number: report stages "
    "after that many seconds (default 5, COIL_PROGRESS)",
    "cudagraphs": "True: replay each compiled graph from a CUDA graph per input layout "
    "(what mode='reduce-overhead' turns on; runtime/cudagraphs.py)",
    "partition": "how a training graph is split into forward and backward (what the "
    "forward saves, what the backward recomputes): 'min-cut' (default, Inductor's "
    "min-cut rematerialization), 'save-all' (nothing recomputed), 'aggressive' (more "
    "pointwise recomputation) or 'budget=F' (saved activations at most F in [0, 1] of "
    "min-cut's, least flops recomputed); coil/frontend/partition.py",
    "wrapper": "'python' (default) or 'cpp': the host wrapper as a compiled C++ library "
    "(-t cpp) that launches the kernels through the CUDA driver; for graphs on the CPU, "
    "or without a C++ compiler, the Python wrapper runs instead, with one warning",
    "gemm": "how matrix products (mm, addmm, bmm, baddbmm: Linear layers, matmul) run: "
    "'auto' (default: cuBLAS, unless mode='max-autotune' measured a Triton tl.dot template "
    "with the consumer's pointwise chain fused faster for that product; strategy/gemm.py's "
    "estimate is logged, not acted on), 'triton' (the template wherever it applies) or 'extern' "
    "(always cuBLAS); mode='max-autotune' also times the template's candidate configs "
    "at compile time (lowering/aten_to_loop/gemm.py)",
    "max_autotune": "True: what mode='max-autotune' does, for use with other options "
    "(torch.compile takes a mode or options, not both): the matrix products timed against "
    "cuBLAS at compile time (runtime/gemm_autotune.py)",
    "gemm_budget": "seconds mode='max-autotune' may spend per graph timing its matrix "
    "products against cuBLAS (default 60; runtime/gemm_autotune.py); products left when it "
    "runs out keep gemm='auto''s estimate",
    "cpu_kernels": "how kernels over CPU tensors run: 'cpp' (default: C++/OpenMP "
    "kernels built with the system compiler, runtime/cpp_kernels.py; without a compiler, "
    "the graph runs as ATen ops after one warning) or 'triton' (Triton's interpreter, "
    "the reference for the Triton kernels); COIL_CPU_KERNELS sets the default",
    "target": "the device kernels are planned for: 'auto' (default: the GPU's properties "
    "as read, or 'cpu-interpreter' for graphs on the CPU) or a named description "
    "('h100', 'h200', 'a100', 'cpu-interpreter'; strategy/target.py)",
}
WRAPPERS = ("python", "cpp")

_FLAGS = ("cache", "cudagraphs", "max_autotune")
"""The options that are switches: True or False (None: the default)."""


def _check_option_types(options: dict[str, Any]) -> None:
    """Raise naming the option whose value is of the wrong kind, before any
    compile: a string ``"False"`` for a switch would otherwise count as true,
    and a bad value would surface only on a cache miss, as a TypeError deep in
    the compile. (Options with a fixed set of values are checked where they
    are read.)"""

    def number(value: Any) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0

    rules: dict[str, tuple[Callable[[Any], bool], str]] = {
        **{key: ((lambda v: isinstance(v, bool)), "True or False") for key in _FLAGS},
        "pipeline": ((lambda v: isinstance(v, str)), "a pass-pipeline string (`coil pipeline`)"),
        "dump_dir": ((lambda v: isinstance(v, str | os.PathLike)), "a directory path"),
        "progress": ((lambda v: isinstance(v, bool) or number(v)), "True, False or seconds >= 0"),
        "gemm_budget": (number, "seconds >= 0"),
    }
    for key, (ok, wanted) in rules.items():
        value = options.get(key)
        if value is not None and not ok(value):
            raise ValueError(f"coil: option {key} must be {wanted}, not {value!r}")


def _flag(options: dict[str, Any], key: str, default: bool) -> bool:
    """A switch's value: the option where given (not None), else ``default``."""
    value = options.get(key)
    return default if value is None else value


def with_cpu_kernels(pipeline: str) -> str:
    """``pipeline`` with ``convert-loop-to-cpp`` before ``convert-loop-to-tt``: the
    nests over CPU buffers become C++ kernels, the rest stay Triton's."""
    if re.search(r"(?<![\w-])convert-loop-to-cpp(?![\w-])", pipeline):
        return pipeline
    return re.sub(
        r"(?<![\w-])convert-loop-to-tt(?![\w-])", "convert-loop-to-cpp,convert-loop-to-tt", pipeline
    )


def _cpu_graph(gm: torch.fx.GraphModule, inputs: Sequence[Any]) -> bool:
    """Whether every tensor the graph takes or makes lives on the CPU."""
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            tensors.append(val)
    return all(t.device.type == "cpu" for t in tensors)


def run_pipeline(
    module, pipeline: str, observe: Observer | None = None, trace: CompileTrace | None = None
) -> None:
    """Apply a pass-pipeline string (the same syntax as ``fx-opt -p``), calling
    ``observe(pass spec, module)`` after each pass; ``trace`` times each pass."""
    from coil.ir import coil_context

    def callback(done, module, next_pass) -> None:
        if trace is not None:
            trace.end()
        if done is not None and observe is not None:
            observe(str(done.pipeline_pass_spec()), module)
        if trace is not None and next_pass is not None:
            trace.begin(str(next_pass.pipeline_pass_spec()))

    parse_pipeline(pipeline, available_passes(), callback).apply(coil_context(), module)
    if trace is not None:
        trace.begin("verify")
    module.verify()
    if trace is not None:
        trace.end()


def lower_product(module: ModuleOp, config_key: str | None, pipeline: str | None = None) -> None:
    """Lower a module of one matrix product (max-autotune's candidates,
    runtime/gemm_autotune.py) to the host level: cuBLAS's call where
    ``config_key`` is None, else the Triton template in that config.
    ``pipeline``: the graph's own (default: the default pipeline), so each
    candidate runs as it would in the graph: an inference graph's cuBLAS
    product with its N padded and its result left padded (bufferize's
    ``padded-results``/``pad-constants``/``tf32``). Timed on the default
    pipeline, GPT-2's vocabulary projection (N = 50257) paid a copy of its
    padded result back to eager's layout and a pad of its weight per call that
    the graph does not, and max-autotune chose the template for it where the
    graph's padded cuBLAS call is faster."""
    pipeline = pipeline or PIPELINES["default"]
    pipeline = without_pass_option(pipeline, "convert-aten-to-loop", "gemm")
    for key in ("gemm-autotune", "gemm-config"):
        pipeline = without_pass_option(pipeline, "convert-loop-to-tt", key)
    pipeline = with_pass_option(
        pipeline,
        "convert-aten-to-loop",
        "gemm=extern" if config_key is None else "gemm=triton",
    )
    if config_key is not None:
        pipeline = with_pass_option(pipeline, "convert-loop-to-tt", f'gemm-config="{config_key}"')
    run_pipeline(module, pipeline)


def emit_python(module: ModuleOp) -> str:
    """The ``-t python`` module for a host-level module (what ``fx-opt -t python`` prints)."""
    from coil.ir import coil_context
    from coil.targets.python import PythonTarget

    out = io.StringIO()
    PythonTarget().emit(coil_context(), module, out)
    return out.getvalue()


def emit_triton(module: ModuleOp) -> str:
    from coil.ir import coil_context
    from coil.targets.triton import TritonTarget

    out = io.StringIO()
    TritonTarget().emit(coil_context(), module, out)
    return out.getvalue()


def kernel_costs(module: ModuleOp) -> str:
    """One line per kernel (Triton's or C++): its name and static cost (bytes read
    and written, loads, ops), as ``convert-loop-to-tt``/``-cpp`` recorded it
    from the nest."""
    from xdsl.dialects.builtin import StringAttr

    lines = []
    for op in module.ops:
        cost = op.attributes.get("coil.cost")
        if op.name in ("tt.func", "cpu.func") and isinstance(cost, StringAttr):
            lines.append(f"{op.sym_name.data}: {cost.data}")  # type: ignore[attr-defined]
    return "\n".join(lines) + ("\n" if lines else "")


def _at_host_level(module: ModuleOp) -> bool:
    return any(op.name == "host.func" for op in module.ops)


def _on_gpu(module: ModuleOp) -> bool:
    """Whether any buffer of the module lives on a CUDA device."""
    from coil.dialects.buffer import BufferType

    for op in module.walk():
        for v in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)):
            if isinstance(v.type, BufferType) and v.type.device.type == "cuda":
                return True
    return False


class _Dump:
    """One graph's dump folder: numbered IR files, then code and repro.sh."""

    def __init__(self, root: str | os.PathLike):
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        for i in count():
            path = root / f"graph_{i:03d}"
            try:
                path.mkdir()
                break
            except FileExistsError:
                continue
        self.path = path
        self.files: list[str] = []

    def stage(self, name: str, module: ModuleOp) -> None:
        from coil.ir import print_module

        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name.split("{")[0]).strip("_") or "stage"
        file = f"{len(self.files):03d}-{slug}.mlir"
        # The imported IR keeps its locations: repro.sh replays from it, and the
        # wrapper's comments name the user lines they carry.
        (self.path / file).write_text(print_module(module, debuginfo=not self.files))
        self.files.append(file)

    def code(self, module: ModuleOp, wrapper: str, pipeline: str) -> None:
        (self.path / "kernels.py").write_text(emit_triton(module))
        from coil.dialects import cpu

        if any(isinstance(op, cpu.FuncOp) for op in module.ops):
            from coil.targets.cpp_kernels import emit_cpp_kernels

            (self.path / "kernels.cpp").write_text(emit_cpp_kernels(module))
        (self.path / "costs.txt").write_text(kernel_costs(module))
        (self.path / "wrapper.py").write_text(wrapper)
        repro = self.path / "repro.sh"
        repro.write_text(
            "#!/bin/sh\n"
            "# Rebuilds wrapper.py from the imported IR with the pipeline coil ran:\n"
            "# fx-opt replays exactly what the torch.compile backend did.\n"
            'cd "$(dirname "$0")" || exit 1\n'
            f"fx-opt {self.files[0]} -p {shlex.quote(pipeline)} -t python -o repro_wrapper.py"
            " || exit 1\n"
            'cmp -s repro_wrapper.py wrapper.py && echo "repro: repro_wrapper.py == wrapper.py"'
            ' || { echo "repro: repro_wrapper.py differs from wrapper.py"; exit 1; }\n'
        )
        repro.chmod(0o755)


def compile_graph(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    *,
    pipeline: str | None = None,
    observe: Observer | None = None,
    dump_dir: str | os.PathLike | None = None,
    cache: bool | None = None,
    options: dict[str, Any] | None = None,
    progress: bool | float | None = None,
    label: str | None = None,
    wrapper: str = "python",
    static_inputs: Sequence[int] = (),
    tune_gemms: dict[str, Any] | None = None,
) -> Callable[..., Any]:
    """Compile one aten-level FX graph; returns a callable taking the graph's inputs.
    ``wrapper="cpp"`` runs the host program as a C++ library (see :data:`OPTIONS`).
    ``static_inputs``: positions of inputs passed unchanged call after call
    (parameters, buffers); their launches skip the alignment check where they
    were aligned when traced (``coil.aligned``, see the importer).

    The graph cache (:mod:`coil.runtime.graphcache`) is used unless ``cache`` is
    False, ``COIL_DISABLE_CACHE`` is set (when ``cache`` is None), or a dump or
    ``observe`` needs every stage; ``options`` (the backend's) enter its key.
    ``progress`` is the backend option of that name (:func:`coil.config.progress_after`);
    ``label`` names the graph in timing and progress lines. ``tune_gemms``
    (``mode="max-autotune"``): keyword arguments of
    :func:`coil.runtime.gemm_autotune.tune_module`, which times the graph's
    matrix products after import and writes each choice on its op."""
    pipeline = pipeline or PIPELINES["default"]
    dump_dir = dump_dir or config.dump_dir()
    trace = CompileTrace(
        label or next_graph_label(),
        timing=config.log_timing(),
        progress_after=config.progress_after(progress),
    )
    with trace, collector_paused():
        return _compile(
            gm,
            example_inputs,
            pipeline,
            observe,
            dump_dir,
            cache,
            options,
            trace,
            wrapper,
            static_inputs,
            tune_gemms,
        )


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Keep Python's cyclic garbage collector off while a graph compiles.

    A compile allocates millions of small objects (xDSL ops and attributes,
    sympy expressions), and allocation-triggered collections then walk them
    and everything else alive -- torch, the model, earlier graphs -- again and
    again: 30-40% of the passes' time on GPT-2. Most of what a compile builds
    stays alive until it ends, so its cyclic garbage is small next to the
    process (a 48-layer GPT-2 compile peaked at the same RSS with and without
    it); the collector finds it after the compile. Measured against
    ``gc.freeze`` of what existed before the compile (which lets the collector
    run on the compile's own objects): 4.8 s against 5.7 s for that model. A
    process that turned the collector off itself is left as it is."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _compile(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    pipeline: str,
    observe: Observer | None,
    dump_dir: str | os.PathLike | None,
    cache: bool | None,
    options: dict[str, Any] | None,
    trace: CompileTrace,
    wrapper: str = "python",
    static_inputs: Sequence[int] = (),
    tune_gemms: dict[str, Any] | None = None,
) -> Callable[..., Any]:
    from coil.runtime import graphcache
    from coil.runtime.codecache import load_module

    with trace.stage("import"):
        module = import_graph(gm, example_inputs, static_inputs=static_inputs)
        constants = constant_inputs(module, gm)
        tokens = effect_tokens(gm)
        # The device's properties go into the IR (and so into the cache key).
        target = (options or {}).get("target", "auto")
        set_module_target(module, resolve_target(target, module_device(module)))
    if tune_gemms is not None:
        # Each product's measured choice goes into the IR (and so the cache key).
        from coil.runtime.gemm_autotune import tune_module

        tune = dict(tune_gemms)
        if tune.get("lower") is lower_product:
            # Each candidate is lowered by this graph's pipeline (its padding rules).
            tune["lower"] = functools.partial(lower_product, pipeline=pipeline)
        with trace.stage("gemm-autotune"):
            tune_module(module, **tune)

    key = None
    bypass = graphcache.bypass_reason(cache, dump_dir=dump_dir, observed=observe is not None)
    if bypass is None and wrapper == "cpp":
        bypass = "wrapper='cpp' (the C++ wrapper has its own build cache)"
    if bypass is not None:
        graphcache.report(trace.label, "bypass", bypass)
        trace.outcome = f"cache bypass ({bypass})"
    else:
        with trace.stage("cache-lookup"):
            key = graphcache.graph_key(module, pipeline, options)
            hit, reason = graphcache.read_entry(key)
        if hit is not None:
            recipe = Recipe(hit.source, hit.interpret, constants, tokens)
            try:
                with trace.stage("load"):
                    run = rebuild(recipe)
            except Exception as error:  # an entry that no longer loads is rebuilt
                reason = f"the cached module failed to load ({type(error).__name__}: {error})"
            else:
                graphcache.report(trace.label, "hit", reason, key)
                trace.outcome = "cache hit"
                return run
        graphcache.report(trace.label, "miss", reason, key)
        trace.outcome = f"cache miss ({reason})"

    dump = None
    if dump_dir:

        def open_dump() -> None:
            nonlocal dump
            dump = _Dump(dump_dir)

        _debug_output(f"to {dump_dir}", open_dump)

    def stage(name: str, module: ModuleOp) -> None:
        if dump is not None:
            _debug_output(f"the IR after {name}", lambda: dump.stage(name, module))
        if observe is not None:
            observe(name, module)

    stage("import", module)
    run_pipeline(module, pipeline, stage, trace)
    if not _at_host_level(module):
        return _reference(module, constants, pipeline)
    if wrapper == "cpp" and (run_cpp := _cpp_wrapper(module, constants, dump)) is not None:
        return _with_tokens(run_cpp, tokens)
    with trace.stage("emit"):
        source = emit_python(module)
    if dump is not None:
        _debug_output("the code", lambda: dump.code(module, source, pipeline))
    interpret = not _on_gpu(module)
    with trace.stage("load"):
        loaded = load_module(source, interpret=interpret)
    if not interpret:
        with trace.stage("kernels"):
            compile_kernels(loaded)
    if key is not None:
        with trace.stage("cache-store"):
            graphcache.write_entry(key, graphcache.CachedGraph(source, interpret))
    return runner(loaded.call, Recipe(source, interpret, constants, tokens))


def effect_tokens(gm: torch.fx.GraphModule) -> dict[int, TokenSpec]:
    """Input position -> its stand-in's spec, for each effect token of the graph
    (the first argument of a ``with_effects`` node). AOTAutograd passes None for
    a token at run time; the compiled module takes an empty tensor like the one
    its trace saw (a token carries no data: the importer returns it unchanged)."""
    from coil.frontend.fx_importer import is_effect_token

    tokens = {}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for k, node in enumerate(placeholders):
        val = node.meta.get("val")
        if is_effect_token(node) and isinstance(val, torch.Tensor):
            tokens[k] = (tuple(val.shape), val.dtype, str(val.device))
    return tokens


def _with_tokens(run: Callable[..., Any], specs: dict[int, TokenSpec]) -> Callable[..., Any]:
    if not specs:
        return run
    tokens = stand_ins(specs)

    def run_with_tokens(*args: Any) -> Any:
        inputs = list(args)
        for k, token in tokens.items():
            inputs[k] = token
        return run(*inputs)

    for name in ("coil_source", "coil_wrapper", "coil_cpp", "coil_constants", "coil_host_rng"):
        if hasattr(run, name):
            setattr(run_with_tokens, name, getattr(run, name))
    return run_with_tokens


def _debug_output(what: str, write: Callable[[], None]) -> None:
    """Write a dump file; a failure is a warning: a debug option must never
    change whether a program compiles."""
    try:
        write()
    except Exception as e:
        message = f"coil: dump_dir: could not write {what}: {type(e).__name__}: {e}"
        warnings.warn(message, stacklevel=3)


def _cpp_wrapper(
    module: ModuleOp, constants: list[Any], dump: _Dump | None
) -> Callable[..., Any] | None:
    """The graph's C++ wrapper, built and loaded; None (after one warning) where it
    cannot run: a graph on the CPU (its kernels launch through the CUDA driver) or
    no C++ toolchain. The caller then uses the Python wrapper."""
    from coil.runtime import cpp_wrapper

    problem = None
    if not _on_gpu(module):
        problem = "needs CUDA tensors (its kernels launch through the CUDA driver)"
    elif (missing := cpp_wrapper.toolchain_problem()) is not None:
        problem = f"cannot be built here: {missing}"
    if problem is not None:
        warnings.warn(
            f"coil: wrapper='cpp' {problem}; this graph uses the Python wrapper instead",
            stacklevel=4,
        )
        return None
    loaded = cpp_wrapper.load(module)
    if dump is not None:
        (dump.path / "wrapper.cpp").write_text(loaded.source)
    call = loaded.call

    def run(*args: Any) -> Any:
        return call([*args, *constants])

    run.coil_source = loaded.source  # type: ignore[attr-defined]
    run.coil_wrapper = loaded.directory  # type: ignore[attr-defined]
    run.coil_cpp = loaded  # type: ignore[attr-defined]
    run.coil_constants = constants  # type: ignore[attr-defined]
    run.coil_host_rng = any(op.name == "host.seed" for op in module.walk())  # type: ignore[attr-defined]
    return run


def _reference(module: ModuleOp, constants: list[Any], pipeline: str) -> Callable[..., Any]:
    """A pipeline that stops before the host level runs in the reference executor."""
    from coil.runtime.aten_executor import run_module

    warnings.warn(
        f"coil: the pipeline '{pipeline}' does not reach the host level; the compiled "
        "graph runs through the reference executor (correct, not fast)",
        stacklevel=3,
    )

    def run(*args: Any) -> Any:
        return run_module(module, [*args, *constants])

    return run


def _with_fallback(pipeline: str, fallback: str) -> str:
    """The pipeline with the per-op part of the policy: under 'error' an op with no
    lowering fails ``convert-aten-to-loop`` instead of becoming an extern."""
    if fallback not in FALLBACKS:
        raise ValueError(
            f"coil: option fallback must be one of {', '.join(map(repr, FALLBACKS))}, "
            f"not {fallback!r}"
        )
    if fallback != "error":
        return pipeline
    return re.sub(
        r"convert-aten-to-loop(?![{\w-])", "convert-aten-to-loop{fallback=error}", pipeline
    )


def _dynamo_signal(e: BaseException) -> bool:
    """Whether ``e`` is Dynamo's own control flow rather than a failure: a request
    to restart the trace (``RestartAnalysis`` and its kinds, e.g. the
    ``TensorifyScalarRestartAnalysis`` that ``dynamic=True`` raises from
    AOTAutograd's scalar pass), to skip the frame, to graph-break
    (``Unsupported``), or an error Dynamo already reports
    (``ShortenTraceback``). Dynamo's ``call_user_compiler`` re-raises these
    itself; a backend that ran eager on them would silently never compile."""
    from torch._dynamo import exc

    return isinstance(
        e, (exc.RestartAnalysis, exc.SkipFrame, exc.ShortenTraceback, exc.Unsupported)
    )


def _or_eager(compile_one: Callable[..., Any], what: str) -> Callable[..., Any]:
    """``compile_one``, running its graph in eager PyTorch (after one warning naming
    the cause) when compiling it fails: the 'eager' fallback policy.

    AOTAutograd's graph is itself a callable of the same inputs (aten ops, run by
    eager PyTorch: what ``aot_eager`` runs), so only the graph that failed falls
    back; a training step whose backward compiles keeps its compiled backward."""

    def compile_or_eager(gm: torch.fx.GraphModule, inputs: list[Any]) -> Callable[..., Any]:
        try:
            return compile_one(gm, inputs)
        except Exception as e:
            if _dynamo_signal(e):
                raise
            _warn_eager(what, e)
            return gm

    return compile_or_eager


def _warn_eager(what: str, e: BaseException) -> None:
    lines = str(e).strip().splitlines()
    cause = f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__
    log.debug("coil: compiling %s failed", what, exc_info=e)
    warnings.warn(
        f"coil: could not compile {what} ({cause}); it runs in eager PyTorch instead "
        "(options={'fallback': 'extern'} raises the error)",
        stacklevel=2,
    )


def _graph_pipeline(
    pipeline: str,
    inference: bool,
    tf32: bool,
    constants: bool = True,
    deterministic: bool | None = None,
) -> str:
    """``pipeline`` for one graph: for an inference graph a plain ``bufferize``
    gets ``padded-results=true`` and a plain ``aten-channels-last``
    ``inference=true``, and with ``constants`` (the Python wrapper, which runs
    a constants function) ``buffer-hoist-constants`` ``inference=true`` and
    ``bufferize`` ``pad-constants=true``; where cuBLAS may run f32 products in
    TF32, ``bufferize`` gets ``tf32=true`` (it pads f32 products then). A pass
    given its own options is left as written. Under
    ``torch.use_deterministic_algorithms`` (``deterministic``, default: torch's
    current setting) ``convert-aten-to-loop`` gets ``deterministic=true``, also
    next to options it has (scatters go to ATen's deterministic kernels). The
    result is the cache key's pipeline."""
    options: dict[str, list[str]] = {
        "bufferize": [],
        "aten-channels-last": [],
        "buffer-hoist-constants": [],
    }
    if inference:
        options["bufferize"].append("padded-results=true")
        options["aten-channels-last"].append("inference=true")
        if constants:
            options["bufferize"].append("pad-constants=true")
            options["buffer-hoist-constants"].append("inference=true")
    if tf32:
        options["bufferize"].append("tf32=true")
    for name, given in options.items():
        if given:
            pipeline = re.sub(rf"(?<![\w-]){name}(?=,|$)", f"{name}{{{' '.join(given)}}}", pipeline)
    if tf32:  # gemm templates multiply f32 in TF32 where cuBLAS may
        for name in ("convert-aten-to-loop", "convert-loop-to-tt"):
            pipeline = with_pass_option(pipeline, name, "tf32=true")
    if deterministic is None:
        deterministic = torch.are_deterministic_algorithms_enabled()
    if deterministic:
        name = "convert-aten-to-loop"
        pipeline = re.sub(rf"(?<![\w-]){name}(?=,|$)", f"{name}{{}}", pipeline)
        pipeline = re.sub(
            rf"(?<![\w-]){name}\{{(?![^}}]*deterministic)([^}}]*)\}}",
            lambda m: f"{name}{{{(m.group(1) + ' ').lstrip()}deterministic=true}}",
            pipeline,
        )
    return pipeline


MAX_AUTOTUNE_GEMM_CONFIGS = 6
"""Candidate configs per gemm template that ``mode="max-autotune"`` times at run
time where compile-time tuning left a product untuned (symbolic sizes, budget)."""
DEFAULT_GEMM_BUDGET_S = 60.0


def _with_gemm(pipeline: str, gemm: str, max_autotune: bool) -> str:
    """``pipeline`` with the backend option ``gemm`` given to ``convert-aten-to-loop``
    (where the pipeline does not set it), and under ``mode="max-autotune"`` the
    template's candidate configs timed (``convert-loop-to-tt{gemm-autotune=N}``).
    The result is the cache key's pipeline."""
    if gemm != "auto":
        pipeline = with_pass_option(pipeline, "convert-aten-to-loop", f"gemm={gemm}")
    if max_autotune:
        pipeline = with_pass_option(
            pipeline, "convert-loop-to-tt", f"gemm-autotune={MAX_AUTOTUNE_GEMM_CONFIGS}"
        )
    return pipeline


def _static_input_indices(training: bool) -> list[int]:
    """Inputs AOTAutograd passes unchanged call after call (parameters, buffers),
    as positions among the compiled forward graph's inputs. Effect tokens come
    first in that graph; torch moves the indices past them for an inference
    graph only (graph_capture_wrappers: not when tracing the joint graph), so a
    training forward's are moved here."""
    ctx = torch._guards.TracingContext.try_get()
    meta = getattr(ctx, "fw_metadata", None) if ctx is not None else None
    indices = list(getattr(meta, "static_input_indices", None) or [])
    tokens = len(getattr(meta, "tokens", None) or ()) if training else 0
    return [i + tokens for i in indices]


def _mutated_inputs(gm: torch.fx.GraphModule) -> list[int]:
    """Positions of the inputs a graph writes in place: AOTAutograd keeps an
    inference graph's input mutations in it as ``copy_`` into the input."""
    inputs = {n: k for k, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")}
    return sorted(
        {
            inputs[n.args[0]]
            for n in gm.graph.nodes
            if n.op == "call_function"
            and n.target is torch.ops.aten.copy_.default
            and n.args
            and n.args[0] in inputs
        }
    )


def _attention_rewrite(pipeline: str) -> Callable[[torch.fx.GraphModule], Any] | None:
    """The attention rewrite for graphs that get a backward, where the pipeline
    runs ``aten-fuse-attention`` (with its options): in training the pass
    would come after autograd, so the same rewrite runs on the Dynamo graph
    before AOTAutograd (:func:`coil.frontend.attention.fuse_attention_for_autograd`)."""
    if "aten-fuse-attention" not in pipeline:
        return None
    from xdsl.passes import PassPipeline

    for p in PassPipeline.parse_spec(available_passes(), pipeline).passes:
        if p.name == "aten-fuse-attention":
            from coil.frontend.attention import fuse_attention_for_autograd

            fused_only = bool(getattr(p, "fused_only", True))
            return lambda gm: fuse_attention_for_autograd(gm, fused_only)
    return None


def coil(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    options: dict | None = None,
    mode: str | None = None,
    **_: Any,
) -> Callable[..., Any]:
    """The ``torch.compile`` backend; ``options`` are listed in :data:`OPTIONS`;
    ``mode="reduce-overhead"`` turns on ``cudagraphs``."""
    options = dict(options or {})
    note = "coil.backend.OPTIONS says what each does"
    for key in options:
        if key not in OPTIONS:
            known = list(OPTIONS)
            raise ValueError("coil: " + unknown_name("option", key, known, known, "options", note))
    _check_option_types(options)
    fallback = options.get("fallback") or config.fallback()
    pipeline = _with_fallback(options.get("pipeline") or PIPELINES["default"], fallback)
    if "pipeline" in options:
        # A pass or option misspelled is the user's to fix, under every fallback
        # policy: raise here, before a compile failure could fall back to eager.
        try:
            parse_pipeline(pipeline)
        except ValueError as e:
            raise ValueError(f"coil: option pipeline: {e}") from None
    dump_dir = options.get("dump_dir")
    partition_fn = partition_function(check_partition(options.get("partition", DEFAULT_PARTITION)))
    cudagraphs = _flag(options, "cudagraphs", mode == "reduce-overhead")
    wrapper = options.get("wrapper", "python")
    if wrapper not in WRAPPERS:
        raise ValueError(f"coil: option wrapper must be 'python' or 'cpp', not {wrapper!r}")
    gemm = options.get("gemm", "auto")
    if gemm not in GEMM_MODES:
        known = ", ".join(repr(m) for m in GEMM_MODES)
        raise ValueError(f"coil: option gemm must be one of {known}, not {gemm!r}")
    max_autotune = _flag(options, "max_autotune", mode == "max-autotune")
    pipeline = _with_gemm(pipeline, gemm, max_autotune)
    tune_gemms = None
    if max_autotune and gemm != "extern":
        budget = options.get("gemm_budget")
        tune_gemms = {
            "budget_s": float(DEFAULT_GEMM_BUDGET_S if budget is None else budget),
            "allow_extern": gemm == "auto",
            "lower": lower_product,
        }
    target = options.get("target", "auto")
    if target != "auto" and target not in TARGETS:
        known = ", ".join(["auto", *TARGETS])
        raise ValueError(f"coil: option target must be one of {known}, not {target!r}")
    # Resolved here, so the setting (option or COIL_CPU_KERNELS) is in the cache keys.
    cpu_kernels = options["cpu_kernels"] = config.cpu_kernels(options.get("cpu_kernels"))

    def compiler(kind: str, inference: bool = False) -> Callable[..., Callable[..., Any]]:
        # An inference graph's results are all user-visible: a padded GEMM's
        # product may be returned with its padded row stride (as Inductor does),
        # and convolutions may run channels-last (Inductor's rules for inference
        # graphs); a training forward also returns what its backward was traced
        # to read, with eager's strides.
        tf32 = torch.backends.cuda.matmul.allow_tf32
        graph_pipeline = _graph_pipeline(pipeline, inference, tf32, wrapper == "python")

        def compile_one(graph: torch.fx.GraphModule, inputs: list[Any]) -> Callable[..., Any]:
            # The backward's saved activations change every step: none is static.
            static = _static_input_indices(not inference) if kind == "forward" else ()
            this_pipeline = graph_pipeline
            if cpu_kernels == "cpp" and wrapper == "python" and _cpu_graph(graph, inputs):
                from coil.runtime.cpp_kernels import find_compiler, say_once

                if find_compiler() is None:
                    say_once(
                        "coil: no C++ compiler found (COIL_CXX, CXX, g++, clang++, c++) for "
                        "CPU kernels: CPU graphs run as ATen ops (eager PyTorch); install "
                        "g++ or pass options={'cpu_kernels': 'triton'} for Triton's interpreter"
                    )
                    return graph
                this_pipeline = with_cpu_kernels(graph_pipeline)
            run = compile_graph(
                graph,
                inputs,
                pipeline=this_pipeline,
                dump_dir=dump_dir,
                cache=options.get("cache"),
                options=options,
                progress=options.get("progress"),
                label=next_graph_label(kind),
                wrapper=wrapper,
                static_inputs=static,
                tune_gemms=tune_gemms,
            )
            if not cudagraphs:
                return run
            return with_cudagraphs(run, static, f"the {kind} graph", _mutated_inputs(graph))

        return compile_one

    fw, bw, inf = compiler("forward"), compiler("backward"), compiler("forward", inference=True)
    # Inference graphs (the ones the AOTAutograd cache takes) compile with this pipeline.
    inference_pipeline = _graph_pipeline(
        pipeline, True, torch.backends.cuda.matmul.allow_tf32, wrapper == "python"
    )
    aot_cache = AotCache(
        inference_pipeline,
        {**options, "cudagraphs": cudagraphs},  # mode="reduce-overhead" sets it too
        enabled=options.get("cache"),
        dump_dir=dump_dir or config.dump_dir(),
    )
    before_autograd = _attention_rewrite(pipeline)
    if fallback != "eager":
        return aot_backend(fw, bw, inf, aot_cache, before_autograd, partition_fn)(
            gm, example_inputs
        )
    try:
        return aot_backend(
            _or_eager(fw, "the forward graph"),
            _or_eager(bw, "the backward graph"),
            _or_eager(inf, "the forward graph"),
            aot_cache,
            before_autograd,
            partition_fn,
        )(gm, example_inputs)
    except Exception as e:  # AOTAutograd itself failed (tracing, decompositions)
        if _dynamo_signal(e):
            raise
        _warn_eager("the graph", e)
        return gm


def export_cpp(model: Any, example_inputs: Sequence[Any], out_dir: str | os.PathLike) -> Path:
    """Compile ``model`` (one graph, CUDA inputs, inference) with the C++ wrapper and
    write the standalone form to ``out_dir``: ``wrapper.so``, ``kernels/``,
    ``wrapper.cpp`` and ``io.txt`` with the example inputs and eager's outputs
    (what examples/run_cpp.cpp loads, runs and checks). A driver, so it lives
    here, above ``runtime/cpp_wrapper.py`` (which builds and loads the library)."""
    from coil.runtime.cpp_wrapper import CppBuildError, write_example_io

    runs: list[tuple[Any, list[Any]]] = []

    def compile_fw(gm: Any, inputs: list[Any]) -> Any:
        run = compile_graph(gm, inputs, wrapper="cpp")
        if not hasattr(run, "coil_cpp"):
            raise CppBuildError("coil: export needs a graph on a CUDA device and a C++ compiler")

        def recording(*args: Any) -> Any:
            runs.append((run, list(args)))
            return run(*args)

        return recording

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=aot_backend(compile_fw), fullgraph=True)
    with torch.no_grad():
        compiled(*example_inputs)
        expected = model(*example_inputs)
    torch._dynamo.reset()
    if len(runs) != 1:
        raise CppBuildError(f"coil: export takes a model of one graph; this one ran {len(runs)}")
    run, args = runs[0]
    out = Path(out_dir)
    shutil.copytree(run.coil_wrapper, out, dirs_exist_ok=True)
    inputs = [*args, *run.coil_constants]
    outputs = torch.utils._pytree.tree_leaves(expected)
    if len(outputs) != len(run.coil_cpp.call_flat(list(inputs))):
        raise CppBuildError("coil: export: the graph's outputs are not the model's outputs")
    write_example_io(out, inputs, outputs)
    return out
