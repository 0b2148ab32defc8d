"""convert-aten-to-loop on views, data movement, factories and random ops.

Each case is a small torch function compiled through a backend that imports
the graph, runs the default pipeline and ``convert-aten-to-loop``, checks that
no op of these families fell back to ``buffer.extern``, and runs the loop-level
module with the reference executor; the result is compared with eager on fresh
random inputs, with static shapes and (where the function keeps them) dynamic
ones, called at two sizes.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from coil.backend import run_pipeline
from coil.dialects import buffer as B
from coil.examples.models import build
from coil.frontend.capture import aot_backend
from coil.frontend.fx_importer import constant_inputs, import_graph
from coil.ir import print_module
from coil.lowering.convert_aten_to_loop import LOWERINGS
from coil.pipeline import PIPELINES
from coil.runtime.aten_executor import run_module
from coil.testing import assert_close_to_eager

FAMILIES = ("coil.lowering.aten_to_loop.views", "coil.lowering.aten_to_loop.data_movement")
OWN_OPS = {name for name, fn in LOWERINGS.items() if fn.__module__ in FAMILIES}


def _externs(module) -> list[str]:
    """Names of the aten ops called through ATen."""
    names = []
    for op in module.walk():
        if isinstance(op, B.ExternOp):
            inner = [o for o in op.body.block.ops if o.name.startswith(("aten.", "prims."))]
            names += [o.name for o in inner]
    return names


def _loop_backend(modules: list):
    def compile_fw(gm, example_inputs):
        module = import_graph(gm, example_inputs)
        run_pipeline(module, PIPELINES["aten"])
        consts = constant_inputs(module, gm)
        run_pipeline(module, "convert-aten-to-loop")
        modules.append(module)

        def run(*args):
            return run_module(module, [*args, *consts])

        return run

    return aot_backend(compile_fw)


def _compile(fn, dynamic: bool):
    modules: list = []
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=_loop_backend(modules), dynamic=dynamic, fullgraph=True)
    return compiled, modules


def _assert_lowered(modules) -> None:
    assert modules, "no graph was compiled"
    for module in modules:
        fallback = [n for n in _externs(module) if n in OWN_OPS]
        assert not fallback, f"fell back to ATen: {fallback}"


def _x(*shape):
    return lambda s: torch.randn(*[d if d > 0 else s[-d - 1] for d in shape])


# (name, fn, inputs(sizes) -> tuple, dynamic?) -- sizes (a, b) vary between calls.
rn, ri = torch.randn, torch.randint

CASES = [
    ("view", lambda x: x.view(-1) * 2, lambda s: (rn(s[0], s[1]),), True),
    (
        "view_split",
        lambda x: x.view(x.shape[0], 2, -1) + 1,
        lambda s: (rn(s[0], 8),),
        True,
    ),
    ("reshape_merge", lambda x: x.reshape(2, 12) + 1, lambda s: (rn(4, 6),), False),
    ("permute", lambda x: x.permute(2, 0, 1) + 1, lambda s: (rn(s[0], 3, s[1]),), True),
    ("transpose", lambda x: x.transpose(-1, 0) + 1, lambda s: (rn(s[0], s[1]),), True),
    ("t", lambda x: x.t() * 3, lambda s: (rn(s[0], s[1]),), True),
    (
        "expand",
        lambda x: x.unsqueeze(0).expand(3, -1, -1) + 1,
        lambda s: (rn(s[0], s[1]),),
        True,
    ),
    ("expand_mid", lambda x: x.expand(-1, 5, -1) + 1, lambda s: (rn(s[0], 1, 3),), True),
    ("squeeze", lambda x: x.squeeze() + 1, lambda s: (rn(s[0], 1, 4, 1),), True),
    ("squeeze_dim", lambda x: x.squeeze(1) + 1, lambda s: (rn(s[0], 1, 4),), True),
    ("unsqueeze", lambda x: x.unsqueeze(-1) + 1, lambda s: (rn(s[0], s[1]),), True),
    ("slice_step", lambda x: x[:, 1::2] + 1, lambda s: (rn(s[0], 9),), True),
    ("slice_neg", lambda x: x[-3:-1] + 1, lambda s: (rn(s[0], s[1]),), True),
    ("slice_sym", lambda x: x[:, : x.shape[1] - 1] + 1, lambda s: (rn(s[0], s[1]),), True),
    ("select_neg", lambda x: x[:, -1] + 1, lambda s: (rn(s[0], s[1]),), True),
    ("view_of_view", lambda x: x.t().reshape(-1)[3:] + 1, lambda s: (rn(4, 6),), False),
    (
        "split",
        lambda x: [t + 1 for t in x.split([2, 4], 1)],
        lambda s: (rn(s[0], 6),),
        True,
    ),
    ("chunk", lambda x: [t * 2 for t in x.chunk(3, 0)], lambda s: (rn(7, 3),), False),
    ("unbind", lambda x: [t + 1 for t in x.unbind(1)], lambda s: (rn(s[0], 3),), True),
    ("diagonal", lambda x: torch.diagonal(x, 1) + 1, lambda s: (rn(4, 6),), False),
    (
        "as_strided",
        lambda x: (x + 1).as_strided((3, 2), (1, 3), 2) * 2,
        lambda s: (rn(4, 6),),
        False,
    ),
    (
        "cat",
        lambda x, y: torch.cat([x, y * 2, x], 0),
        lambda s: (_x(-1, -2)(s), _x(3, -2)(s)),
        True,
    ),
    ("cat_last", lambda x, y: torch.cat([x, y], -1), lambda s: (_x(-1, 2)(s), _x(-1, -2)(s)), True),
    (
        "cat_mixed",
        lambda x, y: torch.cat([x, y], 1),
        lambda s: (_x(2, 3)(s), _x(2, 2)(s).half()),
        False,
    ),
    (
        "pad",
        lambda x: F.pad(x, (2, -1, 1, 1), value=1.5),
        lambda s: (rn(s[0], s[1]),),
        True,
    ),
    ("pad_crop", lambda x: F.pad(x, (-1, -2)), lambda s: (rn(s[0], 8),), True),
    ("flip", lambda x: torch.flip(x, [0, -1]), lambda s: (rn(s[0], s[1]),), True),
    ("roll", lambda x: torch.roll(x, 2, 1), lambda s: (rn(s[0], s[1]),), True),
    ("roll_flat", lambda x: torch.roll(x, -3), lambda s: (rn(4, 5),), False),
    ("repeat", lambda x: x.repeat(2, 1, 3), lambda s: (rn(s[0], s[1]),), True),
    (
        "index_select",
        lambda x, i: torch.index_select(x, 1, i),
        lambda s: (rn(s[0], 6), ri(0, 6, (5,))),
        True,
    ),
    (
        "gather",
        lambda x, i: torch.gather(x, 1, i),
        lambda s: (rn(s[0], 6), ri(0, 6, (s[0], 3))),
        True,
    ),
    (
        # cross-entropy's backward: one source per element (index size 1 along dim)
        "scatter_value",
        lambda x, i: torch.zeros_like(x).scatter(1, i, -1.0) * x,
        lambda s: (rn(s[0], 6), ri(0, 6, (s[0], 1))),
        True,
    ),
    (
        "scatter_src_dim0",
        lambda x, i, y: x.scatter(0, i, y),
        lambda s: (rn(5, s[1]), ri(0, 5, (1, s[1])), rn(2, s[1] + 1)),
        False,
    ),
    (
        "scatter_add",
        lambda x, i, y: x.scatter_add(-1, i, y),
        lambda s: (rn(s[0], 3, 6), ri(0, 6, (s[0], 3, 1)), rn(s[0], 3, 1)),
        True,
    ),
    (
        "embedding",
        lambda w, i: F.embedding(i, w),
        lambda s: (rn(10, 4), ri(0, 10, (s[0], s[1]))),
        True,
    ),
    (
        "index_two",
        lambda x, i, j: x[i, :, j],
        lambda s: (
            rn(5, s[0], 7),
            ri(-5, 5, (3, 1)),
            ri(-7, 7, (4,)),
        ),
        True,
    ),
    (
        "index_adjacent",
        lambda x, i, j: x[:, i, j],
        lambda s: (rn(s[0], 5, 7), ri(-5, 5, (3,)), ri(0, 7, (3,))),
        True,
    ),
    (
        "index_neg",
        lambda x, i: x[i],
        lambda s: (rn(6, s[0]), ri(-6, 6, (s[1],))),
        True,
    ),
    ("arange", lambda x: x + torch.arange(x.shape[0]), lambda s: (rn(s[0]),), True),
    ("arange_float", lambda x: x + torch.arange(0.5, 3.0, 0.5), lambda s: (rn(5),), False),
    ("arange_step", lambda x: torch.arange(2, 20, 3) * x, lambda s: (rn(6),), False),
    (
        "full_zeros_ones",
        lambda x: (
            x + torch.full((x.shape[1],), 2.5),
            x + torch.zeros_like(x),
            torch.ones(3, dtype=torch.int32),
        ),
        lambda s: (rn(s[0], s[1]),),
        True,
    ),
    (
        "full_f16",
        lambda x: x + torch.full((3,), 0.1, dtype=torch.float16),
        lambda s: (_x(3)(s),),
        False,
    ),
    ("new_full", lambda x: x.new_full((2, 3), 7.0) - 1, lambda s: (rn(4),), False),
    (
        "empty_fill",
        lambda x: torch.empty(3, 4).fill_(2.0) + x,
        lambda s: (rn(3, 4),),
        False,
    ),
    ("clone", lambda x: x.t().clone() + 1, lambda s: (rn(s[0], s[1]),), True),
    (
        "replication_pad_backward",
        lambda g, x: torch.ops.aten.replication_pad2d_backward(g, x, [2, 1, 1, 3]),
        lambda s: (rn(2, s[0] + 4, s[1] + 3), rn(2, s[0], s[1])),
        True,
    ),
]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_lowered_op_matches_eager(case, dynamic):
    _, fn, inputs, dynamic_ok = case
    if dynamic and not dynamic_ok:
        pytest.skip("the function specializes its sizes")
    compiled, modules = _compile(fn, dynamic)
    for sizes in [(5, 4), (7, 6)] if dynamic else [(5, 4)]:
        args = inputs(sizes)
        assert_close_to_eager(compiled(*args), fn(*args))
    _assert_lowered(modules)
    if dynamic:
        assert "index {coil.symbol" in print_module(modules[0]), "no symbolic size"


def test_copy_into_input_mutates_it():
    def fn(x, y):
        x.copy_(y.half())  # broadcast and cast into x
        return x + 1

    x, y = torch.randn(4, 6), torch.randn(6)
    expected_x = x.clone()
    expected = fn(expected_x, y)
    compiled, modules = _compile(fn, False)
    out = compiled(x, y)
    _assert_lowered(modules)
    assert_close_to_eager(out, expected)
    assert_close_to_eager(x, expected_x)


# ---- random ------------------------------------------------------------------------------


def _random_outputs(fn, *args):
    compiled, modules = _compile(fn, False)
    out = compiled(*args)
    _assert_lowered(modules)
    return out


def test_rand_and_randn_laws():
    def fn(x):
        return torch.rand_like(x), torch.rand_like(x), torch.randn(4096), torch.rand(64, 64)

    u1, u2, n, u3 = _random_outputs(fn, torch.empty(4096))
    for u in (u1, u2, u3):
        assert u.dtype == torch.float32
        assert u.min() >= 0 and u.max() < 1
        assert abs(u.mean().item() - 0.5) < 0.05
        assert abs(u.std().item() - (1 / 12) ** 0.5) < 0.03
    assert u3.shape == (64, 64)
    assert not torch.equal(u1, u2), "two random ops in one graph drew the same numbers"
    assert abs(n.mean().item()) < 0.1 and abs(n.std().item() - 1) < 0.1


def test_random_dtype_and_bernoulli():
    def fn(x):
        return torch.randn(2048, dtype=torch.float16), torch.bernoulli(x), torch.rand_like(x) < 0.3

    p = torch.full((4096,), 0.3)
    n, b, m = _random_outputs(fn, p)
    assert n.dtype == torch.float16 and abs(n.float().std().item() - 1) < 0.1
    assert b.dtype == torch.float32 and set(b.unique().tolist()) <= {0.0, 1.0}
    assert abs(b.mean().item() - 0.3) < 0.05 and abs(m.float().mean().item() - 0.3) < 0.05


def test_dropout_model_law():
    model, (x,) = build("dropout_train")
    compiled, modules = _compile(model, False)
    out = compiled(x)
    _assert_lowered(modules)
    kept = out != 0
    assert abs(kept.float().mean().item() - (1 - model.p)) < 0.1
    torch.testing.assert_close(out[kept], (x * 2 / (1 - model.p))[kept])


@pytest.mark.parametrize("name", ["embedding_index", "attention", "gpt2_block"])
def test_models_lower_their_views(name):
    model, inputs = build(name)
    compiled, modules = _compile(model, False)
    with torch.no_grad():
        out = compiled(*inputs)
        expected = model(*inputs)
    _assert_lowered(modules)
    assert_close_to_eager(out, expected)
