"""convert-aten-to-loop, pointwise and reduction lowerings, against eager.

Each case is a small torch function compiled through dynamo + AOTAutograd; its
graph runs the default aten pipeline and convert-aten-to-loop, must lower
without any ``buffer.extern`` (or with exactly the expected ones), and the
reference executor's results on random inputs (negative numbers, NaN where it
matters, int/bool/f16/bf16) must match eager, with static and dynamic shapes.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

from coil.backend import run_pipeline
from coil.dialects import buffer as B
from coil.examples.models import build
from coil.frontend.capture import aot_backend
from coil.frontend.fx_importer import constant_inputs, import_graph
from coil.lowering.aten_to_loop.lowerer import EXTERN_BY_DESIGN
from coil.pipeline import PIPELINES
from coil.runtime.aten_executor import run_module
from coil.testing import assert_close_to_eager


def lowered(fn: Callable, dynamic: bool) -> tuple[Callable, list]:
    """``fn`` compiled so that every graph runs at the loop level in the reference
    executor; the list receives the lowered modules."""
    modules: list = []

    def compile_fw(gm, example_inputs):
        module = import_graph(gm, example_inputs)
        consts = constant_inputs(module, gm)
        run_pipeline(module, PIPELINES["aten"])
        run_pipeline(module, "convert-aten-to-loop")
        modules.append(module)
        return lambda *args: run_module(module, [*args, *consts])

    return torch.compile(
        fn, backend=aot_backend(compile_fw), dynamic=dynamic, fullgraph=True
    ), modules


def externs(module) -> list[str]:
    return [op.kernel_name for op in module.walk() if isinstance(op, B.ExternOp)]


def check(fn: Callable, inputs: list, dynamic: bool = False, allowed_externs=()) -> list:
    compiled, modules = lowered(fn, dynamic)
    with torch.no_grad():
        expected = fn(*inputs)
        actual = compiled(*inputs)
    assert modules, "nothing was compiled"
    for m in modules:
        assert set(externs(m)) <= set(allowed_externs), externs(m)
    assert_close_to_eager(actual, expected)
    return modules


# ---- inputs --------------------------------------------------------------------


def f32(*shape):
    return torch.randn(*shape) * 3


def pos(*shape):
    return torch.rand(*shape) * 3 + 0.1


def unit(*shape):
    return torch.rand(*shape) * 1.8 - 0.9


def i64(*shape, lo=-10, hi=10):
    return torch.randint(lo, hi, shape)


def nonzero_int(*shape, dtype=torch.int64):
    v = torch.randint(1, 6, shape) * (torch.randint(0, 2, shape) * 2 - 1)
    return v.to(dtype)


def boolean(*shape):
    return torch.rand(*shape) > 0.5


def with_nan(*shape):
    x = f32(*shape)
    x[0, 1] = float("nan")
    x[-1, -1] = float("nan")
    return x


S = (3, 5)

# name -> (fn, inputs)
POINTWISE: dict[str, tuple[Callable, Callable[[], list]]] = {
    "add_alpha": (lambda x, y: torch.add(x, y, alpha=2.5), lambda: [f32(*S), f32(*S)]),
    "sub_int_alpha": (lambda x, y: torch.sub(x, y, alpha=3), lambda: [i64(*S), i64(*S)]),
    "add_bool": (lambda x, y: x + y, lambda: [boolean(*S), boolean(*S)]),
    "mul_bool_int": (lambda x, y: x * y, lambda: [boolean(*S), i64(*S)]),
    "add_scalar_broadcast": (lambda x, y: x + y + 1.5, lambda: [f32(*S), f32(5)]),
    "int_plus_float_scalar": (lambda x: x * 0.5 + 1, lambda: [i64(*S)]),
    "div_true_int": (lambda x, y: x / y, lambda: [i64(*S), nonzero_int(*S)]),
    "div_floor_int": (
        lambda x, y: torch.div(x, y, rounding_mode="floor"),
        lambda: [i64(*S), nonzero_int(*S)],
    ),
    "div_trunc_int": (
        lambda x, y: torch.div(x, y, rounding_mode="trunc"),
        lambda: [i64(*S), nonzero_int(*S)],
    ),
    "div_floor_float": (
        lambda x, y: torch.div(x, y, rounding_mode="floor"),
        lambda: [f32(*S), f32(*S)],
    ),
    "div_trunc_float_scalar": (
        lambda x: torch.div(x, -0.7, rounding_mode="trunc"),
        lambda: [f32(*S)],
    ),
    "floordiv_int32_scalar": (lambda x: x // 3, lambda: [i64(*S).to(torch.int32)]),
    "remainder_int": (lambda x, y: torch.remainder(x, y), lambda: [i64(*S), nonzero_int(*S)]),
    "remainder_float": (lambda x, y: torch.remainder(x, y), lambda: [f32(*S), f32(*S)]),
    "remainder_scalar": (lambda x: x % -2.5, lambda: [f32(*S)]),
    "fmod_int": (lambda x, y: torch.fmod(x, y), lambda: [i64(*S), nonzero_int(*S)]),
    "fmod_float": (lambda x, y: torch.fmod(x, y), lambda: [f32(*S), f32(*S)]),
    "pow_tensor_tensor": (lambda x, y: x**y, lambda: [pos(*S), f32(*S)]),
    "pow_2": (lambda x: x**2, lambda: [f32(*S)]),
    "pow_3_int": (lambda x: x**3, lambda: [i64(*S)]),
    "pow_half": (lambda x: x**0.5, lambda: [pos(*S)]),
    "pow_neg_half": (lambda x: x**-0.5, lambda: [pos(*S)]),
    "pow_neg_2": (lambda x: x**-2, lambda: [f32(*S)]),
    "pow_7_negative_base": (lambda x: x**7, lambda: [f32(*S) / 2]),
    "pow_3_5": (lambda x: x**3.5, lambda: [pos(*S)]),
    "pow_scalar_base": (lambda x: 2.0**x, lambda: [f32(*S)]),
    "pow_int_int": (lambda x, y: x**y, lambda: [i64(*S), torch.randint(0, 4, S)]),
    "maximum_nan": (torch.maximum, lambda: [with_nan(*S), f32(*S)]),
    "minimum_int": (torch.minimum, lambda: [i64(*S), i64(*S)]),
    "atan2": (torch.atan2, lambda: [f32(*S), f32(*S)]),
    "bitwise": (lambda x, y: (x & y, x | 5, x ^ y, ~x), lambda: [i64(*S), i64(*S)]),
    "bitwise_bool": (lambda x, y: (x & y, x | y, x ^ y, ~x), lambda: [boolean(*S), boolean(*S)]),
    "logical": (
        lambda x, y: (
            torch.logical_and(x, y),
            torch.logical_or(x, y),
            torch.logical_xor(x, y),
            torch.logical_not(x),
        ),
        lambda: [f32(*S).round(), i64(*S)],
    ),
    "comparisons": (
        lambda x, y: (x == y, x != y, x < y, x <= 0.5, x > y, x >= 1),
        lambda: [with_nan(*S).round(), f32(*S).round()],
    ),
    "compare_int_float_scalar": (lambda x: (x < 2.5, x == 2), lambda: [i64(*S)]),
    "where": (lambda c, x, y: torch.where(c, x, y), lambda: [boolean(*S), f32(*S), i64(5)]),
    "where_scalars": (lambda x: torch.where(x > 0, x, 0.5), lambda: [f32(*S)]),
    "masked_fill": (lambda x: x.masked_fill(x < 0, -1.0), lambda: [f32(*S)]),
    "clamp_nan": (lambda x: torch.clamp(x, -1.0, 2.0), lambda: [with_nan(*S)]),
    "clamp_tensor_nan": (
        lambda x, lo, hi: torch.clamp(x, lo, hi),
        lambda: [with_nan(*S), f32(5) - 2, f32(*S) + 2],
    ),
    "clamp_min_max_int": (
        lambda x: (torch.clamp_min(x, -2), torch.clamp_max(x, 3), x.clamp(min=0.5)),
        lambda: [i64(*S)],
    ),
    "relu_hardtanh_leaky": (
        lambda x: (torch.relu(x), F.hardtanh(x, -2.0, 2.0), F.leaky_relu(x, 0.2)),
        lambda: [with_nan(*S)],
    ),
    "gelu": (lambda x: (F.gelu(x), F.gelu(x, approximate="tanh")), lambda: [f32(*S)]),
    "sigmoid_silu": (lambda x: (torch.sigmoid(x), F.silu(x)), lambda: [f32(*S)]),
    "unary_real": (
        lambda x: (
            x.abs(),
            -x,
            x.exp(),
            x.expm1(),
            x.sin(),
            x.cos(),
            x.tan(),
            x.atan(),
            x.sinh(),
            x.cosh(),
            x.tanh(),
            x.asinh(),
            x.erf(),
            x.floor(),
            x.ceil(),
            x.round(),
            x.trunc(),
            x.sign(),
            x.reciprocal(),
        ),
        lambda: [with_nan(*S)],
    ),
    "unary_positive": (
        lambda x: (x.log(), x.log2(), x.log10(), x.log1p(), x.sqrt(), x.rsqrt(), x.acosh() * 0),
        lambda: [pos(*S) + 1],
    ),
    "unary_unit": (lambda x: (x.asin(), x.acos(), x.atanh()), lambda: [unit(*S)]),
    "round_half_even": (
        lambda x: x.round(),
        lambda: [torch.tensor([[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]])],
    ),
    "round_decimals": (
        lambda x: (x.round(decimals=2), x.round(decimals=-1)),
        lambda: [f32(*S) * 30],
    ),
    "unary_int": (
        lambda x: (x.abs(), -x, x.sign(), x.floor(), x.exp(), x.sqrt().nan_to_num(0.0)),
        lambda: [i64(*S)],
    ),
    "tests_float": (
        lambda x: (x.isnan(), x.isinf(), x.isfinite()),
        lambda: [torch.tensor([[1.0, float("nan"), float("inf"), -float("inf"), -0.0]])],
    ),
    "casts": (
        lambda x: (x.to(torch.int32), x.to(torch.bool), x.half(), x.bfloat16(), x.double()),
        lambda: [with_nan(*S).nan_to_num(0.5)],
    ),
    "cast_from_bool_int": (
        lambda b, i: (b.float(), b.to(torch.int8), i.to(torch.int16), i.float(), i.bool()),
        lambda: [boolean(*S), i64(*S)],
    ),
    "f16_arith": (
        lambda x, y: (x * y + 1, (x / y).exp(), torch.maximum(x, y), x.sigmoid()),
        lambda: [f32(*S).half(), f32(*S).half()],
    ),
    "bf16_mixed": (lambda x, y: (x + y, x * 2, x > y), lambda: [f32(*S).bfloat16(), f32(*S)]),
    "clone": (lambda x: x.clone() + 0, lambda: [f32(*S)]),
    "int8_wrap": (
        lambda x, y: x * y + x,
        lambda: [i64(*S).to(torch.int8) * 12, i64(*S).to(torch.int8)],
    ),
}

REDUCTIONS: dict[str, tuple[Callable, Callable[[], list]]] = {
    "sum_dims": (
        lambda x: (x.sum(), x.sum(1), x.sum((0, 2), keepdim=True), x.sum(-1, dtype=torch.float64)),
        lambda: [f32(3, 4, 5)],
    ),
    "sum_int_bool": (
        lambda i, b: (i.sum(1), b.sum(), i.to(torch.int32).sum(0)),
        lambda: [i64(3, 4), boolean(3, 4)],
    ),
    "sum_f16": (lambda x: (x.sum(1), x.sum()), lambda: [f32(3, 40).half()]),
    "mean": (
        lambda x: (x.mean(), x.mean(1), x.mean((0, 2), keepdim=True)),
        lambda: [f32(3, 4, 5)],
    ),
    "mean_bf16": (lambda x: x.mean(-1), lambda: [f32(4, 16).bfloat16()]),
    "mean_dtype": (lambda x: torch.mean(x, 1, dtype=torch.float64), lambda: [f32(3, 4)]),
    "prod": (
        lambda x, i: (x.prod(), x.prod(1), i.prod(0, keepdim=True)),
        lambda: [unit(3, 4) + 1, i64(3, 4, lo=-3, hi=4)],
    ),
    "amax_amin": (
        lambda x: (x.amax(1), x.amin((0, 2), keepdim=True), x.amax()),
        lambda: [f32(3, 4, 5)],
    ),
    "amax_nan": (lambda x: (x.amax(1), x.amin(0)), lambda: [with_nan(*S)]),
    "max_min_dim": (
        lambda x: (torch.max(x, 1), torch.min(x, 0, keepdim=True)),
        lambda: [f32(*S).round()],
    ),
    "max_dim_ties_int": (
        lambda x: (torch.max(x, 1), torch.min(x, 1)),
        lambda: [i64(4, 6, lo=-2, hi=2)],
    ),
    "max_dim_nan": (lambda x: torch.max(x, 1), lambda: [with_nan(*S)]),
    "max_all": (lambda x: (x.max(), x.min()), lambda: [f32(*S)]),
    "argmax_argmin": (
        lambda x: (x.argmax(), x.argmin(1), x.argmax(0, keepdim=True), x.argmin(keepdim=True)),
        lambda: [f32(3, 4).round()],
    ),
    "var_std": (
        lambda x: (
            x.var(1),
            x.std(0, keepdim=True),
            x.var(correction=0),
            x.std(),
            x.var(1, correction=2),
        ),
        lambda: [f32(4, 6)],
    ),
    "var_mean": (
        lambda x: (torch.var_mean(x, 1), torch.std_mean(x, (0, 2), correction=0)),
        lambda: [f32(3, 4, 5)],
    ),
    "var_single_element": (lambda x: x.var(1), lambda: [f32(3, 1)]),
    "var_f16": (lambda x: (x.var(1), x.std(1)), lambda: [f32(4, 32).half()]),
    "any_all": (
        lambda x, b: (x.any(), x.all(1), b.any(0, keepdim=True), b.all(), torch.any(x, (0, 1))),
        lambda: [i64(3, 4, lo=0, hi=3), boolean(3, 4)],
    ),
    "softmax": (lambda x: (F.softmax(x, -1), F.log_softmax(x, 0)), lambda: [f32(4, 7)]),
    "logsumexp": (lambda x: torch.logsumexp(x, 1), lambda: [f32(4, 7)]),
    "softmax_f16": (lambda x: (F.softmax(x, 0), F.log_softmax(x, -1)), lambda: [f32(4, 7).half()]),
    "layer_norm": (
        lambda x, w, b: (F.layer_norm(x, (5,), w, b), F.layer_norm(x, (4, 5), eps=1e-3)),
        lambda: [f32(3, 4, 5), f32(5), f32(5)],
    ),
    "layer_norm_bf16": (lambda x: F.layer_norm(x, (8,)), lambda: [f32(3, 8).bfloat16()]),
}

CASES = {
    **{f"pw_{k}": v for k, v in POINTWISE.items()},
    **{f"red_{k}": v for k, v in REDUCTIONS.items()},
}


@pytest.mark.parametrize("name", list(CASES))
def test_static(name):
    fn, inputs = CASES[name]
    check(fn, inputs())


DYNAMIC = [
    "pw_add_scalar_broadcast",
    "pw_div_floor_int",
    "pw_remainder_float",
    "pw_where",
    "pw_clamp_tensor_nan",
    "pw_casts",
    "red_sum_dims",
    "red_mean",
    "red_max_min_dim",
    "red_argmax_argmin",
    "red_var_mean",
    "red_any_all",
    "red_softmax",
    "red_softmax_f16",
    "red_layer_norm",
    "red_layer_norm_bf16",
]


@pytest.mark.parametrize("name", DYNAMIC)
def test_dynamic(name):
    fn, inputs = CASES[name]
    check(fn, inputs(), dynamic=True)


def test_size_as_scalar():
    """A size symbol used as a scalar operand (x / x.shape[1]) lowers as loop.index."""
    modules = check(lambda x: (x / x.shape[1], x.sum(1) / x.shape[1]), [f32(3, 6)], dynamic=True)
    assert "loop.index" in str(modules[0])


# ---- fallbacks ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fn", "inputs", "kernel"),
    [
        # unsigned integers are not computed in loop bodies
        (lambda x: x + 1, lambda: [torch.randint(0, 100, S, dtype=torch.uint8)], "aten.add.Tensor"),
        # float64 fmod has no exact loop form
        (lambda x: torch.fmod(x, 0.7), lambda: [f32(*S).double()], "aten.fmod.Scalar"),
        (
            lambda x: x.sum(1),
            lambda: [torch.randint(0, 9, S, dtype=torch.uint8)],
            "aten.sum.dim_IntList",
        ),
    ],
    ids=["uint8_add", "fmod_f64", "uint8_sum"],
)
def test_falls_back_to_aten(fn, inputs, kernel):
    modules = check(fn, inputs(), allowed_externs=[kernel])
    assert kernel in externs(modules[0])


# ---- models ---------------------------------------------------------------------

MODEL_NAMES = ["softmax", "log_softmax", "layernorm", "rmsnorm", "mlp", "cross_entropy"]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", MODEL_NAMES)
def test_model_lowers_and_matches_eager(name, dynamic):
    """Every pointwise/reduction op of the model lowers (only the ops ATen does
    better stay extern calls), and the loop-level module computes what eager does."""
    model, inputs = build(name)
    check(model, list(inputs), dynamic=dynamic, allowed_externs=EXTERN_BY_DESIGN)
