"""The coil command, fx-opt's exit codes, the registered torch.compile backend,
and custom ops through the generic aten.operator."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import served_tools
import torch

from coil.ir import parse_module, print_module

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        args,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=served_tools.env(),
    )
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def _script(name: str) -> str:
    # fx-opt and coil served by one pre-imported process (served_tools.py)
    return served_tools.tool(name)


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


def test_a_model_files_lone_tensor_of_inputs_is_named(tmp_path):
    """``example_inputs = torch.randn(3)`` was unpacked into three arguments and
    failed inside Dynamo with a page of its messages."""
    model = tmp_path / "model.py"
    model.write_text("import torch\nmodel = torch.nn.ReLU()\nexample_inputs = torch.randn(3)\n")
    proc = _run(_script("coil"), "import", str(model), check=False)
    assert proc.returncode == 1
    assert proc.stderr == (
        f"coil import: error: {model}: example_inputs must be a tuple of the model's "
        "arguments, not a Tensor (one input: example_inputs = (x,))\n"
    )


def test_a_pass_plugin_that_fails_to_load_is_located(tmp_path):
    plugin = tmp_path / "plugin.py"
    plugin.write_text("import math\n\nraise RuntimeError('not ready')\n")
    proc = _run(_script("fx-opt"), "examples/big.mlir", "--pass-plugin", str(plugin), check=False)
    assert proc.returncode == 1
    assert proc.stderr == f"fx-opt: error: {plugin}:3: RuntimeError: not ready\n"


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


# ---- what a new user meets first: errors are one located sentence -----------


def _loud(*args: str) -> subprocess.CompletedProcess:
    """Run with Python's warnings on (the other tests here silence them)."""
    env = served_tools.env(warnings="default")  # not served: a fresh start
    return subprocess.run(args, capture_output=True, text=True, cwd=ROOT, env=env)


# The two tests below start a fresh fx-opt with warnings on (torch's import,
# ~6 s of CPU each on the 2-core CI machine); lit's fx-opt/errors.mlir (PT2) and
# fx-opt/pt2.mlir (QUIET) run the same two checks, whole output, in the README's
# default command, so these run with -m slow.
@pytest.mark.slow
def test_fx_opt_bad_pt2_is_one_line_naming_the_file(tmp_path):
    """No torch log of the failed read, no FutureWarning: one line, exit 1."""
    bad = tmp_path / "bad.pt2"
    bad.write_text("garbage\n")
    proc = _loud(_script("fx-opt"), str(bad))
    assert proc.returncode == 1
    assert proc.stderr == (
        f"fx-opt: error: {bad}: cannot load the torch.export archive: File is not a zip file\n"
    )


@pytest.mark.slow
def test_fx_opt_pt2_prints_no_warning(tmp_path):
    path = tmp_path / "model.pt2"
    torch.export.save(torch.export.export(torch.nn.ReLU(), (torch.randn(4),)), str(path))
    proc = _loud(_script("fx-opt"), str(path))
    assert proc.returncode == 0 and "aten.relu.default" in proc.stdout
    assert proc.stderr == ""


@pytest.mark.parametrize("text", ["", "\n  \n", "// a comment only\n\n// and another\n"])
def test_fx_opt_empty_input_is_an_empty_module(tmp_path, text):
    path = tmp_path / "empty.mlir"
    path.write_text(text)
    proc = _run(_script("fx-opt"), str(path), "-p", "canonicalize,cse")
    assert proc.stdout.strip() == "builtin.module {\n}"


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ("-p", "cse,loop-fusion"),
            "fx-opt: error: unknown pass 'loop-fusion'; did you mean 'loop-fuse'",
        ),
        (
            ("-p", "loop-fuse{max-members=x}"),
            "fx-opt: error: loop-fuse: option 'max-members' must be an integer >= 2; got x",
        ),
        (
            ("-p", "convert-loop-to-tt{xblok=4}"),
            "fx-opt: error: convert-loop-to-tt: unknown option 'xblok'; did you mean 'xblock'",
        ),
        (("no/such.mlir",), "fx-opt: error: no/such.mlir: no such file or directory"),
    ],
)
def test_fx_opt_errors_exit_1_with_one_sentence(tmp_path, args, message):
    empty = tmp_path / "empty.mlir"
    empty.write_text("")
    args = args if args[0].endswith(".mlir") else (str(empty), *args)
    proc = _run(_script("fx-opt"), *args, check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith(message) and proc.stderr.count("\n") == 1, proc.stderr


def test_fx_opt_error_messages_say_each_thing_once(tmp_path):
    """An inference error names its op once; an op with no loop lowering is not
    followed by "(no lowering)"."""
    path = tmp_path / "sum.mlir"
    path.write_text(
        "func.func @f(%x: !aten.tensor<[4, 8], f32>) -> !aten.tensor<[4], f32> {\n"
        "  %s = aten.sum.dim_IntList(%x, dim = [3]) : !aten.tensor<[4], f32>\n"
        "  func.return %s : !aten.tensor<[4], f32>\n"
        "}\n"
    )
    proc = _run(_script("fx-opt"), str(path), check=False)
    assert proc.returncode == 1 and f"{path}:2:28" in proc.stderr
    assert proc.stderr.count("aten.sum.dim_IntList:") == 1, proc.stderr
    proc = _run(
        _script("fx-opt"),
        "examples/big.mlir",
        "-p",
        "convert-aten-to-loop{fallback=error}",
        check=False,
    )
    assert proc.returncode == 1
    assert "no loop lowering for aten.sort.default and the fallback policy" in proc.stderr


def test_fx_opt_targets_are_coils():
    proc = _run(_script("fx-opt"), "-t", "wgsl", check=False)
    assert proc.returncode == 2  # argparse's usage error
    assert (
        "invalid choice: 'wgsl' (choose from mlir, triton, python, cpp, cpp-kernels)" in proc.stderr
    )


def test_help_lists_every_pass_option_with_type_and_default():
    """fx-opt --help reads pass options from the sources (passinfo.py, without
    importing torch); they must be the classes' real fields and defaults."""
    import dataclasses
    import typing

    from coil import lowering, transforms
    from coil.passinfo import NO_DEFAULT, pass_options, spec_value

    help_text = _run(_script("fx-opt"), "--help").stdout
    for name, path in {**transforms.PASSES, **lowering.PASSES}.items():
        cls = {**transforms.get_all_passes(), **lowering.get_all_passes()}[name]()
        assert cls.name == name
        hints = typing.get_type_hints(cls)
        fields = [f for f in dataclasses.fields(cls) if f.init and f.name != "name"]
        listed = pass_options(path)
        assert [o.name for o in listed] == [f.name.replace("_", "-") for f in fields], name
        for option, field in zip(listed, fields):
            want = field.default if field.default is not dataclasses.MISSING else NO_DEFAULT
            assert option.default == want, (name, option)
            assert eval(option.type, vars(typing), {}) == hints[field.name], (name, option)
            shown = spec_value(want)
            if not isinstance(want, tuple):
                assert f"{option.name}=<" in help_text and f"(default {shown})" in help_text


def test_backend_pipeline_misspelled_pass_raises_under_eager_fallback():
    """A misspelled pass (or a bad option) in options["pipeline"] is a
    configuration error: it raises, also where a failed compile would run eager."""
    from coil.backend import coil as coil_backend

    m, x = torch.nn.ReLU(), torch.randn(4)
    for pipeline, message in [
        ("cse,no-such-pass", "coil: option pipeline: unknown pass 'no-such-pass'"),
        ("cse,loop-fusion", "unknown pass 'loop-fusion'; did you mean 'loop-fuse'"),
        ("cse,loop-fuse{max-members=1}", "loop-fuse: option 'max-members' must be"),
    ]:
        torch._dynamo.reset()
        options = {"pipeline": pipeline, "fallback": "eager"}
        with pytest.raises(Exception, match=__import__("re").escape(message)):
            torch.compile(m, backend=coil_backend, options=options)(x)


def test_backend_misspelled_option_key_says_which(tmp_path):
    from coil.backend import coil as coil_backend

    torch._dynamo.reset()
    with pytest.raises(Exception, match="unknown option 'pipline'; did you mean 'pipeline'"):
        torch.compile(torch.nn.ReLU(), backend=coil_backend, options={"pipline": "cse"})(
            torch.randn(4)
        )


@pytest.mark.parametrize(
    "options, message",
    [
        ({"cache": "no"}, "coil: option cache must be True or False, not 'no'"),
        ({"cudagraphs": "False"}, "coil: option cudagraphs must be True or False, not 'False'"),
        ({"max_autotune": 1}, "coil: option max_autotune must be True or False, not 1"),
        ({"pipeline": ["cse"]}, "coil: option pipeline must be a pass-pipeline string"),
        ({"dump_dir": 3}, "coil: option dump_dir must be a directory path, not 3"),
        ({"progress": "fast"}, "coil: option progress must be True, False or seconds >= 0"),
        ({"progress": -1}, "coil: option progress must be True, False or seconds >= 0"),
        ({"gemm_budget": "10"}, "coil: option gemm_budget must be seconds >= 0, not '10'"),
        ({"cpu_kernels": "c"}, "coil: option cpu_kernels must be one of 'cpp', 'triton'"),
    ],
)
def test_backend_option_of_the_wrong_kind_raises_naming_it(options, message):
    """Checked before anything compiles: a string "False" for a switch would count
    as true, and a bad progress value failed only on a cache miss, deep inside."""
    from coil.backend import coil as coil_backend

    gm = torch.fx.symbolic_trace(torch.nn.ReLU())
    with pytest.raises(ValueError, match=__import__("re").escape(message)):
        coil_backend(gm, [torch.randn(4)], options=options)


def test_backend_options_of_none_mean_the_default():
    from coil.backend import _check_option_types, _flag

    _check_option_types({key: None for key in ("cache", "progress", "gemm_budget")})
    assert _flag({"cudagraphs": None}, "cudagraphs", True) is True
    assert _flag({"cudagraphs": False}, "cudagraphs", True) is False


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ("reduce", "no/such.mlir", "fx-opt"),
            "coil reduce: error: no/such.mlir: no such file or directory",
        ),
        (
            ("bisect", "examples/big.mlir"),
            "coil bisect: error: examples/big.mlir: coil bisect takes a Python model file",
        ),
        (("bisect", "no/such.py"), "coil bisect: error: no/such.py: no such file"),
        # A command that cannot run "fails" on every candidate: it reduced to nothing.
        (
            ("reduce", "examples/big.mlir", "no-such-tool-xyz"),
            "coil reduce: error: the command could not be run (exit status 127",
        ),
        # A folder that does not exist is said before the reduction, not after.
        (
            ("reduce", "-o", "no/such/dir/out.mlir", "examples/big.mlir", "false"),
            "coil reduce: error: no/such/dir/out.mlir: no such file or directory",
        ),
    ],
)
def test_coil_command_errors_are_one_sentence(args, message):
    proc = _run(_script("coil"), *args, check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith(message) and proc.stderr.count("\n") == 1, proc.stderr


def test_every_coil_variable_is_documented_in_config_and_readme():
    """config.py is the one place for COIL_* settings: every variable the sources
    read is described there and in the README's environment paragraph."""
    import re

    from coil import config

    readme = (ROOT / "README.md").read_text()
    environment = readme[readme.index("Environment (`config.py`)") :]
    environment = environment[: environment.index("\n\n")]
    macros = {"COIL_DEFINE_ENTRY", "COIL_EXPORT"}  # C preprocessor names, not settings
    used = set()
    for path in ROOT.rglob("*"):
        if path.suffix in (".py", ".h", ".cpp") and not {"test", ".venv"} & set(path.parts):
            used |= set(re.findall(r"\bCOIL_[A-Z_]+[A-Z]\b", path.read_text(errors="ignore")))
    assert used - macros, "no COIL_ variable found: the scan is broken"
    for name in sorted(used - macros):
        assert name in config.__doc__, f"{name} is not described in config.py"
        assert name in environment, f"{name} is not in the README's environment paragraph"
