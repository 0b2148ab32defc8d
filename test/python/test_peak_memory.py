"""The memory plan's static peak (``coil.peak_bytes``) against what the CUDA
caching allocator measures for one call (``max_memory_allocated`` above what
was allocated before it): within 10 %, as issue 11 asks. Runs where there is a
GPU (marker gpu).

The block has what made the two disagree before: an attention whose ATen call
returns several results (only the output is read; the plan counted them as
aliases and never freed them: ViT's measured peak was twice the plan), a GEMM
product four times its input (an MLP), and a residual."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


class Block(torch.nn.Module):
    def __init__(self, width: int = 1024, heads: int = 16):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(width)
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.proj = torch.nn.Linear(width, width)
        self.ln2 = torch.nn.LayerNorm(width)
        self.fc1 = torch.nn.Linear(width, 4 * width)
        self.fc2 = torch.nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(a)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def _planned(dump) -> int:
    peaks = [
        int(v)
        for f in dump.glob("*/*memory-plan.mlir")
        for v in re.findall(
            r"func.func @(?!\w*_constants\b)\w+\(.*coil.peak_bytes = #coil.expr<(\d+)>",
            f.read_text(),
        )
    ]
    assert peaks, "no memory-plan stage was dumped"
    return max(peaks)


@pytest.mark.parametrize("layers", [1, 3])
def test_planned_peak_matches_the_allocator(layers, tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[Block() for _ in range(layers)]).cuda().eval().bfloat16()
    x = torch.randn(8, 512, 1024, device="cuda", dtype=torch.bfloat16)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="coil", options={"dump_dir": str(tmp_path)})
    with torch.no_grad():
        compiled(x)  # compiles; cuBLAS's workspace is allocated once here
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        out = compiled(x)
        torch.cuda.synchronize()
        measured = torch.cuda.max_memory_allocated() - base
        expected = model(x)
    torch.testing.assert_close(out, expected, rtol=2e-2, atol=2e-2)
    planned = _planned(tmp_path)
    assert abs(measured - planned) <= 0.1 * measured, (planned, measured)
