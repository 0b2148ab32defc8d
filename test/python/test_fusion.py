"""The fusion passes (loop-inline, loop-fuse, loop-simplify-indexing) on real
models: each pass leaves the results unchanged (run on the reference executor
before and after, fresh random inputs) and reaches the expected nest counts."""

from __future__ import annotations

import pytest
import torch

from coil.backend import run_pipeline
from coil.dialects import loop as L
from coil.examples.models import MODELS, build
from coil.frontend.capture import capture_graphs
from coil.frontend.fx_importer import import_graph
from coil.ir import parse_module, print_module
from coil.pipeline import PIPELINES
from coil.runtime.aten_executor import run_module

FUSION = ("loop-inline", "loop-fuse", "loop-simplify-indexing")


def _loop_modules(name: str, dynamic: bool = False):
    model, inputs = build(name)
    for g in capture_graphs(model, inputs, dynamic=dynamic):
        module = import_graph(g.gm, g.example_inputs)
        run_pipeline(module, PIPELINES["aten"])
        run_pipeline(module, "convert-aten-to-loop")
        yield module, list(g.example_inputs)


def _concrete(n):
    return n.node.hint if isinstance(n, torch.SymInt) else int(n)


def _fresh(inputs):
    """Real random tensors shaped like the (fake) example inputs; never zeros."""
    out = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            shape = [_concrete(n) for n in x.shape]
            if x.is_floating_point():
                out.append(torch.randn(shape, dtype=x.dtype))
            else:
                out.append(torch.randint(0, 2, shape, dtype=x.dtype))
        else:
            out.append(_concrete(x))
    return out


def _as_list(out):
    return list(out) if isinstance(out, list | tuple) else [out]


def _top_level(module, kind) -> list:
    fn = next(op for op in module.walk() if op.name == "func.func")
    return [op for op in fn.body.block.ops if isinstance(op, kind)]


def _fuse_checked(name: str, dynamic: bool = False):
    """Run the fusion passes one at a time, checking numerics after each."""
    results = []
    for module, inputs in _loop_modules(name, dynamic):
        inputs = _fresh(inputs)
        torch.manual_seed(1)  # random ops draw their seed from torch's generator
        expected = _as_list(run_module(module, inputs))
        for p in FUSION:
            run_pipeline(module, p)
            module = parse_module(print_module(module))  # the printed IR round-trips
            torch.manual_seed(1)
            for a, b in zip(_as_list(run_module(module, inputs)), expected, strict=True):
                # equal_nan: batch-norm's random running_var may be negative (sqrt -> NaN)
                torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5, equal_nan=True)
        results.append(module)
    return results


@pytest.mark.parametrize("name", sorted(MODELS))
def test_fusion_keeps_results(name):
    _fuse_checked(name)


@pytest.mark.parametrize("name", ["softmax", "layernorm", "attention"])
def test_fusion_keeps_results_dynamic(name):
    _fuse_checked(name, dynamic=True)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "layernorm", "rmsnorm"])
def test_normalizations_become_one_group(name):
    (module,) = _fuse_checked(name)
    groups = _top_level(module, L.FusedOp)
    assert len(groups) == 1, print_module(module)
    assert len(_top_level(module, L.LoopOp)) == 1, print_module(module)


POINTWISE_CHAIN = """
func.func @chain(%x: !buffer.buffer<[4, s0], f32>) -> !loop.tensor<[4, s0], f32> {
  %v0 = loop.pointwise [4, s0] : !loop.tensor<[4, s0], f32> {
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %x[i0, i1] : !buffer.buffer<[4, s0], f32>
    %1 = math.sin %0 : f32
    loop.yield %1 : f32
  }
"""


def test_pointwise_chain_becomes_one_nest():
    text = POINTWISE_CHAIN
    for k in range(1, 10):
        text += f"""
  %v{k} = loop.pointwise [4, s0] : !loop.tensor<[4, s0], f32> {{
  ^bb0(%i0: index, %i1: index):
    %0 = loop.load %v{k - 1}[i0, i1] : !loop.tensor<[4, s0], f32>
    %1 = loop.load %x[i0, i1] : !buffer.buffer<[4, s0], f32>
    %2 = arith.addf %0, %1 : f32
    %3 = math.cos %2 : f32
    loop.yield %3 : f32
  }}
"""
    text += "  func.return %v9 : !loop.tensor<[4, s0], f32>\n}\n"
    module = parse_module(text)
    x = torch.randn(4, 7)
    (expected,) = _as_list(run_module(module, [x]))
    run_pipeline(module, "loop-inline,loop-fuse,loop-simplify-indexing")
    assert len(_top_level(module, L.LoopOp)) == 1
    assert not _top_level(module, L.FusedOp)
    (out,) = _as_list(run_module(module, [x]))
    torch.testing.assert_close(out, expected)
    ref = torch.sin(x)
    for _ in range(9):
        ref = torch.cos(ref + x)
    torch.testing.assert_close(out, ref)


VIEW_THEN_COPY = """
func.func @view_copy(%x: !buffer.buffer<[8], f32>, %y: !loop.tensor<[8], f32>)
    -> !loop.tensor<[8], f32> {
  %v = loop.view %x[7 - i0] : !buffer.buffer<[8], f32> -> !loop.tensor<[8], f32>
  %a = loop.pointwise [8] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %v[i0] : !loop.tensor<[8], f32>
    %1 = math.exp %0 : f32
    loop.yield %1 : f32
  }
  loop.copy %y, %x : !loop.tensor<[8], f32>, !buffer.buffer<[8], f32>
  %b = loop.pointwise [8] : !loop.tensor<[8], f32> {
  ^bb0(%i0: index):
    %0 = loop.load %a[i0] : !loop.tensor<[8], f32>
    %1 = loop.load %v[i0] : !loop.tensor<[8], f32>
    %2 = arith.mulf %0, %1 : f32
    loop.yield %2 : f32
  }
  func.return %b : !loop.tensor<[8], f32>
}
"""


def test_inline_does_not_read_through_a_view_past_a_copy():
    """A view (and a producer reading it) holds the data from before a loop.copy
    overwrote the view's source: inlining must not move the read past the copy."""
    module = parse_module(VIEW_THEN_COPY)
    x, y = torch.randn(8), torch.randn(8)
    (expected,) = _as_list(run_module(module, [x.clone(), y]))
    torch.testing.assert_close(expected, x.flip(0).exp() * x.flip(0))
    for p in FUSION:
        run_pipeline(module, p)
        (out,) = _as_list(run_module(module, [x.clone(), y]))
        torch.testing.assert_close(out, expected)


def test_fused_members_read_members_at_their_own_row():
    """s + s.flip(0) and (x - s[:, None]).t() after a row sum: each epilogue would
    need another row's sum (another kernel instance), so neither joins the
    reduction's group."""

    def fn(x):
        s = x.sum(1)
        return s + s.flip(0), (x - s[:, None]).t() * 2

    model_inputs = [torch.randn(6, 6)]
    for g in capture_graphs(fn, model_inputs):
        module = import_graph(g.gm, g.example_inputs)
        run_pipeline(module, PIPELINES["aten"])
        run_pipeline(module, "convert-aten-to-loop,loop-inline,loop-fuse")
        assert not _top_level(module, L.FusedOp), print_module(module)
        outs = _as_list(run_module(module, model_inputs))
        for a, b in zip(outs, fn(*model_inputs), strict=True):
            torch.testing.assert_close(a, b)


def _buffer_level(model, inputs):
    (g,) = capture_graphs(model, inputs)
    module = import_graph(g.gm, g.example_inputs)
    run_pipeline(module, PIPELINES["buffer"])
    return module


@pytest.mark.parametrize("pre_norm", [False, True], ids=["post_norm", "pre_norm"])
def test_kernels_do_not_grow_with_depth(pre_norm):
    """Each kernel's bytes read and size stay the same from 2 to 6 residual blocks,
    and the whole program grows linearly: recomputation never drags earlier
    layers into later kernels (the static cost report, loop_cost.py)."""
    from coil.examples.models import ResidualStack
    from coil.transforms.loop_cost import body_size, estimate, nest_cost

    stats = {}
    for depth in (2, 4, 6):
        torch.manual_seed(0)
        module = _buffer_level(
            ResidualStack(depth, pre_norm=pre_norm).eval(), (torch.randn(2, 16, 32),)
        )
        nests = _top_level(module, L.LoopOp)
        costs = [nest_cost(n) for n in nests]
        stats[depth] = (
            max(estimate(c.bytes_read) for c in costs),
            max(c.size for c in costs),
            body_size(next(op for op in module.walk() if op.name == "func.func").body.block),
        )
    for depth in (4, 6):
        assert stats[depth][0] <= stats[2][0], (depth, stats)  # bytes read by the worst kernel
        assert stats[depth][1] <= 1.2 * stats[2][1], (depth, stats)  # its size
    # Linear growth: every two blocks add the same ops.
    grow = stats[4][2] - stats[2][2]
    assert abs((stats[6][2] - stats[4][2]) - grow) <= 0.05 * grow, stats
