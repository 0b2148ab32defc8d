"""``-t python``: the emitted host module, checked by running it.

* the text is deterministic (same IR, same source) and importable;
* a hand-written host module with only an extern (no kernels) runs and matches
  the reference executor, binds symbols and checks its inputs;
* end to end on the CPU (Triton's interpreter): model -> default pipeline
  (which ends with convert-loop-to-tt, convert-buffer-to-host) -> ``-t python``
  -> ``call(args)`` matches eager, static and dynamic.
"""

from __future__ import annotations

import copy

import pytest
import torch

from coil.backend import run_pipeline
from coil.examples.models import build
from coil.frontend.capture import aot_backend
from coil.frontend.fx_importer import constant_inputs, import_graph
from coil.ir import parse_module
from coil.pipeline import PIPELINES
from coil.runtime.aten_executor import run_module
from coil.runtime.codecache import load_module
from coil.runtime.wrapper import CoilInputError
from coil.targets.python import emit_python
from coil.testing import assert_close_to_eager

# Buffer level: run by the reference executor as is, and through -t python
# after convert-buffer-to-host. No kernels: ATen, views, symbols, the output tree.
EXTERN_ONLY = """
!x = !buffer.buffer<[s0, 8], f32>
!w = !buffer.buffer<[8, s1], f32>
!mm = !buffer.buffer<[s0, s1], f32>
!t = !buffer.buffer<[s1, s0], f32, strides [1, s1]>
func.func @forward(%n: index {coil.symbol = #coil.expr<s0>}, %x: !x, %w: !w) -> (!mm, !t)
    attributes {coil.output_tree = "{'mm': 0, 'rest': [1, None]}"} {
  %mm = buffer.extern "aten.zeros.default" (%x, %w) : (!x, !w) -> (!mm) {
  ^bb0(%a: !aten.tensor<[s0, 8], f32>, %b: !aten.tensor<[8, s1], f32>):
    %zero = aten.zeros.default(size = [s0, s1], dtype = f32, layout = strided, device = "cpu",
                               pin_memory = false) : !aten.tensor<[s0, s1], f32>
    %c = aten.addmm.default(%zero, %a, %b, beta = 0.5, alpha = 2.0) : !aten.tensor<[s0, s1], f32>
    buffer.yield %c : !aten.tensor<[s0, s1], f32>
  }
  %t = buffer.view %mm : !mm -> !t
  func.return %mm, %t : !mm, !t
}
"""


def _host_source(text: str) -> str:
    module = parse_module(text)
    run_pipeline(module, "convert-buffer-to-host")
    return emit_python(module)


def test_extern_only_module_runs_and_checks_inputs():
    source = _host_source(EXTERN_ONLY)
    assert source == _host_source(EXTERN_ONLY), "the text must be deterministic"
    assert "s1 = w.size(1)" in source
    assert "beta=0.5, alpha=2.0" in source
    assert 'layout=torch.strided, device=torch.device("cpu")' in source
    mod = load_module(source, interpret=True)
    x, w = torch.randn(5, 8), torch.randn(8, 3)
    out = mod.call([5, x, w])
    expected = run_module(parse_module(EXTERN_ONLY), [5, x, w])
    assert set(out) == {"mm", "rest"} and out["rest"][1] is None
    torch.testing.assert_close(out["mm"], expected["mm"])
    torch.testing.assert_close(out["rest"][0], expected["rest"][0])
    torch.testing.assert_close(out["mm"], 2.0 * (x @ w))
    with pytest.raises(CoilInputError, match="input x"):
        mod.call([5, torch.randn(4, 8), w])
    with pytest.raises(CoilInputError, match="dtype"):
        mod.call([5, x.double(), w])
    with pytest.raises(CoilInputError, match="takes 3 inputs"):
        mod.call([x, w])


def _python_backend(sources: list[str]):
    """A torch.compile backend that compiles through -t python and runs call(args)."""

    def compile_fw(gm, example_inputs):
        module = import_graph(gm, example_inputs)
        consts = constant_inputs(module, gm)
        run_pipeline(module, PIPELINES["default"])
        source = emit_python(module)
        sources.append(source)
        mod = load_module(source, interpret=True)

        def run(*args):
            return mod.call([*args, *consts])

        return run

    return aot_backend(compile_fw)


MODELS = [
    "softmax",
    "mlp",
    "layernorm",
    "attention",
    "log_softmax",
    "rmsnorm",
    "cross_entropy",
    "gpt2_block",
    "embedding_index",
    "conv_bn_relu",
]


# The backend on CPU tensors with cpu_kernels='triton' compiles exactly this way
# (default pipeline, emit_python, load_module under the interpreter:
# compile_driver._compile), and test_backend.py's test_model_matches_eager runs
# every one of these models static and dynamic through it (test_backend is a
# Triton-interpreter file, conftest.TRITON_FILES). So by default this sweep runs
# a representative pair, a static reduction and dynamic attention (views,
# matmul externs, softmax over a symbolic row); -m slow runs the other 18. The
# twenty were 48 s of the suite's summed 3,306 s of test time (a default run,
# 2 cores at load ~8, junit times).
DEFAULT_MODELS = {("softmax", False), ("attention", True)}


def _model_cases():
    for name in MODELS:
        for dynamic in (False, True):
            marks = () if (name, dynamic) in DEFAULT_MODELS else (pytest.mark.slow,)
            mode = "dynamic" if dynamic else "static"
            yield pytest.param(name, dynamic, id=f"{name}-{mode}", marks=marks)


@pytest.mark.parametrize("name, dynamic", list(_model_cases()))
def test_model_through_python_target_matches_eager(name, dynamic):
    model, inputs = build(name)
    eager_model = copy.deepcopy(model)
    sources: list[str] = []
    compiled = torch.compile(
        model, backend=_python_backend(sources), dynamic=dynamic, fullgraph=True
    )
    with torch.no_grad():
        out = compiled(*inputs)
        expected = eager_model(*inputs)
    assert sources, "no graph was compiled"
    assert_close_to_eager(out, expected)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_dropout_through_python_target(dynamic):
    """host.seed + tl.rand: the law of dropout (kept values scaled, ~p dropped)."""
    model, (x,) = build("dropout_train")
    compiled = torch.compile(model, backend=_python_backend([]), dynamic=dynamic, fullgraph=True)
    with torch.no_grad():
        out = compiled(x)
    kept = out != 0
    torch.testing.assert_close(out[kept], (x * 2 / (1 - model.p))[kept])
    assert abs((~kept).float().mean().item() - model.p) < 0.1
