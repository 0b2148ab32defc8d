"""aten-decompose against the reference executor: every decomposition in the
default set, on OpInfo samples (static and symbolic sizes), computes what the
op computed; canonicalize keeps results too."""

from __future__ import annotations

import pytest
import torch
import torch.utils._pytree as pytree
from torch.fx.experimental.proxy_tensor import make_fx
from torch.testing._internal.common_methods_invocations import op_db

from coil.backend import run_pipeline
from coil.frontend.fx_importer import constant_inputs, import_graph
from coil.ir import parse_module, print_module
from coil.runtime.aten_executor import run_module
from coil.testing import sample_as_function
from coil.transforms.aten_decompose import DEFAULT_OPS, DecompositionFailed, decompose_op

# Which OpInfo exercises each decomposition (native_dropout: see test_models).
OPINFO_FOR = {
    "aten._softmax.default": "softmax",
    "aten._log_softmax.default": "log_softmax",
    "aten.native_layer_norm.default": "nn.functional.layer_norm",
    "aten.native_group_norm.default": "nn.functional.group_norm",
    "aten._native_batch_norm_legit.default": "nn.functional.batch_norm",
    "aten._native_batch_norm_legit_no_training.default": "nn.functional.batch_norm",
    "aten.native_batch_norm.default": "nn.functional.batch_norm",
    "aten.gelu.default": "nn.functional.gelu",
    "aten.silu.default": "nn.functional.silu",
    "aten.hardtanh.default": "nn.functional.hardtanh",
    "aten.leaky_relu.default": "nn.functional.leaky_relu",
    "aten.elu.default": "nn.functional.elu",
    "aten.logsumexp.default": "logsumexp",
    "aten.mse_loss.default": "nn.functional.mse_loss",
    "aten.nll_loss_forward.default": "nn.functional.nll_loss",
    "aten.embedding.default": "nn.functional.embedding",
}
# Ops of the default set no OpInfo sample here produces: native_dropout is
# random (test_models checks it statistically), the batch-norm variants are
# covered by the lit test and the conv+bn models.
NOT_PRODUCED = {
    "aten.native_dropout.default",
    "aten._native_batch_norm_legit.no_stats",
    "aten._native_batch_norm_legit_functional.default",
}


def test_every_default_decomposition_is_covered():
    assert set(DEFAULT_OPS) == set(OPINFO_FOR) | NOT_PRODUCED


def _graphs(opinfo_name: str, mode: str):
    (opinfo,) = [o for o in op_db if o.name == opinfo_name and not o.variant_test_name]
    for sample in list(opinfo.sample_inputs("cpu", torch.float32))[:4]:
        call, tensors = sample_as_function(opinfo.op, sample)
        try:
            # No decomposition table: the composites stay in the graph (coil's
            # table already removes some, e.g. silu, before aten-decompose sees them).
            gm = make_fx(torch.func.functionalize(call), tracing_mode=mode)(*tensors)
        except Exception:  # samples torch cannot trace symbolically
            continue
        yield gm, tensors


def _run(module, gm, tensors):
    inputs = [t.clone() for t in tensors]
    fn = module.body.block.first_op
    if len(fn.body.block.args) != len(tensors) + len(constant_inputs(module, gm)):
        # Symbolic traces add SymInt inputs: bind them from the tensors' sizes.
        pytest.skip("graph takes SymInt inputs")
    return run_module(module, [*inputs, *constant_inputs(module, gm)])


@pytest.mark.parametrize("mode", ["fake", "symbolic"])
@pytest.mark.parametrize("op_name", sorted(OPINFO_FOR))
def test_decomposition_matches_executor(op_name, mode):
    decomposed = 0
    for gm, tensors in _graphs(OPINFO_FOR[op_name], mode):
        module = import_graph(gm)
        if not any(op.name == op_name for op in module.walk()):
            continue
        after = parse_module(print_module(module))
        run_pipeline(after, "aten-decompose,canonicalize,cse,dce")
        kept = [op for op in after.walk() if op.name == op_name]
        for op in kept:
            # Only a decomposition that would specialize a symbolic size, or compute
            # a symbolic float (batch norm's n / (n - 1)), is refused.
            with pytest.raises(
                DecompositionFailed, match="specialize a symbolic size|tracing|symbolic float"
            ):
                decompose_op(op)
        before_out = _run(module, gm, tensors)
        after_out = _run(after, gm, tensors)
        for b, a in zip(pytree.tree_leaves(before_out), pytree.tree_leaves(after_out)):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)
        decomposed += 1
    if not decomposed:
        pytest.skip(f"no {mode} sample produced {op_name}")


def test_decompose_inside_a_live_dynamic_compile():
    """Under torch.compile, dynamo's tracing context and fake mode are active while
    the backend runs; the re-trace must still use the IR's size symbols."""
    import torch

    from coil.frontend.capture import aot_backend

    left: list[str] = []

    def compile_fw(gm, example_inputs):
        module = import_graph(gm, example_inputs)
        run_pipeline(module, "aten-decompose")
        left.extend(op.name for op in module.walk() if op.name.startswith("aten._"))
        return gm

    fn = torch.compile(
        lambda x: torch.softmax(x, -1), backend=aot_backend(compile_fw), dynamic=True
    )
    fn(torch.randn(8, 64))
    assert not left, f"not decomposed: {left}"
