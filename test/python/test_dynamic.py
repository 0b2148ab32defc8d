"""``dynamic=True`` through coil's backend: every graph compiles, none runs eager.

Dynamo signals a restart (``TensorifyScalarRestartAnalysis`` from AOTAutograd's
scalar pass, which every ``dynamic=True`` graph with a Python float can raise)
by raising through the backend; a backend that took it for a compile failure
ran the graph in eager PyTorch after a warning. These tests run the backend
under its default policy (``fallback='eager'``) and fail on that warning, then
check the outputs against eager at the traced size and at others.
"""

import copy
import warnings

import pytest
import torch
from torch import nn

from coil.examples.models import MODELS, build
from coil.testing import assert_close_to_eager


def _resized(inputs: tuple, extra: int) -> tuple:
    """Fresh inputs with the leading dimension ``extra`` larger."""
    out = []
    for x in inputs:
        if not isinstance(x, torch.Tensor) or x.dim() == 0:
            out.append(x)
            continue
        size = (x.shape[0] + extra, *x.shape[1:])
        if x.is_floating_point():
            out.append(torch.randn(size, dtype=x.dtype))
        else:
            out.append(torch.randint(0, int(x.max()) + 1, size, dtype=x.dtype))
    return tuple(out)


def _compile_without_eager_fallback(model: nn.Module, calls: list[tuple]) -> None:
    """Compile ``model`` with ``dynamic=True`` under the eager-fallback policy,
    run it on each input tuple of ``calls`` and compare with eager; fail if any
    graph ran in eager PyTorch."""
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend="coil", dynamic=True, options={"fallback": "eager"})
    for inputs in calls:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.manual_seed(3)
            out = compiled(*inputs)
        fell_back = [str(w.message) for w in caught if "runs in eager" in str(w.message)]
        assert not fell_back, fell_back[0]
        torch.manual_seed(3)
        assert_close_to_eager(out, eager(*inputs))


# Every example model but the random one (its output is checked by law elsewhere).
CASES = [name for name, case in MODELS.items() if not case.random]


@pytest.mark.parametrize("name", CASES)
def test_example_compiles_dynamic_without_eager_fallback(name):
    model, inputs = build(name)
    with torch.set_grad_enabled(MODELS[name].train):
        _compile_without_eager_fallback(model, [inputs, _resized(inputs, 3)])


class _DimReductions(nn.Module):
    """Reductions over the dynamic dimension and over a static one."""

    def forward(self, x):
        return x.sum(0), x.var(0), x.amax(1), torch.softmax(x, 0)


class _SdpaBlock(nn.Module):
    """Attention through SDPA with a causal mask over a dynamic length."""

    def __init__(self, dim: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, c))


@pytest.mark.parametrize(
    "model, make",
    [
        (_DimReductions(), lambda n: (torch.randn(n, 24),)),
        (nn.LayerNorm(16), lambda n: (torch.randn(n, 16),)),
        (nn.GroupNorm(4, 8), lambda n: (torch.randn(2, 8, n, 5),)),
        (_SdpaBlock(), lambda n: (torch.randn(2, n, 32),)),
        (
            nn.Sequential(nn.Conv1d(4, 8, 3), nn.BatchNorm1d(8).eval()),
            lambda n: (torch.randn(2, 4, n),),
        ),
    ],
    ids=["dim_reductions", "layer_norm", "group_norm", "sdpa_causal", "conv1d_bn"],
)
def test_module_compiles_dynamic_without_eager_fallback(model, make):
    with torch.no_grad():
        _compile_without_eager_fallback(model, [make(7), make(10), make(3)])


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.var(),
        lambda x: x.std(0),
        lambda x: x.var(-1, keepdim=True) * 2,
    ],
    ids=["var_all", "std_dim0", "var_keepdim"],
)
def test_gradients_of_a_variance_over_dynamic_sizes(fn):
    # var's backward scales by 2 / (n - 1) with mul.Scalar: under dynamic=True a
    # float computed from sizes in a Scalar operand, which failed to import
    # ("used where the schema needs a constant"; found by fuzz --train).
    compiled = torch.compile(fn, backend="coil", dynamic=True, options={"fallback": "extern"})
    for rows in (7, 10, 3):
        x = torch.randn(rows, 33, requires_grad=True)
        ref = x.detach().clone().requires_grad_(True)
        compiled(x).sum().backward()
        fn(ref).sum().backward()
        assert_close_to_eager(x.grad, ref.grad)


def test_gradients_through_a_reshape_of_a_transposed_input():
    # A reshape's backward views the gradient of s0*s0 elements back as s0 rows,
    # typed [s0, (s0*s0) // s0] by torch: imported as [s0, s0] (fuzz --train).
    def fn(a, b):
        t = b.transpose(1, 0)
        return t.reshape(1, -1), torch.mm(b, t), a * 2

    compiled = torch.compile(fn, backend="coil", dynamic=True, options={"fallback": "extern"})
    for n in (4, 6, 3):
        inputs = [torch.randn(n, n, requires_grad=True) for _ in range(2)]
        refs = [t.detach().clone().requires_grad_(True) for t in inputs]
        sum(o.sum() for o in compiled(*inputs)).backward()
        sum(o.sum() for o in fn(*refs)).backward()
        for t, r in zip(inputs, refs):
            assert_close_to_eager(t.grad, r.grad)


def test_dynamo_restart_passes_through_the_eager_policy(monkeypatch):
    """The fix itself: a restart raised while compiling reaches Dynamo (which
    retraces) instead of becoming an eager fallback; a real failure still
    falls back with a warning naming its cause."""
    from torch._dynamo.exc import TensorifyScalarRestartAnalysis

    import coil.backend as backend

    raised = []

    def compile_graph(*args, **kwargs):
        if not raised:
            raised.append(1)
            raise TensorifyScalarRestartAnalysis
        raise ValueError("planted failure")

    monkeypatch.setattr(backend, "compile_graph", compile_graph)
    model = nn.Linear(4, 4)
    compiled = torch.compile(model, backend="coil", options={"fallback": "eager", "cache": False})
    x = torch.randn(2, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert_close_to_eager(compiled(x), model(x))
    messages = [str(w.message) for w in caught if "runs in eager" in str(w.message)]
    assert raised and len(messages) == 1
    assert "ValueError: planted failure" in messages[0]
    assert "TensorifyScalarRestartAnalysis" not in messages[0]


def test_inference_batch_norm_lowers_with_symbolic_sizes(caplog):
    """A conv net's inference batch norms compile to kernels under dynamic=True:
    their decomposition would add guards on the symbolic sizes (aten-decompose
    keeps such an op), so they have a lowering of their own; before it, each
    ran as an ATen kernel."""
    import logging

    from coil.lowering import convert_aten_to_loop

    convert_aten_to_loop._reported.clear()  # the fallback log is once per process
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU()).eval()
    with torch.no_grad():
        model[1].running_mean.normal_()
        model[1].running_var.uniform_(0.5, 2.0)
        with caplog.at_level(logging.WARNING, logger="coil"):
            _compile_without_eager_fallback(
                model, [(torch.randn(2, 3, 9, 9),), (torch.randn(3, 3, 12, 10),)]
            )
    assert not [r for r in caplog.records if "no loop lowering" in r.getMessage()]


def _compiles(model: nn.Module, dynamic: bool | None, sizes: list[int]) -> int:
    """Compile ``model`` with coil, run it at each leading size, check each
    against eager; the number of graphs coil compiled (a call Dynamo restarts,
    as ``dynamic=True`` does for LayerNorm's ``eps``, is not one)."""
    from coil.backend import coil as coil_backend

    graphs = []

    def counting(gm, example_inputs):
        run = coil_backend(gm, example_inputs)
        graphs.append(gm)
        return run

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=counting, dynamic=dynamic)
    with torch.no_grad():
        for n in sizes:
            x = torch.randn(n, 16)
            assert_close_to_eager(compiled(x), model(x))
    return len(graphs)


def test_symbolic_sizes_turn_on_dynamos_cpp_shape_guards(monkeypatch):
    """COIL_SHAPE_GUARDS=cpp (the default): a graph with symbolic sizes turns on
    Dynamo's C++ shape guards (the guard of the same frame already uses them),
    which still admit every size the graph serves and reject the ones it does
    not (size 1 is specialized: a recompile); a static graph leaves the
    setting alone, and COIL_SHAPE_GUARDS=python never touches it."""
    # Saved and restored by hand: monkeypatch.setattr on torch's config module
    # records the option as unset and deletes it on undo (every later compile
    # in the process then fails: 321 tests of the first CI run of this test).
    config = torch._dynamo.config
    saved = config.enable_cpp_symbolic_shape_guards
    try:
        config.enable_cpp_symbolic_shape_guards = False
        monkeypatch.delenv("COIL_SHAPE_GUARDS", raising=False)
        model = nn.LayerNorm(16)
        assert _compiles(model, False, [3]) == 1
        assert not config.enable_cpp_symbolic_shape_guards
        # 3, 5 and 9 share the dynamic graph; 1 is outside its guards.
        assert _compiles(model, True, [3, 5, 9, 1]) == 2
        assert config.enable_cpp_symbolic_shape_guards

        config.enable_cpp_symbolic_shape_guards = False
        monkeypatch.setenv("COIL_SHAPE_GUARDS", "python")
        assert _compiles(model, True, [3, 5]) == 1
        assert not config.enable_cpp_symbolic_shape_guards

        monkeypatch.setenv("COIL_SHAPE_GUARDS", "lambda")
        with pytest.raises(Exception, match="COIL_SHAPE_GUARDS must be one of cpp, python"):
            _compiles(model, True, [3])
    finally:
        config.enable_cpp_symbolic_shape_guards = saved
