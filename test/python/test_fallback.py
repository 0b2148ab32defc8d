"""The fallback policy of the backend (``options={"fallback": ...}``).

Most lenient first: 'eager' (the default) calls ATen for an op with no
lowering and runs a graph coil fails to compile in eager PyTorch after one
warning naming the cause; 'extern' calls ATen for such ops but raises when a
graph fails to compile; 'error' lets nothing fall back. The test suite runs
with ``COIL_FALLBACK=extern`` (conftest.py), so these tests name the policy
they test.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import coil.lowering.aten_to_loop  # noqa: F401  (fills LOWERINGS before tests replace entries)
from coil.backend import coil as coil_backend
from coil.lowering.convert_aten_to_loop import LOWERINGS
from coil.testing import assert_close_to_eager


def _compile(fn, **options):
    torch._dynamo.reset()
    return torch.compile(fn, backend=coil_backend, options=options or None)


def _coil_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if str(w.message).startswith("coil:")]


@torch.library.custom_op("coil_test::fallback_twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@twice.register_fake
def _(x):
    return torch.empty_like(x)


def _with_custom_op(x):
    return torch.softmax(twice(x), -1) + 1


def _wrapper_source(tmp_path, fn, *args, **options) -> str:
    compiled = _compile(fn, dump_dir=str(tmp_path), **options)
    assert_close_to_eager(compiled(*args), fn(*args))
    (graph,) = sorted(tmp_path.iterdir())
    return (graph / "wrapper.py").read_text()


@pytest.mark.parametrize("policy", ["eager", "extern"])
def test_custom_op_calls_its_implementation(tmp_path, policy):
    """A torch.library.custom_op is outside the aten dialect's generated set: it
    imports as aten.operator and the wrapper calls it (an extern) between
    coil's kernels."""
    source = _wrapper_source(tmp_path, _with_custom_op, torch.randn(4, 8), fallback=policy)
    assert "torch.ops.coil_test.fallback_twice.default(" in source
    # softmax and + 1 are still coil's kernels (C++ ones on the CPU, or Triton's)
    assert "@triton.jit" in source or "load_cpp_kernels" in source


def test_op_the_aten_dialect_does_not_know_is_an_extern(tmp_path):
    """aten.linalg_inv_ex has no op in the generated dialect (nor a lowering):
    it imports as aten.operator and runs through ATen."""

    def fn(x):
        inverse, info = torch.linalg.inv_ex(x)
        return inverse * 2, info

    x = torch.randn(4, 4) + 4 * torch.eye(4)
    source = _wrapper_source(tmp_path, fn, x, fallback="eager")
    assert "torch.ops.aten.linalg_inv_ex.default(" in source


def test_fallback_error_fails_naming_the_op():
    with pytest.raises(Exception, match="no loop lowering for coil_test::fallback_twice"):
        _compile(_with_custom_op, fallback="error")(torch.randn(4, 8))


def _broken_relu(monkeypatch):
    """A bug in coil: the lowering of relu raises."""

    def boom(lw, op):
        raise RuntimeError("relu lowering exploded")

    monkeypatch.setitem(LOWERINGS, "aten.relu.default", boom)


def test_a_graph_that_fails_to_compile_runs_in_eager(monkeypatch):
    """The default policy: one warning naming the cause, and eager's answer."""
    _broken_relu(monkeypatch)
    monkeypatch.delenv("COIL_FALLBACK")

    def fn(x):
        return torch.relu(x) * 3

    x = torch.randn(5, 7)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = _compile(fn)
        assert_close_to_eager(compiled(x), fn(x))
        assert_close_to_eager(compiled(x + 1), fn(x + 1))  # no second compile, no warning
    (message,) = _coil_warnings(caught)
    assert "could not compile the forward graph" in message
    assert "RuntimeError: relu lowering exploded" in message
    assert "runs in eager PyTorch" in message


def test_fallback_extern_raises_the_compile_error(monkeypatch):
    _broken_relu(monkeypatch)
    with pytest.raises(Exception, match="relu lowering exploded"):
        _compile(lambda x: torch.relu(x) * 3, fallback="extern")(torch.randn(3))


def test_only_the_failing_graph_of_a_training_step_falls_back(monkeypatch):
    """The mask of relu's backward (le, only in the backward graph) fails to
    lower: the backward graph runs in eager, the forward stays compiled, and
    the gradients are eager's."""

    def boom(lw, op):
        raise RuntimeError("le lowering exploded")

    monkeypatch.setitem(LOWERINGS, "aten.le.Scalar", boom)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x = torch.randn(5, 6)
    expected = torch.autograd.grad(model(x).sum(), list(model.parameters()))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = _compile(model, fallback="eager")
        got = torch.autograd.grad(compiled(x).sum(), list(model.parameters()))
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-5)
    (message,) = _coil_warnings(caught)
    assert "could not compile the backward graph (RuntimeError: le lowering exploded)" in message


def test_policy_names_are_checked(monkeypatch):
    with pytest.raises(Exception, match="fallback must be one of 'eager', 'extern', 'error'"):
        _compile(torch.relu, fallback="never")(torch.randn(3))
    monkeypatch.setenv("COIL_FALLBACK", "sometimes")
    with pytest.raises(Exception, match="COIL_FALLBACK must be one of eager, extern, error"):
        _compile(torch.relu)(torch.randn(3))


def test_coil_fallback_sets_the_default(monkeypatch):
    _broken_relu(monkeypatch)
    monkeypatch.setenv("COIL_FALLBACK", "eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert_close_to_eager(_compile(torch.relu)(torch.randn(4)).shape, torch.Size([4]))
    assert len(_coil_warnings(caught)) == 1


@pytest.mark.parametrize(
    "name",
    [
        "aten.mm.default",
        "aten._scaled_dot_product_flash_attention.default",
        # the generic forms a graph names them by (aten.operator "ns::op"): the
        # model sweep counted the fused attention kernels as fallbacks
        "aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_efficient_attention",
        "_c10d_functional::all_reduce",
    ],
)
def test_ops_called_by_design_are_not_fallbacks(name):
    from coil.lowering.convert_aten_to_loop import extern_by_design

    assert extern_by_design(name)
    assert not extern_by_design("aten.cumsum.default")
