"""Replication padding's backward, lowered as a gather
(lowering/aten_to_loop/data_movement.py), and grid sampling, decomposed into
index math (frontend/decompositions.py EXTRA), against eager on the CPU
(Triton's interpreter): outputs and the input's gradient, f32 and bf16,
contiguous and channels-last, under ``fallback="error"`` where nothing may
fall back to ATen."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from coil.testing import tolerances


def _run(fn, x, grid=None, backward=True):
    xi = x.detach().clone().requires_grad_(backward)
    args = (xi,) if grid is None else (xi, grid)
    out = fn(*args)
    if not backward:
        return out.detach(), None
    weight = torch.randn(out.shape, generator=torch.Generator().manual_seed(1)).to(out.dtype)
    (out * weight).sum().backward()
    return out.detach(), xi.grad


def _check(fn, x, grid=None, backward=True, fallback="error"):
    """``fn`` compiled against eager: its output and the input's gradient; bf16
    against eager in f32 rounded to bf16 (eager's bf16 sums round each step)."""
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="coil", options={"fallback": fallback, "cache": False})
    got, got_grad = _run(compiled, x, grid, backward)
    f32_grid = grid.float() if grid is not None else None
    want, want_grad = _run(fn, x.float(), f32_grid, backward)
    tol = tolerances(x.dtype)
    torch.testing.assert_close(got, want.to(x.dtype), **tol)
    assert got.stride() == (fn(x) if grid is None else fn(x, grid)).stride()
    if backward:
        torch.testing.assert_close(got_grad, want_grad.to(x.dtype), **tol)


@pytest.mark.parametrize(
    "pad, shape, dtype, layout",
    [
        ((2, 1), (2, 3, 7), torch.float32, torch.contiguous_format),
        ((0, 3), (2, 3, 1), torch.bfloat16, torch.contiguous_format),  # size 1: both pads
        ((2, 1, 1, 2), (2, 3, 5, 6), torch.float32, torch.channels_last),
        ((0, 0, 3, 1), (1, 2, 4, 5), torch.bfloat16, torch.channels_last),  # one dim padded
        ((1, 1, 2, 0, 1, 2), (1, 2, 3, 4, 5), torch.float32, torch.contiguous_format),
        pytest.param(
            (1, 1, 2, 0, 1, 2),
            (1, 2, 3, 4, 5),
            torch.bfloat16,
            torch.channels_last_3d,
            marks=pytest.mark.slow,
        ),
    ],
)
def test_replication_pad_backward(pad, shape, dtype, layout):
    torch.manual_seed(0)
    x = torch.randn(*shape, dtype=dtype).contiguous(memory_format=layout)
    _check(lambda t: F.pad(t, pad, mode="replicate"), x)


@pytest.mark.parametrize(
    "mode, padding_mode, align_corners, dtype",
    [
        ("bilinear", "zeros", False, torch.float32),
        ("nearest", "border", True, torch.float32),
        # bicubic's 16 taps, each reflected: a minute of compiling here
        pytest.param("bicubic", "reflection", False, torch.float32, marks=pytest.mark.slow),
        ("bilinear", "reflection", True, torch.bfloat16),
        pytest.param("bicubic", "zeros", True, torch.bfloat16, marks=pytest.mark.slow),
        pytest.param("nearest", "reflection", False, torch.float32, marks=pytest.mark.slow),
    ],
)
def test_grid_sample(mode, padding_mode, align_corners, dtype):
    """The forward is coil's kernels; the training step's backward
    (grid_sampler_2d_backward, a scatter-add) is ATen's, checked in f32 (in
    bf16 it rounds each add)."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 6, dtype=dtype)
    # Points inside and outside [-1, 1]: every padding mode's reflections show.
    grid = (torch.rand(2, 4, 3, 2) * 2.6 - 1.3).to(dtype)

    def f(t, g):
        return F.grid_sample(t, g, mode, padding_mode, align_corners)

    _check(f, x, grid, backward=False)
    if dtype == torch.float32:
        _check(f, x, grid, backward=True, fallback="extern")
