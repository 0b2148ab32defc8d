"""Trace a model or function to the aten-level FX graphs a torch.compile backend sees.

``capture_graphs`` runs the program once under ``torch.compile`` with
AOTAutograd and coil's decomposition table, and records each forward graph
with its example inputs: exactly what ``backend.py`` will receive.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch._dynamo.backends.common import aot_autograd

from coil.frontend.decompositions import decomposition_table


@dataclass
class CapturedGraph:
    gm: torch.fx.GraphModule
    example_inputs: list[Any]  # FakeTensors / SymInts, as AOTAutograd passed them


Compiler = Callable[[torch.fx.GraphModule, list[Any]], Callable]


def aot_backend(compile_fn: Compiler, backward_fn: Compiler | None = None):
    """A dynamo backend: AOTAutograd with coil's decompositions, ``compile_fn`` for
    every graph it produces (the forward, and in training the backward, which
    ``backward_fn`` compiles instead when given)."""
    return aot_autograd(
        fw_compiler=compile_fn,
        bw_compiler=backward_fn or compile_fn,
        decompositions=decomposition_table(),
    )


def capture_graphs(
    fn: Callable | torch.nn.Module,
    example_inputs: Sequence[Any],
    *,
    dynamic: bool = False,
    fullgraph: bool = True,
) -> list[CapturedGraph]:
    """The aten forward graphs of ``fn(*example_inputs)`` (inference: no grad)."""
    captured: list[CapturedGraph] = []

    def compile_fw(gm: torch.fx.GraphModule, inputs: list[Any]):
        captured.append(CapturedGraph(gm, list(inputs)))
        return gm

    torch._dynamo.reset()
    compiled = torch.compile(
        fn, backend=aot_backend(compile_fw), dynamic=dynamic, fullgraph=fullgraph
    )
    with torch.no_grad():
        compiled(*example_inputs)
    torch._dynamo.reset()
    return captured
