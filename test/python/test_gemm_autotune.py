"""Compile-time tuning of matrix products (``runtime/gemm_autotune.py``,
``mode="max-autotune"``): each product measured against cuBLAS gets its
choice written on the op, the choice reaches the kernel (config and all),
choices come back from the disk cache without measuring, and the budget
bounds the measuring. The measurement is injected (a GPU times the real
candidates; ``cuda_bench`` itself is run once under the interpreter)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import coil
from coil.backend import lower_product, run_pipeline
from coil.dialects import buffer as B
from coil.dialects import host
from coil.pipeline import PIPELINES
from coil.runtime import gemm_autotune as GA
from coil.runtime.codecache import load_module
from coil.targets.python import emit_python
from coil.testing import assert_close_to_eager


def _fn(x, w, b):
    return F.gelu(F.linear(x, w, b))


def _args():
    return [torch.randn(9, 24), torch.randn(20, 24) / 24**0.5, torch.randn(20)]


def _fake(times):
    calls = []

    def bench(problem, candidate):
        calls.append(candidate)
        return times(candidate)

    return bench, calls


def _runs_the_tuned_template(module, fn, args) -> None:
    """The default pipeline lowers ``module``'s tuned product as the template
    (no extern left), and the kernel matches ``fn`` under the interpreter."""
    run_pipeline(module, PIPELINES["default"])
    assert not [op for op in module.walk() if isinstance(op, host.ExternOp | B.ExternOp)]
    source = emit_python(module)
    assert "(tuned at compile time)" in source and "tl.dot(" in source
    mod = load_module(source, interpret=True)
    assert_close_to_eager(mod.call([a.clone() for a in args])[0], fn(*args))


def test_template_choice_reaches_the_kernel(tmp_path):
    args = _args()
    module = coil.import_module(_fn, args)
    (p,) = GA.problems(module)
    assert p.candidates[0] == "extern" and len(p.candidates) > 2
    assert p.epilogue_s > 0  # the GELU after it: a round trip saved
    pick = p.candidates[2]
    bench, calls = _fake(lambda c: 1.0 if c == pick else 2.0)
    report = GA.tune_module(module, bench=bench, cache_dir=tmp_path, device_name="test")
    assert report.measured == 1 and calls == list(p.candidates)
    assert list(report.choices.values()) == [f"triton {pick}"]
    # The default pipeline (gemm=auto, which keeps cuBLAS on the CPU) follows the choice.
    _runs_the_tuned_template(module, _fn, _args())


def test_decompose_k_candidate_reaches_the_kernel(tmp_path):
    # A skinny output over a long K (K >= 32 M and 32 N) gets decompose-K
    # candidates (strategy/gemm.py decompose_k_splits); chosen, the product is
    # one template over [split, M, N] of K's slices and a sum of the slices.
    def fn(x, w):
        return torch.relu(x @ w)

    def args():
        return [torch.randn(8, 1024), torch.randn(1024, 12) / 32]

    module = coil.import_module(fn, args())
    (p,) = GA.problems(module)
    splits = [c for c in p.candidates if c.endswith(("k2", "k4", "k8"))]
    assert splits, p.candidates
    pick = splits[1]
    bench, _ = _fake(lambda c: 1.0 if c == pick else 2.0)
    GA.tune_module(module, bench=bench, cache_dir=tmp_path, device_name="test")
    run_pipeline(module, PIPELINES["default"])
    source = emit_python(module)
    assert "K split" in source and "tl.dot(" in source
    mod = load_module(source, interpret=True)
    a = args()
    assert_close_to_eager(mod.call([t.clone() for t in a])[0], fn(*a))


def test_extern_wins_and_the_cache_answers(tmp_path):
    module = coil.import_module(_fn, _args())
    bench, calls = _fake(lambda c: 0.1 if c == "extern" else 5.0)
    GA.tune_module(module, bench=bench, cache_dir=tmp_path, device_name="test")
    (p,) = GA.problems(module)
    assert p.op.attributes["coil.gemm"].data == "extern"
    run_pipeline(
        module,
        PIPELINES["default"].replace("convert-aten-to-loop,", "convert-aten-to-loop{gemm=auto},"),
    )
    assert [op for op in module.walk() if isinstance(op, host.ExternOp | B.ExternOp)]
    # A new compile of the same product measures nothing.
    again = coil.import_module(_fn, _args())

    def fail(problem, candidate):
        raise AssertionError("measured again")

    report = GA.tune_module(again, bench=fail, cache_dir=tmp_path, device_name="test")
    assert report.cached == 1 and report.measured == 0
    # Another device's entry is its own.
    bench, calls = _fake(lambda c: 1.0)
    other = GA.tune_module(again, bench=bench, cache_dir=tmp_path, device_name="other")
    assert other.measured == 1 and calls


def test_budget_and_templates_only(tmp_path):
    module = coil.import_module(_fn, _args())
    bench, calls = _fake(lambda c: 1.0)
    report = GA.tune_module(module, bench=bench, cache_dir=tmp_path, budget_s=-1.0)
    assert (
        report.skipped == 1
        and not calls
        and "coil.gemm" not in GA.problems(module)[0].op.attributes
    )
    # gemm="triton": configs only, no extern candidate.
    (p,) = GA.problems(module, allow_extern=False)
    assert "extern" not in p.candidates


def test_choose_counts_the_epilogue():
    module = coil.import_module(_fn, _args())
    (p,) = GA.problems(module)
    cfg = p.candidates[1]
    saved_ms = p.epilogue_s * 1e3
    # The template is slower alone but wins once the epilogue's round trip counts.
    assert GA.choose(p, {"extern": 1.0, cfg: 1.0 + saved_ms / 2}) == f"triton {cfg}"
    assert GA.choose(p, {"extern": 1.0, cfg: 1.0 + saved_ms * 2}) == "extern"


def test_conv1x1_is_a_candidate(tmp_path):
    # A strided 1x1 convolution is measured as the product it is (rows: the
    # output pixels, N: C_out, K: C_in) and the choice reaches the kernel.
    def fn(x, w):
        return torch.relu(F.conv2d(x, w, stride=2))

    def args():
        return [torch.randn(2, 12, 7, 5), torch.randn(9, 12, 1, 1) / 12**0.5]

    module = coil.import_module(fn, args())
    (p,) = GA.problems(module)
    assert p.name == "aten.convolution.default" and p.epilogue_s > 0
    assert p.candidates[0] == "extern" and len(p.candidates) > 2
    pick = p.candidates[1]
    bench, _ = _fake(lambda c: 1.0 if c == pick else 2.0)
    GA.tune_module(module, bench=bench, cache_dir=tmp_path, device_name="test")
    _runs_the_tuned_template(module, fn, args())


def test_no_epilogue_credit_before_a_reduction():
    # A residual add whose sum a layer norm reads: the default pipeline fuses
    # the add into the norm's kernel, which reads the product once either way,
    # so the template's epilogue saves no round trip (GPT-2's projections).
    def fn(x, w, r):
        return F.layer_norm(r + x @ w, (12,))

    module = coil.import_module(fn, [torch.randn(9, 24), torch.randn(24, 12), torch.randn(9, 12)])
    (p,) = GA.problems(module)
    assert p.epilogue_s == 0.0


_PADDED = """
func.func @forward(%x: !aten.tensor<[64, 32], bf16, device "cuda:0">,
                   %w: !aten.tensor<[1003, 32], bf16, device "cuda:0"> {coil.static})
    -> !aten.tensor<[64, 1003], bf16, device "cuda:0"> {
  %t = aten.permute.default(%w, dims = [1, 0])
      : !aten.tensor<[32, 1003], bf16, strides [1, 32], device "cuda:0">
  %0 = aten.mm.default(%x, %t) : !aten.tensor<[64, 1003], bf16, device "cuda:0">
  func.return %0 : !aten.tensor<[64, 1003], bf16, device "cuda:0">
}
"""


def test_extern_is_measured_as_the_graph_runs_it():
    # A product whose N (1003) cuBLAS wants padded, over a weight (a static
    # argument): lowered by an inference graph's pipeline, cuBLAS's candidate
    # is the padded call with the weight's pad made once (a constant) and the
    # result left padded, as in the graph; the default pipeline's module
    # called the unpadded product (GPT-2's vocabulary projection was timed so
    # and lost to the template, which then ran slower than the graph's call).
    import functools

    from xdsl.parser import Parser

    from coil.backend import _graph_pipeline
    from coil.ir import coil_context

    module = Parser(coil_context(), _PADDED).parse_module()
    (p,) = GA.problems(module)
    assert p.static == (False, True)
    graph = _graph_pipeline(PIPELINES["default"], True, False)
    lower = functools.partial(lower_product, pipeline=graph)
    source = emit_python(GA.standalone_module(p, None, lower))
    call = source[source.index("def call") :]
    assert "_constants.get(" in call and "(64, 1008)" in call and "torch.mm(" in call
    assert "torch.mm(" in emit_python(GA.standalone_module(p, None, lower_product))
    # A template candidate lowered by the graph's pipeline drops its autotune option.
    tuned = graph.replace("convert-loop-to-tt", "convert-loop-to-tt{gemm-autotune=6}")
    lower = functools.partial(lower_product, pipeline=tuned)
    tpl = emit_python(GA.standalone_module(p, p.candidates[1], lower))
    assert tpl.count("@triton.jit") == 1 and "tl.dot(" in tpl


@pytest.mark.slow
def test_cuda_bench_builds_each_candidate():
    # The default measurement's modules (cuBLAS's and a template's), run under
    # the interpreter here: on a GPU the same code is timed by do_bench.
    module = coil.import_module(_fn, _args())
    (p,) = GA.problems(module)
    assert GA.cuda_bench(p, "extern", lower_product) >= 0
    assert GA.cuda_bench(p, p.candidates[1], lower_product) >= 0
    tpl = GA.standalone_module(p, p.candidates[1], lower_product)
    assert "tl.dot(" in emit_python(tpl)


@pytest.mark.slow
def test_cuda_bench_prepares_all_candidates():
    # CudaBench lowers and loads every candidate of a product in prepare (on a
    # GPU their kernels then compile in parallel threads), times each from
    # what prepare built, and release drops the product's modules.
    module = coil.import_module(_fn, _args())
    (p,) = GA.problems(module)
    p = GA.Problem(p.op, p.name, p.operands, p.device, p.candidates[:2], p.epilogue_s)
    bench = GA.CudaBench(lower_product)
    bench.prepare(p)
    assert {c for _, c in bench._modules} == set(p.candidates)
    assert all(bench(p, c) >= 0 for c in p.candidates)
    bench.release(p)
    assert not bench._modules


def test_backend_budget_option():
    model = torch.nn.Linear(4, 4)
    with pytest.raises(Exception, match="option gemm_budget must be seconds"):
        torch.compile(model, backend="coil", options={"max_autotune": True, "gemm_budget": "x"})(
            torch.randn(2, 4)
        )


def test_without_pass_option():
    # How lower_product drops the graph pipeline's gemm options before setting
    # a candidate's own.
    from coil.pipeline import without_pass_option as drop

    p = 'a,convert-loop-to-tt{gemm-autotune=6 gemm-config="64x64x32w4s3g8" x=1},b{gemm=1}'
    assert drop(p, "convert-loop-to-tt", "gemm-config") == (
        "a,convert-loop-to-tt{gemm-autotune=6 x=1},b{gemm=1}"
    )
    assert drop(drop(p, "convert-loop-to-tt", "gemm-autotune"), "convert-loop-to-tt", "x") == (
        'a,convert-loop-to-tt{gemm-config="64x64x32w4s3g8"},b{gemm=1}'
    )
    assert drop("convert-aten-to-loop{gemm=triton}", "convert-aten-to-loop", "gemm") == (
        "convert-aten-to-loop"
    )
    assert drop(p, "b", "gemm") == p.replace("b{gemm=1}", "b")
