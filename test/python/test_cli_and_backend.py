"""The coil command, fx-opt's exit codes, the registered torch.compile backend,
and custom ops through the generic aten.operator."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from coil.ir import parse_module, print_module

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        args,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**__import__("os").environ, "PYTHONWARNINGS": "ignore"},
    )
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def _script(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def test_coil_demo_checks_against_eager():
    out = _run(_script("coil"), "demo", "--quiet").stdout
    assert out.count(" ok") == 2 and "MISMATCH" not in out
    # --quiet is the summary only: no stage tables, IR or generated module.
    assert "== " not in out and "stages" not in out, out


def test_coil_import_model_file_round_trips():
    text = _run(_script("coil"), "import", "examples/softmax.py").stdout
    assert "aten._softmax.default" in text and "coil.symbol" in text
    assert print_module(parse_module(text)) == text


@pytest.mark.parametrize(
    "args, message",
    [
        (("import", "no/such/model.py"), "no such file"),
        (("import", "README.md"), "expected a .py model file or a .pt2 archive"),
    ],
)
def test_coil_errors_are_sentences(args, message):
    proc = _run(_script("coil"), *args, check=False)
    assert proc.returncode == 1
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_fx_opt_malformed_input_exit_code(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%x: !aten.tensor<[4], f32>) {\n  %0 = aten.relu.default(\n}\n")
    proc = _run(_script("fx-opt"), str(bad), check=False)
    assert proc.returncode == 1
    assert "bad.mlir:3:1" in proc.stderr and "Traceback" not in proc.stderr


def test_help_describes_every_registered_pass_target_and_pipeline():
    """fx-opt --help reads one-line summaries kept next to the registries (the
    help must not import the passes): a newly registered one needs its line."""
    from coil import lowering, targets, transforms
    from coil.pipeline import PIPELINES
    from coil.pipeline import SUMMARIES as pipeline_summaries

    assert set(transforms.SUMMARIES) == set(transforms.get_all_passes())
    assert set(lowering.SUMMARIES) == set(lowering.get_all_passes())
    assert set(targets.SUMMARIES) == set(targets.get_all_targets())
    assert set(pipeline_summaries) == set(PIPELINES)
    help_text = _run(_script("fx-opt"), "--help").stdout
    for name in [*transforms.SUMMARIES, *lowering.SUMMARIES, *targets.SUMMARIES, *PIPELINES]:
        assert f"\n  {name} " in help_text, name


def test_backend_is_registered_by_entry_point():
    """backend="coil" resolves without importing coil first."""
    code = (
        "import torch\n"
        "m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU())\n"
        "x = torch.randn(4, 8)\n"
        "with torch.no_grad():\n"
        "    torch.testing.assert_close(torch.compile(m, backend='coil')(x), m(x))\n"
        "print('backend ok')\n"
    )
    assert "backend ok" in _run(sys.executable, "-c", code).stdout


def test_backend_options():
    from coil.backend import coil as coil_backend

    m = torch.nn.Softmax(-1)
    x = torch.randn(4, 8)
    compiled = torch.compile(m, backend=coil_backend, options={"pipeline": "canonicalize"})
    torch.testing.assert_close(compiled(x), m(x))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="unknown option"):
        torch.compile(m, backend=coil_backend, options={"bogus": 1})(x)


def test_backend_pipeline_options_are_checked():
    """The backend's pipeline goes through the same option checks as fx-opt -p."""
    from coil.backend import coil as coil_backend
    from coil.pipeline import PIPELINES

    m = torch.nn.ReLU()
    pipeline = PIPELINES["default"].replace("convert-loop-to-tt", "convert-loop-to-tt{xblock=3}")
    torch._dynamo.reset()
    with pytest.raises(Exception, match="convert-loop-to-tt: option 'xblock' must be 0"):
        torch.compile(m, backend=coil_backend, options={"pipeline": pipeline})(torch.randn(4))


@torch.library.custom_op("coiltest::scale_add", mutates_args=())
def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    return x * alpha + y


@scale_add.register_fake
def _(x, y, alpha):
    return torch.empty_like(x)


def test_custom_op_imports_as_operator_and_runs():
    from coil.testing import reference_backend

    def fn(x, y):
        return torch.ops.coiltest.scale_add(x.relu(), y, 0.5) * 2

    x, y = torch.randn(4, 8), torch.randn(4, 8)
    compiled = torch.compile(fn, backend=reference_backend, fullgraph=True)
    torch.testing.assert_close(compiled(x, y), fn(x, y))

    from coil.frontend.loader import import_module

    text = print_module(import_module(fn, (x, y)))
    assert 'aten.operator "coiltest::scale_add"(%' in text and ", 0.5)" in text


def test_higher_order_op_is_a_located_error():
    from coil.frontend.fx_importer import GraphImportError
    from coil.frontend.loader import import_module

    def fn(x):
        return torch.cond(x.sum() > 0, lambda x: x.sin(), lambda x: x.cos(), (x,))

    where = r"test_cli_and_backend.py:\d+: subgraphs .*torch.cond"
    with pytest.raises(GraphImportError, match=where):
        import_module(fn, (torch.randn(4),))


def test_higher_order_op_under_torch_compile_keeps_class_and_line():
    """torch.compile prints the backend's exception class and message: both must
    say what failed and where (no internal `ImportError_`)."""

    def fn(x):
        return torch.cond(x.sum() > 0, lambda x: x.sin(), lambda x: x.cos(), (x,))

    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(fn, backend="coil")(torch.randn(4))
    text = str(info.value)
    assert "GraphImportError: node 'true_graph_0'" in text and "ImportError_" not in text
    assert __import__("re").search(r"at .*test_cli_and_backend.py:\d+: subgraphs", text)


def test_node_without_stack_trace_is_located_by_its_user():
    from coil.frontend.fx_importer import GraphImportError, import_graph

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    x.meta["val"] = torch.empty(3)
    sub = graph.get_attr("body")  # a subgraph reference: no stack trace of its own
    call = graph.call_function(torch.ops.higher_order.cond, (True, sub, sub, (x,)))
    call.meta["stack_trace"] = '  File "model.py", line 7, in forward\n    torch.cond(...)'
    call.meta["val"] = (torch.empty(3),)
    graph.output(call)
    root = torch.nn.Module()
    root.body = torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph())
    with pytest.raises(GraphImportError, match=r"node 'body' \(get_attr body\) at model.py:7"):
        import_graph(torch.fx.GraphModule(root, graph))


@pytest.mark.parametrize(
    "source, where",
    [
        ("def f():\n    raise ValueError('boom')\nmodel = f()\n", r"m.py:2: ValueError: boom"),
        ("import torch\nmodel = (\n", r"m.py:2: SyntaxError"),
        (
            "import torch\nmodel = torch.nn.ReLU()\n"
            "example_inputs = lambda: (torch.ones(2, 3) @ torch.ones(4, 5),)\n",
            r"m.py:3: RuntimeError: mat1 and mat2 shapes cannot be multiplied",
        ),
    ],
)
def test_coil_import_of_a_failing_model_file_is_located(tmp_path, source, where):
    model = tmp_path / "m.py"
    model.write_text(source)
    proc = _run(_script("coil"), "import", str(model), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert __import__("re").search(where, proc.stderr), proc.stderr


def test_every_package_directory_is_installed():
    """pyproject lists packages explicitly (the repo root is `coil`): a new
    subpackage missing there works in an editable install and breaks a real one."""
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    listed = set(
        tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(["coil", *p.parent.relative_to(root).parts])
        for p in root.rglob("__init__.py")
        if not {"test", "build", ".venv", "venv"} & set(p.relative_to(root).parts)
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    }
    assert found <= listed, f"add to pyproject packages: {sorted(found - listed)}"
