"""Dynamo-graph rewrite: one query over grouped keys attends without repeating them.

A decode step's attention (one query position) under grouped-query attention
repeats each key/value head for the query heads that share it before
``scaled_dot_product_attention``: transformers' ``repeat_kv``
(``x[:, :, None].expand(B, G, R, S, D).reshape(B, G * R, S, D)``) or
gpt-fast's ``x.repeat_interleave(R, dim=1)``. Over a static KV cache that is
a copy of the whole cache, ``R`` times over, every layer and every token (two
kernels' worth of traffic per layer, and a launch), only for the attention
kernel to read it once.

With one query position the ``R`` query heads of a group can instead be ``R``
query *positions* over the group's own key/value head:
``sdpa(q.reshape(B, G, R, D), k, v, mask).reshape(B, G * R, 1, Dv)`` -- the
same products and softmax per (head, key), so the same values (it is what
transformers itself runs in eager decoding, ``pack_gqa``), with no copy, and a
kernel torch picks for those shapes as in eager (the CPU flash kernel;
memory-efficient or cuDNN with a mask on CUDA). The mask must be the same for
every head and query (size 1 in both of those dimensions), so it broadcasts
over the packed queries unchanged; no dropout, no ``is_causal`` (with one query
it would keep only the first key), no ``enable_gqa`` already.

Runs on the Dynamo graph, before AOTAutograd picks the attention kernel
(after :func:`coil.frontend.attention.contiguous_attention_masks`).
"""

from __future__ import annotations

import logging
import operator
from typing import Any

import torch
import torch.fx

from coil.frontend.attention import MASK_POSITION, SDPA_TARGETS, _example

log = logging.getLogger("coil")

_ALL = slice(None)


def _is_call(node: Any, *targets: Any) -> bool:
    return isinstance(node, torch.fx.Node) and (
        (node.op == "call_function" and node.target in targets)
        or (node.op == "call_method" and node.target in targets)
    )


def _shape(node: Any) -> tuple | None:
    value = _example(node)
    if value is None or not all(isinstance(s, int) for s in value.shape):
        return None
    return tuple(value.shape)


def _repeated_heads(node: Any) -> tuple[torch.fx.Node, int, list[torch.fx.Node]] | None:
    """``(x, R, chain)`` where ``node`` is ``x`` ([B, G, S, D]) with every head
    repeated ``R`` times in place (head ``g * R + r`` is ``x``'s head ``g``),
    spelled as transformers' ``repeat_kv`` or as ``repeat_interleave(R, dim=1)``;
    ``chain``: the nodes that spell it, ``node`` first."""
    out = _shape(node)
    if out is None or len(out) != 4:
        return None
    if _is_call(node, "repeat_interleave", torch.repeat_interleave):
        args = list(node.args) + [None] * 3
        x, reps = args[0], node.kwargs.get("repeats", args[1])
        dim = node.kwargs.get("dim", args[2])
        src = _shape(x)
        if not isinstance(reps, int) or dim not in (1, -3) or src is None or len(src) != 4:
            return None
        return (x, reps, [node]) if out == (src[0], src[1] * reps, *src[2:]) else None
    if not _is_call(node, "reshape", "view", torch.reshape):
        return None
    expand = node.args[0]
    if not _is_call(expand, "expand") or len(expand.users) != 1:
        return None
    inner = expand.args[0]
    if _is_call(inner, operator.getitem):
        index = inner.args[1]
        if not (
            isinstance(index, tuple)
            and index[:3] == (_ALL, _ALL, None)
            and all(i == _ALL or i is Ellipsis for i in index[3:])
        ):
            return None
    elif _is_call(inner, "unsqueeze", torch.unsqueeze):
        dim = inner.kwargs.get("dim", inner.args[1] if len(inner.args) > 1 else None)
        if dim not in (2, -3):
            return None
    else:
        return None
    x = inner.args[0]
    src, wide = _shape(x), _shape(expand)
    if src is None or wide is None or len(src) != 4 or len(wide) != 5:
        return None
    b, g, s, d = src
    r = wide[2]
    if wide != (b, g, r, s, d) or out != (b, g * r, s, d) or len(inner.users) != 1:
        return None
    return x, r, [node, expand, inner]


def _sdpa_options(node: torch.fx.Node) -> dict[str, Any] | None:
    """The call's options if it qualifies (no dropout, not causal, no GQA flag)."""
    names = ("dropout_p", "is_causal", "scale", "enable_gqa")
    given = dict(zip(("attn_mask", *names), node.args[MASK_POSITION:]))
    given.update(node.kwargs)
    if given.get("dropout_p", 0.0) not in (0, 0.0) or given.get("is_causal", False):
        return None
    if given.get("enable_gqa", False):
        return None
    return given


def pack_grouped_queries(gm: torch.fx.GraphModule) -> int:
    """Rewrite each one-query attention over repeated key/value heads to attend
    the unrepeated ones with the query heads packed as positions; returns how
    many attentions were rewritten."""
    graph = gm.graph
    done = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in SDPA_TARGETS or len(node.args) < 3:
            continue
        q, k, v = node.args[:3]
        options = _sdpa_options(node)
        qs, out = _shape(q), _shape(node)
        if options is None or qs is None or out is None or len(qs) != 4 or qs[2] != 1:
            continue
        rk, rv = _repeated_heads(k), _repeated_heads(v)
        if rk is None or rv is None or rk[1] != rv[1] or rk[1] < 2:
            continue
        (xk, reps, kchain), (xv, _, vchain) = rk, rv
        mask = options.get("attn_mask")
        if mask is not None:
            ms = _shape(mask)
            if ms is None or len(ms) < 2 or ms[-2] != 1 or (len(ms) >= 3 and ms[-3] != 1):
                continue
        b, h, _, d = qs
        groups = h // reps
        with graph.inserting_before(node):
            packed = graph.call_method("reshape", (q, -1, groups, reps, d))
            kwargs = {k: val for k, val in options.items() if k != "attn_mask"}
            attended = graph.call_function(node.target, (packed, xk, xv, mask), kwargs)
            result = graph.call_method("reshape", (attended, -1, h, 1, out[-1]))
        node.replace_all_uses_with(result)
        graph.erase_node(node)
        for repeated in dict.fromkeys(kchain + vchain):  # consumers first
            if not repeated.users:
                graph.erase_node(repeated)
        done += 1
    if done:
        from coil.frontend.attention import _propagate_examples

        _propagate_examples(gm)
        gm.recompile()
        log.debug("coil: %d one-query attention(s) attend unrepeated key/value heads", done)
    return done
