"""The README's commands and listings, run and compared with what the tools print,
so they cannot drift from the tools.

* the ```bash blocks: the set-up block's commands are checked against the
  project (the torch pin, the test extra, the test folders; `coil demo` runs in
  test_cli_and_backend.py); every line of the fx-opt block runs in a scratch
  folder and must exit 0 (1 where its comment says so, with a located message);
  so does every line of the block marked ``<!-- readme-check: run -->``;
* every ```mlir listing is preceded by ``<!-- readme-check: ... -->``: either
  ``round-trip`` (fx-opt prints the listing back unchanged) or the command whose
  output it shows (a line ``...`` stands for any number of left-out lines);
* the ```python block runs.
"""

from __future__ import annotations

import re
import subprocess
import textwrap
import tomllib
from pathlib import Path

import pytest
import served_tools
import torch

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
_FENCE = re.compile(r"(?:<!-- readme-check: (.*?) -->\n)?```(\w+)\n(.*?)```", re.S)


def fences(lang: str) -> list[tuple[str | None, str]]:
    """(check marker, body) of every fence of ``lang``, in order."""
    return [(m.group(1), m.group(3)) for m in _FENCE.finditer(README) if m.group(2) == lang]


def _env() -> dict[str, str]:
    # fx-opt and coil served by one pre-imported process (served_tools.py)
    return served_tools.env()


def _bash(command: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command}"],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
    )


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """A folder with what the README's commands read: examples/ (as in the
    repository), softmax.mlir, model.pt2 (a torch.export archive) and bad.mlir
    (IR with an error)."""
    d = tmp_path_factory.mktemp("readme")
    (d / "examples").symlink_to(ROOT / "examples")
    done = _bash("coil import examples/softmax.py > softmax.mlir", d)
    assert done.returncode == 0, done.stderr
    from coil.examples.models import build

    model, inputs = build("layernorm")
    torch.export.save(torch.export.export(model, tuple(inputs)), str(d / "model.pt2"))
    (d / "bad.mlir").write_text(
        "func.func @f(%x: !aten.tensor<[4], f32>) -> !aten.tensor<[4], f32> {\n"
        "  %y = aten.relu.default(%x, %x) : !aten.tensor<[4], f32>\n"
        "  func.return %y : !aten.tensor<[4], f32>\n"
        "}\n"
    )
    return d


def _commands(body: str) -> list[tuple[str, str]]:
    """(command, comment) per line; a comment starts at two spaces and a '#'."""
    out = []
    for line in body.strip().splitlines():
        command, _, comment = line.partition("  #")
        out.append((command.strip(), comment.strip()))
    return out


def test_setup_block_matches_the_project():
    lines = [c for c, _ in _commands(fences("bash")[0][1])]
    assert len(lines) == 2
    install = lines[0].split(" && ")
    pin = next(p for p in install if p.startswith("pip install torch=="))
    assert torch.__version__.startswith(pin.removeprefix("pip install torch==").strip())
    assert "pip install -e '.[test]'" in install and install[-1] == "coil demo"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "test" in project["optional-dependencies"]
    assert lines[1] == ". .venv/bin/activate && lit -v test && pytest"
    assert (ROOT / "test" / "lit.cfg.py").exists()


@pytest.mark.parametrize(
    "command, comment", _commands(fences("bash")[1][1]), ids=lambda v: v[:40] if v else ""
)
def test_fx_opt_block_commands_run(scratch, command, comment):
    done = _bash(command, scratch)
    assert "Traceback" not in done.stderr, done.stderr
    if "exit code 1" in comment:
        assert done.returncode == 1
        assert re.search(r"bad\.mlir:\d+:\d+", done.stderr), done.stderr
    else:
        assert done.returncode == 0, done.stderr
        assert done.stdout or "> " in command


def _run_block() -> list[tuple[str, str]]:
    (body,) = [b for marker, b in fences("bash") if marker == "run"]
    return _commands(body)


@pytest.mark.parametrize("command, comment", _run_block(), ids=lambda v: v[:40] if v else "")
def test_debugging_block_commands_run(scratch, command, comment):
    """The conformance and debugging commands, on the scratch folder
    (examples/big.mlir fails convert-aten-to-loop{fallback=error} in one of its ops)."""
    done = _bash(command, scratch)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    if command.startswith("coil reduce"):
        small = (scratch / "small.mlir").read_text()
        assert small.count(" = aten.") == 1 and "aten.sort.default" in small


def _unwrap(printed: str) -> str:
    """fx-opt's output without the implicit ``builtin.module { ... }``."""
    lines = printed.rstrip("\n").splitlines()
    if lines and lines[0] == "builtin.module {" and lines[-1] == "}":
        return textwrap.dedent("\n".join(lines[1:-1])) + "\n"
    return printed


def _matches(listing: str, output: str) -> bool:
    """Every listing line, in order and whole, where a ``...`` line skips any lines."""
    parts = []
    for line in listing.rstrip("\n").splitlines():
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(re.escape(line.rstrip()) + r"\n")
    return re.fullmatch("".join(parts), output) is not None


@pytest.mark.parametrize("index", range(len(fences("mlir"))))
def test_mlir_listings_are_what_the_tools_print(scratch, index):
    marker, listing = fences("mlir")[index]
    assert marker, "every mlir listing says what prints it (<!-- readme-check: ... -->)"
    if marker == "round-trip":
        done = subprocess.run(
            [served_tools.tool("fx-opt"), "-"],
            input=listing,
            capture_output=True,
            text=True,
            env=_env(),
        )
        assert done.returncode == 0, done.stderr
        assert _unwrap(done.stdout) == listing
    else:
        done = _bash(marker, scratch)
        assert done.returncode == 0, done.stderr
        assert _matches(listing, _unwrap(done.stdout)), _unwrap(done.stdout)


def test_python_block_runs():
    ((marker, code),) = fences("python")
    assert marker == "python"
    model, x = torch.nn.Softmax(-1), torch.randn(4, 8)
    namespace = {"model": model, "x": x}
    torch._dynamo.reset()
    exec(compile(code, "README.md", "exec"), namespace)
    assert "aten._softmax.default" in str(namespace["module"])
    torch.testing.assert_close(namespace["out"], model(x))


def test_files_the_readme_names_are_in_the_repository():
    named = set(re.findall(r"`([\w./-]+\.(?:md|py|sh|toml))`", README))
    assert "docs/DESIGN.md" in named
    for path in named:
        if "/" not in path:
            continue  # a bare file name (wrapper.py, repro.sh): what a tool writes
        resolved = (ROOT / path).resolve()
        assert resolved.is_relative_to(ROOT) and resolved.exists(), path
