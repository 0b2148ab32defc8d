"""Pooling as window gathers: max, average and adaptive pooling over 2 or 3
spatial dimensions, and their backwards (1-d pooling arrives as 2-d); and
the patch ops of nn.Unfold / nn.Fold (im2col, col2im), each the other's
backward, on the same window arithmetic.

Forward: each output element reduces a window of its input plane, read at
``o * stride - padding + r * dilation`` (adaptive pooling: from
``floor(o * I / O)`` up to ``ceil((o + 1) * I / O)``, over the largest such
window with the points past a window's end masked). Positions outside the
input are masked and count as -inf for a max (the lowest value of an integer
type) and 0 for a sum, so only real elements win or count. An average divides
the window sum by ATen's divisor (``divisor_override``; else the window
clipped to the padded input with ``count_include_pad``, or to the input
without), in f32 for reduced-precision floats.

Max pooling's indices are the flat ``(d * H + h) * W + w`` ATen's kernels
give: the first maximum (an argmax over the same window), but the last NaN
where the window holds NaNs (ATen's loop takes every NaN it meets: a max over
the window of the positions of NaNs), and the first in-bounds point where
every real element is -inf (the argmax may then stop on a padding point, whose
index would be negative or past the row); a pointwise nest maps them back to
the input plane. An inference graph that drops them never computes them
(``convert-aten-to-loop`` erases unused nests). ATen's kernels always
compute both: ResNet-50's first pooling wrote 51 MB of int64 indices a call at
batch 32, and read an NCHW copy of its NHWC input. A training graph's max
pooling arrives as Inductor's decomposition (``frontend/decompositions.py``):
``prims._low_memory_max_pool_with_offsets``, the max and the int8 window
position of ATen's index, which the forward saves, and
``prims._low_memory_max_pool_offsets_to_indices``, a pointwise map back to the
flat index, which ``loop-inline`` puts into the backward's gather.

Backward, as gathers (Inductor's ``max_pool2d_with_indices_backward`` and
``avg_pool2d_backward``; no scatter, no atomics): each input element sums,
over the few windows that can contain it (``ceil(((k - 1) * d + 1) / s)``
per dimension, from the first window that reaches it), the output gradient of
each window that does -- divided by the window's divisor for an average, and
only where the saved index names this element for a max. Adaptive pooling's
windows that contain input position ``h`` are ``floor(h * O / I)`` up to
``ceil((h + 1) * O / I)``.

Inductor lowers the forwards the same way (``_avg_poolnd``,
``_low_memory_max_pool_with_offsets``, ``_adaptive_avg_pool2d``); it calls
ATen for the adaptive backwards and the 3-d max backward, which are gathers
here too. Unsupported shapes (a dynamic window, an adaptive pool over
dynamic sizes, integer averages) stay ATen calls. Channels-last inputs are
read through their strides; the results get the layout eager gives them.

im2col is a pointwise gather (column matrix row ``(c*kh + i)*kw + j``, column
``bh*BW + bw`` reads ``x[c, bh*s - p + i*d, bw*s - p + j*d]``); col2im sums,
for each pixel, the column entries of the patch positions that cover it (the
same window arithmetic as a pool's backward, a dilation dividing the offset),
where ATen and torch's decomposition (an index_put with accumulate) add each
patch into the image. Both are kept whole by the decomposition table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import sympy
from xdsl.dialects import builtin
from xdsl.ir import Attribute, SSAValue

from coil.dialects import dtypes
from coil.dialects.aten import AtenOp
from coil.dialects.body_builder import (
    BodyBuilder,
    CannotLower,
    check_supported,
    compute_dtype,
    is_float,
)
from coil.dialects.symbolic import to_expr, torch_sympy
from coil.lowering.aten_to_loop.common import dtype_of, result_type, shape_of
from coil.lowering.aten_to_loop.lowerer import Lowerer, register

# ---- arguments ------------------------------------------------------------------------


def _ints(value: object, n: int, default: Sequence[int], what: str) -> list[int]:
    """A pooling argument as ``n`` static ints: an empty list or 0-default takes
    ``default``; one value repeats over the dimensions."""
    if value is None or (isinstance(value, list | tuple) and not value):
        value = list(default)
    if not isinstance(value, list | tuple):
        value = [value]
    out = []
    for v in value:
        e = to_expr(v) if not isinstance(v, int) else v
        if isinstance(e, sympy.Expr):
            if not e.is_Integer:
                raise CannotLower(f"a pooling {what} that is not static")
            e = int(e)
        out.append(e)
    if len(out) == 1:
        out = out * n
    if len(out) != n:
        raise CannotLower(f"a pooling {what} of {len(out)} values for {n} dimensions")
    return out


def _spatial(x: SSAValue, n: int) -> tuple[int, list[sympy.Expr]]:
    """The number of leading (batch, channel) dims and the ``n`` spatial sizes."""
    shape = shape_of(x)
    if len(shape) not in (n + 1, n + 2):
        raise CannotLower(f"{n}-d pooling of a {len(shape)}-d tensor")
    return len(shape) - n, [to_expr(s) for s in shape[len(shape) - n :]]


def _static(values: Sequence[sympy.Expr], what: str) -> list[int]:
    if not all(v.is_Integer for v in values):
        raise CannotLower(f"{what} over dynamic sizes")
    return [int(v) for v in values]


def _float_dtype(x: SSAValue) -> Attribute:
    dtype = dtype_of(x)
    check_supported(dtype)
    if not is_float(dtype):
        raise CannotLower(f"an average of {dtypes.name_of(dtype)} values")
    return dtype


def _floordiv(a: sympy.Expr, b: int) -> sympy.Expr:
    return torch_sympy().FloorDiv(a, b) if b != 1 else a


def _floordiv_signed(a: sympy.Expr, b: int, low: int) -> sympy.Expr:
    """``floor(a / b)`` for ``a >= low`` (``low`` may be negative): index math
    divides nonnegative values only, so the numerator is shifted up by whole
    multiples of ``b`` first."""
    shift = max(0, -(low // b))
    return sympy.expand(_floordiv(sympy.expand(a + shift * b), b) - shift)


# ---- body helpers -----------------------------------------------------------------------


def _nonneg(b: BodyBuilder, expr: sympy.Expr) -> SSAValue:
    """``expr >= 0`` for an index expression, as an i1."""
    return b.cmp("ge", b.index(sympy.expand(expr)), b.const(0, builtin.i64))


def _all(b: BodyBuilder, conds: Sequence[SSAValue]) -> SSAValue | None:
    out = None
    for c in conds:
        out = c if out is None else b.andi(out, c)
    return out


def _lowest(b: BodyBuilder, dtype: Attribute) -> SSAValue:
    if is_float(dtype):
        return b.const(float("-inf"), dtype)
    if dtype == dtypes.i1:
        return b.const(False, dtype)
    width = dtype.width.data  # type: ignore[attr-defined]
    return b.const(-(2 ** (width - 1)), dtype)


def _flat(sizes: Sequence[sympy.Expr], positions: Sequence[sympy.Expr]) -> sympy.Expr:
    """Row-major flat index of ``positions`` in a plane of ``sizes``."""
    flat = sympy.Integer(0)
    for size, pos in zip(sizes, positions):
        flat = flat * size + pos
    return sympy.expand(flat)


# ---- windows --------------------------------------------------------------------------


@dataclass
class _Windows:
    """The windows of a pooling: output position ``o`` along spatial dim ``k``
    reads input positions ``origin(k, o) + r * dilation[k]`` for ``r`` in
    ``[0, extent[k])``, those past ``end(k, o)`` (adaptive windows shorter than
    the largest) or outside ``[0, size)`` masked."""

    sizes: list[sympy.Expr]  # input spatial sizes
    out_sizes: list[sympy.Expr]  # output spatial sizes
    extent: list[int]  # the reduction range of each dim
    origin: Callable[[int, sympy.Expr], sympy.Expr]
    dilation: list[int]
    end: Callable[[int, sympy.Expr], sympy.Expr] | None = None
    low_mask: list[bool] | None = None  # a position may fall below 0
    high_mask: list[bool] | None = None  # a position may reach the size

    def positions(self, outs: Sequence[sympy.Expr], rs: Sequence[sympy.Expr]) -> list[sympy.Expr]:
        return [
            sympy.expand(self.origin(k, o) + r * self.dilation[k])
            for k, (o, r) in enumerate(zip(outs, rs))
        ]

    def mask(
        self, b: BodyBuilder, outs: Sequence[sympy.Expr], rs: Sequence[sympy.Expr]
    ) -> SSAValue | None:
        conds = []
        for k, (o, pos) in enumerate(zip(outs, self.positions(outs, rs))):
            if self.low_mask and self.low_mask[k]:
                conds.append(_nonneg(b, pos))
            if self.high_mask and self.high_mask[k]:
                conds.append(_nonneg(b, self.sizes[k] - 1 - pos))
            if self.end is not None:
                conds.append(_nonneg(b, self.end(k, o) - 1 - pos))
        return _all(b, conds)


def _strided_windows(
    sizes: list[sympy.Expr],
    out_sizes: list[sympy.Expr],
    kernel: list[int],
    stride: list[int],
    padding: list[int],
    dilation: list[int],
) -> _Windows:
    high = []
    for size, out, k, s, p, d in zip(sizes, out_sizes, kernel, stride, padding, dilation):
        last = sympy.expand((out - 1) * s - p + (k - 1) * d)
        reach = sympy.expand(last - size)
        # A window may reach past the input: padding, ceil_mode, or sizes not known.
        high.append(not (reach.is_number and reach < 0))
    return _Windows(
        sizes,
        out_sizes,
        list(kernel),
        lambda k, o: o * stride[k] - padding[k],
        list(dilation),
        low_mask=[p > 0 for p in padding],
        high_mask=high,
    )


def _adaptive_start(o: sympy.Expr, size: int, out: int) -> sympy.Expr:
    return _floordiv(o * size, out)


def _adaptive_end(o: sympy.Expr, size: int, out: int) -> sympy.Expr:
    return _floordiv((o + 1) * size + out - 1, out)


def _adaptive_windows(sizes: list[int], out_sizes: list[int]) -> _Windows:
    extent, uneven = [], False
    for size, out in zip(sizes, out_sizes):
        lengths = {(((o + 1) * size + out - 1) // out) - (o * size // out) for o in range(out)}
        extent.append(max(lengths))
        uneven |= len(lengths) > 1
    sz = [sympy.Integer(s) for s in sizes]
    return _Windows(
        sz,
        [sympy.Integer(s) for s in out_sizes],
        extent,
        lambda k, o: _adaptive_start(o, sizes[k], out_sizes[k]),
        [1] * len(sizes),
        end=(lambda k, o: _adaptive_end(o, sizes[k], out_sizes[k])) if uneven else None,
    )


def _window_reduce(
    lw: Lowerer,
    kind: str,
    x: SSAValue,
    prefix: int,
    win: _Windows,
    out_shape: Sequence,
    result_dtype: Attribute,
    fill: Callable[[BodyBuilder], SSAValue],
    value: Callable[[BodyBuilder, SSAValue], SSAValue] = lambda b, v: v,
    value_dtype: Attribute | None = None,
) -> SSAValue:
    """A ``kind`` reduction of ``value(x)`` over each output's window; masked
    points are ``fill``."""
    n = len(win.sizes)
    rank = len(out_shape)

    def body(b: BodyBuilder, idx: list[sympy.Symbol]):
        outs, rs = idx[prefix:rank], idx[rank:]
        mask = win.mask(b, outs, rs)
        v = value(b, b.load(x, [*idx[:prefix], *win.positions(outs, rs)], mask=mask))
        return v if mask is None else b.select(mask, v, fill(b))

    assert len(win.extent) == n
    (red,) = lw.reduction(kind, list(out_shape), win.extent, result_dtype, body, value_dtype)
    return red


# ---- max pooling ----------------------------------------------------------------------


def _window_argmax(
    lw: Lowerer, x: SSAValue, prefix: int, win: _Windows, out_shape: Sequence
) -> tuple[SSAValue, SSAValue]:
    """The window max and the row-major window position ``r`` of ATen's choice
    among its points: the first maximum, or the last NaN (module doc)."""
    dtype = dtype_of(x)
    rank = len(out_shape)

    def window(b: BodyBuilder, idx: list[sympy.Symbol]):
        outs, rs = idx[prefix:rank], idx[rank:]
        mask = win.mask(b, outs, rs)
        v = b.load(x, [*idx[:prefix], *win.positions(outs, rs)], mask=mask)
        return v if mask is None else b.select(mask, v, _lowest(b, dtype))

    values = lw.reduction("max", list(out_shape), win.extent, dtype, window)[0]
    arg = lw.reduction("argmax", list(out_shape), win.extent, dtypes.i64, window, dtype)[0]
    if not is_float(dtype):
        return values, arg

    def nan_position(b: BodyBuilder, idx: list[sympy.Symbol]):
        # the window position of a NaN, else -1 (masked points read -inf)
        flat = _flat([sympy.Integer(e) for e in win.extent], idx[rank:])
        v = window(b, idx)
        return b.select(b.isnan(v), b.index(flat), b.const(-1, builtin.i64))

    last_nan = lw.reduction("max", list(out_shape), win.extent, dtypes.i64, nan_position)[0]

    def chosen(b: BodyBuilder, idx: list[sympy.Symbol]):
        r = b.load(arg, list(idx))
        nan_at = b.load(last_nan, list(idx))
        return b.select(b.cmp("ge", nan_at, b.const(0, builtin.i64)), nan_at, r)

    return values, lw.pointwise(list(out_shape), dtypes.i64, chosen)


@dataclass
class _Choice:
    """Where the window position ``r`` of output ``idx`` lies, per spatial dim:
    the window's ``origins``, the input ``positions`` ``r`` names, the
    window's ``firsts`` in-bounds positions, and ``inside`` (i1, or None where
    no position can fall outside)."""

    origins: list[SSAValue]
    positions: list[SSAValue]
    firsts: list[SSAValue]
    inside: SSAValue | None


def _choice(
    b: BodyBuilder, win: _Windows, outs: Sequence[sympy.Expr], r: SSAValue, bounds: bool = True
) -> _Choice:
    """``bounds=False``: the positions alone (``firsts`` are the positions,
    ``inside`` None)."""
    n = len(win.sizes)
    steps = [math.prod(win.extent[k + 1 :]) for k in range(n)]  # r -> (r0, r1, ...)
    zero = b.const(0, builtin.i64)
    origins, positions, firsts, inside = [], [], [], None
    for k in range(n):
        rk = r
        if steps[k] != 1:
            rk = b.floordivsi(rk, b.const(steps[k], builtin.i64))
        if k > 0:
            rk = b.remsi(rk, b.const(win.extent[k], builtin.i64))
        origin = b.index(sympy.expand(win.origin(k, outs[k])))
        d = win.dilation[k]
        pos = b.add(origin, b.mul(rk, b.const(d, builtin.i64))) if d != 1 else b.add(origin, rk)
        origins.append(origin)
        positions.append(pos)
        if not (bounds and win.low_mask and (win.low_mask[k] or win.high_mask[k])):
            firsts.append(pos)
            continue
        ok = b.andi(b.cmp("ge", pos, zero), b.cmp("lt", pos, b.index(win.sizes[k])))
        inside = ok if inside is None else b.andi(inside, ok)
        # the window's first in-bounds position: the origin moved up by whole
        # dilation steps when it lies in the padding (as ATen's kernels start)
        if d == 1:
            moved = zero
        else:
            step = b.const(d, builtin.i64)
            up = b.floordivsi(b.add(b.neg(origin), b.const(d - 1, builtin.i64)), step)
            moved = b.add(origin, b.mul(up, step))
        firsts.append(b.select(b.cmp("lt", origin, zero), moved, origin))
    return _Choice(origins, positions, firsts, inside)


def _flatten(b: BodyBuilder, values: Sequence[SSAValue], sizes: Sequence[SSAValue]) -> SSAValue:
    out = values[0]
    for v, size in zip(values[1:], sizes[1:]):
        out = b.add(b.mul(out, size), v)
    return out


def _window_max_with_indices(
    lw: Lowerer, x: SSAValue, prefix: int, win: _Windows, out_shape: Sequence
) -> tuple[SSAValue, SSAValue]:
    """The window max and ATen's flat input index of it (see the module doc)."""
    values, r_of = _window_argmax(lw, x, prefix, win, out_shape)
    rank = len(out_shape)

    def flat_index(b: BodyBuilder, idx: list[sympy.Symbol]):
        c = _choice(b, win, idx[prefix:rank], b.load(r_of, list(idx)))
        sizes = [b.index(s) for s in win.sizes]
        at = _flatten(b, c.positions, sizes)
        if c.inside is None:
            return at
        # Outside only when every real element is -inf (a padding point won the tie).
        return b.select(c.inside, at, _flatten(b, c.firsts, sizes))

    return values, lw.pointwise(list(out_shape), dtypes.i64, flat_index)


def _window_max_with_offsets(
    lw: Lowerer, x: SSAValue, prefix: int, win: _Windows, out_shape: Sequence
) -> tuple[SSAValue, SSAValue]:
    """The window max and, as int8, the window position of ATen's index (what
    ``prims._low_memory_max_pool_with_offsets`` returns): the flat index
    :func:`_window_max_with_indices` gives is ``offsets_to_indices`` of it."""
    values, r_of = _window_argmax(lw, x, prefix, win, out_shape)
    rank = len(out_shape)
    n = len(win.sizes)

    def offset(b: BodyBuilder, idx: list[sympy.Symbol]):
        r = b.load(r_of, list(idx))
        c = _choice(b, win, idx[prefix:rank], r)
        if c.inside is not None:
            # the first in-bounds point's window position, where a padding point won
            first = []
            for k in range(n):
                rk = b.sub(c.firsts[k], c.origins[k])
                if win.dilation[k] != 1:
                    rk = b.floordivsi(rk, b.const(win.dilation[k], builtin.i64))
                first.append(rk)
            extents = [b.const(e, builtin.i64) for e in win.extent]
            r = b.select(c.inside, r, _flatten(b, first, extents))
        return b.cast(r, dtypes.i8)

    return values, lw.pointwise(list(out_shape), dtypes.i8, offset)


def _pool_args(op: AtenOp, n: int) -> tuple[list[int], list[int], list[int], list[int]]:
    """A max pooling's kernel, stride, padding and dilation as static ints."""
    kernel = _ints(op.arg("kernel_size"), n, [], "window")
    stride = _ints(op.arg("stride"), n, kernel, "stride")
    padding = _ints(op.arg("padding"), n, [0] * n, "padding")
    dilation = _ints(op.arg("dilation"), n, [1] * n, "dilation")
    return kernel, stride, padding, dilation


def _lower_max_pool(n: int | None, offsets: bool = False):
    """``n``: the spatial rank (None: the kernel's length, for the prims)."""

    def lower(lw: Lowerer, op: AtenOp):
        x = op.operands[0]
        check_supported(dtype_of(x))
        rank = n if n is not None else len(op.arg("kernel_size"))
        prefix, sizes = _spatial(x, rank)
        kernel, stride, padding, dilation = _pool_args(op, rank)
        if offsets and math.prod(kernel) > 127:
            raise CannotLower("a window of more than 127 points (int8 offsets)")
        out = result_type(op)
        out_sizes = [to_expr(s) for s in out.shape[prefix:]]
        win = _strided_windows(sizes, out_sizes, kernel, stride, padding, dilation)
        pool = _window_max_with_offsets if offsets else _window_max_with_indices
        return list(pool(lw, x, prefix, win, out.shape))

    return lower


register("aten.max_pool2d_with_indices.default")(_lower_max_pool(2))
register("aten.max_pool3d_with_indices.default")(_lower_max_pool(3))
register("prims._low_memory_max_pool_with_offsets.default")(_lower_max_pool(None, offsets=True))


@register("prims._low_memory_max_pool_offsets_to_indices.default")
def _offsets_to_indices(lw: Lowerer, op: AtenOp):
    """Each window position back to the flat input index it names (pointwise;
    a max-pool backward that reads the result loads the offsets)."""
    offsets = op.operands[0]
    n = len(op.arg("kernel_size"))
    kernel, stride, padding, dilation = _pool_args(op, n)
    sizes = [to_expr(s) for s in op.arg("input_size")]
    out = result_type(op)
    prefix = len(out.shape) - n
    out_sizes = [to_expr(s) for s in out.shape[prefix:]]
    win = _strided_windows(sizes, out_sizes, kernel, stride, padding, dilation)

    def flat_index(b: BodyBuilder, idx: list[sympy.Symbol]):
        r = b.cast(b.load(offsets, list(idx)), builtin.i64)
        c = _choice(b, win, idx[prefix:], r, bounds=False)
        return _flatten(b, c.positions, [b.index(s) for s in sizes])

    return [lw.pointwise(list(out.shape), dtypes.i64, flat_index)]


def _lower_adaptive_max_pool(n: int):
    def lower(lw: Lowerer, op: AtenOp):
        x = op.operands[0]
        check_supported(dtype_of(x))
        prefix, sizes = _spatial(x, n)
        out = result_type(op)
        sizes_i = _static(sizes, "adaptive pooling")
        outs_i = _static([to_expr(s) for s in out.shape[prefix:]], "adaptive pooling")
        if 0 in outs_i or 0 in sizes_i:
            raise CannotLower("adaptive pooling of an empty plane")
        win = _adaptive_windows(sizes_i, outs_i)
        return list(_window_max_with_indices(lw, x, prefix, win, out.shape))

    return lower


register("aten.adaptive_max_pool2d.default")(_lower_adaptive_max_pool(2))
register("aten.adaptive_max_pool3d.default")(_lower_adaptive_max_pool(3))


# ---- average pooling ------------------------------------------------------------------


def _avg_divisor(
    b: BodyBuilder,
    outs: Sequence[sympy.Expr],
    sizes: Sequence[sympy.Expr],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    count_include_pad: bool,
    divisor_override: object,
    static_full: bool,
    dtype: Attribute,
) -> SSAValue:
    """ATen's divisor of the window at output ``outs`` (avg_pool2d's CPU and
    CUDA kernels): the override; else the window clipped to the padded input
    (``count_include_pad``) or to the input."""
    if divisor_override is not None:
        return b.const(int(to_expr(divisor_override)), dtype)
    if static_full:
        return b.const(math.prod(kernel), dtype)
    count = sympy.Integer(1)
    for o, size, k, s, p in zip(outs, sizes, kernel, stride, padding):
        start = o * s - p
        end = sympy.Min(start + k, size + p)
        if not count_include_pad:
            start, end = sympy.Max(start, 0), sympy.Min(end, size)
        count = count * (end - start)
    return b.cast(b.index(count), dtype)


def _avg_args(op: AtenOp, n: int, sizes, out_sizes):
    kernel = _ints(op.arg("kernel_size"), n, [], "window")
    stride = _ints(op.arg("stride"), n, kernel, "stride")
    padding = _ints(op.arg("padding"), n, [0] * n, "padding")
    include = bool(op.arg("count_include_pad"))
    override = op.arg("divisor_override")
    win = _strided_windows(sizes, out_sizes, kernel, stride, padding, [1] * n)
    # The divisor is the window's size where every window lies inside the
    # input, or (count_include_pad) inside the padded input: no ceil_mode
    # window reaches past the padding.
    full = not any(win.low_mask) and not any(win.high_mask)
    if include and not full:
        full = True
        for size, out, k, s, p in zip(sizes, out_sizes, kernel, stride, padding):
            past = sympy.expand((out - 1) * s - p + k - (size + p))
            full &= bool(past.is_number and past <= 0)
    return kernel, stride, padding, include, override, win, full


def _lower_avg_pool(n: int):
    def lower(lw: Lowerer, op: AtenOp):
        x = op.operands[0]
        dtype = _float_dtype(x)
        acc = compute_dtype(dtype)
        prefix, sizes = _spatial(x, n)
        out = result_type(op)
        rank = len(out.shape)
        out_sizes = [to_expr(s) for s in out.shape[prefix:]]
        kernel, stride, padding, include, override, win, full = _avg_args(op, n, sizes, out_sizes)
        total = _window_reduce(
            lw,
            "sum",
            x,
            prefix,
            win,
            out.shape,
            acc,
            lambda b: b.const(0, acc),
            lambda b, v: b.cast(v, acc),
        )

        def divide(b: BodyBuilder, idx):
            d = _avg_divisor(
                b, idx[prefix:rank], sizes, kernel, stride, padding, include, override, full, acc
            )
            return b.truediv(b.load(total, list(idx)), d)

        return [lw.pointwise(out.shape, dtype, divide)]

    return lower


register("aten.avg_pool2d.default")(_lower_avg_pool(2))
register("aten.avg_pool3d.default")(_lower_avg_pool(3))


def _lower_adaptive_avg_pool(n: int):
    def lower(lw: Lowerer, op: AtenOp):
        x = op.operands[0]
        dtype = _float_dtype(x)
        acc = compute_dtype(dtype)
        prefix, sizes = _spatial(x, n)
        out = result_type(op)
        rank = len(out.shape)
        sizes_i = _static(sizes, "adaptive pooling")
        outs_i = _static([to_expr(s) for s in out.shape[prefix:]], "adaptive pooling")
        if 0 in outs_i or 0 in sizes_i:
            raise CannotLower("adaptive pooling of an empty plane")
        win = _adaptive_windows(sizes_i, outs_i)
        total = _window_reduce(
            lw,
            "sum",
            x,
            prefix,
            win,
            out.shape,
            acc,
            lambda b: b.const(0, acc),
            lambda b, v: b.cast(v, acc),
        )

        def divide(b: BodyBuilder, idx):
            count = sympy.Integer(1)
            for k, o in enumerate(idx[prefix:rank]):
                s, m = sizes_i[k], outs_i[k]
                count *= _adaptive_end(o, s, m) - _adaptive_start(o, s, m)
            count = sympy.expand(count)
            d = b.const(int(count), acc) if count.is_Integer else b.cast(b.index(count), acc)
            return b.truediv(b.load(total, list(idx)), d)

        return [lw.pointwise(out.shape, dtype, divide)]

    return lower


register("aten._adaptive_avg_pool2d.default")(_lower_adaptive_avg_pool(2))
register("aten._adaptive_avg_pool3d.default")(_lower_adaptive_avg_pool(3))


# ---- backwards: gathers over the windows that contain each input element ---------------


@dataclass
class _Covers:
    """Which windows contain input position ``h`` along each spatial dim:
    ``first(k, h) + r`` for ``r`` in ``[0, extent[k])``, those outside
    ``[0, out_size)`` or (``contains``) not reaching ``h`` masked."""

    extent: list[int]
    first: Callable[[int, sympy.Expr], sympy.Expr]
    out_sizes: list[sympy.Expr]
    low_mask: list[bool]  # a candidate may fall below 0
    high_mask: bool  # a candidate may reach the output size
    contains: Callable[[int, sympy.Expr, sympy.Expr], sympy.Expr | None] | None = None
    # (k, h, o) -> an expression >= 0 where window o contains h (beyond
    # first()), None where every candidate does

    def windows(self, hs: Sequence[sympy.Expr], rs: Sequence[sympy.Expr]) -> list[sympy.Expr]:
        return [sympy.expand(self.first(k, h) + r) for k, (h, r) in enumerate(zip(hs, rs))]

    def mask(self, b: BodyBuilder, hs, rs) -> SSAValue | None:
        conds = []
        for k, (h, o) in enumerate(zip(hs, self.windows(hs, rs))):
            if self.low_mask[k]:
                conds.append(_nonneg(b, o))
            if self.high_mask:
                conds.append(_nonneg(b, self.out_sizes[k] - 1 - o))
            reach = self.contains(k, h, o) if self.contains is not None else None
            if reach is not None:
                conds.append(_nonneg(b, reach))
        return _all(b, conds)


def _strided_covers(
    sizes: list[sympy.Expr],
    out_sizes: list[sympy.Expr],
    kernel: list[int],
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    check_reach: bool,
) -> _Covers:
    """Window ``o`` spans ``[o*s - p, o*s - p + (k-1)*d]``: it reaches ``h`` from
    ``o = ceil((h + p - (k-1)*d) / s)`` to ``floor((h + p) / s)``."""
    span = [(k - 1) * d for k, d in zip(kernel, dilation)]
    extent = [sp // s + 1 for sp, s in zip(span, stride)]

    def first(k: int, h: sympy.Expr) -> sympy.Expr:
        s = stride[k]
        return _floordiv_signed(h + padding[k] - span[k] + s - 1, s, -span[k] + s - 1)

    # The first candidate, ceil((h + p - span) / s), is negative only where
    # h + p - span <= -s (at h = 0 the lowest).
    low = [sp - p >= s for sp, p, s in zip(span, padding, stride)]
    contains = None
    if check_reach:

        def contains(k: int, h: sympy.Expr, o: sympy.Expr) -> sympy.Expr | None:
            # Where s divides span + 1, exactly `extent` windows reach each h.
            if (span[k] + 1) % stride[k] == 0:
                return None
            return h + padding[k] - o * stride[k]

    # The last input position's last candidate window: past the output where
    # trailing positions belong to no window, or sizes are dynamic.
    high = False
    for k, (size, out) in enumerate(zip(sizes, out_sizes)):
        past = sympy.expand(first(k, size - 1) + extent[k] - out)
        high |= not (past.is_number and past <= 0)
    return _Covers(extent, first, out_sizes, low, high, contains)


def _adaptive_covers(sizes: list[int], out_sizes: list[int]) -> _Covers:
    """Adaptive window ``o`` spans ``[floor(o*I/O), ceil((o+1)*I/O))``: the
    windows containing ``h`` are ``floor(h*O/I)`` up to ``ceil((h+1)*O/I)``."""
    extent = []
    for size, out in zip(sizes, out_sizes):
        extent.append(
            max(((h + 1) * out + size - 1) // size - (h * out) // size for h in range(size))
        )

    def first(k: int, h: sympy.Expr) -> sympy.Expr:
        return _floordiv(h * out_sizes[k], sizes[k])

    def contains(k: int, h: sympy.Expr, o: sympy.Expr) -> sympy.Expr:
        size, out = sizes[k], out_sizes[k]
        return _floordiv((h + 1) * out + size - 1, size) - 1 - o

    # ceil((h + 1) * O / I) <= O: the windows that reach h are all real.
    return _Covers(
        extent, first, [sympy.Integer(o) for o in out_sizes], [False] * len(sizes), False, contains
    )


def _gather_windows(
    lw: Lowerer,
    grad: SSAValue,
    x_shape: Sequence,
    prefix: int,
    cov: _Covers,
    acc: Attribute,
    dtype: Attribute,
    term: Callable[[BodyBuilder, list, list, SSAValue, SSAValue | None], SSAValue],
) -> SSAValue:
    """``sum`` over the windows containing each input element of
    ``term(b, index, windows, grad_value, mask)`` (computed in ``acc``), then
    cast to ``dtype`` in a pointwise epilogue."""
    rank = len(x_shape)

    def body(b: BodyBuilder, idx: list[sympy.Symbol]):
        hs, rs = idx[prefix:rank], idx[rank:]
        mask = cov.mask(b, hs, rs)
        windows = cov.windows(hs, rs)
        g = b.cast(b.load(grad, [*idx[:prefix], *windows], mask=mask), acc)
        v = term(b, list(idx[:rank]), windows, g, mask)
        return v if mask is None else b.select(mask, v, b.const(0, acc))

    (total,) = lw.reduction("sum", list(x_shape), cov.extent, acc, body)
    if acc == dtype:
        return total
    return lw.pointwise(list(x_shape), dtype, lambda b, idx: b.load(total, list(idx)))


def _max_backward(
    lw: Lowerer, op: AtenOp, prefix: int, cov: _Covers, sizes: Sequence[sympy.Expr]
) -> list[SSAValue]:
    grad, indices = op.operands[0], op.operands[-1]
    out = result_type(op)
    dtype = out.element_type
    check_supported(dtype)
    if not is_float(dtype):
        raise CannotLower(f"a max-pool gradient of {dtypes.name_of(dtype)} values")
    acc = compute_dtype(dtype)

    def term(b: BodyBuilder, index, windows, g, mask):
        saved = b.cast(b.load(indices, [*index[:prefix], *windows], mask=mask), builtin.i64)
        me = b.index(_flat(sizes, index[prefix:]))
        return b.select(b.cmp("eq", saved, me), g, b.const(0, acc))

    return [_gather_windows(lw, grad, out.shape, prefix, cov, acc, dtype, term)]


def _lower_max_pool_backward(n: int):
    def lower(lw: Lowerer, op: AtenOp):
        x = op.operands[1]
        prefix, sizes = _spatial(x, n)
        kernel, stride, padding, dilation = _pool_args(op, n)
        out_sizes = [to_expr(s) for s in shape_of(op.operands[0])[prefix:]]
        # The saved index names the element only in windows that contain it.
        cov = _strided_covers(
            sizes, out_sizes, kernel, stride, padding, dilation, check_reach=False
        )
        return _max_backward(lw, op, prefix, cov, sizes)

    return lower


register("aten.max_pool2d_with_indices_backward.default")(_lower_max_pool_backward(2))
register("aten.max_pool3d_with_indices_backward.default")(_lower_max_pool_backward(3))


def _lower_adaptive_max_pool_backward(n: int):
    def lower(lw: Lowerer, op: AtenOp):
        x = op.operands[1]
        prefix, sizes = _spatial(x, n)
        sizes_i = _static(sizes, "adaptive pooling")
        outs_i = _static(
            [to_expr(s) for s in shape_of(op.operands[0])[prefix:]], "adaptive pooling"
        )
        if 0 in outs_i or 0 in sizes_i:
            raise CannotLower("adaptive pooling of an empty plane")
        cov = _adaptive_covers(sizes_i, outs_i)
        return _max_backward(lw, op, prefix, cov, sizes)

    return lower


register("aten.adaptive_max_pool2d_backward.default")(_lower_adaptive_max_pool_backward(2))
register("aten.adaptive_max_pool3d_backward.default")(_lower_adaptive_max_pool_backward(3))


def _lower_avg_pool_backward(n: int):
    def lower(lw: Lowerer, op: AtenOp):
        grad, x = op.operands[0], op.operands[1]
        dtype = _float_dtype(x)
        acc = compute_dtype(dtype)
        prefix, sizes = _spatial(x, n)
        out_sizes = [to_expr(s) for s in shape_of(grad)[prefix:]]
        kernel, stride, padding, include, override, win, full = _avg_args(op, n, sizes, out_sizes)
        cov = _strided_covers(sizes, out_sizes, kernel, stride, padding, [1] * n, check_reach=True)

        def term(b: BodyBuilder, index, windows, g, mask):
            d = _avg_divisor(
                b, windows, sizes, kernel, stride, padding, include, override, full, acc
            )
            return b.truediv(g, d)

        return [_gather_windows(lw, grad, shape_of(x), prefix, cov, acc, dtype, term)]

    return lower


register("aten.avg_pool2d_backward.default")(_lower_avg_pool_backward(2))
register("aten.avg_pool3d_backward.default")(_lower_avg_pool_backward(3))


def _lower_adaptive_avg_pool_backward(n: int):
    def lower(lw: Lowerer, op: AtenOp):
        grad, x = op.operands[0], op.operands[1]
        dtype = _float_dtype(x)
        acc = compute_dtype(dtype)
        prefix, sizes = _spatial(x, n)
        sizes_i = _static(sizes, "adaptive pooling")
        outs_i = _static([to_expr(s) for s in shape_of(grad)[prefix:]], "adaptive pooling")
        if 0 in outs_i or 0 in sizes_i:
            raise CannotLower("adaptive pooling of an empty plane")
        cov = _adaptive_covers(sizes_i, outs_i)

        def term(b: BodyBuilder, index, windows, g, mask):
            count = sympy.Integer(1)
            for k, o in enumerate(windows):
                s, m = sizes_i[k], outs_i[k]
                count *= _adaptive_end(o, s, m) - _adaptive_start(o, s, m)
            count = sympy.expand(count)
            d = b.const(int(count), acc) if count.is_Integer else b.cast(b.index(count), acc)
            return b.truediv(g, d)

        return [_gather_windows(lw, grad, shape_of(x), prefix, cov, acc, dtype, term)]

    return lower


register("aten._adaptive_avg_pool2d_backward.default")(_lower_adaptive_avg_pool_backward(2))
register("aten._adaptive_avg_pool3d_backward.default")(_lower_adaptive_avg_pool_backward(3))


# ---- patches: im2col and col2im (nn.Unfold, nn.Fold) ---------------------------------


def _patch_args(op: AtenOp) -> tuple[list[int], list[int], list[int], list[int]]:
    kernel = _ints(op.arg("kernel_size"), 2, [], "window")
    dilation = _ints(op.arg("dilation"), 2, [1, 1], "dilation")
    padding = _ints(op.arg("padding"), 2, [0, 0], "padding")
    stride = _ints(op.arg("stride"), 2, [1, 1], "stride")
    return kernel, dilation, padding, stride


def _blocks(sizes: Sequence[sympy.Expr], kernel, dilation, padding, stride) -> list[sympy.Expr]:
    """The number of patch positions along each spatial dim."""
    return [
        sympy.expand(_floordiv(size + 2 * p - d * (k - 1) - 1, s) + 1)
        for size, k, d, p, s in zip(sizes, kernel, dilation, padding, stride)
    ]


@register("aten.im2col.default")
def _im2col(lw: Lowerer, op: AtenOp):
    """``out[.., (c*kh + i)*kw + j, bh*BW + bw] = x[.., c, bh*s - p + i*d,
    bw*s - p + j*d]`` (0 in the padding): a pointwise gather."""
    x = op.operands[0]
    check_supported(dtype_of(x))
    prefix, sizes = _spatial(x, 2)
    kernel, dilation, padding, stride = _patch_args(op)
    blocks = _blocks(sizes, kernel, dilation, padding, stride)
    out = result_type(op)
    win = _strided_windows(sizes, blocks, kernel, stride, padding, dilation)
    kh, kw = kernel
    fns = torch_sympy()

    def body(b: BodyBuilder, idx: list[sympy.Symbol]):
        *batch, q, at = idx
        c, i, j = _floordiv(q, kh * kw), fns.PythonMod(_floordiv(q, kw), kh), fns.PythonMod(q, kw)
        bh, bw = _floordiv(at, blocks[1]), fns.PythonMod(at, blocks[1])
        mask = win.mask(b, [bh, bw], [i, j])
        v = b.load(x, [*batch, c, *win.positions([bh, bw], [i, j])], mask=mask)
        return v if mask is None else b.select(mask, v, b.const(0, v.type))

    assert prefix - 1 == len(out.shape) - 2
    return [lw.pointwise(out.shape, out.element_type, body)]


@register("aten.col2im.default")
def _col2im(lw: Lowerer, op: AtenOp):
    """nn.Fold as a gather: output pixel ``(h, w)`` sums the column entries of
    the patches that cover it, the ``ceil(((k - 1) * d + 1) / s)`` patch
    positions per dim from the first that reaches it, where ``h + p - bh*s``
    is a multiple of the dilation (kernel row ``i`` = that / d). No scatter:
    ATen's kernel and torch's decomposition (an index_put with accumulate)
    add each patch into the image."""
    cols = op.operands[0]
    dtype = dtype_of(cols)
    check_supported(dtype)
    if dtype == dtypes.i1:
        raise CannotLower("col2im of booleans")
    acc = compute_dtype(dtype)
    out = result_type(op)
    rank = len(out.shape)
    prefix = rank - 2  # (N, C) or (C,)
    sizes = [to_expr(s) for s in out.shape[prefix:]]
    kernel, dilation, padding, stride = _patch_args(op)
    blocks = _blocks(sizes, kernel, dilation, padding, stride)
    cov = _strided_covers(sizes, blocks, kernel, stride, padding, dilation, check_reach=True)
    kh, kw = kernel
    fns = torch_sympy()

    def body(b: BodyBuilder, idx: list[sympy.Symbol]):
        hs, rs = idx[prefix:rank], idx[rank:]
        conds = [cov.mask(b, hs, rs)]
        windows = cov.windows(hs, rs)
        taps = []
        for k, (h, o) in enumerate(zip(hs, windows)):
            offset = sympy.expand(h + padding[k] - o * stride[k])  # i * d where it reaches h
            d = dilation[k]
            if d != 1:
                # offset >= -s where masked in or out (o <= first + extent - 1)
                shifted = sympy.expand(offset + d * -(-stride[k] // d))
                conds.append(
                    b.cmp("eq", b.index(fns.PythonMod(shifted, d)), b.const(0, builtin.i64))
                )
            # Where the load is unmasked, d divides the offset: a truncating
            # division (index math's) equals floor even when sympy pulls a
            # negative term out of the numerator.
            taps.append(_floordiv(offset, d))
        mask = _all(b, [c for c in conds if c is not None])
        row = (idx[prefix - 1] * kh + taps[0]) * kw + taps[1]
        col = windows[0] * blocks[1] + windows[1]
        v = b.cast(
            b.load(cols, [*idx[: prefix - 1], sympy.expand(row), sympy.expand(col)], mask=mask), acc
        )
        return v if mask is None else b.select(mask, v, b.const(0, acc))

    (total,) = lw.reduction("sum", list(out.shape), cov.extent, acc, body)
    if acc == dtype:
        return [total]
    return [lw.pointwise(out.shape, dtype, lambda b, idx: b.load(total, list(idx)))]
