"""Scans (cumsum, cumprod, logcumsumexp, cummax/cummin) through the backend.

Each case compiles with ``fallback="error"`` (an op coil sent to ATen would
fail the compile, so nothing falls back) and runs the generated Triton kernels
under the CPU interpreter against eager, with a float64 reference for the
floating results (a chunked scan rounds differently from eager's sequential
one; what counts is the distance from the exact answer). Odd sizes, every dim
and negative dims, f32/bf16/int/bool, non-contiguous inputs; rows scanned
whole (persistent) and, with a pipeline that forces it, in chunks carrying
the running prefix; dynamic shapes; and cumsum's backward in a training step.
"""

from __future__ import annotations

import pytest
import torch

from coil.backend import coil as coil_backend
from coil.pipeline import PIPELINES
from coil.testing import assert_close_to_eager, difference, dumped_kernels

LOOPED = PIPELINES["default"].replace(
    "convert-loop-to-tt", "convert-loop-to-tt{persistent-threshold=0 rblock=4}"
)
"""Every scan row in chunks of 4: the carried prefix at small sizes."""


def _compile(fn, dynamic=False, **options):
    torch._dynamo.reset()
    options.setdefault("fallback", "error")
    return torch.compile(fn, backend=coil_backend, options=options, dynamic=dynamic)


def _f64(args):
    return [a.double() if a.is_floating_point() else a for a in args]


def _check(fn, *args, dynamic=False, **options):
    got = _compile(fn, dynamic=dynamic, **options)(*args)
    expected = fn(*args)
    reference = fn(*_f64(args))
    if isinstance(expected, tuple):
        reference = tuple(
            r.to(e.dtype) if not e.is_floating_point() else r for r, e in zip(reference, expected)
        )
    elif not expected.is_floating_point():
        reference = reference.to(expected.dtype)
    problem = difference(got, expected, reference)
    assert problem is None, problem


def _signed(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype)


CUMSUM_CASES = [
    ("f32_dim1", (5, 7), 1, torch.float32),
    ("f32_dim0", (5, 7), 0, torch.float32),
    ("f32_neg", (3, 5, 7), -2, torch.float32),
    ("bf16", (4, 9), -1, torch.bfloat16),
    ("1d", (13,), 0, torch.float32),
]


@pytest.mark.parametrize("case", CUMSUM_CASES, ids=[c[0] for c in CUMSUM_CASES])
@pytest.mark.parametrize("pipeline", ["persistent", "looped"])
def test_cumsum(case, pipeline):
    _, shape, dim, dtype = case
    options = {"pipeline": LOOPED} if pipeline == "looped" else {}
    _check(lambda x: torch.cumsum(x, dim), _signed(*shape, dtype=dtype), **options)


def test_cumsum_of_ints_and_bools_is_int64():
    x = torch.randint(-50, 50, (5, 7), dtype=torch.int32)
    _check(lambda x: (torch.cumsum(x, 1), torch.cumsum(x > 0, 0)), x)


def test_cumsum_dtype_casts_first():
    x = _signed(4, 6)
    _check(lambda x: torch.cumsum(x, 1, dtype=torch.float64), x)
    _check(lambda x: torch.cumsum(x * 10, 0, dtype=torch.int32), x)


def test_cumsum_of_a_transposed_input():
    x = _signed(7, 5)
    _check(lambda x: torch.cumsum(x.t(), 1), x)
    _check(lambda x: torch.cumsum(x[:, ::2], 0), x, pipeline=LOOPED)


def test_cumsum_of_a_long_row():
    """Past the persistent limit (1024): chunks of 1024 by default."""
    _check(lambda x: torch.cumsum(x, -1), _signed(2, 1500))


def test_cumsum_dynamic():
    fn = torch.compile(lambda x: torch.cumsum(x, 1), backend=coil_backend, dynamic=True)
    torch._dynamo.reset()
    for n in (5, 11):
        x = _signed(3, n)
        assert_close_to_eager(fn(x), torch.cumsum(x, 1))


@pytest.mark.triton_kernels  # reads the Triton kernel's text (the C++ scan: test_cpu_kernels)
def test_cumsum_fuses_its_pointwise_producer(tmp_path):
    """The scan body computes ``x.exp() * 2``; only the consumer is another kernel."""

    def fn(x):
        return torch.cumsum(x.exp() * 2, 1) + 1

    _check(fn, _signed(4, 6), dump_dir=str(tmp_path))
    (graph,) = sorted(tmp_path.iterdir())
    assert (graph / "kernels.py").read_text().count("# kind: scan") == 1
    assert len(dumped_kernels(graph)) == 2  # the consumer: a Triton or a C++ kernel


@pytest.mark.parametrize("pipeline", ["persistent", "looped"])
def test_cumprod(pipeline):
    options = {"pipeline": LOOPED} if pipeline == "looped" else {}
    x = 1 + 0.3 * _signed(4, 9)
    _check(lambda x: (torch.cumprod(x, 1), torch.cumprod(x, -2)), x, **options)
    _check(lambda x: torch.cumprod(x, 0), torch.randint(-3, 4, (5, 3)), **options)


@pytest.mark.parametrize("pipeline", ["persistent", "looped"])
def test_logcumsumexp(pipeline):
    options = {"pipeline": LOOPED} if pipeline == "looped" else {}
    x = 10 * _signed(3, 11)
    x[0, :3] = float("-inf")  # an empty prefix: -inf until the first number
    x[1, 5] = float("inf")
    _check(lambda x: torch.logcumsumexp(x, 1), x, **options)
    _check(lambda x: torch.logcumsumexp(x, 0), _signed(6, 5, dtype=torch.bfloat16), **options)


@pytest.mark.parametrize("pipeline", ["persistent", "looped"])
def test_cummax_cummin(pipeline):
    """Ties give the last position, a NaN sticks (and the latest NaN is named)."""
    options = {"pipeline": LOOPED} if pipeline == "looped" else {}
    x = torch.randint(0, 4, (5, 9)).float()
    x[2, 4] = float("nan")
    x[2, 7] = float("nan")
    _check(lambda x: (*torch.cummax(x, 1), *torch.cummin(x, -1)), x, **options)
    _check(lambda x: torch.cummax(x, 0), torch.randint(-5, 5, (7, 3)), **options)
    _check(lambda x: torch.cummin(x > 0, 1), _signed(3, 8), **options)


def test_cumsum_backward_in_a_training_step():
    """cumsum's backward is a flipped cumsum of the gradient (flips are index maps)."""
    torch.manual_seed(0)
    w = torch.randn(6, 9, requires_grad=True)
    x = torch.randn(6, 9)

    def step(w, x):
        return (torch.cumsum(torch.tanh(w * x), 1) ** 2).sum()

    compiled = _compile(step)
    loss = compiled(w, x)
    loss.backward()
    grad, w.grad = w.grad.clone(), None
    expected = step(w, x)
    expected.backward()
    assert_close_to_eager(loss, expected)
    assert_close_to_eager(grad, w.grad)
