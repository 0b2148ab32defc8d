"""Large matrix products of a misaligned width run on a padded operand
(lowering/gemm_alignment.py); results match eager; a returned product keeps
the padded row stride (as Inductor's pad_mm output does), anything computed
from it eager's strides. The IR form is in test/lowering/bufferize.mlir."""

from __future__ import annotations

import pytest
import torch

from coil.testing import assert_close_to_eager

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


@pytest.mark.parametrize(
    "dtype, tf32",
    [(torch.bfloat16, False), (torch.float32, True), (torch.float32, False)],
    ids=["bf16", "f32-tf32", "f32"],
)
@pytest.mark.parametrize("bias", [False, True])
def test_lm_head_with_an_odd_vocabulary(dtype, tf32, bias, tmp_path, monkeypatch):
    # f32 is padded only where cuBLAS may use TF32 (its FFMA kernels need no
    # alignment); the flag is read when the graph compiles.
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", tf32)
    torch.manual_seed(0)
    head = torch.nn.Linear(64, 1003, bias=bias).to("cuda", dtype)

    def f(x):
        logits = head(x)
        return logits, torch.log_softmax(logits.float(), -1)

    x = torch.randn(4, 160, 64, device="cuda", dtype=dtype)  # 640 rows: padded
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="coil", options={"dump_dir": str(tmp_path)})
    with torch.no_grad():
        got, want = compiled(x), f(x)
    (wrapper,) = tmp_path.glob("*/wrapper.py")
    padded = dtype == torch.bfloat16 or tf32
    assert ("new_zeros" in wrapper.read_text()) == padded
    # log_softmax in f32 of bf16 logits: a 1-ulp bf16 difference between two
    # cuBLAS kernels shows at bf16's tolerance, not f32's; TF32 products of two
    # kernels differ at TF32's 10-bit precision.
    if dtype == torch.bfloat16 or tf32:
        torch.testing.assert_close(got[0], want[0], rtol=1e-2, atol=1e-2)
        torch.testing.assert_close(got[1], want[1], rtol=1e-2, atol=1e-2)
    else:
        assert_close_to_eager(got[0], want[0])
        assert_close_to_eager(got[1], want[1])
    # Returned as the padded product's columns (no copy), as Inductor does.
    width = {torch.bfloat16: 1008, torch.float32: 1004}[dtype] if padded else 1003
    assert got[0].stride() == (160 * width, width, 1)
    assert got[1].stride() == want[1].stride()


def test_batched_product_with_odd_columns():
    torch.manual_seed(0)
    a = torch.randn(3, 600, 32, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(3, 32, 45, device="cuda", dtype=torch.bfloat16)
    torch._dynamo.reset()
    compiled = torch.compile(lambda a, b: torch.relu(a @ b), backend="coil")
    assert_close_to_eager(compiled(a, b), torch.relu(a @ b))


@pytest.mark.parametrize("layout", ["row_major", "column_major"])
def test_pad_keeps_the_operand_layout(layout, tmp_path):
    # A column-major B (b.transpose: a Linear weight's t()) is padded as the
    # row-major matrix behind it (zero rows), a row-major B with zero columns.
    torch.manual_seed(0)
    a = torch.randn(2, 700, 48, device="cuda", dtype=torch.bfloat16)
    if layout == "column_major":
        w = torch.randn(2, 1001, 48, device="cuda", dtype=torch.bfloat16)
        f = lambda a, w: torch.bmm(a, w.transpose(1, 2)) * 2.0  # noqa: E731
    else:
        w = torch.randn(2, 48, 1001, device="cuda", dtype=torch.bfloat16)
        f = lambda a, w: torch.bmm(a, w) * 2.0  # noqa: E731
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="coil", options={"dump_dir": str(tmp_path)})
    got = compiled(a, w)
    (wrapper,) = tmp_path.glob("*/wrapper.py")
    text = wrapper.read_text()
    assert "new_zeros" in text and "aten.cat" in text
    # zero rows [2, 7, 48] behind the transpose, or zero columns [2, 48, 7]
    assert ("[2, 7, 48]" in text) == (layout == "column_major"), text
    assert_close_to_eager(got, f(a, w))
    assert got.stride() == f(a, w).stride()
