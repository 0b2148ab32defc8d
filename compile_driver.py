"""The compile driver: one aten-level FX graph -> a loaded, callable module.

:func:`compile_graph` imports the graph into the aten dialect, runs a
pass-pipeline (default ``pipeline.PIPELINES["default"]``, the string ``coil
pipeline`` prints) down to Triton kernels and a host wrapper, emits them as one
Python module (``-t python``), loads it through the code cache and returns its
``call``. On a GPU the kernels compile through Triton; on the CPU the same
kernels run under Triton's interpreter (correct, not fast). The torch.compile
glue around it (options, fallback to eager, AOTAutograd, partition, CUDA
graphs) is :mod:`coil.backend`'s; this module sits below it and above
``runtime/``, and imports neither the backend nor the CLI.

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
import os
import re
import shlex
import warnings
from collections.abc import Callable, Iterator, Sequence
from itertools import count
from pathlib import Path
from typing import Any

import torch
import torch.fx
from xdsl.dialects.builtin import ModuleOp

from coil import config
from coil.frontend.fx_importer import constant_inputs, import_graph
from coil.pipeline import (
    PIPELINES,
    available_passes,
    parse_pipeline,
    with_pass_option,
    without_pass_option,
)
from coil.runtime.compiled import (
    Recipe,
    TokenSpec,
    compile_kernels,
    rebuild,
    runner,
    stand_ins,
)
from coil.strategy.target import module_device, set_module_target
from coil.strategy.target import resolve as resolve_target
from coil.timing import CompileTrace, next_graph_label

Observer = Callable[[str, ModuleOp], None]
"""Called with (stage name, module): "import", then the spec of each pass run."""


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
    donated_inputs: Sequence[int] = (),
) -> Callable[..., Any]:
    """Compile one aten-level FX graph; returns a callable taking the graph's inputs.
    ``wrapper="cpp"`` runs the host program as a C++ library (see ``coil.backend.OPTIONS``).
    ``static_inputs``: positions of inputs passed unchanged call after call
    (parameters, buffers); their launches skip the alignment check where they
    were aligned when traced (``coil.aligned``, see the importer).
    ``donated_inputs``: positions of a backward's inputs that only it reads
    (``coil.donated``, see the importer), whose storage memory-plan may reuse.

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
            donated_inputs,
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
    donated_inputs: Sequence[int] = (),
) -> Callable[..., Any]:
    from coil.runtime import graphcache
    from coil.runtime.codecache import load_module

    with trace.stage("import"):
        module = import_graph(
            gm, example_inputs, static_inputs=static_inputs, donated_inputs=donated_inputs
        )
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
    cannot run: a CPU graph with Triton kernels (they run only under Triton's
    interpreter, from Python; a CPU graph's C++ kernels are called directly) or
    no C++ toolchain. The caller then uses the Python wrapper."""
    from coil.dialects import tt
    from coil.runtime import cpp_wrapper

    problem = None
    if not _on_gpu(module) and any(isinstance(op, tt.FuncOp) for op in module.ops):
        problem = (
            "runs Triton kernels on the CPU (Triton's interpreter runs from Python; "
            "cpu_kernels='cpp' makes C++ kernels the C++ wrapper calls)"
        )
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
