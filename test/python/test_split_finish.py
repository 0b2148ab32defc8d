"""The split-reduction finish (``lowering/loop_to_tt/split_finish.py``): stage 2
of a split reduction run by the last program of each tile of stage 1, one
launch instead of two. On the CPU the kernels run under Triton's interpreter
(programs one after another, so the last to arrive is always the highest); the
``gpu`` test runs them where programs race. Fresh random inputs every call:
the counters must be zero again after each launch or the next call is wrong.
Outputs start poisoned (NaN), so an element stage 2 never writes shows.

Inputs are signed (``randn``): sums of thousands of them cancel, which is what
splitting a reduction changes (the order of the additions). The tolerance is
stated once, in ``coil.testing.difference``: coil's result passes where it is
within Inductor's tolerances of eager's, or, elementwise, no farther from the
float64 answer than eager's own result is (plus those tolerances)."""

from __future__ import annotations

import pytest
import torch

import coil
from coil.backend import run_pipeline
from coil.dialects import host
from coil.pipeline import PIPELINES
from coil.runtime.codecache import load_module
from coil.runtime.wrapper import Semaphores
from coil.targets.python import emit_python
from coil.testing import difference

DEFAULT = PIPELINES["default"]
TWO_LAUNCHES = DEFAULT.replace("convert-loop-to-tt,", "convert-loop-to-tt{split-finish=false},")


CASES = {
    # name: (fn, shape) -- split by the strategy (few outputs, many rows);
    # 1024 rows split as 4096 did (each case still has a finish), at a
    # quarter of the interpreter's time
    "sum0": (lambda x: x.sum(0), (1024, 64)),
    "sum_all": (lambda x: x.sum(), (512, 96)),
    "mean_all": (lambda x: x.mean(), (1024, 64)),
    "var_mean0": (lambda x: torch.var_mean(x, dim=0), (1024, 64)),
    "var_all": (lambda x: x.var(), (1024, 64)),
    "amax0_amin": (lambda x: (x.amax(0), x.amin()), (1024, 64)),
    "argmax": (lambda x: (x.argmax(), x.argmax(0)), (1024, 64)),
    "softmax0": (lambda x: torch.softmax(x, 0), (1024, 64)),
    "sum0_3d": (lambda x: x.sum(0), (2048, 4, 32)),
    "sum02": (lambda x: x.sum((0, 2)), (256, 32, 128)),
    # size-1 dimensions kept in the partials, squeezed from the finish's group
    "mean_hw_keepdim": (lambda x: x.mean((2, 3), keepdim=True), (2, 3, 256, 256)),
}


def _compile(fn, x: torch.Tensor, pipeline: str = DEFAULT):
    module = coil.import_module(fn, (x,))
    run_pipeline(module, pipeline)
    launches = sum(isinstance(op, host.LaunchOp) for op in module.walk())
    finished = sum(isinstance(op, host.SemaphoresOp) for op in module.walk())
    return load_module(emit_python(module), interpret=x.device.type == "cpu"), launches, finished


def _semaphores(mod) -> list[torch.Tensor]:
    return [
        t for v in vars(mod).values() if isinstance(v, Semaphores) for t in v.by_stream.values()
    ]


def _assert_matches_eager(fn, got, x: torch.Tensor) -> None:
    """The module's outputs ``got`` against eager's, with eager's own error
    against float64 as the yardstick (``coil.testing.difference``)."""
    problem = difference(got if len(got) > 1 else got[0], fn(x), fn(x.double()))
    assert problem is None, problem


def _check(name: str, device: str, dtype: torch.dtype, calls: int) -> None:
    fn, shape = CASES[name]
    x = torch.randn(*shape, device=device, dtype=dtype)
    mod, launches, finished = _compile(fn, x)
    _, two_launches, none = _compile(fn, x, TWO_LAUNCHES)
    assert finished >= 1 and none == 0
    assert launches == two_launches - finished
    for _ in range(calls):
        x = torch.randn(*shape, device=device, dtype=dtype)
        _assert_matches_eager(fn, mod.call([x.clone()]), x)
        sems = _semaphores(mod)
        assert sems and all(int(s.abs().sum()) == 0 for s in sems)


@pytest.mark.parametrize("name", sorted(CASES))
def test_finish_in_one_launch_matches_eager(name, poisoned):
    _check(name, "cpu", torch.float32, calls=2)
    assert poisoned  # the outputs came from the poisoned allocator


def test_finish_bf16(poisoned):
    _check("var_mean0", "cpu", torch.bfloat16, calls=2)


@pytest.mark.parametrize("name", ["softmax0", "var_mean0", "argmax", "sum02"])
def test_finished_kernels_compile_for_sm90(name):
    # The interpreter ignores cache modifiers and eviction policies; ptxas does
    # not (a .cg load with an L2 eviction policy is an error): build the cubins
    # here, as the C++ wrapper does. coil asks for FP fusion itself, so Triton
    # 3.9 does not warn that TRITON_DEFAULT_FP_FUSION is unset.
    import warnings

    from triton import _utils

    from coil.runtime import cpp_wrapper
    from coil.targets import triton as T

    fn, shape = CASES[name]
    module = coil.import_module(fn, (torch.randn(*shape),))
    run_pipeline(module, DEFAULT)
    assert any(isinstance(op, host.SemaphoresOp) for op in module.walk())
    source = T.header(module) + "\n\n" + T.emit_kernels(module)
    if hasattr(_utils, "warn_once"):  # Triton 3.9 warns once per process
        _utils.warn_once.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = cpp_wrapper.compile_kernels(module, source, 90)
    assert not [w for w in caught if "FP_FUSION" in str(w.message)]
    assert compiled and all(k.asm["cubin"][:4] == b"\x7fELF" for k in compiled.values())


def test_cpp_wrapper_keeps_the_counters(tmp_path):
    # The C++ wrapper's coil::Semaphores (runtime/cpp/coil_runtime.h) builds
    # into a wrapper library with the finished kernels' cubins.
    import shutil

    from coil.runtime import cpp_wrapper

    if cpp_wrapper.toolchain_problem() is not None or shutil.which("cc") is None:
        pytest.skip(f"cannot build C/C++ here: {cpp_wrapper.toolchain_problem() or 'no cc'}")
    fn, shape = CASES["var_mean0"]
    module = coil.import_module(fn, (torch.randn(*shape),))
    run_pipeline(module, DEFAULT)
    directory = cpp_wrapper.build(module, tmp_path / "build", arch=90)
    source = (directory / "wrapper.cpp").read_text()
    assert "coil::Semaphores sems0(" in source and "sems0.on(" in source
    assert (directory / "wrapper.so").stat().st_size > 0


def test_semaphores_per_stream():
    sems = Semaphores("cpu", 3)
    a, b = sems.on(1), sems.on(2)
    assert a is sems.on(1) and a is not b
    assert a.dtype == torch.int32 and a.tolist() == [0, 0, 0]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_finish_on_cuda(dtype, poisoned):
    # Many programs race for each counter on the GPU; 20 calls each with fresh
    # inputs would catch a counter left non-zero or a partial read stale.
    for name in sorted(CASES):
        _check(name, "cuda", dtype, calls=20)
    # The benchmark's shapes: f32 32768 x 2048 column sum and variance. A sum
    # of 32768 signed terms can land near 0 while its terms are large: its
    # rounding error follows the terms' magnitude, not the result's, so there
    # the bound is eager's error plus 1e-6 (~16 f32 ulps) of sum(|x|) -- a
    # stale or missing chunk moves a column by O(sqrt(chunk)) >> that. (An H200
    # run measured 1.2e-4 on columns summing to ~200; eager's cascade sum is
    # closer to float64 than any chunked one.)
    for fn, terms in ((lambda x: x.sum(0), lambda x: x.abs().sum(0)), (lambda x: x.var(0), None)):
        x = torch.randn(32768, 2048, device="cuda")
        mod, launches, finished = _compile(fn, x)
        assert finished == 1
        for _ in range(5):
            x = torch.randn(32768, 2048, device="cuda")
            got = mod.call([x.clone()])[0]
            if terms is None:
                _assert_matches_eager(fn, (got,), x)
                continue
            exact = fn(x.double())
            allowed = (fn(x).double() - exact).abs() + 1e-6 * terms(x).double()
            assert bool(((got.double() - exact).abs() <= allowed).all())
