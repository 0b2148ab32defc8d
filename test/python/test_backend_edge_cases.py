"""Edge cases of torch.compile(backend="coil") against eager, on the CPU.

Regression tests from an adversarial review of the Triton back end (kernels run
under Triton's interpreter here): empty tensors (size-0 dims anywhere, rows of
length 0), bfloat16 ordering, layouts (transposed, sliced with an offset,
expanded, channels_last), 0-d tensors, reductions over non-last / several dims,
in-place input mutation, views among the outputs, dynamic sizes 1/2/large
(looped reductions), negative indices, externs, graph breaks and training with
dynamic shapes (the forward returns a size for the backward).
"""

from __future__ import annotations

import copy
import subprocess
import textwrap

import pytest
import served_tools
import torch
import torch.nn.functional as F

from coil.backend import coil as coil_backend


def _compile(fn, dynamic: bool = False):
    torch._dynamo.reset()
    return torch.compile(fn, backend=coil_backend, dynamic=dynamic)


def _check(got, expected) -> None:
    if isinstance(expected, tuple | list):
        assert isinstance(got, tuple | list) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _check(g, e)
        return
    if not isinstance(expected, torch.Tensor):
        assert got == expected
        return
    assert got.shape == expected.shape and got.dtype == expected.dtype
    if expected.dtype.is_floating_point:
        low = expected.dtype in (torch.float16, torch.bfloat16)
        tol = {"atol": 1e-2, "rtol": 1e-2} if low else {"atol": 1e-5, "rtol": 1e-4}
        torch.testing.assert_close(got, expected, equal_nan=True, **tol)
    else:
        assert torch.equal(got, expected)


def _matches_eager(fn, *args, dynamic: bool = False) -> None:
    _check(_compile(fn, dynamic)(*args), fn(*args))


# --- empty tensors -----------------------------------------------------------

# A row of length 0 used to be read unmasked (rnumel 0 % RBLOCK 1 == 0), which
# segfaults the interpreter: run those in a child process so a regression fails
# one test instead of killing the session (served: forked after the imports).
_EMPTY_ROWS = """
import torch
from coil.backend import coil
cases = [
    (lambda x: x.sum(1), torch.randn(3, 0)),
    (lambda x: x.sum(), torch.randn(0, 4)),
    (lambda x: x.mean(1), torch.randn(3, 0)),
    (lambda x: x.prod(-1), torch.randn(4, 0)),
    (lambda x: (x > 0).all(-1), torch.randn(4, 0)),
    (lambda x: x.sum(-1), torch.randn(5000, 0)),
]
for fn, x in cases:
    torch._dynamo.reset()
    got, expected = torch.compile(fn, backend=coil)(x), fn(x)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    torch.testing.assert_close(got, expected, equal_nan=True)
print("ok")
"""


def test_reductions_over_an_empty_row(tmp_path):
    script = tmp_path / "empty_rows.py"
    script.write_text(textwrap.dedent(_EMPTY_ROWS))
    proc = subprocess.run(
        served_tools.python(script),
        capture_output=True,
        text=True,
        timeout=300,
        env=served_tools.env(),
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-2000:]


@pytest.mark.parametrize("shape", [(7, 0), (3, 0, 4), (3, 4, 0)], ids=str)
def test_size_zero_dim_after_the_first(shape):
    """decompose() divided by the product of later sizes (0): ZeroDivisionError."""
    x = torch.randn(*shape)
    _matches_eager(lambda x: (x * 2 + 1, x.sum(0), x.sum(), (x > 0).all()), x)
    _check(_compile(lambda x: torch.rand_like(x))(x).shape, x.shape)


def test_reshape_and_gather_of_empty_tensors():
    """A reshape of an empty tensor unravelled its index with a mod by its zero
    size (ZeroDivisionError in the view lowering), and the reduction vote
    divided by an empty dimension (footprint_share): graphs of coil.tools.fuzz."""

    def f(a, b, c, idx):
        return c[:, :, 1::2], a.prod(), b[idx].reshape((1, 0)), b[idx].sum(1)

    a = torch.empty_strided((1, 1), (2, 2)).normal_()
    b = torch.empty_strided((13, 0, 1), (1, 0, 1))
    c = torch.empty_strided((1, 0, 8), (16, 16, 2), dtype=torch.int64)
    _matches_eager(f, a, b, c, torch.randint(0, 13, (5,)))


def test_max_over_an_empty_dim_raises_like_eager():
    with pytest.raises(Exception, match="zero-size|empty"):
        _compile(lambda x: x.amax(1))(torch.randn(3, 0))


# --- dtypes --------------------------------------------------------------------


def test_bfloat16_ordering():
    """Triton's interpreter orders bf16 by its raw bits (-5 > 1): max/min, argmax
    and comparisons go through f32."""
    x = (torch.randn(6, 5) * 10).bfloat16()
    y = (torch.randn(6, 5) * 10).bfloat16()
    _matches_eager(
        lambda x, y: (x.amax(0), x.amin(1), x.argmax(0), x.argmin(1), x < y, x >= y), x, y
    )
    nan = torch.tensor([[1.0, float("nan"), -3.0], [-1.0, -2.0, -3.0]]).bfloat16()
    _matches_eager(lambda x: (x.amax(-1), x.argmax(-1), x.amin(-1)), nan)


@pytest.mark.parametrize(
    "dtype",
    [torch.bool, torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.float64],
    ids=str,
)
def test_dtypes(dtype):
    x, y = ((torch.randn(4, 5) * 10).to(dtype) for _ in range(2))
    _matches_eager(lambda x, y: (x.amax(0), x.sum(1), x == y, torch.maximum(x, y)), x, y)


# --- layouts, 0-d, reductions -------------------------------------------------


def test_layouts():
    def fn(a, b, c, d):
        return a.sum(1) * 2, b.exp().sum(-1), c.sum(0) + 1, d.relu().sum(1)

    a = torch.randn(4, 6).t()
    b = torch.randn(8, 8)[2:5, 3:7]
    c = torch.randn(1, 5).expand(4, 5)
    d = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    _matches_eager(fn, a, b, c, d)


def test_zero_dim_and_reductions():
    def fn(s, x):
        return (
            s * x.sum(),
            x.mean((0, 2)),
            x.amax(1, keepdim=True),
            x.argmax(0),
            x.argmin(0),
            x.var(1, correction=0),
            x.std(0),
            x.cumsum(1),
        )

    _matches_eager(fn, torch.tensor(3.0), torch.randn(3, 4, 5))


# --- mutation and aliasing ---------------------------------------------------------


def test_input_mutation_and_view_outputs():
    def fn(x, y):
        x.add_(1)
        y[1:, ::2] = 5.0
        z = x * 2
        return z, z.view(-1), z.t(), y.sum()

    x, y = torch.randn(3, 4), torch.randn(4, 6)
    xe, ye = x.clone(), y.clone()
    got = _compile(fn)(x, y)
    _check(got, fn(xe, ye))
    _check((x, y), (xe, ye))


# --- dynamic shapes ----------------------------------------------------------------


def test_dynamic_sizes_reuse_one_compile():
    """Sizes 1/2 specialize; 5000-long rows and columns take the looped path.
    Triton's interpreter runs a custom tt.reduce combiner (max, argmax, welford)
    element by element, so those stay on shapes with few programs."""

    def rows(x):
        return x.softmax(-1), x.var(-1)

    def columns(x):
        return x.sum(0), x.argmax(0)

    for fn, shapes in [
        (rows, [(3, 7), (17, 7), (2, 2), (1, 5000), (3, 5000)]),
        (columns, [(3, 7), (4000, 3), (2, 2)]),
    ]:
        compiled = _compile(fn, dynamic=True)
        for shape in shapes:
            x = torch.randn(*shape)
            _check(compiled(x), fn(x))


# --- indexing, padding, externs, graph breaks ------------------------------------------


def test_indexing_padding_and_externs():
    def fn(x, i, a, b):
        return (
            x[i] * 2,
            torch.gather(x, 1, i.abs().unsqueeze(1).expand(-1, 2) % 3),
            F.pad(x, (1, 2, 0, 3)),
            torch.cat([x, x * 2], 1),
            ((a @ b).relu() @ b.t() + 1).sum(0),
        )

    x = torch.randn(10, 3)
    _matches_eager(fn, x, torch.tensor([-1, 0, -10, 4]), torch.randn(8, 16), torch.randn(16, 32))


def test_graph_break_and_constant_outputs():
    def fn(x, s):
        y = x.sin() + s
        torch._dynamo.graph_break()
        return y.cos().sum(), torch.ones(3), 5

    _matches_eager(fn, torch.randn(5), 2.5, dynamic=True)


# --- training ----------------------------------------------------------------------


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_training_grads_match_eager(dynamic):
    """With dynamic shapes the forward returns the batch size for the backward:
    a top-level aten.constant the python target had no printer for."""
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16), torch.nn.Linear(16, 4)
    )
    eager = copy.deepcopy(model)
    compiled = _compile(model, dynamic)
    for batch in (5, 9):
        x, y = torch.randn(batch, 8), torch.randint(0, 4, (batch,))
        F.cross_entropy(compiled(x), y).backward()
        F.cross_entropy(eager(x), y).backward()
        for p, q in zip(model.parameters(), eager.parameters()):
            torch.testing.assert_close(p.grad, q.grad, atol=1e-5, rtol=1e-4)


def test_masked_lanes_under_the_interpreter_raise_no_numpy_warnings():
    """Masked-off lanes load 0 and may divide by it: the interpreter must not
    report that (numpy RuntimeWarnings), while real inf/nan results stay."""
    import warnings

    softmax = torch.nn.Softmax(-1)
    x = torch.randn(5, 37)  # 37 does not divide the block: masked lanes

    def div(a, b):
        return a / b

    a = torch.tensor([1.0, -1.0, 0.0, 2.0, 3.0])
    b = torch.tensor([0.0, 0.0, 0.0, 4.0, 0.5])
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # numpy's fail the test
        torch.testing.assert_close(torch.compile(softmax, backend="coil")(x), softmax(x))
        out = torch.compile(div, backend="coil")(a, b)
    torch.testing.assert_close(out, a / b, equal_nan=True)  # inf, -inf, nan kept


# --- errors eager raises ---------------------------------------------------------------------

_INDEXING = {  # fn, an out-of-range index, an in-range one (negative where allowed)
    "index": (lambda x, i: x[i] * 2, [1, 10, 2], [1, 9, -10]),
    "index_negative": (lambda x, i: x[i] * 2, [-11, 0], [-1, 0]),
    # 2**32 + 1 is 1 once cast to a 32-bit index: compared before the cast.
    "index_wraps_in_i32": (lambda x, i: x[i] + 1, [2**32 + 1], [1]),
    "index_select": (lambda x, i: x.index_select(0, i), [0, 12], [0, 9]),
    "embedding": (lambda x, i: F.embedding(i, x).sum(-1), [[3, 10]], [[3, 9]]),
    "gather": (lambda x, i: torch.gather(x, 1, i), [[0, 3], [1, 2]], [[0, 2], [1, 2]]),
}


@pytest.mark.parametrize("case", list(_INDEXING))
def test_out_of_range_index_raises_like_eager(case):
    """An indirect load is bounds-checked on the device (tl.device_assert): an
    out-of-range index raises, as in eager, instead of reading whatever lies
    there. Under the interpreter the failed assertion is an IndexError; an
    in-range index (negative ones wrapped) passes the check."""
    fn, bad, good = _INDEXING[case]
    x = torch.randn(10, 3)
    with pytest.raises((IndexError, RuntimeError)):
        fn(x, torch.tensor(bad))
    with pytest.raises(IndexError, match="index out of bounds: 0 <= index < (10|3)"):
        _compile(fn)(x, torch.tensor(bad))
    _matches_eager(fn, x, torch.tensor(good))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_of_bool_raises_like_eager(name):
    """argmax/argmin refuse bool input in eager (max.dim takes it): coil calls
    ATen for them, which raises the same error, instead of computing an answer."""
    fn = getattr(torch, name)
    x = torch.tensor([[True, False], [False, True]])
    with pytest.raises(RuntimeError, match="does not support bool"):
        fn(x)
    with pytest.raises(RuntimeError, match="does not support bool"):
        _compile(fn)(x)
    _matches_eager(lambda x: (torch.max(x, 1), torch.min(x, 0)), x)


def test_effectful_op_runs_and_raises_like_eager():
    """linalg.inv's error check reaches the backend wrapped in with_effects (an
    effect token AOTAutograd passes as None at run time): compiled, it checks
    its input and raises eager's error on a singular matrix."""

    def fn(x):
        return torch.linalg.inv(x) * 2

    compiled = _compile(fn)
    x = torch.randn(4, 4) + 4 * torch.eye(4)
    _check(compiled(x), fn(x))
    with pytest.raises(RuntimeError, match="singular"):
        fn(torch.zeros(4, 4))
    with pytest.raises(RuntimeError, match="singular"):
        compiled(torch.zeros(4, 4))
