"""The torch.compile backend, registered as ``backend="coil"``.

Modelled on Inductor's ``compile_fx``: AOTAutograd with coil's decomposition
table hands each graph (the forward; in training also the backward) to
:func:`compile_graph`, which imports it into the aten dialect and runs the
default pipeline (``pipeline.PIPELINES``).

Code generation (loop -> buffer -> Triton) is not built yet, so the compiled
graph runs through the aten-level reference executor: correct (each op is the
ATen op eager would call), not faster than eager. coil says so once.
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


def run_pipeline(module, pipeline: str) -> None:
    """Apply a pass-pipeline string (the same syntax as ``fx-opt -p``)."""
    from coil.ir import coil_context

    PassPipeline.parse_spec(available_passes(), pipeline).apply(coil_context(), module)
    module.verify()


Observer = Callable[[str, ModuleOp], None]
"""Called with (stage name, module) after import and after the pipeline."""


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
    run_pipeline(module, pipeline or PIPELINES["default"])
    if observe is not None:
        observe("pipeline", module)
    constants = constant_inputs(module, gm)
    if not _warned:
        _warned = True
        warnings.warn(
            "coil: Triton code generation is not built yet; compiled graphs run through "
            "the aten-level reference executor (correct, not faster than eager)",
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
