"""Pooling: ``max_pool2d_with_indices`` as a max reduction over the window.

Each output element reduces the [kh, kw] window of its input plane, read at
``oh * stride - padding + k * dilation``; positions in the padding are masked
and count as -inf (the lowest value of an integer type), so only real elements
win. The indices are the flat ``ih * W + iw`` ATen's kernels give: the first
maximum (an argmax over the same window), but the last NaN where the window
holds NaNs (ATen's loop takes every NaN it meets: a max over the window of
the positions of NaNs), and the first in-bounds point where every real
element is -inf (the argmax may then stop on a padding point, whose index
would be negative or past the row); a pointwise nest maps them back to the
input plane. An inference graph that
drops them never computes them (``convert-aten-to-loop`` erases unused
nests). ATen's kernels always compute both: ResNet-50's first pooling wrote
51 MB of int64 indices a call at batch 32, and read an NCHW copy of its
NHWC input.

Inductor lowers the op the same way (``_low_memory_max_pool2d_with_offsets``).
Unsupported shapes (not 4-D, dynamic window) stay ATen calls.
"""

from __future__ import annotations

import sympy
from xdsl.dialects import builtin

from coil.dialects import dtypes
from coil.dialects.aten import AtenOp
from coil.dialects.symbolic import to_expr
from coil.lowering.aten_to_loop.common import dtype_of, result_type, shape_of
from coil.lowering.body_builder import BodyBuilder, CannotLower, check_supported, is_float
from coil.lowering.convert_aten_to_loop import Lowerer, register


def _pair(value, default: list[int]) -> list[int]:
    value = list(value) if value else default
    if len(value) == 1:
        value = value * 2
    if len(value) != 2 or not all(isinstance(v, int) for v in value):
        raise CannotLower("a pooling window that is not two static ints")
    return value


def _lowest(b: BodyBuilder, dtype: builtin.Attribute):
    if is_float(dtype):
        return b.const(float("-inf"), dtype)
    if dtype == dtypes.i1:
        return b.const(False, dtype)
    width = dtype.width.data  # type: ignore[attr-defined]
    return b.const(-(2 ** (width - 1)), dtype)


@register("aten.max_pool2d_with_indices.default")
def _max_pool2d(lw: Lowerer, op: AtenOp):
    x = op.operands[0]
    shape = shape_of(x)
    if len(shape) != 4:
        raise CannotLower("max_pool2d of a tensor that is not 4-D")
    dtype = dtype_of(x)
    check_supported(dtype)
    kernel = _pair(op.arg("kernel_size"), [])
    stride = _pair(op.arg("stride"), kernel)
    padding = _pair(op.arg("padding"), [0, 0])
    dilation = _pair(op.arg("dilation"), [1, 1])
    out = result_type(op)
    n, c, oh, ow = out.shape
    height, width = (to_expr(s) for s in shape[2:])

    def window(b: BodyBuilder, idx: list[sympy.Symbol]):
        i0, i1, i2, i3, r0, r1 = idx
        ih = i2 * stride[0] - padding[0] + r0 * dilation[0]
        iw = i3 * stride[1] - padding[1] + r1 * dilation[1]
        conds = []
        for pos, size in ((ih, height), (iw, width)):
            zero = b.const(0, builtin.i64)
            conds.append(b.cmp("ge", b.index(pos), zero))
            conds.append(b.cmp("lt", b.index(sympy.expand(pos - size)), zero))
        mask = conds[0]
        for cond in conds[1:]:
            mask = b.andi(mask, cond)
        v = b.load(x, [i0, i1, ih, iw], mask=mask)
        return b.select(mask, v, _lowest(b, dtype))

    (values,) = lw.reduction("max", [n, c, oh, ow], kernel, dtype, window)
    (arg,) = lw.reduction("argmax", [n, c, oh, ow], kernel, dtypes.i64, window, dtype)
    last_nan = None
    if is_float(dtype):

        def nan_position(b: BodyBuilder, idx: list[sympy.Symbol]):
            # the window position r0 * kw + r1 of a NaN, else -1 (padding reads -inf)
            r0, r1 = idx[4:]
            v = window(b, idx)
            return b.select(b.isnan(v), b.index(r0 * kernel[1] + r1), b.const(-1, builtin.i64))

        (last_nan,) = lw.reduction("max", [n, c, oh, ow], kernel, dtypes.i64, nan_position)

    def flat_index(b: BodyBuilder, idx: list[sympy.Symbol]):
        i0, i1, i2, i3 = idx
        r = b.load(arg, [i0, i1, i2, i3])
        if last_nan is not None:
            nan_at = b.load(last_nan, [i0, i1, i2, i3])
            r = b.select(b.cmp("ge", nan_at, b.const(0, builtin.i64)), nan_at, r)
        kw = b.const(kernel[1], builtin.i64)
        r0, r1 = b.floordivsi(r, kw), b.remsi(r, kw)
        zero = b.const(0, builtin.i64)
        inside = None
        firsts = []
        for start, k, d, size in (
            (i2 * stride[0] - padding[0], r0, dilation[0], height),
            (i3 * stride[1] - padding[1], r1, dilation[1], width),
        ):
            origin = b.index(start)
            pos = b.add(origin, b.mul(k, b.const(d, builtin.i64)))
            ok = b.andi(b.cmp("ge", pos, zero), b.cmp("lt", pos, b.index(size)))
            inside = ok if inside is None else b.andi(inside, ok)
            # the window's first in-bounds position: the origin moved up by whole
            # dilation steps when it lies in the padding (as ATen's kernels start)
            steps = b.floordivsi(
                b.add(b.neg(origin), b.const(d - 1, builtin.i64)), b.const(d, builtin.i64)
            )
            moved = b.add(origin, b.mul(steps, b.const(d, builtin.i64)))
            firsts.append((pos, b.select(b.cmp("lt", origin, zero), moved, origin)))
        (ih, fh), (iw, fw) = firsts
        at = b.add(b.mul(ih, b.index(width)), iw)
        first = b.add(b.mul(fh, b.index(width)), fw)
        # Outside only when every real element is -inf (a padding point won the tie).
        return b.select(inside, at, first)

    indices = lw.pointwise([n, c, oh, ow], dtypes.i64, flat_index)
    return [values, indices]
