"""The middle end on the model set: aten -> loop -> buffer, pass by pass.

For every model, static and dynamic, each graph AOTAutograd hands over is
imported, printed and parsed back (a fixed point, the generic form too), then
run through the middle end (the "buffer" pipeline: the default one up to the
buffer level) one pass at a time (``check_pipeline_per_pass``): after every
pass the IR round-trips as text and the reference executor gives what it gave
before the pass, on the graph's real inputs. The buffer-level result is then
checked as bufferize and memory-plan promise (every nest writes into a buffer,
no view or copy nest left, a planned peak) and run against the graph run
eagerly: values, output strides and the inputs it mutates. The model's outputs
and mutated buffers are compared with eager too (dropout: its law).

This is the one test of the whole model set through the middle end (it was
three: test_models.py and test_bufferize.py ran the same graphs through the same
pipeline); test_bufferize.py keeps the targeted bufferize and memory-plan cases.
"""

import copy

import pytest
import torch
from torch.utils._pytree import tree_leaves
from xdsl.dialects.func import FuncOp

from coil.dialects import buffer as B
from coil.dialects import loop as L
from coil.examples.models import MODELS, build
from coil.frontend.capture import aot_backend
from coil.frontend.fx_importer import constant_inputs, import_graph
from coil.ir import parse_module, print_module
from coil.lowering.aten_to_loop.lowerer import EXTERN_BY_DESIGN, extern_by_design
from coil.pipeline import PIPELINES
from coil.runtime.aten_executor import run_module
from coil.testing import (
    assert_close_to_eager,
    assert_module_matches_graph,
    check_pipeline_per_pass,
    significant_strides,
)


def _check_import_round_trips(module) -> None:
    text = print_module(module)
    reparsed = parse_module(text)
    assert print_module(reparsed) == text, "print -> parse -> print is not a fixed point"
    generic = print_module(reparsed, generic=True)
    assert print_module(parse_module(generic)) == text, "generic form does not round-trip"


def _check_buffer_level(final) -> None:
    """What the buffer pipeline promises: every nest writes into a buffer (a
    fused group's members through their group), no view or copy nest is left,
    each function has its planned peak; only the ops ATen does better, and the
    fused attention of the hand-written attentions, are ATen calls."""
    for op in final.walk():
        if isinstance(op, L.LoopOp) and op.parent_op() is not None:
            if isinstance(op.parent_op(), FuncOp):
                assert op.outs and not op.res, f"{op.name} was not bufferized"
            elif not isinstance(op.parent_op(), L.FusedOp):
                assert op.outs, f"{op.name} was not bufferized"
        assert not isinstance(op, L.ViewOp | L.CopyOp), f"{op.name} left behind"
        if isinstance(op, B.ExternOp):
            assert op.kernel_name in EXTERN_BY_DESIGN, f"{op.kernel_name} fell back to ATen"
        if op.name == "aten.operator":
            assert extern_by_design(op.overload_name.data), op.overload_name.data
    for fn in final.walk():
        if isinstance(fn, FuncOp):
            assert "coil.peak_bytes" in fn.attributes
            assert "coil.result_types" not in fn.attributes


def _checking_backend(case, finals: list):
    def compile_fw(gm, example_inputs):
        module = import_graph(gm, example_inputs)
        _check_import_round_trips(module)
        consts = constant_inputs(module, gm)

        def run(*args):
            inputs = [*args, *consts]
            final = check_pipeline_per_pass(module, PIPELINES["buffer"], inputs, random=case.random)
            _check_buffer_level(final)
            finals.append(final)
            if not case.random:
                # The buffer level against the graph run eagerly: values,
                # strides, and what happens to the inputs it mutates.
                assert_module_matches_graph(final, gm, inputs, len(args))
            torch.manual_seed(1234)
            return run_module(final, inputs)

        return run

    return aot_backend(compile_fw)


# The two largest models' dynamic runs are a quarter of this file's time (66 s
# each of 549 s, 2 loaded cores) and run only with -m slow: every op family
# they are made of runs dynamic here by default in a model of its own
# (layernorm, mlp's linear layers and GELU, attention's views and matmuls,
# the residual adds in every model), gpt2_block and post_norm_stack run
# static here, and dynamic through the whole backend in test_dynamic.py.
SLOW_DYNAMIC = ("gpt2_block", "post_norm_stack")


def _cases():
    for name in MODELS:
        yield pytest.param(name, False, id=f"{name}-static")
        marks = (pytest.mark.slow,) if name in SLOW_DYNAMIC else ()
        yield pytest.param(name, True, id=f"{name}-dynamic", marks=marks)


@pytest.mark.parametrize("name, dynamic", list(_cases()))
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
    if case.random:
        _check_dropout(inputs[0], out, p=model.p)
        return
    assert_close_to_eager(out, expected)
    for o, e in zip(tree_leaves(out), tree_leaves(expected)):
        if isinstance(e, torch.Tensor) and e.numel() > 1:
            assert significant_strides(o) == significant_strides(e)
    # Mutated module state (batch-norm running stats in training).
    for (_, b), (_, e) in zip(model.named_buffers(), eager_model.named_buffers()):
        assert_close_to_eager(b, e)


def _check_dropout(x, out, p):
    """Decomposing native_dropout draws other random numbers than eager: check the law."""
    if isinstance(out, tuple):  # the executor's flat outputs
        (out,) = out
    expected = x * 2 / (1 - p)
    kept = out != 0
    torch.testing.assert_close(out[kept], expected[kept])
    assert abs((~kept).float().mean().item() - p) < 0.1


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


def test_per_pass_check_names_the_pass_that_changes_the_result(monkeypatch):
    """check_pipeline_per_pass skips the round trip and run of a pass that leaves
    the IR's text unchanged; a pass that changes the result after such no-op
    passes is still caught, and named."""
    from dataclasses import dataclass

    from xdsl.dialects import func
    from xdsl.passes import ModulePass

    import coil
    from coil import pipeline

    @dataclass(frozen=True)
    class ReturnTheInput(ModulePass):
        """Returns the function's input in place of its result (same type)."""

        name = "test-return-the-input"

        def apply(self, ctx, op):
            for ret in op.walk():
                if isinstance(ret, func.ReturnOp):
                    ret.operands = [ret.parent_block().args[0]]

    real = pipeline.available_passes
    planted = {ReturnTheInput.name: lambda: ReturnTheInput}
    monkeypatch.setattr(pipeline, "available_passes", lambda: {**real(), **planted})
    x = torch.randn(4, 8)
    module = coil.import_module(lambda x: torch.relu(x) + 1, [x])
    # cse and dce change nothing here: skipped, and the planted pass still checked.
    check_pipeline_per_pass(module, "canonicalize,cse,dce", [x])
    with pytest.raises(AssertionError, match="output changed in pass test-return-the-input"):
        check_pipeline_per_pass(module, "canonicalize,cse,dce,test-return-the-input", [x])
