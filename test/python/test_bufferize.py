"""bufferize and memory-plan on real graphs: numerics, layouts, aliasing, mutation.

Each graph AOTAutograd hands over runs through the default pipeline,
convert-aten-to-loop, the fusion passes that exist, bufferize and memory-plan,
one pass at a time (``check_pipeline_per_pass``: after every pass the reference
executor must give what it gave before, on the same inputs). The buffer-level
result is then compared with the graph run eagerly: values, output strides, and
the inputs it mutates. The model set through the same pipeline is
test_middle_end.py's.
"""

from __future__ import annotations

import pytest
import torch
from xdsl.dialects.func import FuncOp as _Func

from coil.dialects import buffer as B
from coil.dialects import loop as L
from coil.frontend.capture import aot_backend
from coil.frontend.fx_importer import constant_inputs, import_graph
from coil.pipeline import PIPELINES
from coil.runtime.aten_executor import run_module
from coil.testing import (
    assert_close_to_eager,
    assert_module_matches_graph,
    check_pipeline_per_pass,
)

PIPELINE = PIPELINES["buffer"]
UNFUSED = f"{PIPELINES['aten']},convert-aten-to-loop,bufferize,memory-plan"
"""No fusion: every reduction of a chain is its own nest with its own buffer."""


def compile_checked(fn, inputs, *, dynamic=False, random=False, pipeline=PIPELINE):
    """Compile ``fn`` with a backend that checks every graph; returns the final
    (buffer-level) modules and ``fn``'s compiled outputs."""
    finals: list = []

    def compile_graph(gm, example_inputs):
        module = import_graph(gm, example_inputs)
        consts = constant_inputs(module, gm)

        def run(*args):
            graph_inputs = [*args, *consts]
            final = check_pipeline_per_pass(module, pipeline, graph_inputs, random=random)
            finals.append(final)
            # The buffer level against the graph run eagerly: values, strides,
            # and what happens to the inputs it mutates.
            if not random:
                assert_module_matches_graph(final, gm, graph_inputs, len(args))
            return gm(*args)  # the real call (mutating its inputs as the graph does)

        return run

    torch._dynamo.reset()
    compiled = torch.compile(
        fn, backend=aot_backend(compile_graph), dynamic=dynamic, fullgraph=True
    )
    with torch.no_grad():
        out = compiled(*inputs)
    torch._dynamo.reset()
    assert finals, "no graph was compiled"
    return finals, out


def _ops(module, cls):
    return [op for op in module.walk() if isinstance(op, cls)]


def _check_buffer_level(final) -> None:
    for op in final.walk():
        if isinstance(op, L.LoopOp) and isinstance(op.parent_op(), _Func):
            assert op.outs and not op.res, f"{op.name} was not bufferized"
        assert not isinstance(op, L.ViewOp | L.CopyOp), f"{op.name} left behind"
    for fn in _ops(final, _Func):
        assert "coil.peak_bytes" in fn.attributes
        assert "coil.result_types" not in fn.attributes


# --------------------------------------------------------------------------
# Views: no copy unless ATen needs one
# --------------------------------------------------------------------------


def _returned_owners(final):
    fn = _ops(final, _Func)[0]
    ret = fn.body.block.last_op
    return [v.owner for v in ret.operands]


@pytest.mark.parametrize(
    "fn",
    [lambda x: (x * 2).t(), lambda x: (x * 2)[:, 1:], lambda x: (x * 2).unsqueeze(0)[:, ::2]],
    ids=["t", "slice", "unsqueeze_step"],
)
def test_view_result_is_a_buffer_view(fn):
    finals, _ = compile_checked(fn, [torch.randn(6, 8)])
    (final,) = finals
    owners = _returned_owners(final)
    assert isinstance(owners[0], B.ViewOp), owners
    # One nest (x * 2), no copy.
    assert len([op for op in final.walk() if isinstance(op, L.PointwiseOp)]) == 1


@pytest.mark.parametrize("shape", [(6, 8), (5, 7)])
def test_returned_transpose_of_a_nest_is_stored_permuted(shape):
    # Eager returns (x.t() + y).relu().t() row-major: the relu nest is stored
    # column-major, and the returned transpose is a view of it (one nest).
    def fn(x, y):
        return (x.t() + y).relu().t()

    x, y = torch.randn(*shape), torch.randn(*reversed(shape))
    finals, _ = compile_checked(fn, [x, y])
    (final,) = finals
    assert isinstance(_returned_owners(final)[0], B.ViewOp)
    assert len([op for op in final.walk() if isinstance(op, L.PointwiseOp)]) == 1
    torch._dynamo.reset()
    got = torch.compile(fn, backend="coil")(x, y)
    assert_close_to_eager(got, fn(x, y))
    assert got.stride() == fn(x, y).stride()


def test_reshape_of_permute_into_mm_is_materialized():
    def fn(x, w):
        return x.permute(1, 0, 2).reshape(6, 8) @ w

    finals, _ = compile_checked(fn, [torch.randn(2, 3, 8), torch.randn(8, 5)])
    (final,) = finals
    (mm,) = [op for op in _ops(final, B.ExternOp) if "mm" in op.kernel_name]
    copy_op = mm.args[0].owner
    if isinstance(copy_op, B.ViewOp):
        copy_op = copy_op.source.owner
    assert isinstance(copy_op, B.AllocOp), "the non-strided view must be copied for mm"


def test_reshape_of_contiguous_into_mm_is_not_copied():
    def fn(x, w):
        return (x * 2).reshape(12, 8) @ w

    finals, _ = compile_checked(fn, [torch.randn(3, 4, 8), torch.randn(8, 5)])
    (final,) = finals
    assert len(_copies(final)) == 1, "only x * 2 gets a buffer"


def test_transposed_weight_into_mm_is_not_copied():
    def fn(x, w):
        return x @ w.t()

    finals, _ = compile_checked(fn, [torch.randn(4, 8), torch.randn(5, 8)])
    (final,) = finals
    assert not _copies(final), "mm takes a transposed operand as is"


def _copies(final) -> list:
    """The buffers of ``final`` but GEMM products (memory-plan has ATen write
    those into buffers of their own: ``mm.out``)."""
    products = {op.args[-1] for op in _ops(final, B.ExternOp) if op.kernel_name.endswith("mm.out")}
    return [a for a in _ops(final, B.AllocOp) if a.result not in products]


# --------------------------------------------------------------------------
# Mutation of inputs
# --------------------------------------------------------------------------


def test_input_mutation_is_honored():
    def fn(x, y):
        x.add_(1)
        return x * y

    x, y = torch.randn(4, 8), torch.randn(4, 8)
    x_eager = x.clone()
    expected = fn(x_eager, y)
    finals, out = compile_checked(fn, [x, y])
    assert_close_to_eager(out, expected)
    assert_close_to_eager(x, x_eager)


# --------------------------------------------------------------------------
# Memory plan
# --------------------------------------------------------------------------


def _reduction_chain(x):
    a = x.sum(1, keepdim=True)
    b = (x - a).amax(1, keepdim=True)
    c = (x - b).sum(1, keepdim=True)
    d = (x * c).amin(1, keepdim=True)
    return (x - d).sum(1)


def _peak(final) -> int:
    return int(_ops(final, _Func)[0].attributes["coil.peak_bytes"].data)


def test_memory_plan_reuses_in_a_reduction_chain():
    x = torch.randn(16, 32)
    no_reuse = UNFUSED.replace("memory-plan", "memory-plan{reuse=false}")
    (planned,), _ = compile_checked(_reduction_chain, [x], pipeline=UNFUSED)
    (unplanned,), _ = compile_checked(_reduction_chain, [x], pipeline=no_reuse)
    assert _ops(planned, B.ReuseOp), "a dead reduction buffer is reused"
    assert not _ops(unplanned, B.ReuseOp)
    assert _ops(unplanned, B.DeallocOp)
    assert 0 < _peak(planned) <= _peak(unplanned)


def test_memory_plan_symbolic_peak():
    (final,), _ = compile_checked(
        _reduction_chain, [torch.randn(16, 32)], dynamic=True, pipeline=UNFUSED
    )
    peak = _ops(final, _Func)[0].attributes["coil.peak_bytes"].data
    assert peak.free_symbols, peak


COPY_INTO_INPUT = """
func.func @f(%x: !aten.tensor<[4, 8], f32>, %y: !aten.tensor<[4, 8], f32>)
    -> (!aten.tensor<[4, 8], f32>, !aten.tensor<[4, 8], f32>, !aten.tensor<[8, 4], f32>) {
  %t = aten.t.default(%x) : !aten.tensor<[8, 4], f32, strides [1, 8]>
  %e = aten.exp.default(%t) : !aten.tensor<[8, 4], f32>
  %a = aten.add.Tensor(%x, %y) : !aten.tensor<[4, 8], f32>
  %c = aten.copy_.default(%x, %a) : !aten.tensor<[4, 8], f32>
  %m = aten.mul.Tensor(%c, %y) : !aten.tensor<[4, 8], f32>
  func.return %m, %c, %e
    : !aten.tensor<[4, 8], f32>, !aten.tensor<[4, 8], f32>, !aten.tensor<[8, 4], f32>
}
"""


def test_copy_into_input_is_written_last():
    """``copy_`` into a graph input (AOTAutograd with kept input mutations):
    reads before it see the old value, reads after it the new one, and the
    input holds the new value when the function returns."""
    from coil.ir import parse_module

    module = parse_module(COPY_INTO_INPUT)
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    final = check_pipeline_per_pass(
        module, "convert-aten-to-loop,bufferize,memory-plan", [x.clone(), y]
    )
    _check_buffer_level(final)
    xi = x.clone()
    m, c, e = run_module(final, [xi, y])
    assert_close_to_eager(xi, x + y)
    assert_close_to_eager(m, (x + y) * y)
    assert_close_to_eager(c, x + y)
    assert_close_to_eager(e, x.t().exp())


FOLDED_VIEW_OF_MUTATED_INPUT = """
func.func @f(%x: !aten.tensor<[4, 8], f32, strides [1, 4]>, %y: !aten.tensor<[4, 8], f32>)
    -> (!aten.tensor<[32], f32>, !aten.tensor<[4, 8], f32, strides [1, 4]>) {
  %r = aten.reshape.default(%x, shape = [32]) : !aten.tensor<[32], f32>
  %a = aten.add.Tensor(%x, %y) : !aten.tensor<[4, 8], f32>
  %c = aten.copy_.default(%x, %a) : !aten.tensor<[4, 8], f32, strides [1, 4]>
  %two = aten.constant 2 : i64
  %m = aten.mul.Tensor(%r, %two) : !aten.tensor<[32], f32>
  func.return %m, %c : !aten.tensor<[32], f32>, !aten.tensor<[4, 8], f32, strides [1, 4]>
}
"""


def test_view_folded_into_loads_reads_input_before_its_mutation():
    """A non-strided view of an input, taken before a ``copy_`` into it and read
    after: folding it into the loads must not make them read the new value."""
    from coil.ir import parse_module

    module = parse_module(FOLDED_VIEW_OF_MUTATED_INPUT)
    x, y = torch.randn(8, 4).t(), torch.randn(4, 8)
    final = check_pipeline_per_pass(
        module, "convert-aten-to-loop,bufferize,memory-plan", [x.t().clone().t(), y]
    )
    xi = x.t().clone().t()
    m, c = run_module(final, [xi, y])
    assert_close_to_eager(m, x.reshape(32) * 2)
    assert_close_to_eager(xi, x + y)


def test_as_strided_extern_of_a_view_at_the_loop_level():
    """ATen's as_strided reads storage: the loop-level executor lays a strided
    loop.view out as eager does, so every pass agrees with eager."""

    def fn(x):
        v = (x * 2).t().as_strided((3, 4), (1, 3))
        return v + 1, (x + 3).sum(0)

    compile_checked(fn, [torch.randn(6, 4)])


def test_masked_load_from_an_empty_tensor():
    compile_checked(lambda x: torch.nn.functional.pad(x * 2, (1, 1, 1, 1)) + 1, [torch.randn(0, 3)])


def test_random_streams_of_disjoint_offsets_are_independent():
    """randn draws one counter per element, like rand: two ops given disjoint
    offset ranges (as the lowering assigns them) draw unrelated numbers."""
    from coil.runtime.loop_executor import normal, uniform

    seed, k = torch.tensor(12345), torch.arange(1 << 14)
    n, u = normal(seed, k), uniform(seed, (1 << 14) + k)
    assert abs(float(n.mean())) < 0.05 and abs(float(n.std()) - 1) < 0.05
    assert abs(float(torch.corrcoef(torch.stack([n.abs(), u]))[0, 1])) < 0.05


USE_AFTER_FREE = """
func.func @f(%x: !buffer.buffer<[4], f32>) -> !buffer.buffer<[4], f32> {
  %a = buffer.alloc : !buffer.buffer<[4], f32>
  loop.pointwise [4] outs(%a : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index):
    %0 = loop.load %x[i0] : !buffer.buffer<[4], f32>
    loop.yield %0 : f32
  }
  %v = buffer.view %a : !buffer.buffer<[4], f32> -> !buffer.buffer<[4], f32>
  buffer.dealloc %a : !buffer.buffer<[4], f32>
  %b = buffer.alloc : !buffer.buffer<[4], f32>
  loop.pointwise [4] outs(%b : !buffer.buffer<[4], f32>) {
  ^bb0(%i0: index):
    %1 = loop.load %v[i0] : !buffer.buffer<[4], f32>
    loop.yield %1 : f32
  }
  func.return %b : !buffer.buffer<[4], f32>
}
"""


def test_executor_poisons_freed_storage():
    """A read through a view of a deallocated buffer shows (NaN), so a memory
    plan that frees too early fails the differential check."""
    from coil.ir import parse_module

    (out,) = run_module(parse_module(USE_AFTER_FREE), [torch.randn(4)])
    assert torch.isnan(out).all()


def _index_put_self(x, idx):
    a = x.sin()
    return torch.index_put(a, (idx,), a) * 2


def _scatter_add_self(x, idx):
    a = x.sin()
    return a.scatter_add(0, idx, a) * 2


def _int16_view(x):
    # An ATen alias in other units: reading a's int16 halves while writing f32
    # over a went wrong past the first block of the in-place kernel.
    a = x * 2
    return a.view(torch.int16)[: x.numel()].float()


@pytest.mark.parametrize(
    "fn, make, deterministic",
    [
        (_index_put_self, lambda: (torch.randn(6), torch.randperm(6)), True),
        (_scatter_add_self, lambda: (torch.randn(4, 3), torch.randint(0, 4, (4, 3))), True),
        (_index_put_self, lambda: (torch.randn(6), torch.randperm(6)), False),
        (_scatter_add_self, lambda: (torch.randn(4, 3), torch.randint(0, 4, (4, 3))), False),
        (_int16_view, lambda: (torch.randn(4096),), False),
    ],
)
def test_in_place_rewrites_keep_eager_results(fn, make, deterministic):
    # memory-plan's in-place forms: an extern whose self is also its values/src
    # (index_put(a, idx, a): ATen refuses the in-place form; scatters are ATen's
    # under torch.use_deterministic_algorithms, else coil's loop.scatter, which
    # copies a self that its body also reads), and a kernel overwriting a
    # buffer it reads through an ATen alias in other units.
    inputs = make()
    torch._dynamo.reset()
    torch.use_deterministic_algorithms(deterministic)
    try:
        compiled = torch.compile(fn, backend="coil", options={"cache": False})
        assert_close_to_eager(compiled(*inputs), fn(*inputs))
    finally:
        torch.use_deterministic_algorithms(False)
