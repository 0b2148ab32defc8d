"""convert-decode-attention-to-tt: one-query attention over a static cache as
coil's flash-decoding kernels, against eager on the CPU (Triton's interpreter).

The cache holds ``L`` slots of which the first ``pos + 1`` are filled; the mask
is transformers' (0 up to the position, -inf after), so the kernel must not
read the slots past it (their keys are poisoned with NaN: a NaN read would
reach the output through ``0 * NaN``), with one run of keys and with several
(split-KV, combined by the second kernel)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from coil.backend import coil as coil_backend
from coil.pipeline import PIPELINES
from coil.testing import assert_close_to_eager


def _pipeline(splits: int) -> str:
    return PIPELINES["default"].replace(
        "convert-decode-attention-to-tt",
        f"convert-decode-attention-to-tt{{all-devices=true splits={splits}}}",
    )


def _attend(q, k, v, mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask) * 1.0


def _inputs(batch, heads, rows, keys, width, pos, dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(batch, heads, rows, width, generator=g, dtype=dtype)
    k = torch.randn(batch, heads, keys, width, generator=g, dtype=dtype)
    v = torch.randn(batch, heads, keys, width, generator=g, dtype=dtype)
    k[:, :, pos + 1 :] = float("nan")  # never written: the kernel must not read it
    v[:, :, pos + 1 :] = float("nan")
    mask = torch.zeros(1, 1, 1, keys, dtype=dtype)
    mask[..., pos + 1 :] = float("-inf")
    return q, k, v, mask


def _compiled(splits: int, tmp_path):
    torch._dynamo.reset()
    return torch.compile(
        _attend,
        backend=coil_backend,
        fullgraph=True,
        options={
            "pipeline": _pipeline(splits),
            "fallback": "error",
            "cpu_kernels": "triton",
            "dump_dir": str(tmp_path),
        },
    )


@pytest.mark.parametrize(
    ("rows", "splits", "pos"),
    [(1, 1, 40), (4, 1, 100), (4, 4, 100), (3, 2, 7), (4, 8, 130)],
)
def test_decode_attention_matches_eager_and_skips_unfilled_slots(rows, splits, pos, tmp_path):
    q, k, v, mask = _inputs(1, 2, rows, 192, 16, pos)
    got = _compiled(splits, tmp_path)(q, k, v, mask)
    filled = slice(0, pos + 1)
    want = _attend(q, k[:, :, filled], v[:, :, filled], mask[..., filled])
    assert not got.isnan().any()
    assert_close_to_eager(got, want)
    (wrapper,) = tmp_path.glob("*/wrapper.py")
    source = wrapper.read_text()
    # coil's kernels, not ATen's attention; a combine only when split
    assert "torch.ops.aten._scaled_dot_product" not in source
    assert ("decode_attention_combine" in source) == (splits > 1)


def test_decode_attention_batches_heads_and_no_mask(tmp_path):
    """Two sequences, three heads, a head width that is not a power of two, no mask."""
    g = torch.Generator().manual_seed(1)
    q = torch.randn(2, 3, 2, 24, generator=g)
    k = torch.randn(2, 3, 50, 24, generator=g)
    v = torch.randn(2, 3, 50, 24, generator=g)
    torch._dynamo.reset()
    fn = torch.compile(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v) + 0.0,
        backend=coil_backend,
        fullgraph=True,
        options={"pipeline": _pipeline(2), "fallback": "error", "cpu_kernels": "triton"},
    )
    assert_close_to_eager(fn(q, k, v), F.scaled_dot_product_attention(q, k, v))


def test_prefill_stays_aten(tmp_path):
    """More than MAX_ROWS query rows: ATen's tiled kernel, not the decode kernel."""
    q, k, v, mask = _inputs(1, 2, 32, 64, 16, 63)
    got = _compiled(0, tmp_path)(q, k, v, mask)
    assert_close_to_eager(got, _attend(q, k, v, mask))
    (wrapper,) = tmp_path.glob("*/wrapper.py")
    assert "coil_decode_attention" not in wrapper.read_text()


_DEV = 'device "cuda:0"'
_Q = f"!aten.tensor<[1, 4, 4, 64], bf16, {_DEV}>"
_KV = f"!aten.tensor<[1, 4, KEYS, 64], bf16, {_DEV}>"
_MASK = f"!aten.tensor<[1, 1, 1, KEYS], bf16, {_DEV}>"
_REST = (
    f"!aten.tensor<[1, 4, 0], f32, {_DEV}>, !aten.tensor<[], i64, {_DEV}>, "
    f"!aten.tensor<[], i64, {_DEV}>"
)
_CUDA_STEP = f"""
func.func @step(%q: {_Q}, %k: {_KV}, %v: {_KV}, %mask: {_MASK}) -> {_Q} {{
  %o, %lse, %seed, %offset = aten.operator "aten::_scaled_dot_product_efficient_attention"(
      %q, %k, %v, %mask, false, scale = 0.125) : ({_Q}, {_REST})
  func.return %o : {_Q}
}}
"""


@pytest.mark.parametrize("keys", [64, 4096])
def test_kernels_compile_for_sm90(keys):
    """The interpreter accepts more than ptxas: build the cubins (one run of
    keys at 64 slots, one block: never split; split runs and the combine at
    4096)."""
    from coil.backend import run_pipeline
    from coil.ir import parse_module
    from coil.runtime import cpp_wrapper
    from coil.strategy.target import named, set_module_target
    from coil.targets import triton as T

    module = parse_module(_CUDA_STEP.replace("KEYS", str(keys)))
    set_module_target(module, named("h200"))
    run_pipeline(module, PIPELINES["default"])
    source = T.header(module) + "\n\n" + T.emit_kernels(module)
    assert "coil_decode_attention" in source
    assert ("coil_decode_attention_combine" in source) == (keys > 64)
    compiled = cpp_wrapper.compile_kernels(module, source, 90)
    assert compiled and all(k.asm["cubin"][:4] == b"\x7fELF" for k in compiled.values())
