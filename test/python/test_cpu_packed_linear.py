"""aten-cpu-packed-linear and coil::packed_linear: CPU inference products of
parameters over a weight packed once (transforms/aten_cpu_packed_linear.py,
dialects/torch_library.py)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import coil.dialects.torch_library as coil_ops

BF16 = pytest.mark.skipif(
    not coil_ops.packable(torch.bfloat16), reason="no oneDNN bfloat16 GEMM on this CPU"
)
F32 = pytest.mark.skipif(not coil_ops.packable(torch.float32), reason="torch without MKL")


def _mlp(dtype):
    torch.manual_seed(0)
    return (
        torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 512))
        .eval()
        .to(dtype)
    )


@pytest.fixture
def calls(monkeypatch):
    """How many products ran through coil::packed_linear."""
    seen = []
    real = coil_ops.packed_linear

    def counting(*args):
        seen.append(args[1].shape)
        return real(*args)

    monkeypatch.setattr(coil_ops, "packed_linear", counting)
    return seen


@pytest.mark.parametrize(
    "dtype, tol",
    [
        pytest.param(torch.float32, 1e-4, marks=F32),
        pytest.param(torch.bfloat16, 2e-2, marks=BF16),
    ],
)
def test_mlp_matches_eager_and_follows_weight_updates(dtype, tol, calls):
    m = _mlp(dtype)
    f = torch.compile(m, backend="coil", options={"cache": False})
    x = torch.randn(33, 512, dtype=dtype)
    with torch.no_grad():
        torch.testing.assert_close(f(x), m(x), rtol=tol, atol=tol)
        assert len(calls) == 2, calls  # both products packed
        m[0].weight.mul_(-0.5)  # in place: the packed copy is made again
        torch.testing.assert_close(f(x), m(x), rtol=tol, atol=tol)
        m.load_state_dict(_mlp(dtype).state_dict())
        torch.testing.assert_close(f(x), m(x), rtol=tol, atol=tol)


@F32
def test_dynamic_rows_and_3d_input(calls):
    m = torch.nn.Linear(512, 768).eval()
    f = torch.compile(m, backend="coil", dynamic=True, options={"cache": False})
    with torch.no_grad():
        for shape in ((7, 512), (3, 5, 512), (64, 512)):
            x = torch.randn(*shape)
            torch.testing.assert_close(f(x), m(x), rtol=1e-5, atol=1e-4)
    assert calls


@F32
def test_training_graph_is_not_packed(calls):
    m = _mlp(torch.float32).train()
    ref = _mlp(torch.float32).train()
    f = torch.compile(m, backend="coil", options={"cache": False})
    x = torch.randn(16, 512)
    f(x).square().sum().backward()
    ref(x).square().sum().backward()
    assert not calls
    torch.testing.assert_close(m[0].weight.grad, ref[0].weight.grad, rtol=1e-4, atol=1e-4)


@F32
def test_operator_falls_back_where_it_cannot_pack():
    x, b = torch.randn(9, 300), torch.randn(200)
    with torch.inference_mode():  # no version counter: nothing could tell an update
        w = torch.randn(200, 300)
    torch.testing.assert_close(coil_ops.packed_linear(x, w, b), F.linear(x, w, b))
    w64 = torch.randn(200, 300, dtype=torch.float64)  # no packed kernel for f64
    x64 = x.double()
    torch.testing.assert_close(coil_ops.packed_linear(x64, w64, None), F.linear(x64, w64))
    strided = torch.randn(300, 200).t()  # not row-major
    torch.testing.assert_close(coil_ops.packed_linear(x, strided, b), F.linear(x, strided, b))


def test_operator_has_a_meta_kernel():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        y = torch.ops.coil.packed_linear(torch.empty(2, 5, 300), torch.empty(200, 300), None)
    assert y.shape == (2, 5, 200)


@F32
def test_float32_packs_per_row_count_bounded():
    # MKL packs for one row count: each count gets its own pack, eight at most;
    # past that the first pack's count runs packed and the others run ATen's
    # linear (inside mkl::_mkl_linear), all equal to F.linear.
    w, b = torch.randn(600, 500), torch.randn(600)
    for rows in (3, 7, 64, 3, 200, 9, 10, 11, 12, 13, 14):
        x = torch.randn(rows, 500)
        got = coil_ops.packed_linear(x, w, b)  # sums in MKL's order: rounding differs
        torch.testing.assert_close(got, F.linear(x, w, b), rtol=1e-5, atol=1e-4)
    assert len(coil_ops._PACKED[id(w)].packs) == coil_ops.PACKS_PER_WEIGHT
    with torch.no_grad():
        w.add_(1.0)  # a new version: the packs are made again
    x = torch.randn(5, 500)
    got = coil_ops.packed_linear(x, w, b)
    torch.testing.assert_close(got, F.linear(x, w, b), rtol=1e-5, atol=1e-4)
    assert list(coil_ops._PACKED[id(w)].packs) == [5]


@BF16
def test_autocast_packs_the_float32_parameter_as_bfloat16(calls):
    # Under bf16 autocast each call would copy every weight to bf16 and ATen's
    # GEMM repack it: the operator gets the f32 parameter and packs it once;
    # an in-place update of the parameter is seen.
    m = _mlp(torch.float32)
    f = torch.compile(m, backend="coil", options={"cache": False})
    x = torch.randn(16, 512)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        got, want = f(x), m(x)
        assert got.dtype == want.dtype == torch.bfloat16
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
        assert len(calls) == 2 and all(shape[0] in (512, 1024) for shape in calls), calls
    with torch.no_grad():
        m[2].weight.mul_(-0.5)  # (outside autocast: eager's own cast cache holds the old copy)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        torch.testing.assert_close(f(x), m(x), rtol=2e-2, atol=2e-2)
    w = m[0].weight
    assert -1 in coil_ops._PACKED[id(w)].packs  # the bf16 pack of the f32 weight


def test_operator_with_a_float32_weight_and_bfloat16_rows():
    x, w, b = torch.randn(8, 600).bfloat16(), torch.randn(700, 600), torch.randn(700).bfloat16()
    want = F.linear(x, w.bfloat16(), b)
    torch.testing.assert_close(coil_ops.packed_linear(x, w, b), want, rtol=2e-2, atol=2e-2)
    with torch.inference_mode():  # not packable: the fallback casts as autocast does
        frozen = torch.randn(700, 600)
    torch.testing.assert_close(
        coil_ops.packed_linear(x, frozen, b), F.linear(x, frozen.bfloat16(), b)
    )
