"""How a training graph is split into a forward and a backward: what the
forward saves for the backward, and what the backward recomputes.

AOTAutograd traces one joint graph; a partitioner cuts it. coil uses torch's
partitioners (``torch._functorch.partitioners``), as Inductor does, under a
setting the backend's ``partition`` option names (:data:`PARTITIONS`):

``min-cut`` (the default, Inductor's)
    the min-cut rematerialization partitioner: saves what is expensive to
    recompute (matmuls, convolutions, reductions, anything the backward must
    materialize for an extern call) and recomputes cheap fusible pointwise
    chains inside the backward's kernels, choosing among the admissible cuts
    the one of least saved bytes (its bans live in ``torch._functorch.config``).
``save-all``
    torch's default partitioner: the forward saves every value the backward
    reads, nothing is recomputed (the most activation memory; a baseline).
``aggressive``
    min-cut with ``aggressive_recomputation``: the bans on recomputing long
    fusible chains, values used far apart and non-allowlisted ops are lifted
    (reductions stay saved): less memory for some recomputation.
``budget=F`` (``0 <= F <= 1``)
    min-cut under ``activation_memory_budget = F``: a 0-1 knapsack keeps the
    saved activations at most ``F`` times min-cut's, recomputing the ops of
    least estimated runtime (flop count) first; ``budget=0`` approaches
    checkpointing the whole graph, ``budget=1`` is ``min-cut``.

Before any of them cuts the joint graph, :func:`remove_noop_aliases` drops
the ``aten.alias`` nodes in it (as Inductor's joint-graph passes run
``remove_noop_ops`` before its partitioner): an alias is the same tensor, but
to the min-cut it is another node, and through one the forward saved a value
twice. Autograd saves an attention's output for its backward through an
alias, and the output-projection's input, the same values transposed and
made contiguous, was saved beside it instead of being recomputed from it (a
Llama-style layer saved its attention output twice: 8 MiB a layer more at
4 x 512 tokens of width 1024, f32).

The min-cut settings never recompute an operand of an equality comparison
(:func:`save_compared_values`): ``amax``'s backward finds the maximum's
positions with ``x == amax(x)``, and a recomputed ``x`` must equal the
forward's bit for bit. coil's C++ kernels compute a transcendental in a
vectorized loop with glibc's vector math (up to 4 ulp) and in a loop's scalar
tail with the scalar function, so a recomputed ``tanh(x)`` differed in the
last bit from the forward's where one kernel ran it vectorized and the other
did not, and the maximum matched nothing and lost its gradient
(``tanh(x).amax()`` / ``exp(x).amax(-1)``: 38 of 60 random inputs).

The cost each setting minimizes is saved bytes (``min-cut``: runtime first,
then bytes; ``budget``: runtime subject to bytes); what a setting saves is
measured by :func:`coil.frontend.capture.capture_training` (and
``benchmarks/saved_activations.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

PARTITIONS: dict[str, str] = {
    "min-cut": "torch's min-cut rematerialization partitioner (Inductor's; the default)",
    "save-all": "torch's default partitioner: save every value the backward reads",
    "aggressive": "min-cut with aggressive_recomputation (recompute long pointwise chains)",
    "budget=F": "min-cut under activation_memory_budget F in [0, 1] (a knapsack by flops)",
}
"""The settings of the backend's ``partition`` option, with what each does."""

DEFAULT = "min-cut"


def _settings(setting: str) -> tuple[str, dict[str, Any]]:
    """The partitioner (``min-cut`` or ``save-all``) and ``torch._functorch.config``
    values of ``setting``; a ValueError naming the choices for any other."""
    if setting == "min-cut":
        return "min-cut", {}
    if setting == "save-all":
        return "save-all", {}
    if setting == "aggressive":
        return "min-cut", {"aggressive_recomputation": True}
    if setting.startswith("budget="):
        try:
            budget = float(setting.removeprefix("budget="))
        except ValueError:
            budget = -1.0
        if 0.0 <= budget <= 1.0:
            return "min-cut", {"activation_memory_budget": budget}
        raise ValueError(
            f"coil: option partition={setting!r}: the budget must be a number from 0 to 1 "
            "(the fraction of min-cut's saved activations to keep)"
        )
    raise ValueError(
        f"coil: option partition must be one of {', '.join(map(repr, PARTITIONS))}, not {setting!r}"
    )


def remove_noop_aliases(joint: torch.fx.GraphModule) -> int:
    """Replace each ``aten.alias`` node of ``joint`` by its operand (the same
    tensor: same storage, sizes and strides); returns how many were removed.
    As Inductor's ``remove_noop_ops``, an alias that is itself returned is kept
    where its operand is a graph input or also returned, so no new aliasing
    between the graph's inputs and outputs appears."""
    graph = joint.graph
    output = next(n for n in reversed(graph.nodes) if n.op == "output")
    returned: set[torch.fx.Node] = set()
    torch.fx.node.map_arg(output.args, returned.add)
    removed = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not torch.ops.aten.alias.default:
            continue
        src = node.args[0]
        if not isinstance(src, torch.fx.Node):
            continue
        if node in returned and (src.op == "placeholder" or src in returned):
            continue
        node.replace_all_uses_with(src)
        if node in returned:
            returned.discard(node)
            returned.add(src)
        graph.erase_node(node)
        removed += 1
    if removed:
        joint.recompile()
    return removed


_COMPARISONS = (torch.ops.aten.eq.Tensor, torch.ops.aten.ne.Tensor)


def save_compared_values(joint: torch.fx.GraphModule) -> int:
    """Mark each computed operand of an equality comparison in the joint graph
    ``MUST_SAVE`` (torch's checkpoint tag, which the min-cut partitioner honours
    by never recomputing the node): where the backward needs it, it reads the
    forward's value, the one the forward's comparisons and reductions saw (see
    the module doc). A value the backward does not read is not saved for
    this. Returns how many nodes were marked."""
    from torch.utils.checkpoint import CheckpointPolicy

    marked = 0
    for node in joint.graph.nodes:
        if node.op != "call_function" or node.target not in _COMPARISONS:
            continue
        for operand in node.args[:2]:
            if isinstance(operand, torch.fx.Node) and operand.op == "call_function":
                if operand.meta.get("recompute") is None:
                    operand.meta["recompute"] = CheckpointPolicy.MUST_SAVE
                    marked += 1
    return marked


@functools.cache
def partition_function(setting: str = DEFAULT) -> Callable:
    """AOTAutograd's ``partition_fn`` for ``setting`` (see the module doc): the
    joint graph's aliases removed (:func:`remove_noop_aliases`), then torch's
    partitioner under the setting's configuration."""
    from torch._functorch.partitioners import (
        default_partition,
        min_cut_rematerialization_partition,
    )

    name, values = _settings(setting)
    partitioner = default_partition if name == "save-all" else min_cut_rematerialization_partition

    def partition(joint, inputs, **kwargs):
        remove_noop_aliases(joint)
        if partitioner is min_cut_rematerialization_partition:
            save_compared_values(joint)
        with torch._functorch.config.patch(**values):
            return partitioner(joint, inputs, **kwargs)

    partition.__name__ = f"coil_partition_{name}"
    partition.__qualname__ = partition.__name__
    return partition


def check(setting: Any) -> str:
    """``setting`` if it names a partition setting; a ValueError otherwise."""
    if not isinstance(setting, str):
        raise ValueError(f"coil: option partition must be a string, not {setting!r}")
    _settings(setting)
    return setting


__all__ = [
    "DEFAULT",
    "PARTITIONS",
    "check",
    "partition_function",
    "remove_noop_aliases",
    "save_compared_values",
]
