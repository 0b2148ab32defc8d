"""The model set on a CUDA device: import (types carry the device), reference
execution, and the coil backend's Triton kernels compiled for the GPU, against
eager. Runs where there is a GPU (marker gpu)."""

from __future__ import annotations

import copy
import os
import subprocess
import sys

import pytest
import torch

from coil.examples.models import MODELS, build
from coil.frontend.loader import import_module
from coil.ir import print_module
from coil.testing import assert_close_to_eager, reference_backend

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", [n for n, c in MODELS.items() if not c.random])
def test_model_on_cuda(name, dynamic):
    model, inputs = build(name)
    model = model.cuda()
    inputs = tuple(x.cuda() for x in inputs)
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend=reference_backend, dynamic=dynamic, fullgraph=True)
    with torch.no_grad():
        assert_close_to_eager(compiled(*inputs), eager(*inputs))


def test_cuda_types_name_the_device():
    model, (x,) = build("softmax")
    text = print_module(import_module(model.cuda(), (x.cuda(),)))
    assert 'device "cuda:0"' in text


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", [n for n, c in MODELS.items() if not c.random])
def test_backend_on_cuda(name, dynamic):
    """torch.compile(backend="coil") on CUDA tensors: Triton kernels compiled for
    the GPU, allocations on the device, ATen externs."""
    from coil.backend import coil as coil_backend

    model, inputs = build(name)
    model = model.cuda()
    inputs = tuple(x.cuda() for x in inputs)
    eager = copy.deepcopy(model)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=coil_backend, dynamic=dynamic, fullgraph=True)
    with torch.no_grad():
        out = compiled(*inputs)
        expected = eager(*inputs)
    assert_close_to_eager(out, expected)
    for (_, b), (_, e) in zip(model.named_buffers(), eager.named_buffers()):
        assert_close_to_eager(b, e)


def test_dropout_on_cuda():
    model, _ = build("dropout_train")
    x = torch.randn(512, 256, device="cuda")
    torch._dynamo.reset()
    from coil.backend import coil as coil_backend

    compiled = torch.compile(model.cuda(), backend=coil_backend, fullgraph=True)
    with torch.no_grad():
        out = compiled(x)
    kept = out != 0
    assert torch.allclose(out[kept], 2 * x[kept] / (1 - model.p), rtol=1e-5, atol=1e-6)
    assert abs((~kept).float().mean().item() - model.p) < 0.02


def test_gpu_kernels_are_compiled_not_interpreted():
    from coil.backend import compile_graph
    from coil.frontend.capture import capture_graphs

    model, (x,) = build("softmax")
    (graph,) = capture_graphs(model, (x.cuda(),))
    run = compile_graph(graph.gm, graph.example_inputs)
    out = run(x.cuda())[0]
    assert out.is_cuda
    assert_close_to_eager(out, torch.softmax(x.cuda(), -1))


_OUT_OF_RANGE = """
import torch
from coil.backend import coil
fn = lambda x, i: x[i] * 2
x = torch.randn(10, 3, device="cuda")
compiled = torch.compile(fn, backend=coil)
good = torch.tensor([1, -10], device="cuda")
torch.testing.assert_close(compiled(x, good), fn(x, good))
print("in range: ok", flush=True)
compiled(x, torch.tensor([1, 10], device="cuda"))
torch.cuda.synchronize()
print("out of range: no error", flush=True)
"""


def test_out_of_range_index_asserts_on_cuda():
    """The bounds check of indirect loads is compiled in (the kernel is built in
    Triton's debug mode): an out-of-range index is a device-side assert, not a
    read of whatever lies there. In a child process: the assert leaves the CUDA
    context unusable."""
    proc = subprocess.run(
        [sys.executable, "-c", _OUT_OF_RANGE],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COIL_FALLBACK": "extern"},
    )
    assert "in range: ok" in proc.stdout, proc.stderr[-3000:]
    assert "no error" not in proc.stdout
    assert proc.returncode != 0
    assert "device-side assert" in proc.stderr or "index out of bounds" in proc.stderr
