"""The debugging tools: ``coil bisect`` (coil/tools/bisect.py) and ``coil reduce``
(coil/tools/reduce.py), through their Python entry points; test/fx-opt/bisect.mlir
and reduce.mlir run the commands."""

from __future__ import annotations

import re

import pytest
import torch
from xdsl.dialects import arith
from xdsl.rewriter import Rewriter

from coil.ir import parse_module, print_module
from coil.pipeline import PIPELINES
from coil.tools.bisect import bisect
from coil.tools.reduce import Reducer, failure_pattern
from coil.transforms.loop_simplify_indexing import LoopSimplifyIndexingPass


def _model(x, y):
    return torch.softmax(x * 2 + y, -1), (x - y).abs().sum(1)


INPUTS = (torch.randn(6, 17), torch.randn(17))


def test_bisect_names_a_broken_pass_of_the_pipeline(monkeypatch):
    """loop-simplify-indexing, deliberately broken (it also turns every addf into
    a subf), is named; the stages before it match eager."""
    apply = LoopSimplifyIndexingPass.apply

    def broken(self, ctx, module):
        apply(self, ctx, module)
        for op in list(module.walk()):
            if isinstance(op, arith.AddfOp):
                Rewriter.replace_op(op, arith.SubfOp(op.lhs, op.rhs))

    monkeypatch.setattr(LoopSimplifyIndexingPass, "apply", broken)
    (report,) = bisect(_model, INPUTS)
    assert report.culprit == "loop-simplify-indexing"
    names = [s.name for s in report.stages]
    culprit = names.index("loop-simplify-indexing")
    assert all(s.status == "ok" for s in report.stages[:culprit])
    assert report.stages[culprit].status == "differs"
    assert "loop-simplify-indexing" not in names[:culprit]
    assert report.before is not None and "arith.addf" in report.before
    assert report.after is not None and "arith.subf" in report.after


def test_bisect_names_a_pass_that_raises(monkeypatch):
    def raises(self, ctx, module):
        raise RuntimeError("simplify exploded")

    monkeypatch.setattr(LoopSimplifyIndexingPass, "apply", raises)
    (report,) = bisect(_model, INPUTS)
    assert report.culprit == "loop-simplify-indexing"
    assert report.stages[-1].status == "failed"
    assert "simplify exploded" in report.stages[-1].detail


def test_bisect_of_a_correct_pipeline_blames_nothing():
    (report,) = bisect(_model, INPUTS, PIPELINES["default"], dynamic=True)
    assert report.culprit is None
    statuses = {s.name: s.status for s in report.stages}
    assert statuses["import"] == "ok" and statuses["convert-buffer-to-host"] == "ok"
    assert statuses["convert-loop-to-tt"] == "skipped"


REDUCIBLE = """
func.func @other(%a: !aten.tensor<[4], f32>) -> !aten.tensor<[4], f32> {
  %r = aten.relu.default(%a) : !aten.tensor<[4], f32>
  func.return %r : !aten.tensor<[4], f32>
}
func.func @forward(%x: !aten.tensor<[4], f32>) -> (!aten.tensor<[4], f32>, !aten.tensor<[], f32>) {
  %a = aten.exp.default(%x) : !aten.tensor<[4], f32>
  %b = aten.neg.default(%a) : !aten.tensor<[4], f32>
  %c = aten.cumsum.default(%b, dim = 0) : !aten.tensor<[4], f32>
  %d = aten.tanh.default(%c) : !aten.tensor<[4], f32>
  %s = aten.sum.default(%d) : !aten.tensor<[], f32>
  func.return %d, %s : !aten.tensor<[4], f32>, !aten.tensor<[], f32>
}
"""


def test_reducer_cuts_everything_but_the_culprit():
    """In-process (a predicate instead of a command): what makes the input
    "fail" is a cumsum of a tensor computed by neg. The reducer keeps exactly
    that: the neg's operand becomes an argument, everything else goes."""
    tries = []

    def interesting(text: str) -> bool:
        tries.append(text)
        module = parse_module(text)
        ops = {op.name: op for op in module.walk()}
        cumsum = ops.get("aten.cumsum.default")
        producer = getattr(cumsum.operands[0].owner, "name", None) if cumsum else None
        return producer == "aten.neg.default"

    reduced = Reducer(REDUCIBLE, interesting, parse_module, print_module).reduce()
    module = parse_module(reduced)
    names = [op.name for op in module.walk()]
    assert names == [
        "builtin.module",
        "func.func",
        "aten.neg.default",
        "aten.cumsum.default",
        "func.return",
    ]
    assert "@forward(%a: !aten.tensor<[4], f32>)" in reduced  # exp's result, now an argument
    assert len(tries) < 60


def test_failure_pattern_survives_renumbering():
    pattern = failure_pattern(
        "x.mlir:12:3\n  %7 = aten.foo\n  ^\n  aten.add.Tensor: operand %a_2 of type [4] is bad"
    )
    assert re.search(pattern, "  aten.add.Tensor: operand %b of type [8] is bad")
    assert not re.search(pattern, "aten.mul.Tensor: operand %b of type [8] is bad")
    assert re.search(failure_pattern("/tmp/a/b.mlir:3:4: oops"), "c.mlir:9:1: oops")


def test_reduce_refuses_an_input_that_does_not_fail(tmp_path):
    from coil.tools.reduce import reduce_file

    path = tmp_path / "ok.mlir"
    path.write_text(REDUCIBLE)
    with pytest.raises(ValueError, match="does not fail"):
        reduce_file(path, "true")
