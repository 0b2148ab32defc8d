"""The model set, end to end at the aten level.

For each model, static and dynamic: dynamo + AOTAutograd graphs are imported,
printed and parsed back (a fixed point), run through the reference executor
and compared with eager; then the middle-end ("buffer") pipeline runs and the executor is
compared again (a differential check of canonicalize/aten-decompose/cse/dce).
"""

import copy

import pytest
import torch

from coil.backend import run_pipeline
from coil.examples.models import MODELS, build
from coil.frontend.capture import aot_backend
from coil.frontend.fx_importer import constant_inputs, import_graph
from coil.ir import parse_module, print_module
from coil.lowering.convert_aten_to_loop import extern_by_design
from coil.pipeline import PIPELINES
from coil.runtime.aten_executor import run_module
from coil.testing import assert_close_to_eager


def _compile_checked(checks: list):
    """A backend that checks round trip and the pipeline on every graph."""

    def compile_fw(gm, example_inputs):
        module = import_graph(gm, example_inputs)
        text = print_module(module)
        reparsed = parse_module(text)
        assert print_module(reparsed) == text, "print -> parse -> print is not a fixed point"
        generic = print_module(reparsed, generic=True)
        assert print_module(parse_module(generic)) == text, "generic form does not round-trip"
        optimized = parse_module(text)
        run_pipeline(optimized, PIPELINES["buffer"])
        # No generic op but those called by design (the fused attention that
        # aten-fuse-attention makes of the hand-written attentions).
        operators = [o.overload_name.data for o in optimized.walk() if o.name == "aten.operator"]
        assert not [n for n in operators if not extern_by_design(n)], operators
        consts = constant_inputs(module, gm)

        def run(*args):
            rng = torch.get_rng_state()
            out = run_module(reparsed, [*args, *consts])
            torch.set_rng_state(rng)
            # Same inputs (clones: the graph may mutate them), same RNG state.
            cloned = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
            out_opt = run_module(optimized, [*cloned, *consts])
            checks.append((out, out_opt))
            return out

        return run

    return aot_backend(compile_fw)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", list(MODELS))
def test_model_matches_eager(name, dynamic):
    case = MODELS[name]
    model, inputs = build(name)
    eager_model = copy.deepcopy(model)
    checks: list = []
    compiled = torch.compile(
        model, backend=_compile_checked(checks), dynamic=dynamic, fullgraph=True
    )
    with torch.no_grad():
        torch.manual_seed(1)
        out = compiled(*inputs)
        torch.manual_seed(1)
        expected = eager_model(*inputs)
    assert checks, "no graph was compiled"
    if case.random:
        _check_dropout(inputs[0], out, p=model.p)
    else:
        assert_close_to_eager(out, expected)
        # Mutated buffers (batch-norm running stats in training) match eager too.
        for (_, b), (_, e) in zip(model.named_buffers(), eager_model.named_buffers()):
            assert_close_to_eager(b, e)
    for before, after in checks:
        if case.random:
            # Decomposing native_dropout draws other random numbers: check the law.
            _check_dropout(inputs[0], after, p=model.p)
        else:
            assert_close_to_eager(after, before)


def _check_dropout(x, out, p):
    if isinstance(out, tuple):  # the executor's flat outputs
        (out,) = out
    expected = x * 2 / (1 - p)
    kept = out != 0
    torch.testing.assert_close(out[kept], expected[kept])
    assert abs((~kept).float().mean().item() - p) < 0.1


def test_dropout_is_reproducible_for_a_seed():
    model, (x,) = build("dropout_train")
    from coil.testing import reference_backend

    compiled = torch.compile(model, backend=reference_backend, fullgraph=True)
    torch.manual_seed(7)
    a = compiled(x)
    torch.manual_seed(7)
    b = compiled(x)
    torch.manual_seed(8)
    c = compiled(x)
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_dynamic_graph_runs_on_other_sizes():
    """One dynamic compile serves several batch sizes (symbols bound per call)."""
    from coil.testing import reference_backend

    model, _ = build("gpt2_block")
    compiled = torch.compile(model, backend=reference_backend, dynamic=True, fullgraph=True)
    with torch.no_grad():
        for batch in (2, 3, 5):
            x = torch.randn(batch, 16, 32)
            assert_close_to_eager(compiled(x), model(x))
