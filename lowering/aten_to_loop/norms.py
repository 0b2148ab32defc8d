"""Normalizations lowered whole rather than through aten-decompose.

Inference batch norm is pointwise: each element reads its channel's running
statistics and affine parameters. It is lowered here as one nest, with
torch's decomposition's arithmetic, because tracing that decomposition needs
facts about the sizes that a symbolic shape does not carry: under
``dynamic=True`` its contiguity checks would add guards, aten-decompose kept
the op, and every batch norm of a conv net ran as an ATen kernel (a dynamic
ResNet-50 ran 53 of them a call, 331 launches against the static compile's
125, on an H100)."""

from __future__ import annotations

from xdsl.ir import SSAValue

from coil.dialects.aten import AtenOp
from coil.dialects.body_builder import BodyBuilder, CannotLower, compute_dtype, is_float
from coil.lowering.aten_to_loop.common import result_type, tensor_arg
from coil.lowering.aten_to_loop.lowerer import Lowerer, register


@register("aten._native_batch_norm_legit_no_training.default")
def _batch_norm_inference(lw: Lowerer, op: AtenOp):
    """``(x - mean) * (1 / sqrt(var + eps)) * weight + bias`` over channel dim 1,
    in f32 for reduced floats, as ``native_batch_norm_helper`` computes it. The
    saved mean and inverse std are the running mean and that inverse std where
    their type has the channels (CUDA), empty where it has none (the CPU)."""
    x = op.operands[0]
    weight, bias = tensor_arg(op, "weight"), tensor_arg(op, "bias")
    mean, var = tensor_arg(op, "running_mean"), tensor_arg(op, "running_var")
    eps = float(op.arg("eps"))
    out = result_type(op)
    if out.rank < 2:
        raise CannotLower("batch norm of a tensor without a channel dimension")
    compute = compute_dtype(out.element_type)
    if not is_float(compute):
        raise CannotLower("batch norm of a non-floating tensor")

    def invstd(b: BodyBuilder, c) -> SSAValue:
        v = b.cast(b.load(var, [c]), compute)
        return b.truediv(b.const(1.0, compute), b.math("sqrt", b.add(v, b.const(eps, compute))))

    def body(b: BodyBuilder, idx):
        c = idx[1]
        y = b.sub(b.cast(b.load(x, list(idx)), compute), b.cast(b.load(mean, [c]), compute))
        y = b.mul(y, invstd(b, c))
        if weight is not None:
            y = b.mul(y, b.cast(b.load(weight, [c]), compute))
        if bias is not None:
            y = b.add(y, b.cast(b.load(bias, [c]), compute))
        return y

    results = [lw.pointwise(out.shape, out.element_type, body)]
    saved = [
        (1, lambda b, idx: b.cast(b.load(mean, [idx[0]]), compute)),
        (2, lambda b, idx: invstd(b, idx[0])),
    ]
    for k, element in saved:
        t = result_type(op, k)
        if list(t.shape) == [0]:
            element = lambda b, idx: b.const(0.0, compute)  # noqa: E731 (no elements)
        results.append(lw.pointwise(t.shape, t.element_type, element))
    return results
