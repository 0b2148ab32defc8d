"""Provenance: kernels and wrapper lines name the user lines they came from.

The importer gives each aten op its user line; convert-aten-to-loop puts it (with
the aten op's name) on every op it builds; the loop and buffer passes keep it;
each kernel records its lines (``coil.source_lines``) and aten ops
(``coil.aten_ops``); ``-t triton`` and ``-t python`` print them as comments.
"""

from __future__ import annotations

import inspect
import re

import pytest

from coil.backend import compile_graph
from coil.dialects import host, tt
from coil.examples import models
from coil.examples.models import build
from coil.frontend.capture import capture_graphs
from coil.ir import source_line


def _line_of(cls: type, needle: str) -> int:
    """The line of ``cls.forward`` in models.py whose text contains ``needle``."""
    lines, start = inspect.getsourcelines(cls.forward)
    hits = [start + k for k, text in enumerate(lines) if needle in text]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def _compile(name: str, dynamic: bool = False):
    model, inputs = build(name)
    modules = []

    def keep_host(stage, module) -> None:
        if stage == "convert-buffer-to-host":
            modules.append(module)

    graphs = capture_graphs(model, inputs, dynamic=dynamic)
    runs = [compile_graph(g.gm, g.example_inputs, observe=keep_host) for g in graphs]
    return runs, modules


def _comment_before(source: str, pattern: str) -> str:
    """The comment line right above the first wrapper line matching ``pattern``."""
    lines = source.splitlines()
    for k, text in enumerate(lines):
        if re.search(pattern, text) and k > 0:
            return lines[k - 1].strip()
    raise AssertionError(f"no line matches {pattern!r}")


def test_softmax_kernel_and_launch_name_the_forward_line():
    line = _line_of(models.Softmax, "torch.softmax")
    (run,), _ = _compile("softmax")
    src = run.coil_source
    assert f"# fused from: models.py:{line}\n" in src
    assert "# Original ATen: [aten.amax, aten.sub, aten.exp, aten.sum, aten.div]" in src
    # The wrapper names the line above the launch.
    assert _comment_before(src, r"^\s+coil_\w+_launch\.run\(") == f"# models.py:{line}"


def test_extern_call_names_its_line():
    line = _line_of(models.MLP, "self.fc2(F.gelu(self.fc1(x)))")
    (run,), _ = _compile("mlp")
    src = run.coil_source
    assert _comment_before(src, r"torch\.addmm") == f"# models.py:{line}"
    assert _comment_before(src, r"^\s+coil_\w+_launch\.run\(") == f"# models.py:{line}"


def test_multi_line_kernel_lists_lines_in_source_order():
    (run,), _ = _compile("gpt2_block")
    found = re.findall(r"# fused from: (.*)", run.coil_source)
    multi = [f for f in found if "," in f]
    assert multi, found
    for f in multi:
        numbers = [int(t.rpartition(":")[2]) for t in f.split(", ")]
        assert numbers == sorted(set(numbers)), f


@pytest.mark.parametrize("name", ["gpt2_block", "conv_bn_relu_train", "dropout_train"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_every_kernel_launch_and_extern_is_located(name, dynamic):
    _, modules = _compile(name, dynamic)
    assert modules
    for module in modules:
        for op in module.walk():
            if isinstance(op, tt.FuncOp):
                lines = [s.data for s in op.attributes["coil.source_lines"].data]
                assert lines and all("models.py:" in s for s in lines), op.sym_name.data
                assert op.attributes["coil.aten_ops"].data, op.sym_name.data
            elif isinstance(op, host.LaunchOp | host.ExternOp):
                assert source_line(op.location) is not None, op.name
