"""Trace a model or function to the aten-level FX graphs a torch.compile backend sees.

``capture_graphs`` runs the program once under ``torch.compile`` with
AOTAutograd and coil's decomposition table, and records each forward graph
with its example inputs: exactly what ``backend.py`` will receive.
``capture_training`` records a training step's forward and backward graphs,
and what the forward saves for the backward (``TrainingGraphs.saved``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.fx
from torch._dynamo.backends.common import aot_autograd

from coil.frontend.attention import contiguous_attention_masks
from coil.frontend.decode_attention import pack_grouped_queries
from coil.frontend.decompositions import LazyTable
from coil.runtime.compiled import boxed
from coil.runtime.direct_call import direct, marking

if TYPE_CHECKING:
    from coil.runtime.aotcache import AotCache


@dataclass
class CapturedGraph:
    gm: torch.fx.GraphModule
    example_inputs: list[Any]  # FakeTensors / SymInts, as AOTAutograd passed them


def aot_backend(
    compile_fn: Callable[[torch.fx.GraphModule, list[Any]], Callable],
    bw_compile_fn: Callable[[torch.fx.GraphModule, list[Any]], Callable] | None = None,
    inference_compile_fn: Callable[[torch.fx.GraphModule, list[Any]], Callable] | None = None,
    aot_cache: AotCache | None = None,
    before_autograd: Callable[[torch.fx.GraphModule], Any] | None = None,
    partition_fn: Callable | None = None,
):
    """A dynamo backend: AOTAutograd with coil's decompositions, ``compile_fn`` for
    every graph it produces (the forward, and in training the backward, unless
    ``bw_compile_fn`` is given for it; an inference graph, with no backward,
    goes to ``inference_compile_fn`` where given).

    As Inductor's compile_fx: compiled graphs are called boxed, and training
    graphs are split by the min-cut rematerialization partitioner (unless
    ``partition_fn``, see :mod:`coil.frontend.partition`), which saves for the
    backward what is expensive to recompute (matmuls, convolutions, reductions
    it keeps) and recomputes cheap pointwise ops and views -- the ops coil's
    loop-inline/loop-fuse fuse into the backward's kernels anyway.

    With ``aot_cache``, a graph it admits goes through torch's AOTAutograd
    cache (:mod:`coil.runtime.aotcache`): its compilers are made serializable
    and the lookup runs inside the cache's scope.

    ``before_autograd`` rewrites a Dynamo graph that will be differentiated,
    before AOTAutograd traces it (the attention rewrite for training: see
    :func:`coil.frontend.attention.fuse_attention_for_autograd`)."""
    from coil.frontend.partition import partition_function

    def compile_boxed(gm: torch.fx.GraphModule, inputs: list[Any]) -> Callable:
        return boxed(compile_fn(gm, inputs))

    def compile_bw_boxed(gm: torch.fx.GraphModule, inputs: list[Any]) -> Callable:
        return boxed((bw_compile_fn or compile_fn)(gm, inputs))

    def compile_inference_boxed(gm: torch.fx.GraphModule, inputs: list[Any]) -> Callable:
        return boxed((inference_compile_fn or compile_fn)(gm, inputs))

    compile_inference_boxed = marking(compile_inference_boxed)

    def traced(training: bool, cached: bool = False):
        fw, bw, inference = compile_boxed, compile_bw_boxed, compile_inference_boxed
        if cached:  # compilers returning what the cache stores (itself boxed)
            from coil.runtime.aotcache import serializable

            fw = serializable(compile_fn)
            bw = serializable(bw_compile_fn or compile_fn)
            inference = serializable(inference_compile_fn or compile_fn)
            inference.compiler_fn = marking(inference.compiler_fn)
        return aot_autograd(
            fw_compiler=fw,
            bw_compiler=bw,
            inference_compiler=inference,
            decompositions=LazyTable(training),
            partition_fn=partition_fn or partition_function(),
            # Mutations of graph inputs stay in the graph as ``copy_`` (as
            # Inductor keeps them): the kernel that computes a parameter's
            # or optimizer state's new value writes it into the input's
            # buffer, instead of a new buffer AOTAutograd copies back eagerly
            # after the call (one ATen copy_ per mutated tensor).
            keep_inference_input_mutations=True,
        )

    def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
        contiguous_attention_masks(gm)  # before tracing picks the attention kernel
        pack_grouped_queries(gm)  # one query over repeated key/value heads
        # AOTAutograd's own test for a graph that gets a backward.
        training = torch.is_grad_enabled() and any(
            isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs
        )
        if training and before_autograd is not None:
            before_autograd(gm)
        # An inference graph none of AOTAutograd's runtime wrappers has work for
        # is called directly (coil.runtime.direct_call).
        if aot_cache is None or not aot_cache.admits(gm, training):
            return direct(traced(training)(gm, example_inputs))
        with aot_cache.scope(gm, example_inputs):
            return direct(traced(training, cached=True)(gm, example_inputs))

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


def donated_input_indices() -> list[int]:
    """While AOTAutograd compiles a backward graph: the positions of its inputs
    that it donates (``fw_metadata.bw_donated_idxs``, as Inductor's
    ``get_donated_idxs``), saved activations that alias no forward input, user
    output or gradient, which only this backward reads. AOTAutograd computes
    none where the backward runs with ``retain_graph=True`` (and refuses such
    a call later on a backward compiled with donations). The importer marks
    them ``coil.donated``; memory-plan may write a kernel's result over one at
    its last use."""
    ctx = torch._guards.TracingContext.try_get()
    meta = getattr(ctx, "fw_metadata", None) if ctx is not None else None
    return list(getattr(meta, "bw_donated_idxs", None) or [])


def keep_outputs_apart_from_donations(forward: torch.fx.GraphModule) -> None:
    """While AOTAutograd compiles a training forward: withdraw the backward's
    donation (``fw_metadata.bw_donated_idxs``) of each saved tensor with a
    user output of the same dtype and shape. AOTAutograd donates a saved
    tensor whose traced value is distinct from every user output, but coil's
    pipeline may merge the two into one buffer (a layer norm's output and the
    normalized input its backward saves, ``(x - mean) * rstd`` twice: one
    value after CSE), and the backward then wrote over the output the caller
    holds (fuzz --train). A merged pair has one dtype and shape; the saved
    logits of a loss (another shape than any output) stay donated. (A saved
    *reshape* of an output that the pipeline turned into a view of it would
    not be caught; none is known.)"""
    ctx = torch._guards.TracingContext.try_get()
    meta = getattr(ctx, "fw_metadata", None) if ctx is not None else None
    donated = getattr(meta, "bw_donated_idxs", None)
    if not donated:
        return
    saved = getattr(meta, "tensors_saved_for_backwards_slice", None)
    nsym = getattr(meta, "num_symints_saved_for_bw", None) or 0
    users = getattr(meta, "num_forward", None)
    if saved is None or users is None:
        donated.clear()  # cannot tell: donate nothing
        return
    (output,) = forward.graph.find_nodes(op="output")
    outs = [n.meta.get("val") if isinstance(n, torch.fx.Node) else None for n in output.args[0]]

    def key(v: torch.Tensor) -> tuple:
        return v.dtype, tuple(str(d) for d in v.shape)  # symbolic sizes as expressions

    keys = {key(v) for v in outs[:users] if isinstance(v, torch.Tensor)}
    for i in list(donated):
        k = saved.start + i - nsym
        v = outs[k] if 0 <= k < len(outs) else None
        if not isinstance(v, torch.Tensor) or key(v) in keys:
            donated.remove(i)  # in place: the backward's compile reads this list


@dataclass
class TrainingGraphs:
    """The forward and backward graphs AOTAutograd made of one training step
    (``donated``: the backward's donated inputs, :func:`donated_input_indices`)."""

    forward: torch.fx.GraphModule
    backward: torch.fx.GraphModule
    donated: tuple[int, ...] = ()

    def saved(self) -> list[torch.fx.Node]:
        """The backward's inputs that the forward saved for it: every placeholder
        but the incoming gradients (``tangents_*``), in order; saved inputs of the
        forward (``primals_*``: parameters, the batch) included."""
        return [
            n
            for n in self.backward.graph.nodes
            if n.op == "placeholder" and not n.name.startswith("tangents")
        ]

    def saved_activations(self) -> list[torch.fx.Node]:
        """:meth:`saved` less the forward's own inputs, which exist anyway: what
        the step holds from the forward to the backward."""
        return [n for n in self.saved() if not n.name.startswith("primals")]

    def saved_bytes(self) -> int:
        return sum(_nbytes(n) for n in self.saved_activations())

    def producer(self, node: torch.fx.Node) -> torch.fx.Node | None:
        """The forward node a saved value comes from (same name)."""
        for n in self.forward.graph.nodes:
            if n.name == node.name:
                return n
        return None


def _nbytes(node: torch.fx.Node) -> int:
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        return val.numel() * val.element_size()
    return 0


def capture_training(
    fn: Callable | torch.nn.Module,
    example_inputs: Sequence[Any],
    *,
    loss: Callable[[Any], torch.Tensor] | None = None,
    autocast: torch.dtype | None = None,
    partition_fn: Callable | None = None,
) -> list[TrainingGraphs]:
    """The forward and backward graphs of one training step of ``fn`` (``loss``
    of its output, default ``out.sum()``, then ``backward()``), as the backend
    receives them: AOTAutograd with coil's training table and partitioner
    (``partition_fn`` replaces it). ``autocast`` runs the forward and the loss
    under ``torch.autocast`` of that dtype on the inputs' device."""
    forwards: list[torch.fx.GraphModule] = []
    backwards: list[torch.fx.GraphModule] = []
    donated: list[tuple[int, ...]] = []

    def compile_fw(gm: torch.fx.GraphModule, inputs: list[Any]):
        forwards.append(gm)
        return gm

    def compile_bw(gm: torch.fx.GraphModule, inputs: list[Any]):
        backwards.append(gm)
        donated.append(tuple(donated_input_indices()))
        return gm

    torch._dynamo.reset()
    backend = aot_backend(compile_fw, compile_bw, partition_fn=partition_fn)
    compiled = torch.compile(fn, backend=backend, fullgraph=True)
    device = next((x.device.type for x in example_inputs if isinstance(x, torch.Tensor)), "cpu")
    with torch.autocast(device, dtype=autocast or torch.bfloat16, enabled=autocast is not None):
        out = compiled(*example_inputs)
        value = loss(out) if loss is not None else out.sum()
    value.backward()
    torch._dynamo.reset()
    return [TrainingGraphs(f, b, d) for f, b, d in zip(forwards, backwards, donated)]
