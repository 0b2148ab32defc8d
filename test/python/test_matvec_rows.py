"""Products of a few rows streamed as matrix-vector reductions
(``lowering/aten_to_loop/matvec.py``, ``loop_to_tt/kernel_group.py``
``_shared_rows``): ``[M, K] @ [K, N]`` for M = 2, 5, 8, 16 with a
``Linear``'s weight, each program computing all M rows of its outputs (the
weight read once), with a bias and a SiLU-gated pair as epilogues, against
eager under Triton's interpreter (``matvec=on``: on the CPU the default keeps
ATen's product)."""

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


def linear(x, w, b):
    return F.linear(x, w, b)


def gated(x, wg, wu):
    return F.silu(F.linear(x, wg)) * F.linear(x, wu)


def _args(name, m, dtype, k=96, n=40):
    x = torch.randn(m, k).to(dtype)
    ws = [(torch.randn(n, k) / k**0.5).to(dtype) for _ in range(2)]
    if name == "linear":
        return linear, [x, ws[0], torch.randn(n).to(dtype)]
    return gated, [x, *ws]


@pytest.mark.parametrize(
    "name,m,dtype",
    [
        ("linear", 2, torch.float32),
        ("linear", 5, torch.bfloat16),
        ("gated", 8, torch.bfloat16),
        ("gated", 16, torch.float32),
        ("linear", 16, torch.bfloat16),
        ("gated", 2, torch.bfloat16),
        ("linear", 8, torch.float32),
        ("gated", 5, torch.float32),
    ],
)
def test_rows_match_eager(name, m, dtype):
    fn, args = _args(name, m, dtype)
    module = coil.import_module(fn, args)
    run_pipeline(module, MATVEC_ON)
    externs = [op for op in module.walk() if isinstance(op, host.ExternOp | B.ExternOp)]
    launches = [op for op in module.walk() if isinstance(op, host.LaunchOp)]
    assert not externs and len(launches) == 1  # the products and epilogue: one kernel
    src = emit_python(module)
    assert f"{m} rows a program, unrolled" in src
    mod = load_module(src, interpret=True)
    for _ in range(2):
        fn, args = _args(name, m, dtype)
        out = mod.call([a.clone() for a in args])
        assert_close_to_eager(out[0], fn(*args))
