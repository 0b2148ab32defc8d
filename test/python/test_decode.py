"""Token-by-token decoding from a static KV cache (benchmarks/decode.py) on the
CPU: the decode step compiles as one graph with nothing sent back to eager,
the cache is updated in place (bufferize writes the new slots into the cache
buffer, no copy of it), and several steps in a row match eager's logits and
leave eager's cache."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest
import torch

from coil.backend import coil as coil_backend
from coil.pipeline import PIPELINES
from coil.testing import assert_close_to_eager, dumped_kernels, kernel_launches

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import decode  # noqa: E402

# Matrix-vector products lowered as on CUDA, and the attention as coil's
# decode kernel (split in two runs of keys), so the CPU runs the GPU's kernels.
PIPELINE = (
    PIPELINES["default"]
    .replace("convert-aten-to-loop", "convert-aten-to-loop{matvec=on}")
    .replace("aten-fuse-matvec", "aten-fuse-matvec{all-devices=true}")
    .replace(
        "convert-decode-attention-to-tt",
        "convert-decode-attention-to-tt{all-devices=true splits=2}",
    )
)


def _model(batch: int, max_seq: int = 16) -> decode.GFTransformer:
    torch.manual_seed(0)
    c = decode.GFConfig(
        vocab_size=64, n_layer=1, n_head=4, n_local_heads=2, dim=32, intermediate_size=48
    )
    model = decode.GFTransformer(c).eval()
    decode._init(model)
    with torch.no_grad():
        for p in model.parameters():  # signed, not all-ones norms
            p.add_(torch.randn_like(p) * 0.05)
    model.setup_caches(batch, max_seq)
    return model


def _caches(model) -> list[torch.Tensor]:
    return [b for n, b in model.named_buffers() if n.endswith(("k_cache", "v_cache"))]


@pytest.mark.parametrize("batch", [1, 2])
def test_decode_steps_match_eager_and_update_cache_in_place(batch):
    eager = _model(batch)
    compiled = copy.deepcopy(eager)
    prompt = torch.randint(0, 64, (batch, 5), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        for m in (eager, compiled):
            m(prompt, torch.arange(5))
        torch._dynamo.reset()
        step = torch.compile(
            compiled,
            backend=coil_backend,
            fullgraph=True,
            options={"pipeline": PIPELINE, "fallback": "extern"},
        )
        caches = _caches(compiled)
        pointers = [c.data_ptr() for c in caches]
        tok = prompt[:, -1:]
        for p in range(5, 8):
            pos = torch.tensor([p])
            got, want = step(tok, pos), eager(tok, pos)
            assert_close_to_eager(got, want)
            tok = want[:, -1:].argmax(-1)
    assert [c.data_ptr() for c in caches] == pointers
    for got, want in zip(caches, _caches(eager)):
        assert_close_to_eager(got, want)
        assert got[:, :, 8:].abs().sum() == 0  # untouched past the last position


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gptfast150m", "llama150m"])
def test_benchmark_smoke(name, tmp_path):
    """The benchmark's --smoke row: one graph, no break, logits as eager's."""
    assert decode.main(["--smoke", name, "--batch", "1", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "decode.md").read_text()
    assert "| 1 / 0 |" in text and "WRONG" not in text and "FAILED" not in text


class _Projections(torch.nn.Module):
    """q, k, v of one normalized row (grouped-query widths), then a use of each."""

    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(32, 32, bias=False)
        self.k = torch.nn.Linear(32, 16, bias=False)
        self.v = torch.nn.Linear(32, 16, bias=False)

    def forward(self, x):
        h = torch.nn.functional.rms_norm(x, (32,))
        return self.q(h), self.k(h).sin(), self.v(h) * 2, self.q(h).sum()


def test_fused_projections_match_eager(tmp_path):
    """aten-fuse-matvec: the three products are one kernel, values as eager's."""
    torch.manual_seed(0)
    model = _Projections().eval()
    x = torch.randn(1, 32)
    torch._dynamo.reset()
    step = torch.compile(
        model,
        backend=coil_backend,
        options={"pipeline": PIPELINE, "fallback": "error", "dump_dir": str(tmp_path)},
    )
    with torch.no_grad():
        got, want = step(x), model(x)
    for g, w in zip(got, want):
        assert_close_to_eager(g, w)
    (graph,) = tmp_path.glob("graph_*")
    # One kernel reads the row and all three weights and writes the products.
    assert max(dumped_kernels(graph).values()) >= 5, dumped_kernels(graph)
    ir = next(tmp_path.glob("*/*-aten-fuse-matvec.mlir")).read_text()
    assert ir.count("aten.mm.default") == 1 and "aten.cat.default" in ir


class _NormThenProducts(torch.nn.Module):
    """A residual, a norm (RMSNorm or LayerNorm) and two products of the normed
    row with a gated activation between them: a decode step's MLP."""

    def __init__(self, layer_norm: bool):
        super().__init__()
        self.norm = torch.nn.LayerNorm(32) if layer_norm else torch.nn.RMSNorm(32, eps=1e-5)
        self.gate = torch.nn.Linear(32, 48, bias=False)
        self.up = torch.nn.Linear(32, 48, bias=False)

    def forward(self, x, r):
        h = self.norm(x + r)
        return torch.nn.functional.silu(self.gate(h)) * self.up(h)


@pytest.mark.parametrize("layer_norm", [False, True], ids=["rmsnorm", "layernorm"])
def test_norm_prologue_matches_eager(layer_norm, tmp_path):
    """loop-matvec-prologue: the norm, both products and the activation are one
    kernel, values as eager's."""
    torch.manual_seed(0)
    model = _NormThenProducts(layer_norm).eval()
    with torch.no_grad():
        for p in model.norm.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    x, r = torch.randn(1, 32), torch.randn(1, 32)
    torch._dynamo.reset()
    step = torch.compile(
        model,
        backend=coil_backend,
        options={"pipeline": PIPELINE, "fallback": "error", "dump_dir": str(tmp_path)},
    )
    with torch.no_grad():
        assert_close_to_eager(step(x, r), model(x, r))
    (wrapper,) = tmp_path.glob("*/wrapper.py")
    assert kernel_launches(wrapper.read_text()) == 1
