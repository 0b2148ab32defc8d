"""A sweep over PyTorch's OpInfo database: trace each op's samples to aten (with
coil's decomposition table), import, print -> parse, run the reference executor
and compare with the op itself on the same inputs; then run the middle-end ("buffer")
pipeline (aten -> loop -> buffer) and compare the buffer-level module again.

A sample that torch cannot trace to a static aten graph (data-dependent output
shapes, random ops) is skipped: that is not coil's to represent. Import or
round-trip failures and wrong results fail. CI runs every 9th op (72 of 640;
every 6th, 107, was 34 s of a loaded 2-core suite run's test time); ``-m slow``
runs them all.
"""

from __future__ import annotations

import pytest
import torch
import torch.utils._pytree as pytree
from torch.fx.experimental.proxy_tensor import make_fx
from torch.testing._internal.common_methods_invocations import op_db

from coil.backend import run_pipeline
from coil.frontend.decompositions import decomposition_table
from coil.frontend.fx_importer import constant_inputs, import_graph
from coil.ir import parse_module, print_module
from coil.pipeline import PIPELINES
from coil.runtime.aten_executor import run_module
from coil.testing import sample_as_function

SAMPLES_PER_OP = 2
RANDOM = (
    "rand",
    "bernoulli",
    "normal",
    "dropout",
    "multinomial",
    "uniform",
    "exponential",
    "geometric",
    "cauchy",
    "log_normal",
    "poisson",
    "randint",
    "randn",
    "empty",
    "new_empty",
    "empty_like",
    "empty_strided",
    "nonzero_static",
    # random inside: rrelu's slopes, fractional pooling's regions, attention dropout
    "rrelu",
    "fractional_max_pool",
    "multi_head_attention_forward",
)


def _float_ops():
    return [
        op
        for op in op_db
        if torch.float32 in op.supported_dtypes("cpu")
        and not any(word in op.name for word in RANDOM)
    ]


OPS = _float_ops()
REPRESENTATIVE = {op.name + op.variant_test_name for op in OPS[::9]}


def _params():
    for op in OPS:
        key = op.name + op.variant_test_name
        marks = () if key in REPRESENTATIVE else (pytest.mark.slow,)
        yield pytest.param(op, id=f"{op.name}.{op.variant_test_name}".rstrip("."), marks=marks)


def _trace(fn, tensors):
    # Functionalized, as AOTAutograd hands graphs to a backend.
    functional = torch.func.functionalize(fn, remove="mutations_and_views")
    try:
        return make_fx(functional, decomposition_table=decomposition_table(), tracing_mode="fake")(
            *tensors
        )
    except Exception as e:  # what torch cannot trace is out of scope
        pytest.skip(f"torch cannot trace this sample: {type(e).__name__}")


def _assert_matches(out, expected):
    actual = out[0] if isinstance(out, tuple) and len(out) == 1 else out
    exp_leaves = [x for x in pytree.tree_leaves(expected)]
    act_leaves = [x for x in pytree.tree_leaves(actual)]
    assert len(exp_leaves) == len(act_leaves)
    for a, e in zip(act_leaves, exp_leaves):
        if isinstance(e, torch.Tensor):
            torch.testing.assert_close(
                a, e, rtol=1e-5, atol=1e-5, equal_nan=True, check_stride=False
            )
        else:
            assert a == e


@pytest.mark.parametrize("opinfo", list(_params()))
def test_opinfo_import_and_execute(opinfo):
    samples = list(opinfo.sample_inputs("cpu", torch.float32, requires_grad=False))
    ran = 0
    for sample in samples[:SAMPLES_PER_OP]:
        call, tensors = sample_as_function(opinfo.op, sample)
        if any(t.layout != torch.strided for t in tensors):
            continue  # sparse inputs: coil models strided tensors only

        try:
            expected = call(*[t.clone() for t in tensors])
        except Exception:  # samples that error in eager are not ours
            continue
        if any(
            isinstance(x, torch.Tensor) and x.layout != torch.strided
            for x in pytree.tree_leaves(expected)
        ):
            continue  # sparse results: coil models strided tensors only
        gm = _trace(call, tensors)
        module = import_graph(gm)
        text = print_module(module)
        reparsed = parse_module(text)
        assert print_module(reparsed) == text
        consts = constant_inputs(reparsed, gm)
        out = run_module(reparsed, [*[t.clone() for t in tensors], *consts])
        _assert_matches(out, expected)
        run_pipeline(reparsed, PIPELINES["buffer"])
        _assert_matches(run_module(reparsed, [*[t.clone() for t in tensors], *consts]), expected)
        ran += 1
    if not ran:
        pytest.skip("no sample could be run")
