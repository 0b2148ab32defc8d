"""Reduction lowerings (sum, mean, prod, amax/amin, max/min with indices,
argmax/argmin, var/std through Welford, any/all): one ``loop.reduction`` over
the kept dimensions x the reduced ones, plus a pointwise epilogue where the op
needs one (mean, var, std, a reduced-precision result).

The reduction's ``ranges`` are the result's shape (with ``keepdim`` the reduced
dimensions stay as size-1 ranges whose index is unused), its
``reduction_ranges`` the reduced dimensions in increasing order; the body loads
the input at the combined index. Sums and products of reduced floats
accumulate in f32, as ATen and Inductor do; sums of bool/integers are int64
unless a ``dtype`` is given, which the body casts to first."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sympy
from xdsl.ir import Attribute, SSAValue

from coil.dialects import dtypes
from coil.dialects.aten import AtenOp
from coil.dialects.body_builder import BodyBuilder, CannotLower, check_supported, compute_dtype
from coil.dialects.symbolic import SymInt, to_expr
from coil.lowering.aten_to_loop.common import dtype_of, result_type, shape_of, tensor_arg
from coil.lowering.aten_to_loop.lowerer import Lowerer, register

ValueFn = Callable[[BodyBuilder, SSAValue, list[sympy.Expr]], SSAValue]
"""(builder, loaded element, its index in the input) -> the value to reduce."""


def reduced_dims(x: SSAValue, dim: int | Sequence[int] | None, empty_is_all: bool) -> list[int]:
    """``dim`` normalized and sorted. None means every dimension; so does an
    empty list where ``empty_is_all`` (sum, mean, amax ...), while for
    ``any.dims``/``all.dims`` an empty list reduces nothing."""
    rank = len(shape_of(x))
    if dim is None:
        return list(range(rank))
    dims = [dim] if isinstance(dim, int) else list(dim)
    if not dims:
        return list(range(rank)) if empty_is_all else []
    bound = max(rank, 1)
    for d in dims:
        if not -bound <= d < bound:
            raise CannotLower(f"dimension {d} is out of range for rank {rank}")
    return sorted({d % bound for d in dims}) if rank else []


def reduction_shape(
    x: SSAValue, dims: Sequence[int], keepdim: bool
) -> tuple[list[SymInt], list[SymInt]]:
    """(ranges, reduction_ranges) of reducing ``x`` over ``dims``."""
    shape = shape_of(x)
    if not shape:  # a 0-d input reduces its single element
        return [], [1]
    ranges = [1 if d in dims else s for d, s in enumerate(shape) if keepdim or d not in dims]
    return ranges, [shape[d] for d in dims]


def reduce(
    lw: Lowerer,
    x: SSAValue,
    dims: Sequence[int],
    keepdim: bool,
    kind: str,
    result_dtype: Attribute,
    value: ValueFn | None = None,
    value_dtype: Attribute | None = None,
) -> list[SSAValue]:
    """``loop.reduction`` of ``kind`` of ``value(b, x[...])`` over ``dims``."""
    check_supported(dtype_of(x))
    rank = len(shape_of(x))
    ranges, rranges = reduction_shape(x, dims, keepdim)
    n = len(ranges)

    def body(b: BodyBuilder, idx: list[sympy.Symbol]) -> SSAValue:
        outer, inner = idx[:n], idx[n:]
        index, k = [], 0
        for d in range(rank):
            if d in dims:
                index.append(inner[dims.index(d)])
                k += keepdim
            else:
                index.append(outer[k])
                k += 1
        v = b.load(x, index)
        return value(b, v, index) if value is not None else v

    return lw.reduction(kind, ranges, rranges, result_dtype, body, value_dtype)


def epilogue(
    lw: Lowerer,
    sources: Sequence[SSAValue],
    dtype: Attribute,
    fn: Callable[..., SSAValue] = lambda b, v: v,
) -> SSAValue:
    """A pointwise over the (common) shape of ``sources``: ``fn(b, *elements)``."""
    shape = sources[0].type.shape

    def body(b: BodyBuilder, idx):
        return fn(b, *(b.load(s, list(idx)) for s in sources))

    return lw.pointwise(shape, dtype, body)


def _check_shape(op: AtenOp, value: SSAValue, k: int = 0) -> None:
    want = [to_expr(s) for s in result_type(op, k).shape]
    got = [to_expr(s) for s in value.type.shape]
    if want != got:
        raise AssertionError(f"{op.name}: reduction shape {got} != result shape {want}")


def _count_value(b: BodyBuilder, sizes: Sequence[SymInt], like: SSAValue) -> SSAValue:
    count = sympy.Integer(1)
    for s in sizes:
        count *= to_expr(s)
    if count.is_Integer:
        return b.const_like(int(count), like)
    return b.cast(b.index(count), like.type)


# ---- sum, prod, mean -------------------------------------------------------------


def _accumulate(
    lw: Lowerer, op: AtenOp, kind: str, dims: list[int], keepdim: bool
) -> tuple[SSAValue, Attribute]:
    """The sum/prod in the accumulation dtype, and the result dtype."""
    x = op.operands[0]
    out = result_type(op).element_type
    if out == dtypes.i1:
        raise CannotLower(f"{op.name} to bool")
    acc = compute_dtype(out)

    def value(b: BodyBuilder, v: SSAValue, index) -> SSAValue:
        return b.cast(b.cast(v, out), acc)  # dtype= casts the input first

    (red,) = reduce(lw, x, dims, keepdim, kind, acc, value)
    return red, out


def _lower_sum_like(kind: str, dim: Callable[[AtenOp], object], keepdim: bool = True):
    def lower(lw: Lowerer, op: AtenOp):
        d = dim(op)
        dims = reduced_dims(op.operands[0], d, empty_is_all=True)
        red, out = _accumulate(lw, op, kind, dims, bool(keepdim and op.arg("keepdim")))
        result = red if red.type.element_type == out else epilogue(lw, [red], out)
        _check_shape(op, result)
        return [result]

    return lower


register("aten.sum.default")(_lower_sum_like("sum", lambda op: None, keepdim=False))
register("aten.sum.dim_IntList")(_lower_sum_like("sum", lambda op: op.arg("dim")))
register("aten.prod.default")(_lower_sum_like("prod", lambda op: None, keepdim=False))
register("aten.prod.dim_int")(_lower_sum_like("prod", lambda op: op.arg("dim")))


def _lower_mean(lw: Lowerer, op: AtenOp, d: object, keepdim: bool):
    x = op.operands[0]
    out = result_type(op).element_type
    if not dtypes.is_float(out):
        raise CannotLower(f"mean to {out}")
    dims = reduced_dims(x, d, empty_is_all=True)
    red, _ = _accumulate(lw, op, "sum", dims, keepdim)
    sizes = reduction_shape(x, dims, keepdim)[1]
    result = epilogue(lw, [red], out, lambda b, s: b.truediv(s, _count_value(b, sizes, s)))
    _check_shape(op, result)
    return [result]


@register("aten.mean.default")
def _mean(lw: Lowerer, op: AtenOp):
    return _lower_mean(lw, op, None, False)


@register("aten.mean.dim")
def _mean_dim(lw: Lowerer, op: AtenOp):
    return _lower_mean(lw, op, op.arg("dim"), bool(op.arg("keepdim")))


# ---- max, min, argmax, argmin ----------------------------------------------------


def _extremum(lw: Lowerer, x: SSAValue, dims: list[int], keepdim: bool, kind: str) -> SSAValue:
    dtype = dtype_of(x)
    if dtype == dtypes.i1:  # max of bools is any, min is all
        kind = "any" if kind == "max" else "all"
    (red,) = reduce(lw, x, dims, keepdim, kind, dtype)
    return red


def _arg_extremum(lw: Lowerer, x: SSAValue, dims: list[int], keepdim: bool, kind: str):
    dtype = dtype_of(x)
    value_dtype = dtypes.i32 if dtype == dtypes.i1 else dtype
    (red,) = reduce(lw, x, dims, keepdim, kind, dtypes.i64, value_dtype=value_dtype)
    return red


def _register_extremum(name: str) -> None:
    kind = name[1:]  # amax -> max

    @register(f"aten.{name}.default")
    def lower_amax(lw: Lowerer, op: AtenOp):
        x = op.operands[0]
        dims = reduced_dims(x, op.arg("dim"), empty_is_all=True)
        result = _extremum(lw, x, dims, bool(op.arg("keepdim")), kind)
        _check_shape(op, result)
        return [result]

    @register(f"aten.{kind}.default")
    def lower_max(lw: Lowerer, op: AtenOp):
        x = op.operands[0]
        result = _extremum(lw, x, reduced_dims(x, None, True), False, kind)
        _check_shape(op, result)
        return [result]

    @register(f"aten.{kind}.dim")
    def lower_max_dim(lw: Lowerer, op: AtenOp):
        # Two reductions; both take the first extremum (NaN counts as the extremum).
        x = op.operands[0]
        dims = reduced_dims(x, op.arg("dim"), empty_is_all=False)
        keepdim = bool(op.arg("keepdim"))
        values = _extremum(lw, x, dims, keepdim, kind)
        indices = _arg_extremum(lw, x, dims, keepdim, f"arg{kind}")
        _check_shape(op, values)
        _check_shape(op, indices, 1)
        return [values, indices]

    @register(f"aten.arg{kind}.default")
    def lower_argmax(lw: Lowerer, op: AtenOp):
        # dim=None: the position in the flattened tensor (row-major over all dims).
        x = op.operands[0]
        if dtype_of(x) == dtypes.i1:
            # Eager refuses bool input (max.dim takes it); ATen raises that error.
            raise CannotLower(f"arg{kind} of a bool tensor, which eager rejects")
        dims = reduced_dims(x, op.arg("dim"), empty_is_all=False)
        result = _arg_extremum(lw, x, dims, bool(op.arg("keepdim")), f"arg{kind}")
        _check_shape(op, result)
        return [result]


_register_extremum("amax")
_register_extremum("amin")


# ---- any, all --------------------------------------------------------------------


def _register_bool_reduction(kind: str) -> None:
    def lower(lw: Lowerer, op: AtenOp, d: object, keepdim: bool, empty_is_all: bool):
        x = op.operands[0]
        if result_type(op).element_type != dtypes.i1:
            raise CannotLower(f"{op.name} to {result_type(op).element_type}")
        dims = reduced_dims(x, d, empty_is_all)
        if not dims and shape_of(x):  # any.dims(x, []) reduces nothing: x != 0
            result = epilogue(lw, [x], dtypes.i1)
        else:
            (result,) = reduce(lw, x, dims, keepdim, kind, dtypes.i1)
        _check_shape(op, result)
        return [result]

    register(f"aten.{kind}.default")(lambda lw, op: lower(lw, op, None, False, True))
    register(f"aten.{kind}.dim")(
        lambda lw, op: lower(lw, op, op.arg("dim"), bool(op.arg("keepdim")), True)
    )
    register(f"aten.{kind}.dims")(
        lambda lw, op: lower(lw, op, op.arg("dim"), bool(op.arg("keepdim")), False)
    )


_register_bool_reduction("any")
_register_bool_reduction("all")


# ---- var, std (Welford) ----------------------------------------------------------


def _lower_moments(
    lw: Lowerer,
    op: AtenOp,
    d: object,
    keepdim: bool,
    correction: float,
    std: bool,
    with_mean: bool,
) -> list[SSAValue]:
    """var/std (and the mean) from one Welford reduction: var = m2 / max(count -
    correction, 0) as ATen (NaN or inf when too few elements), std = sqrt(var)."""
    x = op.operands[0]
    out = result_type(op).element_type
    if not dtypes.is_float(out):
        raise CannotLower(f"variance to {out}")
    acc = compute_dtype(out)
    dims = reduced_dims(x, d, empty_is_all=True)
    mean, m2, count = reduce(
        lw, x, dims, keepdim, "welford", acc, lambda b, v, index: b.cast(v, acc)
    )

    def fn(b: BodyBuilder, m2: SSAValue, count: SSAValue) -> SSAValue:
        dof = b.sub(count, b.const_like(correction, count))
        v = b.truediv(m2, b.maximum(dof, b.const_like(0.0, count)))
        return b.math("sqrt", v) if std else v

    result = epilogue(lw, [m2, count], out, fn)
    _check_shape(op, result)
    if not with_mean:
        return [result]
    mean_out = mean if acc == out else epilogue(lw, [mean], out)
    _check_shape(op, mean_out, 1)
    return [result, mean_out]


def _correction(op: AtenOp) -> float:
    c = op.arg("correction")
    if c is None:
        return 1.0
    if not isinstance(c, bool | int | float):
        raise CannotLower("a symbolic correction")
    return float(c)


def _unbiased(op: AtenOp) -> float:
    return 0.0 if op.arg("unbiased") is False else 1.0


def _register_moments(name: str) -> None:
    flags = {"std": name.startswith("std"), "with_mean": name.endswith("_mean")}

    @register(f"aten.{name}.correction")
    def lower_correction(lw: Lowerer, op: AtenOp):
        keepdim = bool(op.arg("keepdim"))
        return _lower_moments(lw, op, op.arg("dim"), keepdim, _correction(op), **flags)

    @register(f"aten.{name}.dim")
    def lower_dim(lw: Lowerer, op: AtenOp):
        keepdim = bool(op.arg("keepdim"))
        return _lower_moments(lw, op, op.arg("dim"), keepdim, _unbiased(op), **flags)

    @register(f"aten.{name}.default")
    def lower_default(lw: Lowerer, op: AtenOp):
        return _lower_moments(lw, op, None, False, _unbiased(op), **flags)


for _name in ("var", "std", "var_mean", "std_mean"):
    _register_moments(_name)


# ---- softmax ----------------------------------------------------------------------
# aten-decompose normally splits these into amax/sub/exp/sum/div; it keeps them
# when the decomposition would rename symbolic sizes, so they lower whole too.


def _kept(index: Sequence[sympy.Expr], dims: Sequence[int]) -> list[sympy.Expr]:
    """The index into a keepdim reduction of ``dims`` at input ``index``."""
    return [sympy.Integer(0) if d in dims else e for d, e in enumerate(index)]


def _lower_softmax(lw: Lowerer, op: AtenOp, log: bool) -> list[SSAValue]:
    x = op.operands[0]
    out = result_type(op).element_type
    if not dtypes.is_float(out):
        raise CannotLower(f"softmax to {out}")
    acc = compute_dtype(out)
    dims = reduced_dims(x, op.arg("dim"), empty_is_all=False)
    if not shape_of(x):
        raise CannotLower("softmax of a 0-d tensor")

    (m,) = reduce(lw, x, dims, True, "max", acc, lambda b, v, index: b.cast(v, acc))

    def shifted(b: BodyBuilder, v: SSAValue, index) -> SSAValue:
        return b.sub(b.cast(v, acc), b.load(m, _kept(index, dims)))

    def exp_shifted(b: BodyBuilder, v: SSAValue, index) -> SSAValue:
        return b.math("exp", shifted(b, v, index))

    (total,) = reduce(lw, x, dims, True, "sum", acc, exp_shifted)

    def body(b: BodyBuilder, idx):
        index = list(idx)
        t = b.load(total, _kept(index, dims))
        if log:
            return b.sub(shifted(b, b.load(x, index), index), b.math("log", t))
        return b.truediv(exp_shifted(b, b.load(x, index), index), t)

    result = lw.pointwise(shape_of(x), out, body)
    _check_shape(op, result)
    return [result]


@register("aten._softmax.default")
def _softmax(lw: Lowerer, op: AtenOp):
    return _lower_softmax(lw, op, log=False)


@register("aten._log_softmax.default")
def _log_softmax(lw: Lowerer, op: AtenOp):
    return _lower_softmax(lw, op, log=True)


def _moments(
    lw: Lowerer, op: AtenOp, x: SSAValue, dims: list[int], keepdim: bool, acc: Attribute
) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue]:
    """(mean, m2, count, rstd) of ``x`` over ``dims``: one Welford reduction and
    rstd = 1 / sqrt(m2 / count + eps), in the accumulation dtype."""
    eps = float(op.arg("eps"))
    mean, m2, count = reduce(lw, x, dims, keepdim, "welford", acc, lambda b, v, _: b.cast(v, acc))

    def rstd_of(b: BodyBuilder, m2: SSAValue, count: SSAValue) -> SSAValue:
        return b.math("rsqrt", b.add(b.truediv(m2, count), b.const_like(eps, m2)))

    return mean, m2, count, epilogue(lw, [m2, count], acc, rstd_of)


def _normalize(
    b: BodyBuilder,
    element: SSAValue,
    mean: SSAValue,
    rstd: SSAValue,
    weight: SSAValue | None,
    bias: SSAValue | None,
    acc: Attribute,
) -> SSAValue:
    """(element - mean) * rstd * weight + bias (weight/bias elements may be absent)."""
    v = b.mul(b.sub(b.cast(element, acc), mean), rstd)
    if weight is not None:
        v = b.mul(v, b.cast(weight, acc))
    if bias is not None:
        v = b.add(v, b.cast(bias, acc))
    return v


def _saved_stats(
    lw: Lowerer, op: AtenOp, result: SSAValue, mean: SSAValue, rstd: SSAValue, acc: Attribute
) -> list[SSAValue]:
    """The normalized result and the saved mean/rstd in the op's result dtypes."""
    stats = []
    for k, value in ((1, mean), (2, rstd)):
        dtype = result_type(op, k).element_type
        stats.append(value if dtype == acc else epilogue(lw, [value], dtype))
        _check_shape(op, stats[-1], k)
    _check_shape(op, result)
    return [result, *stats]


@register("aten.native_layer_norm.default")
def _native_layer_norm(lw: Lowerer, op: AtenOp):
    """(out, mean, rstd) from one Welford reduction over the normalized (last)
    dimensions; kept as a whole when aten-decompose leaves it (as softmax)."""
    x, weight, bias = (tensor_arg(op, n) for n in ("input", "weight", "bias"))
    out = result_type(op).element_type
    if not dtypes.is_float(out):
        raise CannotLower(f"layer norm to {out}")
    acc = compute_dtype(out)
    shape = shape_of(x)
    rank = len(shape)
    dims = list(range(rank - len(op.arg("normalized_shape")), rank))
    if not dims:
        raise CannotLower("layer norm over no dimension")
    mean, _, _, rstd = _moments(lw, op, x, dims, True, acc)

    def body(b: BodyBuilder, idx):
        index = list(idx)
        kept, trailing = _kept(index, dims), index[rank - len(dims) :]
        w = b.load(weight, trailing) if weight is not None else None
        bi = b.load(bias, trailing) if bias is not None else None
        return _normalize(b, b.load(x, index), b.load(mean, kept), b.load(rstd, kept), w, bi, acc)

    return _saved_stats(lw, op, lw.pointwise(shape, out, body), mean, rstd, acc)


@register("aten._native_batch_norm_legit_functional.default")
def _batch_norm_training(lw: Lowerer, op: AtenOp):
    """Training batch norm: per-channel Welford over (N, H, W ...), the normalized
    output, the saved mean/rstd and the updated running stats -- the unbiased
    variance's n / (n - 1) is index math, so symbolic sizes lower too (the
    decomposition cannot: its factor is a symbolic float)."""
    if not op.arg("training"):
        raise CannotLower("batch norm in eval mode (decomposed instead)")
    x, weight, bias = (tensor_arg(op, n) for n in ("input", "weight", "bias"))
    running_mean, running_var = tensor_arg(op, "running_mean"), tensor_arg(op, "running_var")
    out = result_type(op).element_type
    if not dtypes.is_float(out) or len(shape_of(x)) < 2:
        raise CannotLower(f"batch norm of a rank-{len(shape_of(x))} {out} tensor")
    acc = compute_dtype(out)
    dims = [0, *range(2, len(shape_of(x)))]
    momentum = float(op.arg("momentum"))
    mean, m2, count, rstd = _moments(lw, op, x, dims, False, acc)

    def normalized(b: BodyBuilder, idx):
        c = [idx[1]]
        w = b.load(weight, c) if weight is not None else None
        bi = b.load(bias, c) if bias is not None else None
        return _normalize(b, b.load(x, list(idx)), b.load(mean, c), b.load(rstd, c), w, bi, acc)

    result = lw.pointwise(shape_of(x), out, normalized)

    def update(stat: SSAValue, value_of: Callable[..., SSAValue]) -> SSAValue:
        def body(b: BodyBuilder, idx):
            old = b.cast(b.load(stat, list(idx)), acc)
            new = value_of(b, list(idx))
            keep = b.mul(old, b.const_like(1.0 - momentum, old))
            return b.add(keep, b.mul(new, b.const_like(momentum, new)))

        return lw.pointwise(shape_of(stat), dtype_of(stat), body)

    def unbiased_var(b: BodyBuilder, idx):
        m2_, n = b.load(m2, idx), b.load(count, idx)
        return b.truediv(m2_, b.sub(n, b.const_like(1.0, n)))

    new_mean = update(running_mean, lambda b, idx: b.load(mean, idx))
    new_var = update(running_var, unbiased_var)
    return [*_saved_stats(lw, op, result, mean, rstd, acc), new_mean, new_var]


__all__ = ["epilogue", "reduce", "reduced_dims", "reduction_shape"]
