"""The torch.compile backend, registered as ``backend="coil"``.

Modelled on Inductor's ``compile_fx``: AOTAutograd with coil's decomposition
table hands each graph (the forward; in training also the backward) to
:func:`compile_graph`, which imports it into the aten dialect and runs the
default pipeline (``pipeline.PIPELINES``).

The default pipeline lowers each graph to the buffer level (loop nests fused
and given buffers, ATen extern calls for mm/convolution). Triton code
generation is not built yet, so the compiled graph runs through the reference
executor at the level the pipeline ends at: correct, not faster than eager.
coil says so once.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from coil.frontend.capture import aot_backend
from coil.frontend.fx_importer import constant_inputs, import_graph
from coil.pipeline import PIPELINES, available_passes

log = logging.getLogger("coil")
_warned = False


Observer = Callable[[str, ModuleOp], None]
"""Called with (stage name, module): "import", then the spec of each pass run."""


def run_pipeline(module, pipeline: str, observe: Observer | None = None) -> None:
    """Apply a pass-pipeline string (the same syntax as ``fx-opt -p``), calling
    ``observe(pass spec, module)`` after each pass."""
    from coil.ir import coil_context

    def callback(done, module, _next) -> None:
        if done is not None and observe is not None:
            observe(str(done.pipeline_pass_spec()), module)

    PassPipeline.parse_spec(available_passes(), pipeline, callback).apply(coil_context(), module)
    module.verify()


def compile_graph(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    *,
    pipeline: str | None = None,
    observe: Observer | None = None,
) -> Callable[..., Any]:
    """Compile one aten-level FX graph; returns a callable taking the graph's inputs."""
    from coil.runtime.aten_executor import run_module

    global _warned
    module = import_graph(gm, example_inputs)
    if observe is not None:
        observe("import", module)
    run_pipeline(module, pipeline or PIPELINES["default"], observe)
    constants = constant_inputs(module, gm)
    if not _warned:
        _warned = True
        warnings.warn(
            "coil: Triton code generation is not built yet; compiled graphs run through "
            "the reference executor at the end of the pipeline (correct, not faster than eager)",
            stacklevel=2,
        )

    def run(*args: Any) -> Any:
        return run_module(module, [*args, *constants])

    return run


def coil(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], options: dict | None = None, **_: Any
) -> Callable[..., Any]:
    """The ``torch.compile`` backend. ``options={"pipeline": "..."}`` overrides the pipeline."""
    options = dict(options or {})
    pipeline = options.pop("pipeline", None)
    if options:
        raise ValueError(f"coil: unknown option(s) {', '.join(sorted(options))}")

    def compile_fw(fw_gm: torch.fx.GraphModule, fw_inputs: list[Any]) -> Callable[..., Any]:
        return compile_graph(fw_gm, fw_inputs, pipeline=pipeline)

    return aot_backend(compile_fw)(gm, example_inputs)
