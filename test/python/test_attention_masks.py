"""frontend/attention.py: broadcast attention masks made contiguous before AOTAutograd
picks the attention kernel (GPU fused kernels need a unit last stride)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from coil.frontend.attention import contiguous_attention_masks
from coil.frontend.capture import capture_graphs
from coil.testing import assert_close_to_eager


def _attention(q, k, v, keep):
    # keep: [L] per query position, broadcast as HF BERT's mask under compile:
    # [B, 1, L, S] with strides (0, L, 1, 0).
    b, _, length, s = q.shape[0], q.shape[1], q.shape[2], k.shape[2]
    mask = keep[None, None, :, None].expand(b, 1, length, s)
    first = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return F.scaled_dot_product_attention(first, k, v, mask, scale=0.5)  # positional mask


def _inputs(device="cpu", dtype=torch.float32):
    q, k, v = (torch.randn(2, 3, 16, 8, device=device, dtype=dtype) for _ in range(3))
    keep = torch.rand(16, device=device) > 0.2
    keep[0] = True
    return q, k, v, keep


def _rewritten(fn, inputs, device_types):
    """(Dynamo graph after the rewrite, masks copied, fn compiled with it)."""
    seen = []

    def rewrite(gm, _):
        seen.append((gm, contiguous_attention_masks(gm, device_types)))
        return gm

    torch._dynamo.reset()
    out = torch.compile(fn, backend=rewrite, fullgraph=True)(*inputs)
    return seen[0][0], seen[0][1], out


def test_broadcast_mask_copied_once_and_same_result():
    inputs = _inputs()
    gm, copied, out = _rewritten(_attention, inputs, ("cpu",))
    assert copied == 1
    copies = [n for n in gm.graph.nodes if n.op == "call_method" and n.target == "contiguous"]
    assert len(copies) == 1 and len(copies[0].users) == 3  # two attentions, one any
    wheres = [n for n in gm.graph.nodes if n.target is torch.where]
    assert len(wheres) == 2
    gm.graph.lint()
    torch.testing.assert_close(out, _attention(*inputs))
    # A query with every key masked gives zeros, as the math form does.
    assert (~inputs[3]).any() and (out[:, :, ~inputs[3]] == 0).all()


def test_cpu_masks_left_alone_and_contiguous_masks_untouched():
    inputs = _inputs()
    assert _rewritten(_attention, inputs, ("cuda",))[1] == 0  # CPU kernels take strided masks

    def dense(q, k, v, keep):
        mask = keep[None, None, :, None].expand(2, 1, 16, 16).contiguous()
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    assert _rewritten(dense, inputs, ("cpu",))[1] == 0

    def float32_mask(q, k, v, keep):  # bf16 queries: a mask of another dtype stays
        bias = torch.where(keep, 0.0, float("-inf"))[None, None, :, None]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias.expand(2, 1, 16, 16))

    half = [t.to(torch.bfloat16) for t in inputs[:3]] + [inputs[3]]
    assert _rewritten(float32_mask, half, ("cpu",))[1] == 0
    assert _rewritten(_additive, half, ("cpu",))[1] == 1


def _additive(q, k, v, keep):
    # An additive mask in the query's dtype, -inf where masked, broadcast the same way.
    bias = torch.where(keep, 0.0, float("-inf")).to(q.dtype)[None, None, :, None]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias.expand(2, 1, 16, 16))


@pytest.mark.parametrize("fn", [_attention, _additive], ids=["bool", "additive"])
def test_backend_matches_eager_with_broadcast_mask(fn):
    inputs = _inputs()
    out = _rewritten(fn, inputs, ("cpu",))[2]
    torch.testing.assert_close(out, fn(*inputs), equal_nan=True)
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="coil", fullgraph=True)
    assert_close_to_eager(compiled(*inputs), fn(*inputs))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_gpu_broadcast_mask_gets_a_fused_kernel():
    inputs = _inputs("cuda", torch.bfloat16)
    for fn in (_attention, _additive):
        (graph,) = capture_graphs(fn, inputs)
        targets = {str(n.target) for n in graph.gm.graph.nodes if n.op == "call_function"}
        assert not any("_safe_softmax" in t or "bmm" in t for t in targets), targets
        assert any("_scaled_dot_product" in t for t in targets), targets
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="coil", fullgraph=True)
        assert_close_to_eager(compiled(*inputs), fn(*inputs))
