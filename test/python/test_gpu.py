"""The model set on a CUDA device: import (types carry the device), round trip,
reference execution against eager. Runs where there is a GPU (marker gpu)."""

from __future__ import annotations

import copy

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
def test_middle_end_on_cuda(name, dynamic):
    """The backend's default pipeline (down to the buffer level) on CUDA tensors:
    allocations on the device, loop nests evaluated there, ATen externs."""
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
