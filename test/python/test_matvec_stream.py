"""Streamed matrix-vector tiles (``strategy/plan.py`` ``stream_tile``): where a
GPU target's cost model gives a product's many rows several rows a program
in unmasked looped steps, the kernels still compute eager's values. The
module is planned for an H200 (not the interpreter's serial target, which
never takes these tiles) with 4 SMs, so products small enough for Triton's
interpreter take the tiles a full H200 gives products 30x larger; row
counts not a multiple of the tile's rows exercise the row mask."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

import coil
from coil.backend import run_pipeline
from coil.pipeline import PIPELINES
from coil.runtime.codecache import load_module
from coil.strategy.target import TARGETS, set_module_target
from coil.targets.python import emit_python
from coil.testing import assert_close_to_eager

DEFAULT = PIPELINES["default"]
MATVEC_ON = DEFAULT.replace("convert-aten-to-loop,", "convert-aten-to-loop{matvec=on},")


SMALL_H200 = dataclasses.replace(TARGETS["h200"], name="h200-4sm", num_sms=4)


def linear(x, w):
    return F.linear(x, w)


def gated(x, wg, wu):
    return F.silu(F.linear(x, wg)) * F.linear(x, wu)


def _rand(*shape, dtype):
    return torch.randn(*shape).to(dtype)


def _args(name, n, k, dtype):
    x = _rand(1, k, dtype=dtype)
    w = [(torch.randn(n, k) / k**0.5).to(dtype) for _ in range(1 if name == "linear" else 2)]
    return (linear if name == "linear" else gated), [x, *w]


@pytest.mark.parametrize(
    "name,dtype,n,k",
    [
        ("linear", torch.float32, 301, 1024),
        ("linear", torch.bfloat16, 300, 512),
        # k=512, not 1024: the same plan (looped [XBLOCK 4, RBLOCK 128], 76
        # programs, streamed rows), 1.9 s an interpreted call instead of 5.2.
        ("gated", torch.bfloat16, 301, 512),
        ("gated", torch.float32, 300, 512),
    ],
    ids=["linear-f32", "linear-bf16", "gated-bf16", "gated-f32"],
)
def test_streamed_matvec_matches_eager(name, dtype, n, k):
    fn, args = _args(name, n, k, dtype)
    module = coil.import_module(fn, args)
    set_module_target(module, SMALL_H200)
    run_pipeline(module, MATVEC_ON)
    src = emit_python(module)
    plans = [line for line in src.splitlines() if line.startswith("# plan:")]
    assert any("streamed rows" in p and "looped" in p for p in plans), plans
    mod = load_module(src, interpret=True)
    for _ in range(2):
        fn, args = _args(name, n, k, dtype)
        out = mod.call([a.clone() for a in args])
        assert_close_to_eager(out[0], fn(*args))
