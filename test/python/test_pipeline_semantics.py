"""The backend's default pipeline keeps eager's exact results and aliasing on
cases where a careless canonicalization would not (signed zero, reduced
precision scalars, outputs aliasing inputs, ops needing tensor operands)."""

from __future__ import annotations

import torch

from coil.backend import coil as coil_backend


def _compile(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend=coil_backend, fullgraph=True)


def test_x_plus_zero_keeps_signed_zero():
    x = torch.tensor([-0.0, 2.0])

    def fn(x):
        return 1.0 / (x + 0)

    torch.testing.assert_close(_compile(fn)(x), fn(x))


def test_bf16_scalar_tensor_keeps_its_rounding():
    x = torch.tensor([1.0, 3.0, 5.0, 7.0], dtype=torch.bfloat16)

    def fn(x):
        return x / torch.full((), 0.001, dtype=torch.bfloat16)

    torch.testing.assert_close(_compile(fn)(x), fn(x), rtol=0, atol=0)


def test_maximum_with_a_0d_tensor_still_runs():
    x = torch.randn(8)

    def fn(x):
        return torch.maximum(x, torch.full((), 0.5)), x < torch.full((), 0.5)

    for a, e in zip(_compile(fn)(x), fn(x)):
        torch.testing.assert_close(a, e)


def test_clone_of_a_view_does_not_alias_the_input():
    x = torch.ones(2, 3)
    out = _compile(lambda x: x.view(-1).clone())(x)
    out.add_(5)
    assert torch.equal(x, torch.ones(2, 3))


def test_two_outputs_do_not_share_storage():
    x = torch.randn(4)
    a, b = _compile(lambda x: (x.relu(), x.relu().clone()))(x)
    assert a.data_ptr() != b.data_ptr()
