"""Matrix-vector products as reductions (``lowering/aten_to_loop/matvec.py``):
a batch-1 ``Linear`` and its activation become one kernel, and a chain of them
one kernel per layer, none recomputing the one before (``loop-inline`` keeps
a reduction's epilogue that a reduction reads by broadcast).

On the CPU the default keeps ATen's GEMV; these tests lower with
``convert-aten-to-loop{matvec=on}`` and run the kernels under Triton's
interpreter. The ``gpu`` test runs the default pipeline on CUDA, where
``matvec=auto`` lowers them. Fresh random inputs every call; weights scaled
by 1/sqrt(K) so outputs are near 1 and bf16's rounding is the tolerance."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import coil
from coil.backend import run_pipeline
from coil.dialects import buffer as B
from coil.dialects import host
from coil.pipeline import PIPELINES
from coil.runtime.codecache import load_module
from coil.targets.python import emit_python
from coil.testing import assert_close_to_eager

DEFAULT = PIPELINES["default"]
MATVEC_ON = DEFAULT.replace("convert-aten-to-loop,", "convert-aten-to-loop{matvec=on},")


def mlp3(x, w1, b1, w2, b2, w3, b3):
    x = F.gelu(F.linear(x, w1, b1))
    x = F.gelu(F.linear(x, w2, b2))
    return torch.relu(F.linear(x, w3, b3))


def linear(x, w, b):
    return F.linear(x, w, b)


def conv1d(b, x, w):  # GPT-2's Conv1D: addmm with a row-major [K, N] weight
    # (arguments in the order the graph first uses them: the wrapper's order)
    return torch.addmm(b, x, w)


def column(a, v):
    return a @ v


def strided(x, w):
    return x[:, ::2] @ w.t()


def _weights(k, n, dtype, device):
    return torch.randn(n, k, device=device).div_(k**0.5).to(dtype)


def _inputs(name, dtype, device, k=100, n=37):
    def rand(*shape):
        return torch.randn(*shape, device=device).to(dtype)

    if name == "mlp3":
        return mlp3, [
            rand(1, k),
            _weights(k, n, dtype, device),
            rand(n),
            _weights(n, n, dtype, device),
            rand(n),
            _weights(n, 24, dtype, device),
            rand(24),
        ]
    if name == "linear":
        return linear, [rand(1, k), _weights(k, n, dtype, device), rand(n)]
    if name == "conv1d":
        return conv1d, [rand(n), rand(1, k), _weights(k, n, dtype, device).t().contiguous()]
    if name == "column":
        return column, [_weights(k, n, dtype, device), rand(k, 1)]
    return strided, [rand(1, 2 * k), _weights(k, n, dtype, device)]


CASES = ("mlp3", "linear", "column", "strided")


def _compile(fn, args, pipeline=MATVEC_ON, dynamic=False):
    module = coil.import_module(fn, args, dynamic=dynamic)
    run_pipeline(module, pipeline)
    # A host.variants is one launch at run time, whichever of its kernels runs.
    launches = sum(
        isinstance(op, host.VariantsOp)
        or (isinstance(op, host.LaunchOp) and not isinstance(op.parent_op(), host.VariantsOp))
        for op in module.walk()
    )
    externs = [op for op in module.walk() if isinstance(op, host.ExternOp | B.ExternOp)]
    device = args[0].device.type
    return load_module(emit_python(module), interpret=device == "cpu"), launches, externs


def _check(name, dtype, device, calls, **sizes):
    fn, args = _inputs(name, dtype, device, **sizes)
    mod, launches, externs = _compile(fn, args, MATVEC_ON if device == "cpu" else DEFAULT)
    # One kernel per product, its bias and activation fused in; no cuBLAS call.
    # (At the large sizes mlp3's last layer, 24 outputs of 4099 products each,
    # may be a split reduction, two stages, one more launch: whether is the
    # kernel strategy's estimate for the device. A layer built as one program
    # runs in the previous layer's last program: at the small sizes the second
    # layer's 37 outputs, one launch fewer.)
    want = 3 if name == "mlp3" else 1
    if name == "mlp3":
        assert launches in ((2, 3, 4) if "k" in sizes else (2, 3))
    else:
        assert launches == want
    assert not externs
    for _ in range(calls):
        fn, args = _inputs(name, dtype, device, **sizes)
        out = mod.call([a.clone() for a in args])
        assert_close_to_eager(out[0], fn(*args))


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_matvec_matches_eager(name, dtype):
    _check(name, dtype, "cpu", calls=2)


def test_chain_does_not_recompute_the_layer_before():
    # Each kernel reads the previous layer's stored activation: no GELU (erf)
    # is recomputed in the next layer's reduction.
    fn, args = _inputs("mlp3", torch.float32, "cpu")
    module = coil.import_module(fn, args)
    run_pipeline(module, MATVEC_ON)
    kernels = emit_python(module).split("@triton.jit")[1:]
    gelus = [k for k in kernels if "tl.erf(" in k]
    # the first layer's GELU, then the second's (in one kernel where the second
    # layer runs in the first's last program)
    assert sum(k.count("tl.erf(") for k in gelus) == 2
    for k in gelus:  # GELU in the epilogue: after the sum
        assert k.index("tl.sum(") < k.index("tl.erf(")


def test_dynamic_k():
    # A symbolic K (and N): the reduction's ranges are symbols; one compiled
    # graph serves every size.
    fn, args = _inputs("linear", torch.float32, "cpu")
    _, launches, externs = _compile(fn, args, dynamic=True)
    assert launches == 1 and not externs
    compiled = torch.compile(fn, backend="coil", dynamic=True, options={"pipeline": MATVEC_ON})
    for k, n in ((100, 37), (57, 37), (300, 5)):
        fn, args = _inputs("linear", torch.float32, "cpu", k=k, n=n)
        assert_close_to_eager(compiled(*args), fn(*args))


def test_row_major_matrix_stays_cublas():
    # A [K, N] weight would be a short column sum (slower than cuBLAS's GEMV).
    fn, args = _inputs("conv1d", torch.float32, "cpu")
    mod, launches, externs = _compile(fn, args)
    assert launches == 0 and len(externs) == 1
    assert_close_to_eager(mod.call([a.clone() for a in args])[0], fn(*args))


def test_two_rows_of_a_row_major_matrix_and_cpu_default_stay_aten():
    # (Two rows of a Linear's weight stream it once: test_matvec_rows.py.)
    x = torch.randn(2, 64)
    w = torch.randn(32, 64)
    _, launches, externs = _compile(lambda x, w: x @ w, [x, w.t().contiguous()])
    assert launches == 0 and len(externs) == 1
    _, launches, externs = _compile(lambda x, w: x @ w.t(), [x[:1], w], DEFAULT)
    assert launches == 0 and len(externs) == 1


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_matvec_on_cuda(dtype):
    for name in CASES:
        _check(name, dtype, "cuda", calls=5)
        _check(name, dtype, "cuda", calls=2, k=4096, n=4099)
