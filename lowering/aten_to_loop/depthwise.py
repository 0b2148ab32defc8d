"""Depthwise convolutions (one input channel per group, ``groups == C_in ==
C_out``) as coil's own reduction over the kernel window, where the backend
option ``gemm`` asks for Triton kernels (``gemm=triton``; ``extern`` and the
default keep cuDNN's): ``loop.reduction sum [N, C, H_out, W_out] [kh, kw]``
whose body reads the input pixel the window point covers (masked to 0 in the
padding) times the channel's weight, in f32, then a pointwise finish (bias,
rounding). As a reduction it fuses like one: the batch norm, activation and
residual that follow join it as its epilogue (``loop-fuse``), the producer of
its input may be inlined. Inductor's ``triton_depthwise_conv`` template is
the model (channels-last rows, per-channel weights, the window unrolled);
here the strategy's reduction tiles decide the shape of the kernel.
"""

from __future__ import annotations

import sympy

from coil.dialects import dtypes
from coil.dialects.aten import AtenOp
from coil.dialects.body_builder import BodyBuilder, CannotLower
from coil.dialects.symbolic import to_expr
from coil.lowering.aten_to_loop.common import result_type, shape_of, tensor_arg
from coil.lowering.aten_to_loop.data_movement import _all, _cmp_index
from coil.lowering.aten_to_loop.lowerer import Lowerer
from coil.lowering.aten_to_loop.pointwise import _normalize

FLOATS = (dtypes.f32, dtypes.f16, dtypes.bf16)


def _ints(op: AtenOp, name: str, n: int) -> list[int] | None:
    values = [_normalize(v) for v in op.arg(name) or ()]
    if len(values) == 1:
        values = values * n
    if len(values) != n or not all(isinstance(v, int) for v in values):
        return None
    return values


def is_depthwise(op: AtenOp) -> bool:
    """A 2-D convolution of ``groups == C_in == C_out`` over static channels
    and window, not transposed."""
    x, w = tensor_arg(op, "input"), tensor_arg(op, "weight")
    if x is None or w is None or len(shape_of(x)) != 4 or len(shape_of(w)) != 4:
        return False
    if op.arg("transposed"):
        return False
    c, one, kh, kw = (to_expr(s) for s in shape_of(w))
    groups = _normalize(op.arg("groups"))
    if not (c.is_Integer and kh.is_Integer and kw.is_Integer) or one != 1:
        return False
    if groups != int(c) or to_expr(shape_of(x)[1]) != c:
        return False
    return all(_ints(op, name, 2) is not None for name in ("stride", "padding", "dilation"))


def lower_depthwise(lw: Lowerer, op: AtenOp) -> list:
    """The reduction over the window and its finish (see the module doc)."""
    if lw.gemm != "triton":
        raise CannotLower("a depthwise convolution (cuDNN; gemm=triton takes it)")
    x, w, bias = tensor_arg(op, "input"), tensor_arg(op, "weight"), tensor_arg(op, "bias")
    out = result_type(op)
    if out.element_type not in FLOATS or x.type.element_type != out.element_type:
        raise CannotLower("a depthwise convolution of mixed or non-float types")
    stride, padding, dilation = (_ints(op, n, 2) for n in ("stride", "padding", "dilation"))
    _, _, kh, kw = (int(to_expr(s)) for s in shape_of(w))
    height, width = (to_expr(s) for s in shape_of(x)[2:])
    acc = dtypes.f32

    def window(bb: BodyBuilder, idx):
        n, c, h, wo, i, j = idx
        hi = h * stride[0] + i * dilation[0] - padding[0]
        wi = wo * stride[1] + j * dilation[1] - padding[1]
        conds = []
        if padding[0]:
            conds += [_cmp_index(bb, "ge", hi, 0), _cmp_index(bb, "lt", hi, height)]
        if padding[1]:
            conds += [_cmp_index(bb, "ge", wi, 0), _cmp_index(bb, "lt", wi, width)]
        mask = _all(bb, conds)
        xv = bb.cast(bb.load(x, [n, c, hi, wi], mask=mask), acc)
        v = bb.mul(xv, bb.cast(bb.load(w, [c, sympy.Integer(0), i, j]), acc))
        if mask is None:
            return v
        return bb.select(mask, v, bb.const(0.0, acc))

    shape = list(out.shape)
    (red,) = lw.reduction("sum", shape, [kh, kw], acc, window)
    if bias is None and out.element_type == acc:
        return [red]

    def finish(bb: BodyBuilder, idx):
        v = bb.load(red, list(idx))
        if bias is not None:
            v = bb.add(v, bb.cast(bb.load(bias, [idx[1]]), acc))
        return v

    return [lw.pointwise(shape, out.element_type, finish)]


__all__ = ["is_depthwise", "lower_depthwise"]
