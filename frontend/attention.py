"""Dynamo-graph rewrites that let ``scaled_dot_product_attention`` keep a fused kernel.

``F.scaled_dot_product_attention`` is CompositeImplicit: AOTAutograd replaces
it by whatever ``torch._fused_sdp_choice`` picks for the traced inputs, and the
GPU kernels (flash, memory-efficient, cuDNN) all require the mask's last
dimension to have stride 1. A broadcast mask (HF BERT under torch.compile
passes ``[B, 1, L, S]`` bool with strides ``(0, L, 1, 0)``) gets none of them,
so the graph coil receives holds the math form, upcast to float32: on an H100,
BERT-base's 12 attentions took 3.1 ms that way against 0.23 ms in eager
(Inductor takes the same math path). A mask whose last stride is not 1 is made
contiguous once (one copy per distinct mask, shared by every attention that
reads it): the same values, and the fused kernel applies; rows with every key
masked are zeroed as the math form does.

Runs on the Dynamo graph, before AOTAutograd traces it; only masks on devices
whose fused kernels have the stride rule (CUDA), unless told otherwise.
"""

from __future__ import annotations

import torch
import torch.fx

SDPA_TARGETS = (
    torch._C._nn.scaled_dot_product_attention,
    torch.nn.functional.scaled_dot_product_attention,
)
MASK_POSITION = 3  # q, k, v, attn_mask


def _example(node: object) -> torch.Tensor | None:
    if not isinstance(node, torch.fx.Node):
        return None
    value = node.meta.get("example_value", node.meta.get("val"))
    return value if isinstance(value, torch.Tensor) else None


def contiguous_attention_masks(
    gm: torch.fx.GraphModule, device_types: tuple[str, ...] = ("cuda",)
) -> int:
    """Give every attention mask with a non-unit last stride (on ``device_types``)
    a contiguous copy; returns how many masks were copied.

    The math form returns zeros for a query whose keys are all masked
    (``_safe_softmax``); the fused kernels do not promise that (cuDNN's gave
    finite nonzero rows), so each rewritten attention's result is kept only
    where the query has a key left: ``where(mask.any(-1), out, 0)``, the
    reduction shared by the attentions reading the mask."""
    copies: dict[torch.fx.Node, tuple[torch.fx.Node, torch.fx.Node]] = {}
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in SDPA_TARGETS:
            continue
        in_args = len(node.args) > MASK_POSITION
        mask = node.args[MASK_POSITION] if in_args else node.kwargs.get("attn_mask")
        value = _example(mask)
        if value is None or value.device.type not in device_types or value.dim() == 0:
            continue
        if value.stride(-1) == 1 or value.shape[-1] == 1:
            continue
        query = _example(node.args[0]) if node.args else None
        if value.dtype != torch.bool and (query is None or value.dtype != query.dtype):
            # A float mask of another dtype than the query: cuDNN's kernel read
            # an f32 mask with bf16 queries as garbage (wrong rows next to a
            # masked one, on an H100); the math form stays.
            continue
        if mask not in copies:
            with graph.inserting_before(node):  # the first attention reading it
                copy = graph.call_method("contiguous", (mask,))
                live = copy
                if value.dtype != torch.bool:
                    live = graph.call_function(torch.ne, (copy, float("-inf")))
                keep = graph.call_method("any", (live, -1), {"keepdim": True})
            copies[mask] = (copy, keep)
        copy, keep = copies[mask]
        if in_args:
            node.update_arg(MASK_POSITION, copy)
        else:
            node.update_kwarg("attn_mask", copy)
        with graph.inserting_after(node):
            out = graph.call_function(torch.where, (keep, node, 0.0))
        node.replace_all_uses_with(out, delete_user_cb=lambda user: user is not out)
    if copies:
        _propagate_examples(gm)
        gm.recompile()
    return len(copies)


def _propagate_examples(gm: torch.fx.GraphModule) -> None:
    """Example values for the nodes added (Dynamo's later stages read them)."""
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method") or _example(node) is not None:
            continue
        args = torch.fx.node.map_arg((node.args, node.kwargs), _example_or_node)
        fake = next(
            (v.fake_mode for v in torch.utils._pytree.tree_leaves(args) if hasattr(v, "fake_mode")),
            None,
        )
        if fake is None:
            continue
        (a, kw) = args
        with fake:
            if node.op == "call_method":
                node.meta["example_value"] = getattr(a[0], node.target)(*a[1:], **kw)
            else:
                node.meta["example_value"] = node.target(*a, **kw)


def _example_or_node(node: torch.fx.Node) -> object:
    value = _example(node)
    return value if value is not None else node
