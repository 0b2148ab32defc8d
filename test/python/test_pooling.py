"""Pooling lowered to window gathers (lowering/aten_to_loop/pooling.py).

max_pool2d_with_indices as a window max and argmax: values and indices equal
eager's on the CPU (Triton's interpreter), with padding, strides, dilation,
ceil_mode, a NaN, bf16 and a channels-last input; nothing falls back to ATen.
Windows whose real elements are all -inf, and windows with two NaNs, get
ATen's indices too.

Then every pooling op (average, max, adaptive average and max; 1-d, 2-d and
3-d; unbatched) forward and backward: outputs, their strides and the input's
gradient against eager, in f32 and bf16, contiguous and channels-last, with
padding, ceil_mode, count_include_pad, divisor_override and dilation, under
``fallback="error"``, so an op sent to ATen fails the test; nn.Unfold and
nn.Fold (im2col, col2im) the same way; average and max pools over dynamic
sizes."""

from __future__ import annotations

import pytest
import torch

from coil.testing import tolerances


@pytest.mark.parametrize(
    "kernel, stride, padding, dilation, ceil_mode, shape, dtype, channels_last",
    [
        (3, 2, 1, 1, False, (2, 3, 9, 11), torch.float32, False),
        (2, 2, 0, 1, True, (1, 2, 7, 7), torch.bfloat16, True),
        (3, 1, 1, 2, False, (2, 2, 8, 6), torch.float32, True),
        ((3, 2), (2, 1), (1, 0), 1, True, (1, 3, 10, 9), torch.float32, False),
    ],
)
def test_max_pool2d_with_indices(
    kernel, stride, padding, dilation, ceil_mode, shape, dtype, channels_last
):
    def f(x):
        return torch.nn.functional.max_pool2d(
            x, kernel, stride, padding, dilation, ceil_mode=ceil_mode, return_indices=True
        )

    torch.manual_seed(0)
    x = torch.randn(*shape, dtype=dtype)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    x[0, 0, 0, 0] = float("nan")  # a NaN is the window's maximum, as in eager
    # Two NaNs in one window: ATen's loop keeps the last it meets.
    x[0, 1, 2, 2] = x[0, 1, 2, 3] = float("nan")
    # A plane of -inf: ATen gives each window's first in-bounds point, never a
    # padding point (whose flat index would be negative or past the row).
    x[-1, -1] = float("-inf")
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="coil", options={"fallback": "error", "cache": False})
    (got, got_index), (want, want_index) = compiled(x), f(x)
    torch.testing.assert_close(got, want, equal_nan=True)
    assert torch.equal(got_index, want_index)


# ---- every pooling op and its backward, forward and gradients against eager ----------

F = torch.nn.functional


def _check(fn, shape, dtype, memory_format=torch.contiguous_format, backward=True, eager_f32=False):
    """``fn`` compiled with nothing allowed to fall back to ATen, against eager:
    the outputs (values and strides) and, from a random-weighted sum of them,
    the input's gradient. ``eager_f32``: eager runs in f32, its results cast
    back (ATen's CPU kernel lacks the dtype)."""
    torch.manual_seed(0)
    x = torch.randn(*shape, dtype=dtype).contiguous(memory_format=memory_format)
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="coil", options={"fallback": "error", "cache": False})
    results = []
    for f in (compiled, fn):
        xi = x.detach().clone()
        if f is fn and eager_f32:
            xi = xi.float()
        xi.requires_grad_(backward)
        out = f(xi)
        outs = out if isinstance(out, tuple) else (out,)
        grad = None
        if backward:
            weight = torch.randn(outs[0].shape, generator=torch.Generator().manual_seed(1))
            (outs[0] * weight.to(dtype).to(xi.dtype)).sum().backward()
            grad = xi.grad.to(dtype)
        outs = [o.detach().to(dtype) if o.is_floating_point() else o.detach() for o in outs]
        results.append((outs, grad))
    (got, got_grad), (want, want_grad) = results
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, **tolerances(w.dtype), equal_nan=True)
        assert g.stride() == w.stride(), (g.stride(), w.stride())
    if backward:
        torch.testing.assert_close(got_grad, want_grad, **tolerances(dtype))


PAIRS = [
    (torch.float32, torch.contiguous_format),
    (torch.bfloat16, torch.channels_last),
    (torch.bfloat16, torch.contiguous_format),
    (torch.float32, torch.channels_last),
]


def _sweep(configs):
    """Each config with each (dtype, layout) pair: config k with pair k % 2 by
    default (every config runs once, half in bf16 channels-last), the rest
    with ``-m slow``."""
    cases = []
    for k, config in enumerate(configs):
        for j, (dtype, layout) in enumerate(PAIRS):
            marks = () if j == k % 2 else pytest.mark.slow
            cases.append(pytest.param(*config, dtype, layout, marks=marks))
    return cases


def _one_dtype():
    """f32 by default, bf16 with ``-m slow``."""
    return [torch.float32, pytest.param(torch.bfloat16, marks=pytest.mark.slow)]


@pytest.mark.parametrize(
    "kernel, stride, padding, ceil_mode, count_include_pad, divisor, shape, dtype, layout",
    _sweep(
        [
            (3, 2, 1, False, True, None, (2, 3, 9, 11)),
            (3, 2, 1, True, False, None, (1, 3, 10, 9)),
            # ceil_mode windows past the padding: a smaller divisor even counting it
            (3, 2, 1, True, True, None, (1, 2, 10, 8)),
            (2, None, 0, True, True, None, (2, 2, 7, 7)),
            ((3, 2), (2, 1), (1, 0), False, True, 3, (1, 3, 8, 7)),
            ((1, 3), (1, 3), 0, False, True, None, (2, 2, 3, 9)),
        ]
    ),
)
def test_avg_pool2d(
    kernel, stride, padding, ceil_mode, count_include_pad, divisor, shape, dtype, layout
):
    def f(x):
        return F.avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor)

    _check(f, shape, dtype, layout)


@pytest.mark.parametrize("dtype", _one_dtype())
def test_avg_pool_1d_and_unbatched(dtype):
    _check(lambda x: F.avg_pool1d(x, 3, 2, 1, count_include_pad=False), (2, 3, 11), dtype)
    _check(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), (3, 8, 7), dtype)


@pytest.mark.parametrize(
    "kernel, stride, padding, ceil_mode, count_include_pad, dtype, layout",
    [
        (2, 2, 1, False, True, torch.float32, torch.contiguous_format),
        (3, (2, 1, 2), 1, True, False, torch.bfloat16, torch.channels_last_3d),
        pytest.param(
            3,
            (2, 1, 2),
            1,
            True,
            False,
            torch.float32,
            torch.channels_last_3d,
            marks=pytest.mark.slow,
        ),
    ],
)
def test_avg_pool3d(kernel, stride, padding, ceil_mode, count_include_pad, dtype, layout):
    def f(x):
        return F.avg_pool3d(x, kernel, stride, padding, ceil_mode, count_include_pad)

    # ATen's CPU avg_pool3d has no bf16 kernel: eager runs in f32.
    _check(f, (1, 2, 5, 6, 7), dtype, layout, eager_f32=True)


@pytest.mark.parametrize(
    "kernel, stride, padding, dilation, ceil_mode, shape, dtype, layout",
    _sweep(
        [
            (3, 2, 1, 1, False, (2, 3, 9, 11)),
            (2, 2, 0, 1, True, (1, 2, 7, 7)),
            (3, 1, 1, 2, False, (2, 2, 8, 6)),
            ((3, 2), (2, 1), (1, 0), (2, 1), True, (1, 3, 10, 9)),
        ]
    ),
)
def test_max_pool2d_backward(kernel, stride, padding, dilation, ceil_mode, shape, dtype, layout):
    def f(x):
        return F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode)

    _check(f, shape, dtype, layout)


@pytest.mark.parametrize("dtype", _one_dtype())
def test_max_pool1d_and_3d(dtype):
    _check(lambda x: F.max_pool1d(x, 3, 2, 1), (2, 3, 11), dtype)
    _check(
        lambda x: F.max_pool3d(x, 3, (2, 1, 2), 1, ceil_mode=True, return_indices=True),
        (1, 2, 5, 6, 7),
        dtype,
        torch.channels_last_3d,
    )


@pytest.mark.parametrize(
    "size, shape, dtype, layout",
    _sweep(
        [
            ((3, 2), (2, 3, 7, 5)),  # even windows: no mask
            ((4, 3), (2, 3, 7, 5)),  # uneven windows, overlapping
            ((4, 4), (1, 2, 8, 8)),  # a plain 2x2 average
            ((5, 7), (1, 2, 3, 4)),  # more outputs than inputs
        ]
    ),
)
def test_adaptive_avg_pool2d(size, shape, dtype, layout):
    _check(lambda x: F.adaptive_avg_pool2d(x, size), shape, dtype, layout)


@pytest.mark.parametrize(
    "size, shape, dtype, layout", _sweep([((4, 3), (2, 3, 7, 5)), ((5, 7), (1, 2, 3, 4))])
)
def test_adaptive_max_pool2d(size, shape, dtype, layout):
    def f(x):
        return F.adaptive_max_pool2d(x, size, return_indices=True)

    _check(f, shape, dtype, layout)


@pytest.mark.parametrize("dtype", _one_dtype())
def test_adaptive_pool_1d_and_3d(dtype):
    _check(lambda x: F.adaptive_avg_pool1d(x, 4), (2, 3, 11), dtype)
    _check(lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True), (2, 3, 11), dtype)
    _check(lambda x: F.adaptive_avg_pool3d(x, (2, 3, 2)), (1, 2, 5, 4, 3), dtype, eager_f32=True)
    _check(
        lambda x: F.adaptive_max_pool3d(x, (2, 3, 2), return_indices=True), (1, 2, 5, 4, 3), dtype
    )


def test_adaptive_max_pool2d_nan_and_inf():
    """A NaN is its window's maximum (the last NaN's index, as ATen's loop);
    a window of -inf gives its first element's index."""

    def f(x):
        return F.adaptive_max_pool2d(x, (3, 2), return_indices=True)

    x = torch.randn(2, 3, 7, 5)
    x[0, 0, 0, 0] = x[0, 0, 1, 1] = float("nan")
    x[-1, -1] = float("-inf")
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="coil", options={"fallback": "error", "cache": False})
    (got, got_index), (want, want_index) = compiled(x), f(x)
    torch.testing.assert_close(got, want, equal_nan=True)
    assert torch.equal(got_index, want_index)


# ---- patches: nn.Unfold (im2col) and nn.Fold (col2im), each the other's backward -------


@pytest.mark.parametrize(
    "kernel, dilation, padding, stride, shape, dtype, layout",
    [
        (3, 1, 1, 2, (2, 3, 7, 6), torch.float32, torch.contiguous_format),
        ((2, 3), (2, 1), (0, 1), (1, 2), (2, 3, 7, 6), torch.bfloat16, torch.channels_last),
        (2, 1, 0, 2, (3, 6, 8), torch.float32, torch.contiguous_format),  # unbatched, tiling
    ],
)
def test_unfold(kernel, dilation, padding, stride, shape, dtype, layout):
    def f(x):
        return F.unfold(x, kernel, dilation, padding, stride)

    _check(f, shape, dtype, layout, eager_f32=dtype != torch.float32)


@pytest.mark.parametrize(
    "output, kernel, dilation, padding, stride, shape, dtype",
    [
        ((7, 6), 3, 1, 1, 2, (2, 27, 12), torch.float32),
        ((6, 7), 2, (2, 3), (0, 1), 1, (12, 24), torch.bfloat16),  # unbatched, dilated
        ((6, 6), 2, 1, 0, 2, (2, 12, 9), torch.float32),  # patches that tile the image
    ],
)
def test_fold(output, kernel, dilation, padding, stride, shape, dtype):
    def f(x):
        return F.fold(x, output, kernel, dilation, padding, stride)

    _check(f, shape, dtype, eager_f32=dtype != torch.float32)


def test_dynamic_sizes():
    """Pools over symbolic sizes: the windows' masks and divisors are index
    expressions over the size symbols (adaptive pooling needs static sizes)."""

    def f(x):
        avg = F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)
        return avg.sum((2, 3)) + F.max_pool2d(x, 3, 2, 1).sum((2, 3))

    torch._dynamo.reset()
    compiled = torch.compile(
        f, backend="coil", dynamic=True, options={"fallback": "error", "cache": False}
    )
    for shape in [(2, 3, 9, 11), (1, 2, 12, 7)]:
        x = torch.randn(shape)
        results = []
        for g in (compiled, f):
            xi = x.clone().requires_grad_(True)
            y = g(xi)
            y.backward(torch.randn(y.shape, generator=torch.Generator().manual_seed(1)))
            results.append((y.detach(), xi.grad))
        torch.testing.assert_close(results[0], results[1], **tolerances(torch.float32))


# ---- training: int8 window offsets saved instead of int64 indices -----------------------


@pytest.mark.parametrize(
    "kernel, stride, padding, dilation, channels_last",
    [(3, 2, 1, 1, False), (3, 1, 1, 2, True), ((3, 2), (2, 1), (1, 0), 1, False)],
)
def test_training_max_pool_saves_offsets_and_matches_eager(
    kernel, stride, padding, dilation, channels_last
):
    """A training graph's max pooling is Inductor's decomposition
    (frontend/decompositions.py): the forward saves each window's int8 offset
    for the backward, which recomputes ATen's indices from it. The indices
    (returned too), the values and the input's gradient equal eager's, with
    NaNs and a plane of -inf (whose windows' first in-bounds points are ATen's
    choice, never a padding point)."""
    from coil.frontend.capture import capture_training

    def f(x):
        return F.max_pool2d(x, kernel, stride, padding, dilation, return_indices=True)

    torch.manual_seed(0)
    x = torch.randn(2, 3, 9, 11)
    x[0, 0, 0, 0] = float("nan")
    x[0, 1, 2, 2] = x[0, 1, 2, 3] = float("nan")
    x[-1, -1] = float("-inf")
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    # (a model drops the indices: returned, they are an output the step keeps)
    (graphs,) = capture_training(
        lambda x: F.max_pool2d(x, kernel, stride, padding, dilation),
        [x.clone().requires_grad_(True)],
    )
    saved = {str(n.meta["val"].dtype) for n in graphs.saved_activations()}
    assert "torch.int8" in saved and "torch.int64" not in saved, saved

    torch._dynamo.reset()
    compiled = torch.compile(f, backend="coil", options={"fallback": "error", "cache": False})
    results = []
    for g in (compiled, f):
        xi = x.clone().requires_grad_(True)
        values, indices = g(xi)
        weight = torch.randn(values.shape, generator=torch.Generator().manual_seed(1))
        (values.nan_to_num(0.0, 0.0, 0.0) * weight).sum().backward()
        results.append((values.detach(), indices, xi.grad))
    (values, indices, grad), (want_values, want_indices, want_grad) = results
    torch.testing.assert_close(values, want_values, equal_nan=True)
    assert torch.equal(indices, want_indices)
    torch.testing.assert_close(grad, want_grad, equal_nan=True)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_training_max_pool_on_cuda(dtype):
    """The offsets path in Triton kernels: a conv stem's training step (int8
    offsets saved, the indices rebuilt in the backward's gather) against eager."""
    torch.manual_seed(0)
    stem = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 7, 2, 3, bias=False),
        torch.nn.BatchNorm2d(16),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(3, 2, 1),
        torch.nn.Conv2d(16, 8, 3, 1, 1),
    ).cuda()
    x = torch.randn(4, 3, 64, 64, device="cuda")
    torch._dynamo.reset()
    compiled = torch.compile(stem, backend="coil", options={"fallback": "error", "cache": False})
    grads = []
    for f in (compiled, stem):
        stem.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
            loss = f(x).float().square().mean()
        loss.backward()
        grads.append([p.grad.clone() for p in stem.parameters()])
    # relative to each gradient's norm: cuDNN may run either step's f32
    # convolutions in TF32, with other algorithms
    tol = 2e-2 if dtype == torch.bfloat16 else 2e-3
    for got, want in zip(*grads):
        assert float((got - want).norm() / want.norm()) < tol
