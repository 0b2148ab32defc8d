"""Scatters (scatter, scatter_add, scatter_reduce, index_put, index_add,
embedding's backward) through the backend.

Each case compiles with ``fallback="error"`` (nothing may fall back to ATen)
and runs the generated kernels under the CPU interpreter against eager, with
a float64 reference for floating results (atomic sums add in another order).
Accumulating forms get duplicate indices; overwriting ones get distinct
indices (which of several stores wins is unspecified, as on a GPU). Every dim,
negative dims, f32/bf16/int, non-contiguous inputs; the middle end pass by
pass with the reference executor; under ``torch.use_deterministic_algorithms``
the scatters are ATen's; and embedding's backward in a training step.
"""

from __future__ import annotations

import pytest
import torch

import coil
from coil.backend import coil as coil_backend
from coil.pipeline import PIPELINES
from coil.testing import assert_close_to_eager, check_pipeline_per_pass, difference


def _compile(fn, **options):
    torch._dynamo.reset()
    options.setdefault("fallback", "error")
    return torch.compile(fn, backend=coil_backend, options=options)


def _check(fn, *args, **options):
    got = _compile(fn, **options)(*args)
    expected = fn(*args)
    f64 = [a.double() if a.is_floating_point() else a for a in args]
    reference = fn(*f64)
    if not expected.is_floating_point():
        reference = reference.to(expected.dtype)
    problem = difference(got, expected, reference)
    assert problem is None, problem


def _distinct(n: int, size: int, cols: int) -> torch.Tensor:
    """[n, cols] indices below ``size``, distinct within each column."""
    return torch.stack([torch.randperm(size)[:n] for _ in range(cols)], 1)


DTYPES = [torch.float32, torch.bfloat16, torch.int32]


def _values(*shape, dtype):
    if dtype.is_floating_point:
        return torch.randn(*shape).to(dtype)
    return torch.randint(-20, 20, shape, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_add_with_duplicates(dtype, dim):
    x = _values(5, 7, dtype=dtype)
    size = x.shape[dim]
    index = torch.randint(0, size, (4, 7) if dim == 0 else (5, 9))
    src = _values(*index.shape, dtype=dtype)
    _check(lambda x, i, s: x.scatter_add(dim, i, s), x, index, src)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_scatter_src_and_value(dtype):
    x = _values(6, 5, dtype=dtype)
    index = _distinct(4, 6, 5)
    src = _values(4, 5, dtype=dtype)
    _check(lambda x, i, s: x.scatter(0, i, s), x, index, src)
    _check(lambda x, i: x.scatter(-2, i, 3), x, index)
    # Along dim 1, an index narrower than self (several sources per row).
    cols = torch.stack([torch.randperm(5)[:3] for _ in range(6)])
    _check(lambda x, i, s: x.scatter(1, i, s), x, cols, _values(6, 3, dtype=dtype))


REDUCE_CASES = [
    (reduce, include_self, torch.float32)
    for reduce in ("sum", "amax", "amin", "mean")
    for include_self in (True, False)
] + [
    ("sum", False, torch.bfloat16),
    ("mean", True, torch.bfloat16),
    ("amax", False, torch.int32),
    ("mean", False, torch.int32),  # floor division
]


@pytest.mark.parametrize(
    "reduce, include_self, dtype",
    REDUCE_CASES,
    ids=[f"{r}-{'self' if s else 'noself'}-{str(d)[6:]}" for r, s, d in REDUCE_CASES],
)
def test_scatter_reduce(reduce, include_self, dtype):
    x = _values(5, 6, dtype=dtype)
    index = torch.randint(0, 5, (7, 6))
    src = _values(7, 6, dtype=dtype)

    def fn(x, i, s):
        return x.scatter_reduce(0, i, s, reduce, include_self=include_self)

    _check(fn, x, index, src)


def test_scatter_reduce_prod_calls_aten():
    """No atomic multiply: prod is ATen's (as in Inductor), correct all the same."""
    x, index, src = torch.randn(5, 6), torch.randint(0, 5, (7, 6)), torch.randn(7, 6)
    fn = _compile(lambda x, i, s: x.scatter_reduce(0, i, s, "prod"), fallback="extern")
    assert_close_to_eager(fn(x, index, src), x.scatter_reduce(0, index, src, "prod"))


def test_scatter_of_non_contiguous_inputs():
    x = torch.randn(6, 5)
    index = torch.randint(0, 6, (8, 5))
    src = torch.randn(8, 6)
    # self [5, 6], index [5, 4] and src [6, 8]: all transposed views
    _check(lambda x, i, s: x.t().scatter_add(1, i.t()[:, :4], s.t()), x, index, src)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_index_put_accumulate_with_duplicates(dtype):
    x = _values(6, 5, dtype=dtype)
    rows = torch.tensor([0, 3, 3, -1, 0, 2, 3])  # duplicates and a negative index
    values = _values(7, 5, dtype=dtype)
    _check(lambda x, i, v: x.index_put((i,), v, accumulate=True), x, rows, values)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_index_put_overwrite(dtype):
    x = _values(6, 5, dtype=dtype)
    rows = torch.randperm(6)[:4] - 2  # distinct, some negative
    _check(lambda x, i, v: x.index_put((i,), v), x, rows, _values(4, 5, dtype=dtype))
    _check(lambda x, i, v: x.index_put((i,), v), x, rows, _values(5, dtype=dtype))


def test_index_put_two_and_separated_indices():
    x = torch.randn(4, 3, 5)
    i, j = torch.randint(0, 4, (6,)), torch.randint(0, 5, (6,))
    v = torch.randn(6, 3)

    def adjacent(x, i, j, v):
        return torch.ops.aten.index_put(x, [None, i % 3, j], v[:, 0], True)

    def separated(x, i, j, v):
        return torch.ops.aten.index_put(x, [i, None, j], v, True)

    _check(adjacent, x, i, j, v)
    _check(separated, x, i, j, v)


def test_setitem_through_a_mask_and_indices():
    def fn(x, i):
        y = x.clone()
        y[x > 0.5] = 2.0  # one value through a bool mask: a pointwise where
        y[:, i] += 1.0  # index_put accumulate along dim 1, duplicates in i
        return y

    _check(fn, torch.randn(4, 6), torch.tensor([1, 4, 1, 5]))


def test_index_add():
    x, src = torch.randn(7, 4), torch.randn(5, 4)
    index = torch.tensor([6, 0, 6, 2, 0])
    _check(lambda x, i, s: x.index_add(0, i, s, alpha=2.0), x, index, src)
    _check(lambda x, i, s: x.t().index_add(1, i, s.t()), x, index, src)


def test_index_put_dynamic_and_empty():
    """Symbolic index counts and rows; an empty index leaves self as it is."""
    fn = torch.compile(
        lambda x, i, v: x.index_put((i,), v, accumulate=True),
        backend=coil_backend,
        dynamic=True,
        options={"fallback": "error"},
    )
    torch._dynamo.reset()
    for rows, n in ((6, 5), (9, 11), (7, 0)):
        x, v = torch.randn(rows, 3), torch.randn(n, 3)
        i = torch.randint(0, rows, (n,))
        assert_close_to_eager(fn(x, i, v), x.index_put((i,), v, accumulate=True))


def test_middle_end_pass_by_pass():
    """Every pass (bufferize's in-place scatters included) keeps the reference
    executor's result."""

    def fn(x, i, s):
        acc = x.index_put((i[:, 0],), s, accumulate=True)
        return acc.scatter_reduce(0, i, s, "mean", include_self=False) * 2

    args = (torch.randn(5, 3), torch.randint(0, 5, (4, 3)), torch.randn(4, 3))
    module = coil.import_module(fn, args)
    check_pipeline_per_pass(module, PIPELINES["buffer"], list(args))


def test_deterministic_mode_calls_aten(tmp_path):
    """Under torch.use_deterministic_algorithms an atomic (order-dependent)
    scatter is ATen's deterministic kernel; one source per element stays coil's."""
    x, index, src = torch.randn(5, 6), torch.randint(0, 5, (7, 6)), torch.randn(7, 6)

    def fn(x, i, s):
        return x.scatter_add(0, i, s), x.index_put((i[:, 0],), s, accumulate=True)

    torch.use_deterministic_algorithms(True)
    try:
        compiled = _compile(fn, fallback="extern", dump_dir=str(tmp_path))
        assert_close_to_eager(compiled(x, index, src), fn(x, index, src))
    finally:
        torch.use_deterministic_algorithms(False)
    (graph,) = sorted(tmp_path.iterdir())
    wrapper = (graph / "wrapper.py").read_text()
    assert "aten.scatter_add" in wrapper and "aten.index_put" in wrapper
    assert "# kind: scatter" not in (graph / "kernels.py").read_text()


def test_embedding_backward_in_a_training_step():
    """embedding_dense_backward decomposes to index_put with accumulate: a
    scatter-add into zeros (no copy of them), repeated tokens included."""
    torch.manual_seed(0)
    emb = torch.nn.Embedding(11, 6, padding_idx=2)
    tokens = torch.tensor([[1, 2, 5, 5], [7, 1, 1, 10]])

    def step(tokens):
        return (emb(tokens).tanh() ** 2).sum()

    compiled = _compile(step)
    loss = compiled(tokens)
    loss.backward()
    grad, emb.weight.grad = emb.weight.grad.clone(), None
    expected = step(tokens)
    expected.backward()
    assert_close_to_eager(loss, expected)
    assert_close_to_eager(grad, emb.weight.grad)
