"""aten-fuse-attention end to end: each spelling of attention people write runs
through ``torch.compile(backend="coil")`` on the CPU against eager, and the IR
shows it was rewritten to SDPA (torch's CPU flash kernel); in training the
Dynamo-graph rewrite gives SDPA's fused backward, with eager's gradients.
Spellings that are not attention, or not provably the same function, stay."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from coil.pipeline import PIPELINES
from coil.testing import difference

B, H, HKV, L, S, E = 2, 4, 2, 6, 10, 8
FLASH = "_scaled_dot_product_flash_attention_for_cpu"
FLASH_OP = f'"aten::{FLASH}"'


def _qkv(dtype=torch.float32, heads_kv=H, length=L):
    q = torch.randn(B, H, length, E, dtype=dtype)
    k = torch.randn(B, heads_kv, S, E, dtype=dtype)
    v = torch.randn(B, heads_kv, S, E, dtype=dtype)
    return [q, k, v]


def _causal() -> torch.Tensor:
    # top-left aligned: query i sees keys 0..i (no row empty: L <= S)
    return torch.ones(L, S, dtype=torch.bool).tril()


def _padding_keep() -> torch.Tensor:
    keep = torch.rand(B, S) > 0.3
    keep[:, 0] = True
    return keep


# -- the spellings -----------------------------------------------------------


def matmul_div_sqrt(q, k, v):
    return torch.softmax((q @ k.transpose(-1, -2)) / math.sqrt(E), dim=-1) @ v


def matmul_mul_scale(q, k, v):
    return torch.matmul(torch.matmul(q, k.transpose(-2, -1)).mul(E**-0.5).softmax(-1), v)


def scale_on_q(q, k, v):
    return F.softmax((q * E**-0.5) @ k.transpose(2, 3), dim=-1) @ v


def scale_on_k(q, k, v):
    return torch.softmax(q @ (k / math.sqrt(E)).transpose(-1, -2), -1) @ v


def scale_split(q, k, v):
    s = E**-0.25
    return torch.softmax((q * s) @ (k.transpose(-1, -2) * s), -1) @ v


def no_scale(q, k, v):  # T5
    return torch.softmax(q @ k.transpose(-1, -2), -1) @ v


def bmm_3d(q, k, v):
    q3, k3, v3 = (t.reshape(-1, t.shape[-2], t.shape[-1]) for t in (q, k, v))
    w = F.softmax(torch.bmm(q3, k3.transpose(1, 2)) * E**-0.5, dim=-1)
    return torch.bmm(w, v3).view(B, H, L, E)


def baddbmm_mask(q, k, v, bias):
    q3, k3, v3 = (t.reshape(-1, t.shape[-2], t.shape[-1]) for t in (q, k, v))
    s = torch.baddbmm(bias, q3, k3.transpose(1, 2), beta=1.0, alpha=E**-0.5)
    return torch.bmm(s.softmax(-1), v3)


def einsum(q, k, v):
    s = torch.einsum("bhld,bhsd->bhls", q, k) / math.sqrt(E)
    return torch.einsum("bhls,bhsd->bhld", s.softmax(dim=-1), v)


def additive_padding_mask(q, k, v, keep):  # HF: (1 - mask) * finfo.min, [B, 1, 1, S]
    mask = (1.0 - keep[:, None, None, :].to(q.dtype)) * torch.finfo(q.dtype).min
    return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(E) + mask, -1) @ v


def alibi_bias(q, k, v, bias):  # [H, L, S] position bias
    return torch.softmax(q @ k.transpose(-1, -2) * E**-0.5 + bias, -1) @ v


def causal_masked_fill(q, k, v, tril):  # registered tril buffer, -inf
    s = (q @ k.transpose(-1, -2)) * E**-0.5
    return torch.softmax(s.masked_fill(~tril, float("-inf")), -1) @ v


def bool_mask_where_empty_rows(q, k, v, keep):  # rows with no key: NaN, as eager
    s = torch.where(keep, q @ k.transpose(-1, -2) / math.sqrt(E), float("-inf"))
    return torch.softmax(s, -1) @ v


def causal_where_finfo_min(q, k, v, keep):  # a finite fill: empty rows uniform
    s = q @ k.transpose(-1, -2) / math.sqrt(E)
    s = torch.where(keep, s, torch.finfo(s.dtype).min)
    return torch.softmax(s, -1) @ v


def alibi_then_finfo_min(q, k, v, bias, mask):  # MPT, Bloom: a bias, then the fill
    s = q @ k.transpose(-1, -2) * E**-0.5 + bias
    return torch.softmax(s.masked_fill(mask, torch.finfo(s.dtype).min).float(), -1).to(v.dtype) @ v


def causal_inf_then_finfo_min(q, k, v, causal, mask):  # -inf adds, then a finite fill
    s = q @ k.transpose(-1, -2) / math.sqrt(E) + causal
    return torch.softmax(torch.where(mask, torch.finfo(s.dtype).min, s), -1) @ v


def masked_fill_minus_1e9(q, k, v, mask):
    s = q @ k.transpose(-1, -2) / math.sqrt(E)
    return torch.softmax(s.masked_fill(mask == 0, -1e9), -1) @ v


def softmax_fp32_cast_back(q, k, v):
    s = q @ k.transpose(-1, -2) * E**-0.5
    return torch.softmax(s.float(), dim=-1).to(q.dtype) @ v


def softmax_dtype_arg(q, k, v):
    s = q @ k.transpose(-1, -2) * E**-0.5
    return F.softmax(s, dim=-1, dtype=torch.float32).to(v.dtype) @ v


def gqa_repeat_kv(q, k, v):  # HF's repeat_kv
    def repeat(x):
        b, h, s, d = x.shape
        return x[:, :, None, :, :].expand(b, h, H // h, s, d).reshape(b, H, s, d)

    return torch.softmax(q @ repeat(k).transpose(2, 3) * E**-0.5, -1) @ repeat(v)


def gqa_repeat_interleave(q, k, v):
    k, v = (t.repeat_interleave(H // HKV, dim=1) for t in (k, v))
    return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(E), -1) @ v


def mm_2d(q, k, v):
    return torch.softmax(q[0, 0] @ k[0, 0].T / math.sqrt(E), -1) @ v[0, 0]


class SelfAttention(torch.nn.Module):
    """Projections, heads split and merged around a hand-written attention."""

    def __init__(self, width=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.out = torch.nn.Linear(width, width)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        w = torch.softmax(q @ k.transpose(-2, -1) * (c // self.heads) ** -0.5, dim=-1)
        return self.out((w @ v).transpose(1, 2).reshape(b, n, c))


CASES: dict[str, tuple[Callable, Callable[[], list]]] = {
    "matmul_div_sqrt": (matmul_div_sqrt, _qkv),
    "matmul_mul_scale": (matmul_mul_scale, _qkv),
    "scale_on_q": (scale_on_q, _qkv),
    "scale_on_k": (scale_on_k, _qkv),
    "scale_split": (scale_split, _qkv),
    "no_scale": (no_scale, _qkv),
    "bmm_3d": (bmm_3d, _qkv),
    "baddbmm_mask": (baddbmm_mask, lambda: [*_qkv(), torch.randn(B * H, L, S)]),
    "einsum": (einsum, _qkv),
    "additive_padding_mask": (additive_padding_mask, lambda: [*_qkv(), _padding_keep()]),
    "alibi_bias": (alibi_bias, lambda: [*_qkv(), torch.randn(H, L, S)]),
    "causal_masked_fill": (causal_masked_fill, lambda: [*_qkv(), _causal()]),
    "bool_mask_where_empty_rows": (
        bool_mask_where_empty_rows,
        lambda: [*_qkv(), torch.rand(B, 1, L, S) > 0.4],
    ),
    "causal_where_finfo_min": (
        causal_where_finfo_min,
        lambda: [*_qkv(), torch.rand(B, 1, L, S) > 0.4],
    ),
    "alibi_then_finfo_min": (
        alibi_then_finfo_min,
        lambda: [*_qkv(), torch.randn(H, L, S), torch.rand(B, 1, L, S) > 0.6],
    ),
    "masked_fill_minus_1e9": (
        masked_fill_minus_1e9,
        lambda: [*_qkv(), (torch.rand(B, 1, 1, S) > 0.3).long()],
    ),
    "softmax_fp32_cast_back": (softmax_fp32_cast_back, lambda: _qkv(torch.bfloat16)),
    "softmax_dtype_arg": (softmax_dtype_arg, lambda: _qkv(torch.bfloat16)),
    "gqa_repeat_kv": (gqa_repeat_kv, lambda: _qkv(heads_kv=HKV)),
    "gqa_repeat_interleave": (gqa_repeat_interleave, lambda: _qkv(heads_kv=HKV)),
    "mm_2d": (mm_2d, _qkv),
    "self_attention_module": (SelfAttention(), lambda: [torch.randn(B, L, 32)]),
}


# -- spellings that must stay as they are ---------------------------------------


def softmax_over_queries(q, k, v):
    return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(E), dim=-2) @ v


def weights_returned(q, k, v):
    w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(E), dim=-1)
    return w @ v, w


def scale_after_softmax(q, k, v):
    return (torch.softmax(q @ k.transpose(-1, -2), dim=-1) / math.sqrt(E)) @ v


def mask_broadcasts_scores(q, k, v, bias):  # bias [2, 1, H, L, S]: 5-D scores
    return torch.softmax(q @ k.transpose(-1, -2) + bias, -1) @ v


def fill_before_bias(q, k, v, mask, bias):  # a fully masked row is not uniform
    s = (q @ k.transpose(-1, -2)).masked_fill(mask, torch.finfo(q.dtype).min)
    return torch.softmax(s + bias, -1) @ v


def fill_not_a_mask(q, k, v, mask):
    return torch.softmax((q @ k.transpose(-1, -2)).masked_fill(mask, 0.0), -1) @ v


def weights_transposed(q, k, v):  # [L, S] read as [S, L]: L == S here
    return torch.softmax(q @ k.transpose(-1, -2), -1).transpose(-1, -2) @ v


def bias_promotes_scores(q, k, v, bias, mask):  # MPT: bf16 scores + an f32 ALiBi table
    s = (q @ k.transpose(-1, -2) * E**-0.5 + bias).masked_fill(mask, torch.finfo(bias.dtype).min)
    return torch.softmax(s, -1).to(v.dtype) @ v


def tensor_temperature(q, k, v, t):  # a per-head tensor scale
    return torch.softmax((q @ k.transpose(-1, -2)) * t, -1) @ v


NEGATIVE: dict[str, tuple[Callable, Callable[[], list]]] = {
    "softmax_over_queries": (softmax_over_queries, _qkv),
    "weights_returned": (weights_returned, _qkv),
    "scale_after_softmax": (scale_after_softmax, _qkv),
    "mask_broadcasts_scores": (
        mask_broadcasts_scores,
        lambda: [*_qkv(), torch.randn(2, 1, H, L, S)],
    ),
    "fill_before_bias": (
        fill_before_bias,
        lambda: [*_qkv(), torch.rand(B, 1, L, S) > 0.6, torch.randn(H, L, S)],
    ),
    "fill_not_a_mask": (fill_not_a_mask, lambda: [*_qkv(), torch.rand(L, S) > 0.5]),
    "weights_transposed": (weights_transposed, lambda: _qkv(length=S)),
    "tensor_temperature": (tensor_temperature, lambda: [*_qkv(), torch.rand(1, H, 1, 1)]),
    # SDPA's float mask has the query's dtype: an add that widens the scores
    # stays (CUDA's fused kernels gave NaN for MPT's f32 mask on bf16).
    "bias_promotes_scores": (
        bias_promotes_scores,
        lambda: [*_qkv(torch.bfloat16), torch.randn(H, L, S), torch.rand(B, 1, L, S) > 0.6],
    ),
}


# -- helpers -------------------------------------------------------------------------


def _stages(dump: Path) -> dict[str, str]:
    """The forward graph's IR by stage name (``import``, ``aten-fuse-attention``)."""
    graph = sorted(p for p in dump.iterdir() if p.is_dir())[0]
    out = {}
    for f in sorted(graph.glob("*.mlir")):
        out.setdefault(re.sub(r"^\d+-", "", f.stem), f.read_text())  # the first of each
    return out


def _compile(fn, inputs, dump: Path, pipeline: str | None = None):
    options = {"dump_dir": str(dump), "cache": False}
    if pipeline is not None:
        options["pipeline"] = pipeline
    torch._dynamo.reset()
    return torch.compile(fn, backend="coil", options=options, fullgraph=True)(*inputs)


def _reference(fn, inputs):
    """(eager, float64) outputs; the float64 run for floating inputs only."""
    expected = fn(*inputs)
    if isinstance(fn, torch.nn.Module):
        return expected, None
    wide = [t.double() if t.is_floating_point() else t for t in inputs]
    return expected, fn(*wide)


def _close(actual, expected, wide) -> str | None:
    if wide is None:
        return difference(actual, expected)
    leaves = torch.utils._pytree.tree_leaves(expected)
    wide = [w.to(e.dtype) for w, e in zip(torch.utils._pytree.tree_leaves(wide), leaves)]
    return difference(
        actual,
        expected,
        torch.utils._pytree.tree_unflatten(wide, torch.utils._pytree.tree_structure(expected)),
    )


# -- tests ----------------------------------------------------------------------------


def _aten_backend(texts: list[str]):
    """A backend running the aten prefix ``canonicalize,aten-fuse-attention`` and
    then the IR in the reference executor (ATen op by op): the rewrite's
    numerics, without the Triton kernels of the full pipeline."""
    from coil.backend import run_pipeline
    from coil.frontend.capture import aot_backend
    from coil.frontend.fx_importer import constant_inputs, import_graph
    from coil.ir import print_module
    from coil.testing import run_module

    def compile_graph(gm, inputs):
        module = import_graph(gm, inputs)
        constants = constant_inputs(module, gm)
        run_pipeline(module, "canonicalize,aten-fuse-attention")
        texts.append(print_module(module))
        return lambda *args: run_module(module, [*args, *constants])

    return aot_backend(compile_graph)


def _run_aten(fn, inputs, dynamic=False):
    texts: list[str] = []
    torch._dynamo.reset()
    with torch.no_grad():
        compiled = torch.compile(fn, backend=_aten_backend(texts), fullgraph=True, dynamic=dynamic)
        out = compiled(*inputs)
    return out, texts[0]


@pytest.mark.parametrize("name", list(CASES))
def test_spelling_is_rewritten(name):
    fn, make = CASES[name]
    inputs = make()
    with torch.no_grad():
        expected, wide = _reference(fn, inputs)
    actual, text = _run_aten(fn, inputs)
    assert text.count(FLASH_OP) == 1, text
    assert "aten._softmax" not in text and "aten.bmm" not in text, text
    assert _close(actual, expected, wide) is None, _close(actual, expected, wide)


@pytest.mark.parametrize(
    "name",
    [
        "matmul_div_sqrt",
        pytest.param("additive_padding_mask", marks=pytest.mark.slow),
        pytest.param("bmm_3d", marks=pytest.mark.slow),
    ],
)
def test_symbolic_sizes(name):
    fn, make = CASES[name]
    inputs = make()
    actual, text = _run_aten(fn, inputs, dynamic=True)
    assert text.count(FLASH_OP) == 1 and " s" in text, text  # sizes are symbols
    assert difference(actual, fn(*inputs)) is None


@pytest.mark.parametrize("name", list(NEGATIVE))
def test_not_attention_is_left_alone(name):
    fn, make = NEGATIVE[name]
    inputs = make()
    actual, text = _run_aten(fn, inputs)
    assert FLASH not in text and "aten._softmax" in text, text


def _where_minus_1e9(q, k, v, keep):
    return torch.softmax(torch.where(keep, q @ k.transpose(-1, -2), -1e9), -1) @ v


def _finfo_min_then_scale(q, k, v, keep):  # finfo.min * 2 overflows: -inf
    s = (q @ k.transpose(-1, -2)).masked_fill(~keep, torch.finfo(q.dtype).min)
    return torch.softmax(s * 2.0, -1) @ v


@pytest.mark.parametrize(
    "fn, dtype, nan",
    [
        (bool_mask_where_empty_rows, torch.float32, True),
        (causal_where_finfo_min, torch.float32, False),
        (causal_where_finfo_min, torch.bfloat16, False),
        (_where_minus_1e9, torch.float32, False),
        (_where_minus_1e9, torch.float16, True),  # -1e9 is -inf in float16
        (_finfo_min_then_scale, torch.float32, True),
    ],
    ids=["-inf", "finfo.min", "finfo.min-bf16", "-1e9", "-1e9-fp16", "finfo.min*2"],
)
def test_fully_masked_rows_keep_eagers_values(fn, dtype, nan):
    # A row with no key: NaN in eager for -inf, uniform weights (the mean of
    # v) for a finite fill; SDPA's kernels give zeros for both.
    q, k, v = _qkv(dtype)
    keep = torch.rand(B, 1, L, S) > 0.4
    keep[0, 0, 1] = False
    out, text = _run_aten(fn, [q, k, v, keep])
    assert text.count(FLASH_OP) == 1
    expected = fn(q, k, v, keep)
    assert expected[0, :, 1].isnan().all() == nan and not expected[1].isnan().any()
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 2e-2, "atol": 2e-2}
    torch.testing.assert_close(out, expected, equal_nan=True, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_fill_after_additive_masks_keeps_eagers_rows(dtype):
    # Additive masks, then masked_fill(finfo.min) (MPT, Bloom): the fill rides
    # in SDPA's float mask. Rows: masked everywhere (eager: uniform over all
    # keys), kept keys all -inf from the add (uniform over the masked ones),
    # no masked key and every add -inf (NaN, as eager), and ordinary rows.
    q, k, v = _qkv(dtype)
    add = torch.randn(B, 1, L, S, dtype=dtype)
    add[torch.rand(B, 1, L, S) > 0.7] = float("-inf")
    mask = torch.rand(B, 1, L, S) > 0.6
    mask[0, 0, 1] = True
    add[0, 0, 2], mask[0, 0, 2] = float("-inf"), torch.arange(S) < 3
    add[1, 0, 3], mask[1, 0, 3] = float("-inf"), False
    out, text = _run_aten(causal_inf_then_finfo_min, [q, k, v, add, mask])
    assert text.count(FLASH_OP) == 1, text
    expected = causal_inf_then_finfo_min(q, k, v, add, mask)
    assert expected[1, :, 3].isnan().all() and not expected[0].isnan().any()
    torch.testing.assert_close(out[0, :, 1], v[0].mean(-2))  # uniform: the mean of v
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 2e-2, "atol": 2e-2}
    torch.testing.assert_close(out, expected, equal_nan=True, **tol)


def test_float16_fill_after_additive_masks_stays():
    # float16's finfo.min (-65504) does not swallow the scores SDPA adds to it:
    # a fully masked row would not be uniform, so the block is kept.
    q, k, v = _qkv(torch.float16)
    inputs = [q, k, v, torch.randn(H, L, S, dtype=torch.float16), torch.rand(B, 1, L, S) > 0.6]
    _, text = _run_aten(alibi_then_finfo_min, inputs)
    assert FLASH not in text and "aten._softmax" in text, text


# Through the whole backend (Triton kernels under the interpreter): a few
# spellings by default, every one with -m slow.
BACKEND = ["matmul_div_sqrt", "gqa_repeat_kv", "causal_where_finfo_min", "softmax_fp32_cast_back"]


@pytest.mark.parametrize(
    "name",
    [n if n in BACKEND else pytest.param(n, marks=pytest.mark.slow) for n in CASES],
)
def test_spelling_through_the_backend(name, tmp_path):
    fn, make = CASES[name]
    inputs = make()
    with torch.no_grad():
        expected, wide = _reference(fn, inputs)
        actual = _compile(fn, inputs, tmp_path)
    stages = _stages(tmp_path)
    assert FLASH not in stages["import"]
    assert stages["aten-fuse-attention"].count(FLASH_OP) == 1, stages["aten-fuse-attention"]
    assert _close(actual, expected, wide) is None, _close(actual, expected, wide)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(NEGATIVE))
def test_not_attention_through_the_backend(name, tmp_path):
    fn, make = NEGATIVE[name]
    inputs = make()
    with torch.no_grad():
        expected, wide = _reference(fn, inputs)
        actual = _compile(fn, inputs, tmp_path)
    stages = _stages(tmp_path)
    assert stages["aten-fuse-attention"] == stages["canonicalize"]
    assert _close(actual, expected, wide) is None


TRAINING = [
    "matmul_div_sqrt",
    "scale_on_q",
    "bmm_3d",
    "einsum",
    "additive_padding_mask",
    "causal_masked_fill",
    "gqa_repeat_kv",
    "self_attention_module",
]


@pytest.mark.parametrize(
    "name",
    [
        n if n == "self_attention_module" else pytest.param(n, marks=pytest.mark.slow)
        for n in TRAINING
    ],
)
def test_training_gets_the_fused_backward(name, tmp_path):
    fn, make = CASES[name]
    module = fn if isinstance(fn, torch.nn.Module) else None
    inputs = make()
    leaves = [t.requires_grad_() for t in inputs if t.is_floating_point()]
    params = list(module.parameters()) if module is not None else []
    grad_out = None

    def step(f):
        nonlocal grad_out
        out = f(*inputs)
        if grad_out is None:
            grad_out = torch.randn_like(out)
        grads = torch.autograd.grad(out, leaves + params, grad_out)
        return out.detach(), grads

    expected = step(fn)
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="coil", options={"dump_dir": str(tmp_path)})
    actual = step(compiled)
    graphs = sorted(p for p in tmp_path.iterdir() if p.is_dir())
    forward = (graphs[0] / "000-import.mlir").read_text()
    backward = (graphs[1] / "000-import.mlir").read_text()
    assert forward.count(FLASH_OP) == 1 and "aten.bmm" not in forward, forward
    assert backward.count(f'"aten::{FLASH}_backward"') == 1, backward
    assert difference(actual, expected) is None, difference(actual, expected)


def test_dropout_follows_the_law(caplog):
    # Weights uniform (q = k = 0) and v the identity: out = dropout(1/S)
    # itself. SDPA's dropout keeps each weight with probability 1 - p, scaled
    # by 1 / (1 - p), and its backward uses the forward's mask: d(sum out)/dv
    # is out summed over queries.
    p, n_keys = 0.25, 32
    pipeline = PIPELINES["default"].replace(
        "aten-fuse-attention", "aten-fuse-attention{fused-only=false}"
    )

    def attention(q, k, v):
        w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), -1)
        return F.dropout(w, p, training=True) @ v

    q = torch.zeros(B, H, 16, n_keys, requires_grad=True)
    k = torch.zeros(B, H, n_keys, n_keys, requires_grad=True)
    v = torch.eye(n_keys).expand(B, H, n_keys, n_keys).contiguous().requires_grad_()
    torch._dynamo.reset()
    with caplog.at_level(logging.DEBUG, logger="coil"):
        out = torch.compile(attention, backend="coil", options={"pipeline": pipeline})(q, k, v)
    assert "1 attention block(s) rewritten to SDPA before autograd" in caplog.text
    kept = out != 0
    n = kept.numel()
    frac = kept.float().mean().item()
    assert abs(frac - (1 - p)) < 4 * math.sqrt(p * (1 - p) / n)  # 4 sigma
    torch.testing.assert_close(out[kept], torch.full_like(out[kept], 1 / (n_keys * (1 - p))))
    (grad_v,) = torch.autograd.grad(out.sum(), v)
    torch.testing.assert_close(grad_v, out.detach().sum(-2)[..., None].expand_as(grad_v))


def test_fx_opt_runs_the_pass_alone(tmp_path):
    from coil.backend import run_pipeline
    from coil.frontend.loader import import_module
    from coil.ir import print_module

    module = import_module(matmul_div_sqrt, _qkv())
    run_pipeline(module, "aten-fuse-attention")
    assert print_module(module).count(FLASH_OP) == 1


def test_chained_attentions_in_training():
    # The second attention's query is the first one's output: the rewrite of
    # the first replaces the node the second reads.
    def two(q, k, v):
        return matmul_div_sqrt(matmul_div_sqrt(q, k, v), k, v)

    q, k, v = (t.requires_grad_() for t in _qkv(length=S))
    grad = torch.randn(B, H, S, E)
    expected = torch.autograd.grad(two(q, k, v), (q, k, v), grad)
    torch._dynamo.reset()
    out = torch.compile(two, backend="coil")(q, k, v)
    assert difference(torch.autograd.grad(out, (q, k, v), grad), expected) is None


def _tiny_transformer(name: str):
    transformers = pytest.importorskip("transformers")
    common = dict(vocab_size=100, max_position_embeddings=64)
    config = {
        "gpt2": lambda: transformers.GPT2Config(
            n_embd=32, n_head=4, n_layer=2, vocab_size=100, n_positions=64
        ),
        "llama": lambda: transformers.LlamaConfig(  # grouped-query attention, rotary
            hidden_size=32,
            num_attention_heads=4,
            num_key_value_heads=2,
            num_hidden_layers=2,
            intermediate_size=64,
            **common,
        ),
        "bert": lambda: transformers.BertConfig(
            hidden_size=32,
            num_attention_heads=4,
            num_hidden_layers=2,
            intermediate_size=64,
            **common,
        ),
        "t5": lambda: transformers.T5Config(  # relative-position bias, no scale
            d_model=32, d_kv=8, num_heads=4, num_layers=2, d_ff=64, vocab_size=100
        ),
    }[name]()
    return transformers.AutoModel.from_config(config, attn_implementation="eager").eval()


@pytest.mark.parametrize(
    "name, blocks",
    [
        pytest.param("gpt2", 2, marks=pytest.mark.slow),
        ("llama", 2),
        pytest.param("bert", 2, marks=pytest.mark.slow),
        pytest.param("t5", 6, marks=pytest.mark.slow),
    ],
)
def test_transformers_eager_attention(name, blocks):
    # transformers' own "eager" attention (causal and padding masks, GQA,
    # relative-position biases): every block rewritten, the model's output
    # unchanged.
    model = _tiny_transformer(name)
    ids = torch.randint(0, 100, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 6:] = 0
    extra = {"decoder_input_ids": ids} if name == "t5" else {}

    def run(i, a):
        return model(input_ids=i, attention_mask=a, **extra).last_hidden_state

    actual, text = _run_aten(run, [ids, mask])
    assert text.count(FLASH_OP) == blocks and "aten._softmax" not in text
    assert difference(actual, run(ids, mask)) is None
