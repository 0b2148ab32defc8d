"""torch.compile(backend="coil") end to end: Triton kernels plus the Python wrapper.

On the CPU the generated kernels run under Triton's interpreter, so every kernel
of the model set is checked here against eager (static and dynamic shapes);
test_gpu.py runs the same on a GPU. Also: the dump folder and its repro.sh
(fx-opt rebuilds exactly the module the backend loaded), a .pt2 archive through
``fx-opt -t python``, input checks, and the fallback policy.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import served_tools
import torch

from coil.backend import coil as coil_backend
from coil.backend import compile_graph
from coil.examples.models import MODELS, build
from coil.frontend.capture import capture_graphs
from coil.pipeline import PIPELINES
from coil.testing import assert_close_to_eager


def _tool(name: str) -> str:
    """fx-opt or coil, served by one pre-imported process (served_tools.py); run
    it with ``env=served_tools.env()``."""
    return served_tools.tool(name)


def _compile(model, dynamic: bool, **options):
    torch._dynamo.reset()
    return torch.compile(
        model, backend=coil_backend, dynamic=dynamic, fullgraph=True, options=options or None
    )


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", [n for n, c in MODELS.items() if not c.random])
def test_model_matches_eager(name, dynamic):
    model, inputs = build(name)
    eager = copy.deepcopy(model)
    compiled = _compile(model, dynamic)
    with torch.no_grad():
        out = compiled(*inputs)
        expected = eager(*inputs)
        assert_close_to_eager(out, expected)
        # A second call with fresh inputs reuses the compiled module.
        fresh = tuple(torch.randn_like(x) if x.is_floating_point() else x for x in inputs)
        assert_close_to_eager(compiled(*fresh), eager(*fresh))
    for (_, b), (_, e) in zip(model.named_buffers(), eager.named_buffers()):
        assert_close_to_eager(b, e)


def test_dropout_law():
    """Random numbers come from Triton's philox: check the law, not the values
    (the model is dropout(2 * x))."""
    model, (x,) = build("dropout_train")
    x = torch.randn(256, 64)
    p = model.p
    compiled = _compile(model, False)
    with torch.no_grad():
        out = compiled(x)
        again = compiled(x)
    kept = out != 0
    assert torch.allclose(out[kept], 2 * x[kept] / (1 - p), rtol=1e-5, atol=1e-6)
    assert abs((~kept).float().mean().item() - p) < 0.03
    assert not torch.equal(out, again), "each call draws a fresh seed"


def test_generated_module_has_kernels():
    model, inputs = build("softmax")
    (graph,) = capture_graphs(model, inputs)
    run = compile_graph(graph.gm, graph.example_inputs)
    source = run.coil_source
    assert "@triton.jit" in source and "def call(args)" in source
    assert "coil_" in source


def test_input_mismatch_is_a_clear_error():
    from coil.runtime.wrapper import CoilInputError

    model, inputs = build("softmax")
    (graph,) = capture_graphs(model, inputs)
    run = compile_graph(graph.gm, graph.example_inputs)
    (x,) = inputs
    name = r"input arg\w*:"  # the compiled graph's argument, by name
    size = re.escape(str(tuple(x.shape)))
    with pytest.raises(CoilInputError, match=f"{name} expected size {size}, got"):
        run(torch.randn(3, 5))
    with pytest.raises(CoilInputError, match=f"{name} expected dtype torch.float32, got"):
        run(x.double())
    with pytest.raises(CoilInputError, match=f"{name} expected device cpu, got meta"):
        run(torch.empty_like(x, device="meta"))
    with pytest.raises(CoilInputError, match=f"{name} expected strides"):
        run(torch.randn(x.shape[::-1]).t())
    with pytest.raises(CoilInputError, match=f"{name} expected a tensor, got float"):
        run(1.0)
    with pytest.raises(CoilInputError, match="call takes 1 inputs, got 2"):
        run(x, x)


def test_dump_dir_and_repro(tmp_path):
    model, inputs = build("softmax")
    compiled = _compile(model, True, dump_dir=str(tmp_path))
    with torch.no_grad():
        compiled(*inputs)
    (graph_dir,) = sorted(tmp_path.iterdir())
    files = sorted(p.name for p in graph_dir.iterdir())
    assert files[0] == "000-import.mlir"
    n_passes = len(PIPELINES["default"].split(","))
    assert len([f for f in files if f.endswith(".mlir")]) == n_passes + 1
    assert {"kernels.py", "wrapper.py", "repro.sh"} <= set(files)
    assert "@triton.jit" in (graph_dir / "kernels.py").read_text()
    done = subprocess.run(
        ["sh", str(graph_dir / "repro.sh")], capture_output=True, text=True, env=served_tools.env()
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "repro_wrapper.py == wrapper.py" in done.stdout


def test_dump_dir_on_a_graph_without_kernels(tmp_path):
    """nn.Linear is one ATen call (addmm): no Triton kernel. The dump must not
    change whether it compiles; kernels.py says there is none, repro.sh replays."""
    model = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4)
    compiled = _compile(model, False, dump_dir=str(tmp_path))
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
    (graph_dir,) = sorted(tmp_path.iterdir())
    assert "No Triton kernels" in (graph_dir / "kernels.py").read_text()
    assert "torch.addmm(" in (graph_dir / "wrapper.py").read_text()
    done = subprocess.run(
        ["sh", str(graph_dir / "repro.sh")], capture_output=True, text=True, env=served_tools.env()
    )
    assert "repro_wrapper.py == wrapper.py" in done.stdout, done.stdout + done.stderr


def test_unwritable_dump_dir_warns_and_compiles(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    model, inputs = build("softmax")
    with pytest.warns(UserWarning, match="dump_dir: could not write"):
        compiled = _compile(model, False, dump_dir=str(blocker / "dump"))
        with torch.no_grad():
            assert_close_to_eager(compiled(*inputs), model(*inputs))


def test_python_target_module_runs_on_cpu_when_imported_directly(tmp_path):
    """`fx-opt -t python` output, imported as a plain file in a fresh process
    without TRITON_INTERPRET, runs its kernels (under Triton's interpreter)."""
    mlir = tmp_path / "softmax.mlir"
    mlir.write_text(
        subprocess.run(
            [_tool("coil"), "import", "examples/softmax.py"],
            capture_output=True, text=True, check=True, cwd=Path(__file__).parents[2],
            env=served_tools.env(),
        ).stdout
    )  # fmt: skip
    wrapper = tmp_path / "softmax_wrapper.py"
    subprocess.run(
        [_tool("fx-opt"), mlir, "-p", PIPELINES["default"], "-t", "python", "-o", wrapper],
        check=True,
        env=served_tools.env(),
    )
    code = (
        "import sys, torch\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import softmax_wrapper\n"
        "x = torch.randn(8, 64)\n"
        "(out,) = softmax_wrapper.call([8, 64, x])\n"
        "torch.testing.assert_close(out, torch.softmax(x, -1))\n"
        "print('ran on', x.device)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["CUDA_VISIBLE_DEVICES"] = ""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "ran on cpu" in done.stdout


def test_fx_opt_pt2_to_python_module(tmp_path):
    """`fx-opt model.pt2 -p "$(coil pipeline)" -t python` gives a module that runs."""
    model, (x,) = build("layernorm")
    ep = torch.export.export(model, (x,))
    pt2 = tmp_path / "model.pt2"
    torch.export.save(ep, pt2)
    out = tmp_path / "model_wrapper.py"
    pipeline = subprocess.run(
        [_tool("coil"), "pipeline"],
        capture_output=True,
        text=True,
        check=True,
        env=served_tools.env(),
    ).stdout.strip()
    assert pipeline == PIPELINES["default"]
    done = subprocess.run(
        [_tool("fx-opt"), pt2, "-p", pipeline, "-t", "python", "-o", out],
        capture_output=True,
        text=True,
        env=served_tools.env(),
    )
    assert done.returncode == 0, done.stderr
    from coil.runtime.codecache import load_module

    module = load_module(out.read_text(), interpret=True)
    params = [p.detach() for p in ep.state_dict.values()]
    with torch.no_grad():
        (got,) = module.call([*params, x])
        assert_close_to_eager(got, model(x))


def test_fallback_error_option():
    @torch.library.custom_op("coil_test::backend_twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @twice.register_fake
    def _(x):
        return torch.empty_like(x)

    def f(x):
        return torch.softmax(twice(x), -1)

    x = torch.randn(4, 8)
    with torch.no_grad():
        assert_close_to_eager(_compile(f, False)(x), f(x))
        with pytest.raises(Exception, match="fallback policy is 'error'"):
            _compile(f, False, fallback="error")(x)


def test_unknown_option():
    with pytest.raises(Exception, match="unknown option"):
        _compile(torch.nn.ReLU(), False, nope=1)(torch.randn(2))


def test_codecache_module_importable_by_path():
    """The loaded module is a real file (Triton reads kernel sources from it)."""
    model, inputs = build("mlp")
    (graph,) = capture_graphs(model, inputs)
    run = compile_graph(graph.gm, graph.example_inputs)
    from coil.runtime.codecache import load_module

    module = load_module(run.coil_source, interpret=True)
    spec = importlib.util.find_spec(module.__name__) if module.__name__ in sys.modules else None
    assert Path(module.__file__).exists() and (spec is None or spec.origin)
