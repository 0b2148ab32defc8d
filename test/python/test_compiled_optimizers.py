"""Compiled optimizer steps: ``torch.compile(opt.step, backend="coil")``.

SGD (momentum, Nesterov), Adam and AdamW in their foreach (multi-tensor) and
for-loop forms, f32 and bf16 parameters: parameters and optimizer state after
three steps against the uncompiled optimizer; every op lowered (``fallback:
error``); the whole multi-tensor update a couple of launches (per-parameter
kernels run as combo kernels, ``host-combine-launches``); a tensor learning
rate driven by a scheduler never recompiles. (``fused=True`` steps never
reach a backend: Dynamo runs ATen's fused kernel between graphs.)
"""

from __future__ import annotations

import copy
import re

import pytest
import torch

from coil.examples.distributed import GPT
from coil.frontend.foreach import foreach_decompositions
from coil.testing import kernel_launches, tolerances

OPTIMIZERS = {
    "sgd_momentum": (torch.optim.SGD, {"momentum": 0.9, "weight_decay": 0.01}),
    "sgd_nesterov": (torch.optim.SGD, {"momentum": 0.9, "nesterov": True}),
    "adam": (torch.optim.Adam, {"weight_decay": 0.01}),
    "adamw": (torch.optim.AdamW, {"weight_decay": 0.1}),
}


def small_model(dtype: torch.dtype) -> torch.nn.Module:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.LayerNorm(16), torch.nn.Linear(16, 4)
    )
    return model.to(dtype)


def optimizer(name: str, params, form: str, compiled: bool) -> torch.optim.Optimizer:
    """``name`` over ``params`` in ``form`` ("foreach" or "loop"). Compiled, the
    learning rate is a tensor (so schedules do not recompile); a foreach
    optimizer then needs ``capturable``, which Dynamo sets by itself on CUDA
    only. The eager reference runs the same form with a float rate."""
    cls, kwargs = OPTIMIZERS[name]
    kwargs = dict(kwargs, foreach=form == "foreach")
    if compiled and form == "foreach" and cls is not torch.optim.SGD:
        kwargs["capturable"] = True
    lr = torch.tensor(0.01) if compiled else 0.01
    return cls(params, lr=lr, **kwargs)


def set_grads(a: torch.nn.Module, b: torch.nn.Module) -> None:
    for p, q in zip(a.parameters(), b.parameters()):
        g = torch.randn_like(p)  # fresh, signed, every step
        p.grad, q.grad = g.clone(), g.clone()


def assert_same_state(
    eager: torch.nn.Module, opt_e, compiled: torch.nn.Module, opt_c, dtype: torch.dtype
) -> None:
    tol = tolerances(dtype)
    for (name, p), q in zip(eager.named_parameters(), compiled.parameters()):
        torch.testing.assert_close(q, p, **tol, msg=name)
        for key, value in opt_e.state[p].items():
            got = opt_c.state[q][key]
            if isinstance(value, torch.Tensor):
                got, value = got.to(value.dtype), value
            torch.testing.assert_close(got, value, **tol, msg=f"{name} {key}")


def wrapper_sources(dump_dir) -> list[str]:
    return [p.read_text() for p in sorted(dump_dir.glob("graph_*/wrapper.py"))]


def launches(source: str) -> int:
    return kernel_launches(source)


def run_steps(name: str, form: str, dtype: torch.dtype, tmp_path, steps: int = 3):
    eager = small_model(dtype)
    compiled = copy.deepcopy(eager)
    opt_e = optimizer(name, eager.parameters(), form, compiled=False)
    opt_c = optimizer(name, compiled.parameters(), form, compiled=True)
    options = {"fallback": "error", "dump_dir": str(tmp_path)}
    step = torch.compile(opt_c.step, backend="coil", options=options)
    for _ in range(steps):
        set_grads(eager, compiled)
        opt_e.step()
        step()
    assert_same_state(eager, opt_e, compiled, opt_c, dtype)
    return wrapper_sources(tmp_path)


CASES = [
    ("adamw", "foreach", torch.float32),
    ("adamw", "foreach", torch.bfloat16),
    ("sgd_nesterov", "loop", torch.float32),
    ("adam", "loop", torch.float32),
]
SLOW_CASES = [
    (name, form, dtype)
    for name in OPTIMIZERS
    for form in ("foreach", "loop")
    for dtype in (torch.float32, torch.bfloat16)
    if (name, form, dtype) not in CASES
]


@pytest.mark.parametrize(
    "name,form,dtype",
    [*CASES, *(pytest.param(*c, marks=pytest.mark.slow) for c in SLOW_CASES)],
    ids=lambda v: str(v).removeprefix("torch."),
)
def test_step_matches_eager(name, form, dtype, tmp_path):
    """Three steps: parameters and every state tensor (moments, momentum
    buffers, step counts) as the uncompiled optimizer leaves them; nothing
    falls back to ATen (``fallback: error`` fails the compile otherwise:
    ``prims.fma`` from ``addcmul_(value=)`` and ``add_(alpha=tensor)`` included)."""
    sources = run_steps(name, form, dtype, tmp_path)
    assert sources, "the step compiled no graph"
    if form == "foreach":
        # 6 parameters: their updates in one launch, the step counts in another.
        assert sum(launches(s) for s in sources) <= 2, sources


def test_adamw_step_of_a_gpt_is_two_launches_without_fallback(tmp_path):
    """A GPT-2-structured model (the shape of a 100M-parameter one, tiny): every
    op of the AdamW step lowered, the per-parameter updates -- each one
    kernel reading parameter, gradient and both moments once and writing
    the three back in place -- in one combo launch, the step counts in
    another; the results match the uncompiled step."""
    torch.manual_seed(0)
    eager = GPT(vocab=64, dim=16, heads=4, layers=1, seq=8)
    compiled = copy.deepcopy(eager)
    opt_e = optimizer("adamw", eager.parameters(), "foreach", compiled=False)
    opt_c = optimizer("adamw", compiled.parameters(), "foreach", compiled=True)
    options = {"fallback": "error", "dump_dir": str(tmp_path)}
    step = torch.compile(opt_c.step, backend="coil", options=options)
    set_grads(eager, compiled)
    opt_e.step()
    step()
    assert_same_state(eager, opt_e, compiled, opt_c, torch.float32)
    (source,) = wrapper_sources(tmp_path)
    # Two Triton launches; the C++ kernels run one after another in one call.
    assert launches(source) == (1 if "coil_cpp_" in source else 2), source
    assert "torch.ops.aten" not in source  # no ATen call at all
    assert not re.search(r"= empty", source)  # every update in place: nothing allocated


def test_tensor_lr_schedule_does_not_recompile(tmp_path):
    """``lr=torch.tensor(...)`` and a scheduler: the schedule writes the tensor
    in place, so one graph serves every step (a float rate is a constant of
    the graph: each new value recompiled)."""
    eager, compiled = small_model(torch.float32), small_model(torch.float32)
    opt_e = optimizer("adamw", eager.parameters(), "foreach", compiled=False)
    opt_c = optimizer("adamw", compiled.parameters(), "foreach", compiled=True)
    sched_e = torch.optim.lr_scheduler.StepLR(opt_e, step_size=1, gamma=0.5)
    sched_c = torch.optim.lr_scheduler.StepLR(opt_c, step_size=1, gamma=0.5)
    step = torch.compile(opt_c.step, backend="coil")
    torch._dynamo.utils.counters.clear()
    with torch._dynamo.config.patch(error_on_recompile=True):
        for _ in range(3):
            set_grads(eager, compiled)
            opt_e.step()
            step()
            sched_e.step()
            sched_c.step()
    assert float(opt_c.param_groups[0]["lr"]) == pytest.approx(0.01 / 8)
    assert_same_state(eager, opt_e, compiled, opt_c, torch.float32)


# ---- the decompositions themselves, in eager (no compile) -------------------------------


def _lists(n=3, positive=False):
    shapes = [(4, 3), (5,), ()]
    make = torch.rand if positive else torch.randn
    return [make(s) + (0.5 if positive else 0) for s in shapes[:n]]


FOREACH_CALLS = {
    "_foreach_add.List": lambda a, b, c: (a, b, {"alpha": 0.5}),
    "_foreach_add.Scalar": lambda a, b, c: (a, 2.0),
    "_foreach_add.ScalarList": lambda a, b, c: (a, [1.0, -2.0, 3.0]),
    "_foreach_add.Tensor": lambda a, b, c: (a, torch.tensor(0.25), {"alpha": 2}),
    "_foreach_sub.List": lambda a, b, c: (a, b),
    "_foreach_mul.Tensor": lambda a, b, c: (a, torch.tensor(-1.5)),
    "_foreach_div.List": lambda a, b, c: (a, c),
    "_foreach_div.Scalar": lambda a, b, c: (a, 3.0),
    "_foreach_addcmul.Scalar": lambda a, b, c: (a, b, c, 0.1),
    "_foreach_addcmul.ScalarList": lambda a, b, c: (a, b, c, [0.1, 0.2, 0.3]),
    "_foreach_addcmul.Tensor": lambda a, b, c: (a, b, c, torch.tensor([0.1, 0.2, 0.3])),
    "_foreach_addcdiv.Scalar": lambda a, b, c: (a, b, c, -0.5),
    "_foreach_addcdiv.Tensor": lambda a, b, c: (a, b, c, torch.tensor([0.5, 1.0, 2.0])),
    "_foreach_lerp.Scalar": lambda a, b, c: (a, b, 0.3),
    "_foreach_lerp.List": lambda a, b, c: (a, b, c),
    "_foreach_pow.ScalarAndTensor": lambda a, b, c: (0.9, c),
    "_foreach_pow.Scalar": lambda a, b, c: (c, 0.5),
    "_foreach_maximum.List": lambda a, b, c: (a, b),
    "_foreach_clamp_min.Scalar": lambda a, b, c: (a, 0.0),
    "_foreach_norm.Scalar": lambda a, b, c: (a, 2),
    "_foreach_max.default": lambda a, b, c: (a,),
    "_foreach_sqrt.default": lambda a, b, c: (c,),
    "_foreach_reciprocal.default": lambda a, b, c: (c,),
    "_foreach_neg.default": lambda a, b, c: (a,),
    "_foreach_sign.default": lambda a, b, c: (a,),
    "_foreach_copy.default": lambda a, b, c: (a, b),
    "_foreach_zero.default": lambda a, b, c: (a,),
    "_foreach_clone.default": lambda a, b, c: (a,),
}


@pytest.mark.parametrize("name", sorted(FOREACH_CALLS))
def test_foreach_decomposition_matches_aten(name):
    op_name, overload = name.split(".")
    op = getattr(getattr(torch.ops.aten, op_name), overload)
    decomposition = foreach_decompositions()[op]
    a, b, c = _lists(), _lists(), _lists(positive=True)
    args = FOREACH_CALLS[name](a, b, c)
    kwargs = args[-1] if isinstance(args[-1], dict) else {}
    args = args[:-1] if kwargs else args
    got, want = decomposition(*args, **kwargs), op(*args, **kwargs)
    assert len(got) == len(want)
    for x, y in zip(got, want):
        torch.testing.assert_close(x, y, **tolerances(torch.float32))


def test_every_functional_foreach_op_with_a_per_tensor_twin_is_decomposed():
    table = foreach_decompositions()
    names = {str(op) for op in table}
    for expected in ("aten._foreach_addcmul.Scalar", "aten._foreach_lerp.Scalar"):
        assert expected in names
    assert "aten._foreach_mm.default" not in names  # matmuls stay ATen's
    assert all(not str(op).split(".")[1].endswith("_") for op in table)  # functional only
