"""The torch.compile backend, registered as ``backend="coil"``.

Modelled on Inductor's ``compile_fx``: AOTAutograd with coil's decomposition
table hands each graph (the forward; in training also the backward) to
:func:`coil.compile_driver.compile_graph`, which imports it into the aten
dialect, runs the pipeline down to Triton kernels and a host wrapper, and
loads the emitted module (the graph cache, timing and ``COIL_DUMP_DIR`` are
described there). This module is the torch.compile glue around that driver:
the backend options (:data:`OPTIONS`) and their checks, each graph's pipeline
(inference padding, TF32, determinism, gemm modes, CPU kernels), the fallback
to eager, Dynamo's own signals, partition, the AOTAutograd cache, effect
tokens, static and mutated inputs, CUDA graphs, the attention rewrite before
autograd, and :func:`export_cpp`.

The driver's public names (``compile_graph``, ``run_pipeline``,
``lower_product``, ``emit_python``, ...) stay importable from here.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.fx

from coil import config
from coil.compile_driver import (
    Observer,
    collector_paused,
    compile_graph,
    effect_tokens,
    emit_python,
    emit_triton,
    kernel_costs,
    lower_product,
    run_pipeline,
)
from coil.config import FALLBACKS
from coil.frontend.capture import (
    aot_backend,
    donated_input_indices,
    keep_outputs_apart_from_donations,
)
from coil.frontend.partition import DEFAULT as DEFAULT_PARTITION
from coil.frontend.partition import check as check_partition
from coil.frontend.partition import partition_function
from coil.pipeline import (
    PIPELINES,
    available_passes,
    parse_pipeline,
    unknown_name,
    with_pass_option,
)
from coil.runtime.aotcache import AotCache
from coil.runtime.compiled import with_cudagraphs
from coil.runtime.cpp_kernels import vector_bytes
from coil.strategy.gemm import GEMM_MODES
from coil.strategy.target import TARGETS
from coil.timing import next_graph_label

__all__ = [  # the driver's names, re-exported (see the module docstring)
    "Observer",
    "collector_paused",
    "compile_graph",
    "effect_tokens",
    "emit_python",
    "emit_triton",
    "kernel_costs",
    "lower_product",
    "run_pipeline",
    # this module's own
    "OPTIONS",
    "WRAPPERS",
    "coil",
    "export_cpp",
    "with_cpu_kernels",
]

log = logging.getLogger("coil")

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
    "pdl": "True: programmatic dependent launch on sm90+ GPUs: each kernel may start "
    "while the previous one runs, loads the graph's static inputs (a Linear's weight "
    "rows) before it waits for it, and waits before anything else "
    "(convert-loop-to-tt{pdl=true}, lowering/loop_to_tt/pdl.py); default False, "
    "COIL_PDL=1 sets the default; nothing changes on the CPU or older GPUs",
    "target": "the device kernels are planned for: 'auto' (default: the GPU's properties "
    "as read, or 'cpu-interpreter' for graphs on the CPU) or a named description "
    "('h100', 'h200', 'a100', 'cpu-interpreter'; strategy/target.py)",
}
WRAPPERS = ("python", "cpp")

_FLAGS = ("cache", "cudagraphs", "max_autotune", "pdl")
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
    nests over CPU buffers become C++ kernels, the rest stay Triton's; with
    ``vector-bytes=64`` where the kernels compile for 512-bit vectors."""
    if re.search(r"(?<![\w-])convert-loop-to-cpp(?![\w-])", pipeline):
        return pipeline
    width = vector_bytes()
    cpp = "convert-loop-to-cpp" + (f"{{vector-bytes={width}}}" if width != 32 else "")
    return re.sub(r"(?<![\w-])convert-loop-to-tt(?![\w-])", f"{cpp},convert-loop-to-tt", pipeline)


def _cpu_graph(gm: torch.fx.GraphModule, inputs: Sequence[Any]) -> bool:
    """Whether every tensor the graph takes or makes lives on the CPU."""
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            tensors.append(val)
    return all(t.device.type == "cpu" for t in tensors)


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
    gets ``padded-results=true`` and a plain ``aten-channels-last`` and
    ``aten-cpu-packed-linear`` ``inference=true``, and with ``constants`` (the
    Python wrapper, which runs a constants function) ``buffer-hoist-constants``
    ``inference=true`` and ``bufferize`` ``pad-constants=true``; where cuBLAS
    may run f32 products in TF32, ``bufferize`` gets ``tf32=true`` (it pads f32
    products then). A pass given its own options is left as written. Under
    ``torch.use_deterministic_algorithms`` (``deterministic``, default: torch's
    current setting) ``convert-aten-to-loop`` gets ``deterministic=true``, also
    next to options it has (scatters go to ATen's deterministic kernels). The
    result is the cache key's pipeline."""
    options: dict[str, list[str]] = {
        "bufferize": [],
        "aten-channels-last": [],
        "aten-cpu-packed-linear": [],
        "buffer-hoist-constants": [],
    }
    if inference:
        options["bufferize"].append("padded-results=true")
        options["aten-channels-last"].append("inference=true")
        options["aten-cpu-packed-linear"].append("inference=true")
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


def _symbolic(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> bool:
    """The graph takes symbolic sizes (``dynamic=True`` or a dynamic recompile):
    a SymInt/SymFloat input, or a tensor input whose traced sizes are symbolic."""
    if any(isinstance(x, (torch.SymInt, torch.SymFloat)) for x in example_inputs):
        return True
    for node in gm.graph.find_nodes(op="placeholder"):
        value = node.meta.get("example_value")
        if isinstance(value, torch.Tensor) and any(
            isinstance(s, torch.SymInt) for s in value.shape
        ):
            return True
    return False


def _cpp_shape_guards(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> None:
    """Dynamo's C++ symbolic-shape guards for a graph with symbolic sizes
    (``COIL_SHAPE_GUARDS``, config.py says why). Dynamo builds a frame's guards
    after its backend returns, so setting the flag here already serves this
    frame; it stays set for the process (later dynamic frames profit too)."""
    dynamo_config = torch._dynamo.config
    if dynamo_config.enable_cpp_symbolic_shape_guards or config.shape_guards() != "cpp":
        return
    if _symbolic(gm, example_inputs):
        dynamo_config.enable_cpp_symbolic_shape_guards = True
        log.info("coil: symbolic sizes: Dynamo's C++ shape guards on (COIL_SHAPE_GUARDS)")


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
    _cpp_shape_guards(gm, example_inputs)
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
    if _flag(options, "pdl", config.pdl()):
        pipeline = with_pass_option(pipeline, "convert-loop-to-tt", "pdl=true")
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
            donated = donated_input_indices() if kind == "backward" else ()
            if kind == "forward" and not inference:
                keep_outputs_apart_from_donations(graph)
            this_pipeline = graph_pipeline
            if cpu_kernels == "cpp" and _cpu_graph(graph, inputs):
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
                donated_inputs=donated,
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
