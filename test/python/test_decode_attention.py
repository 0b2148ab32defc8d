"""One-query attention over grouped key/value heads attends the unrepeated
heads (frontend/decode_attention.py): transformers' Llama decoding from its
StaticCache (``repeat_kv``) matches eager over several steps, with no copy of
the cache, and the token's key is rotated in the kernel that writes it into
the cache (loop-inline). gpt-fast's ``repeat_interleave`` spelling runs in test_decode.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from coil.testing import assert_close_to_eager

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import decode  # noqa: E402


def _session():
    torch.manual_seed(0)
    s = decode._llama(decode.SMOKE_LLAMA, 1, 16, torch.float32, "cpu")
    with torch.no_grad():
        for p in s.model.parameters():  # signed, not all-ones norms
            p.add_(torch.randn_like(p) * 0.05)
    return s


def test_llama_static_cache_decode_attends_unrepeated_heads(tmp_path):
    pytest.importorskip("transformers")  # CI installs coil's own dependencies only
    eager, compiled = _session(), _session()
    prompt = torch.randint(0, 256, (1, 5), generator=torch.Generator().manual_seed(1))
    torch._dynamo.reset()
    step = torch.compile(
        compiled.step,
        backend="coil",
        fullgraph=True,
        options={"fallback": "extern", "dump_dir": str(tmp_path)},
    )
    with torch.no_grad():
        tok = eager.prefill(prompt)[:, -1:].argmax(-1)
        compiled.prefill(prompt)
        for p in range(5, 8):
            pos = torch.tensor([p])
            got, want = step(tok, pos), eager.step(tok, pos)
            assert_close_to_eager(got, want)
            tok = want[:, -1:].argmax(-1)
    (imported,) = tmp_path.glob("*/000-import.mlir")
    sdpa = [
        line
        for line in imported.read_text().splitlines()
        if "aten.operator" in line and "dot_product" in line
    ]
    # The rotated key (and the value) of the token go straight into the cache:
    # the rotary embedding is computed in the kernel that writes the cache slot,
    # no [B, G, 1, D] buffer holds them (the queries' [1, 4, 1, 16] one stays).
    (wrapper,) = tmp_path.glob("*/wrapper.py")
    source = wrapper.read_text()
    assert "(1, 4, 1, 16)" in source and "(1, 2, 1, 16)" not in source
    # 4 query heads over 2 key/value heads: [B, G, R, D] queries, one per layer
    assert len(sdpa) == 2 and all("!aten.tensor<[1, 2, 2, 16], f32>" in line for line in sdpa)
