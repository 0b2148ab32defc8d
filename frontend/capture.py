"""Trace a model or function to the aten-level FX graphs a torch.compile backend sees.

``capture_graphs`` runs the program once under ``torch.compile`` with
AOTAutograd and coil's decomposition table, and records each forward graph
with its example inputs: exactly what ``backend.py`` will receive.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.fx
from torch._dynamo.backends.common import aot_autograd

from coil.frontend.attention import contiguous_attention_masks
from coil.frontend.decompositions import LazyTable

if TYPE_CHECKING:
    from coil.runtime.aotcache import AotCache


@dataclass
class CapturedGraph:
    gm: torch.fx.GraphModule
    example_inputs: list[Any]  # FakeTensors / SymInts, as AOTAutograd passed them


def boxed(fn: Callable) -> Callable:
    """``fn`` in AOTAutograd's boxed calling convention (one list argument the
    callee may clear, so inputs can be freed during the call): ``fn`` itself if
    it is boxed, its ``boxed`` variant if it has one (coil's compiled graphs),
    else ``make_boxed_func(fn)``."""
    if getattr(fn, "_boxed_call", False):
        return fn
    variant = getattr(fn, "boxed", None)
    if callable(variant) and getattr(variant, "_boxed_call", False):
        return variant
    from torch._functorch.aot_autograd import make_boxed_func

    return make_boxed_func(fn)


def aot_backend(
    compile_fn: Callable[[torch.fx.GraphModule, list[Any]], Callable],
    bw_compile_fn: Callable[[torch.fx.GraphModule, list[Any]], Callable] | None = None,
    inference_compile_fn: Callable[[torch.fx.GraphModule, list[Any]], Callable] | None = None,
    aot_cache: AotCache | None = None,
    before_autograd: Callable[[torch.fx.GraphModule], Any] | None = None,
):
    """A dynamo backend: AOTAutograd with coil's decompositions, ``compile_fn`` for
    every graph it produces (the forward, and in training the backward, unless
    ``bw_compile_fn`` is given for it; an inference graph, with no backward,
    goes to ``inference_compile_fn`` where given).

    As Inductor's compile_fx: compiled graphs are called boxed, and training
    graphs are split by the min-cut rematerialization partitioner, which saves
    for the backward what is expensive to recompute (matmuls, convolutions,
    reductions it keeps) and recomputes cheap pointwise ops and views -- the ops
    coil's loop-inline/loop-fuse fuse into the backward's kernels anyway.

    With ``aot_cache``, a graph it admits goes through torch's AOTAutograd
    cache (:mod:`coil.runtime.aotcache`): its compilers are made serializable
    and the lookup runs inside the cache's scope.

    ``before_autograd`` rewrites a Dynamo graph that will be differentiated,
    before AOTAutograd traces it (the attention rewrite for training: see
    :func:`coil.frontend.attention.fuse_attention_for_autograd`)."""
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    def compile_boxed(gm: torch.fx.GraphModule, inputs: list[Any]) -> Callable:
        return boxed(compile_fn(gm, inputs))

    def compile_bw_boxed(gm: torch.fx.GraphModule, inputs: list[Any]) -> Callable:
        return boxed((bw_compile_fn or compile_fn)(gm, inputs))

    def compile_inference_boxed(gm: torch.fx.GraphModule, inputs: list[Any]) -> Callable:
        return boxed((inference_compile_fn or compile_fn)(gm, inputs))

    def traced(training: bool, cached: bool = False):
        fw, bw, inference = compile_boxed, compile_bw_boxed, compile_inference_boxed
        if cached:  # compilers returning what the cache stores (itself boxed)
            from coil.runtime.aotcache import serializable

            fw = serializable(compile_fn)
            bw = serializable(bw_compile_fn or compile_fn)
            inference = serializable(inference_compile_fn or compile_fn)
        return aot_autograd(
            fw_compiler=fw,
            bw_compiler=bw,
            inference_compiler=inference,
            decompositions=LazyTable(training),
            partition_fn=min_cut_rematerialization_partition,
        )

    def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
        contiguous_attention_masks(gm)  # before tracing picks the attention kernel
        # AOTAutograd's own test for a graph that gets a backward.
        training = torch.is_grad_enabled() and any(
            isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs
        )
        if training and before_autograd is not None:
            before_autograd(gm)
        if aot_cache is None:
            return traced(training)(gm, example_inputs)
        if not aot_cache.admits(gm, training):
            return traced(training)(gm, example_inputs)
        with aot_cache.scope(gm, example_inputs):
            return traced(training, cached=True)(gm, example_inputs)

    return backend


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
