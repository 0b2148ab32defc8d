"""loop-split-reduction end to end: reductions split in two stages (forced with
``split=N`` on small tensors, and by the heuristic on long rows and tall
columns) against eager on the CPU (kernels under Triton's interpreter), with
fresh random inputs: every kind (sum, prod, max/min, argmax/argmin with ties
and NaN, welford's var/var_mean/std, any/all), odd sizes (masked chunks),
dynamic sizes, f32 and bf16."""

from __future__ import annotations

import pytest
import torch

import coil
from coil.backend import run_pipeline
from coil.dialects import loop as L
from coil.pipeline import PIPELINES
from coil.testing import assert_close_to_eager, difference

DEFAULT = PIPELINES["default"]


def _pipeline(split: int) -> str:
    assert "loop-split-reduction," in DEFAULT
    return DEFAULT.replace("loop-split-reduction,", f"loop-split-reduction{{split={split}}},")


def _compile(fn, split: int = 0, dynamic: bool = False):
    options = {"pipeline": _pipeline(split) if split else DEFAULT, "cache": False}
    return torch.compile(fn, backend="coil", options=options, dynamic=dynamic)


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _reductions(fn, inputs, pipeline: str, dynamic: bool = False) -> list[L.ReductionOp]:
    module = coil.import_module(_Fn(fn), tuple(inputs), dynamic=dynamic)
    run_pipeline(module, pipeline)
    return [op for op in module.walk() if isinstance(op, L.ReductionOp)]


KINDS = {
    "sum0": lambda x: x.sum(0),
    "sum_all": lambda x: x.sum(),
    "mean1": lambda x: x.mean(1),
    "prod0": lambda x: (x * 0.1 + 1.0).prod(0),
    "amax_amin": lambda x: (x.amax(0), x.amin()),
    "max_dim": lambda x: x.max(0),
    "min_dim": lambda x: x.min(1),
    "argmax": lambda x: (x.argmax(), x.argmax(0)),
    "argmin": lambda x: (x.argmin(), x.argmin(1)),
    "var_mean": lambda x: torch.var_mean(x, dim=0),
    "var_all": lambda x: x.var(),
    "std": lambda x: (x.std(0), x.std(1, correction=0)),
    "any_all": lambda x: ((x > 1.5).any(0), (x > -3.0).all()),
    "softmax0": lambda x: torch.softmax(x, 0),
    "log_softmax0": lambda x: torch.log_softmax(x, 0),
    "logsumexp": lambda x: (torch.logsumexp(x, 0), torch.logsumexp(x, (0, 1))),
}


# 37 rows in 3 or 4 chunks leave a partial last chunk (masked); 40 in 4 do not.
SPLIT_SHAPES = [((37, 5), 3), ((37, 5), 4), ((40, 3), 3), ((40, 3), 4)]


def _forced_cases():
    """Every kind with every (shape, split): by default each kind with one of
    them, in turn (so each shape and split count runs four kinds, and every
    kind a masked or an unmasked chunk), the rest with ``-m slow``."""
    for i, name in enumerate(sorted(KINDS)):
        for j, (shape, split) in enumerate(SPLIT_SHAPES):
            marks = () if j == i % len(SPLIT_SHAPES) else (pytest.mark.slow,)
            yield pytest.param(
                name, shape, split, marks=marks, id=f"{name}-{shape[0]}x{shape[1]}-{split}"
            )


@pytest.mark.parametrize("name, shape, split", list(_forced_cases()))
def test_forced_split_matches_eager(name, shape, split):
    fn = KINDS[name]
    x = torch.randn(*shape)
    assert_close_to_eager(_compile(fn, split)(x), fn(x))


@pytest.mark.parametrize("name", ["sum0", "var_mean", "argmax", "amax_amin", "std"])
def test_forced_split_bf16(name):
    fn = KINDS[name]
    x = torch.randn(37, 6, dtype=torch.bfloat16)
    assert_close_to_eager(_compile(fn, 4)(x), fn(x))


def test_arg_reductions_keep_first_index_on_ties():
    # Few distinct values: the max occurs in several chunks; eager takes the first.
    fn = lambda x: (x.argmax(), x.argmin(0), x.max(1), x.argmax(0))  # noqa: E731
    for dtype in (torch.float32, torch.int64, torch.bfloat16):
        x = torch.randint(0, 3, (41, 6)).to(dtype)
        got = _compile(fn, 4)(x)
        assert_close_to_eager(got, fn(x))
        torch._dynamo.reset()


def test_arg_reductions_with_nan():
    fn = lambda x: (x.argmax(), x.argmin(), x.argmax(0), x.amax(0))  # noqa: E731
    x = torch.randn(37, 5)
    x[20, 1] = float("nan")
    x[30, 1] = float("nan")
    x[3, 4] = float("nan")
    assert_close_to_eager(_compile(fn, 4)(x), fn(x))


@pytest.mark.parametrize("name", ["sum_all", "var_all", "argmax", "sum0", "max_dim", "softmax0"])
def test_forced_split_dynamic(name):
    # A symbolic chunk (s + 3) floordiv 4 with masks; sizes below the split
    # count leave whole chunks empty.
    fn = KINDS[name]
    compiled = _compile(fn, 4, dynamic=True)
    for rows in (37, 2, 9, 64):
        x = torch.randn(rows, 5)
        assert_close_to_eager(compiled(x), fn(x))


def test_heuristic_long_rows_and_full():
    # Few outputs, long rows: split by the strategy (three programs walking
    # 20011 points each are latency-bound; 5 chunks, the last one masked).
    fn = lambda x, y: (x.sum(1), x.var(1), x.argmax(1), y.sum(), y.amax(), y.argmin())  # noqa: E731
    x, y = torch.randn(3, 20011), torch.randn(12288)
    reds = _reductions(fn, [x, y], PIPELINES["loop"])
    assert any(len(r.ranges.data) == 2 and r.ranges.data[1] == 3 for r in reds)  # [chunks, 3]
    assert_close_to_eager(_compile(fn)(x, y), fn(x, y))


def test_heuristic_column_reduction():
    # x.sum(0) of a tall matrix: chunks of rows of consecutive columns.
    fn = lambda x: (x.sum(0), x.var(0), x.argmax(0), x.amax(0))  # noqa: E731
    x = torch.randn(3001, 7)
    reds = _reductions(fn, [x], PIPELINES["loop"])
    stage1 = [r for r in reds if len(r.ranges.data) == 2]
    assert stage1 and all(r.ranges.data[1] == 7 for r in stage1)
    assert_close_to_eager(_compile(fn)(x), fn(x))


def test_heuristic_bf16_and_dynamic():
    fn = lambda x: (x.sum(), x.mean(0), torch.var_mean(x, 0))  # noqa: E731
    x = torch.randn(4099, 3, dtype=torch.bfloat16)
    assert_close_to_eager(_compile(fn)(x), fn(x))
    torch._dynamo.reset()
    compiled = _compile(fn, dynamic=True)
    for rows in (5000, 333, 1):  # chunks of rows x 3 for x.sum(), as many as needed
        x = torch.randn(rows, 3)
        assert_close_to_eager(compiled(x), fn(x))


def test_heuristic_leaves_wide_reductions_alone():
    # Rows that fit a persistent tile and short columns (64 rows, one step of
    # an outer tile) are left alone, and so are 4096 long rows (a program
    # each: 4096 programs already fill the GPU). A column max over 4096 rows of
    # 512 columns runs 64 programs of 8 columns walking all the rows: split.
    fn = lambda x, z, y: (x.sum(1), z.amax(0), y.sum(1))  # noqa: E731
    x, z, y = torch.empty(1024, 512), torch.empty(64, 512), torch.empty(4096, 8192)
    reds = _reductions(fn, [x, z, y], PIPELINES["loop"])
    assert [len(r.ranges.data) for r in reds] == [1, 1, 1]
    reds = _reductions(lambda x: x.amax(0), [torch.empty(4096, 512)], PIPELINES["loop"])
    assert [len(r.ranges.data) for r in reds] == [2, 1]  # stage 1 [chunks, 512], stage 2


def _reads_chunk_max(red: L.ReductionOp) -> bool:
    """Whether ``red`` (a stage-1 sum) loads a max over its own chunks (a max
    reduction's result with ``red``'s shape), not the overall max."""
    return any(
        isinstance(o, L.LoadOp)
        and isinstance(o.source.owner, L.ReductionOp)
        and o.source.owner.kind.data == "max"
        and o.source.type.shape_attr == red.res[0].type.shape_attr
        for o in red.body.walk()
    )


ONLINE_CASES = (
    (lambda x: torch.softmax(x, 0), (3001, 7)),
    (lambda x: torch.log_softmax(x, 0), (3001, 7)),
    (lambda x: torch.softmax(x, 1), (3, 20011)),
    (lambda x: torch.logsumexp(x, 0), (3001, 7)),  # exp(x - (M if |M| != inf else 0))
)


def _check_online(cases, dtype) -> None:
    for fn, shape in cases:
        x = torch.randn(*shape, dtype=dtype) * 4
        reds = _reductions(fn, [x], PIPELINES["loop"])
        (stage1_sum,) = [r for r in reds if r.kind.data == "sum" and len(r.ranges.data) == 2]
        assert _reads_chunk_max(stage1_sum)
        assert_close_to_eager(_compile(fn)(x), fn(x))
        torch._dynamo.reset()


def test_softmax_denominator_split_online():
    # A column softmax/log_softmax of a tall matrix: the denominator's stage 1
    # sums exp(x - m) against its chunk's own max, so x is read twice, not three
    # times; odd row counts leave a masked last chunk.
    # Also three rows longer than a persistent tile (an inner split).
    # bf16: the column softmax here, every case in the slow sweep below.
    _check_online(ONLINE_CASES, torch.float32)
    _check_online(ONLINE_CASES[:1], torch.bfloat16)
    # Not for exp(2x - max(x)): 2x may exceed its chunk's max.
    fn = lambda x: torch.exp(2 * x - x.amax(0, keepdim=True)).sum(0)  # noqa: E731
    x = torch.randn(3001, 7)
    reds = _reductions(fn, [x], PIPELINES["loop"])
    (stage1_sum,) = [r for r in reds if r.kind.data == "sum" and len(r.ranges.data) == 2]
    assert not _reads_chunk_max(stage1_sum)
    assert_close_to_eager(_compile(fn)(x), fn(x))


@pytest.mark.slow
def test_softmax_denominator_split_online_bf16_sweep():
    _check_online(ONLINE_CASES[1:], torch.bfloat16)


def test_softmax_denominator_infinite_chunks():
    # Forced 4 chunks of 10 rows. Column 1: a whole chunk is -inf (its sum of
    # exp(-inf - -inf) is NaN, and must add 0); column 2 is all -inf (NaN, as in
    # eager); column 3 holds a NaN; column 4 a +inf.
    x = torch.randn(40, 6)
    x[0:10, 1] = float("-inf")
    x[:, 2] = float("-inf")
    x[15, 3] = float("nan")
    x[33, 4] = float("inf")
    for fn in (
        lambda x: torch.softmax(x, 0),
        lambda x: torch.log_softmax(x, 0),
        lambda x: torch.logsumexp(x, 0),
        # the bare denominator: NaN over the all -inf column (exp(-inf - -inf))
        lambda x: torch.exp(x - x.amax(0, keepdim=True)).sum(0),
    ):
        assert_close_to_eager(_compile(fn, 4)(x), fn(x))
        torch._dynamo.reset()


def test_fused_producer_and_consumer():
    # A pointwise producer rides in stage 1; the consumer reads stage 2.
    fn = lambda x, w: torch.exp((x * w).sum(0) / 7.0) + 1.0  # noqa: E731
    x, w = torch.randn(4500, 4), torch.randn(4)
    assert_close_to_eager(_compile(fn)(x, w), fn(x, w))
    x = torch.randn(37, 4)
    torch._dynamo.reset()
    assert_close_to_eager(_compile(fn, 4)(x, w), fn(x, w))


def test_full_reductions_from_partial_ones():
    # The canonicalizer has x.mean(), x.sum() and x.amax() reduce the partial
    # reductions x.sum(0) / x.amax(1) (issue 9's four-reduction row): fewer
    # reads of x, the same values; bf16 sums keep reading x.
    fn = lambda x: (x.sum(0), x.amax(1), x.var(1), x.mean(), x.sum(), x.amax())  # noqa: E731
    # 1025 rows: sum(0) is split (9 chunks in f32, 17 in bf16), as for 4099.
    assert _nests_reading_input(fn, torch.empty(1025, 33)) == 2  # sum(0)'s, the rows'
    assert _nests_reading_input(fn, torch.empty(1025, 33, dtype=torch.bfloat16)) == 3
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(1025, 33, dtype=dtype)
        # Sums of 33825 elements: judged against float64 as well (Inductor's rule).
        assert difference(_compile(fn)(x), fn(x), fn(x.double())) is None
        torch._dynamo.reset()


def _nests_reading_input(fn, x) -> int:
    """How many top-level nests of ``fn``'s loop-level function load ``x``."""
    module = coil.import_module(_Fn(fn), (x,))
    run_pipeline(module, PIPELINES["loop"])
    (function,) = list(module.ops)
    block = function.body.block
    tops = set()
    for use in block.args[0].uses:
        op = use.operation
        while op.parent_op() is not function:
            op = op.parent_op()
        tops.add(op)
    return len(tops)
