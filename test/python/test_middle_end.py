"""The middle end on the model set: aten -> loop -> buffer, pass by pass.

For every model, static and dynamic, each graph AOTAutograd hands over is
imported and run through the middle end (the "buffer" pipeline: the default
one up to the buffer level) one pass at a time (``check_pipeline_per_pass``):
after every pass the IR round-trips as text and the reference executor gives
what it gave before the pass, on the graph's real inputs. The end of the
pipeline is the buffer level; its outputs are compared with eager too, and
their strides with eager's.
"""

import copy

import pytest
import torch

from coil.dialects import buffer as B
from coil.dialects import loop as L
from coil.examples.models import MODELS, build
from coil.frontend.capture import aot_backend
from coil.frontend.fx_importer import constant_inputs, import_graph
from coil.lowering.convert_aten_to_loop import EXTERN_BY_DESIGN
from coil.pipeline import PIPELINES
from coil.runtime.aten_executor import run_module
from coil.testing import assert_close_to_eager, check_pipeline_per_pass


def _checking_backend(case, finals: list):
    def compile_fw(gm, example_inputs):
        module = import_graph(gm, example_inputs)
        consts = constant_inputs(module, gm)

        def run(*args):
            inputs = [*args, *consts]
            final = check_pipeline_per_pass(module, PIPELINES["buffer"], inputs, random=case.random)
            finals.append(final)
            torch.manual_seed(1234)
            return run_module(final, inputs)

        return run

    return aot_backend(compile_fw)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", list(MODELS))
def test_middle_end_pass_by_pass(name, dynamic):
    case = MODELS[name]
    model, inputs = build(name)
    eager_model = copy.deepcopy(model)
    finals: list = []
    compiled = torch.compile(
        model, backend=_checking_backend(case, finals), dynamic=dynamic, fullgraph=True
    )
    with torch.no_grad():
        out = compiled(*inputs)
        expected = eager_model(*inputs)
    assert finals, "no graph was compiled"
    if not case.random:
        assert_close_to_eager(out, expected)
        for o, e in zip(
            torch.utils._pytree.tree_leaves(out), torch.utils._pytree.tree_leaves(expected)
        ):
            if isinstance(e, torch.Tensor) and e.numel() > 1:
                assert _significant_strides(o) == _significant_strides(e)
        for (_, b), (_, e) in zip(model.named_buffers(), eager_model.named_buffers()):
            assert_close_to_eager(b, e)
    for final in finals:
        # The pipeline ends at the buffer level: no value-semantic nest is left,
        # and only the ops ATen does better are extern calls.
        for op in final.walk():
            if isinstance(op, L.LoopOp) and op.parent_op() is not None:
                if not isinstance(op.parent_op(), L.FusedOp):
                    assert op.outs, f"{op.name} was not bufferized"
            if isinstance(op, B.ExternOp):
                assert op.kernel_name in EXTERN_BY_DESIGN, f"{op.kernel_name} fell back to ATen"


def _significant_strides(t: torch.Tensor) -> list[int]:
    return [s for n, s in zip(t.shape, t.stride()) if n > 1]


@torch.library.custom_op("coiltest::twice_plus", mutates_args=())
def twice_plus(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return 2 * x + y


@twice_plus.register_fake
def _(x, y):
    return torch.empty_like(x)


def test_unknown_op_runs_through_aten_and_is_reported_once(caplog):
    """An op with no lowering (a custom op) is an ATen extern call between fused
    nests; the backend's result matches eager and the fallback is logged once."""
    import logging

    from coil.backend import coil as coil_backend

    def fn(x, y):
        a = torch.ops.coiltest.twice_plus(x.relu(), y)
        return torch.ops.coiltest.twice_plus(a.exp(), a) * 3

    x, y = torch.randn(4, 8), torch.randn(4, 8)
    torch._dynamo.reset()
    with caplog.at_level(logging.WARNING, logger="coil"):
        out = torch.compile(fn, backend=coil_backend, fullgraph=True)(x, y)
    torch.testing.assert_close(out, fn(x, y))
    reports = [r for r in caplog.records if "coiltest" in r.getMessage()]
    assert len(reports) == 1 and "calling ATen" in reports[0].getMessage()


def test_constant_in_a_mutating_graph_through_the_backend():
    """`x[0] = 5` puts a real constant in the graph; the backend imports it while
    dynamo's fake mode is active, and the input is mutated as in eager."""
    from coil.backend import coil as coil_backend

    def fn(x):
        x[0] = 5
        return x * 2

    x = torch.randn(4, 8)
    y = x.clone()
    torch._dynamo.reset()
    out = torch.compile(fn, backend=coil_backend, fullgraph=True)(x)
    torch.testing.assert_close(out, fn(y))
    torch.testing.assert_close(x, y)


def test_as_strided_reads_storage_as_eager_lays_it_out():
    """as_strided counts from the storage's start in eager's layout: over a
    transposed intermediate, and over an input that is itself an offset view."""
    from coil.backend import coil as coil_backend

    def fn(a, x):
        return torch.as_strided(a.t() + 1, (3, 4), (4, 1)), torch.as_strided(x, (2, 2), (1, 2), 1)

    a, x = torch.randn(4, 3), torch.randn(20)[3:]
    torch._dynamo.reset()
    out = torch.compile(fn, backend=coil_backend, fullgraph=True)(a, x)
    for o, e in zip(out, fn(a, x)):
        torch.testing.assert_close(o, e)
