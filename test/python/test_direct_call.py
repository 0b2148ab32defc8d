"""coil.runtime.direct_call: an inference graph that none of AOTAutograd's runtime
wrappers has work for is called directly (its first call through AOTAutograd);
any graph that needs one -- an input mutated, an output aliasing an input, a
backward -- keeps AOTAutograd's forward, and every case matches eager."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from coil.backend import coil as coil_backend
from coil.testing import assert_close_to_eager


def _compiled(fn, dynamic: bool = False):
    """``fn`` compiled with coil, and the list of what coil's backend returned."""
    returned = []

    def backend(gm, example_inputs):
        returned.append(coil_backend(gm, example_inputs))
        return returned[-1]

    torch._dynamo.reset()
    return torch.compile(fn, backend=backend, dynamic=dynamic), returned


def _is_direct(fn) -> bool:
    return getattr(fn, "__qualname__", "") == "direct.<locals>.call"


@pytest.mark.parametrize("grad", [False, True])
def test_inference_graph_is_called_directly(grad):
    # grad=True: grad mode on, no input requires grad (still an inference graph).
    def fn(x, w, b):
        return F.layer_norm(x, (16,), w, b) * 2, torch.softmax(x, -1)

    compiled, returned = _compiled(fn)
    with torch.set_grad_enabled(grad):
        for _ in range(3):  # the first call goes through AOTAutograd, then directly
            inputs = [torch.randn(4, 16), torch.randn(16), torch.randn(16)]
            out = compiled(*inputs)
            assert_close_to_eager(out, fn(*inputs))
            assert not any(o.requires_grad for o in out)
            assert torch.is_grad_enabled() == grad
    assert len(returned) == 1 and _is_direct(returned[0])


def test_module_parameters_are_passed():
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16))
    compiled, returned = _compiled(m)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(5, 8)
            assert_close_to_eager(compiled(x), m(x))
    assert _is_direct(returned[0])


def test_dynamic_outputs_are_called_directly_and_marked():
    # dynamic=True: the outputs' batch dim is symbolic. AOTAutograd's wrapper
    # marks it on each output (_dynamo_propagated_dynamic_indices, so a graph
    # after a break takes it as dynamic); the direct call marks the same dims.
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))

    def fn(x):
        return m(x), x.sum(-1)

    compiled, returned = _compiled(fn, dynamic=True)
    marks = []
    with torch.no_grad():
        for n in (5, 7, 3, 7):  # the first call goes through AOTAutograd
            x = torch.randn(n, 8)
            out = compiled(x)
            assert_close_to_eager(out, fn(x))
            marks.append([getattr(o, "_dynamo_propagated_dynamic_indices", None) for o in out])
    assert len(returned) == 1 and _is_direct(returned[0])
    assert marks[0] == [{0}, {0}] and all(m == marks[0] for m in marks)


def test_input_mutation_keeps_aotautograd():
    def fn(x):
        x.add_(1)
        return x * 2

    compiled, returned = _compiled(fn)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(4, 8)
            ref = x.clone()
            version = x._version
            out = compiled(x)
            expected = fn(ref)
            assert_close_to_eager(out, expected)
            assert_close_to_eager(x, ref)  # mutated as eager mutates it
            assert x._version > version
    assert not _is_direct(returned[0])


def test_output_aliasing_an_input_keeps_aotautograd():
    def fn(x):
        return x.view(-1), x + 1

    compiled, returned = _compiled(fn)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(4, 8)
            view, plus = compiled(x)
            assert view.data_ptr() == x.data_ptr() and view._base is x
            assert_close_to_eager(plus, x + 1)
    assert not _is_direct(returned[0])


def test_training_graph_keeps_aotautograd():
    m = torch.nn.Linear(8, 4)
    compiled, returned = _compiled(m)
    x = torch.randn(3, 8)
    compiled(x).sum().backward()
    grad = m.weight.grad.clone()
    m.weight.grad = None
    m(x).sum().backward()
    assert_close_to_eager(grad, m.weight.grad)
    assert not _is_direct(returned[0])


def test_grad_mode_flip_recompiles_and_matches_eager():
    def fn(x):
        return torch.tanh(x) + 1

    compiled, returned = _compiled(fn)
    x = torch.randn(4, 8)
    with torch.no_grad():
        compiled(x), compiled(x)
    out = compiled(x)  # grad mode on: Dynamo's guard recompiles
    assert_close_to_eager(out, fn(x))
    assert torch.is_grad_enabled()
    assert len(returned) == 2 and all(_is_direct(r) for r in returned)
