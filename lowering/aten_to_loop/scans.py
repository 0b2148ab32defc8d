"""Scan lowerings: ``cumsum``, ``cumprod``, ``logcumsumexp``, ``cummax``/``cummin``
as one ``loop.scan`` along the op's dimension (Inductor's ``ir.Scan`` with a
combine function; here a named kind).

The scan's body loads the input at its own point; the scan accumulates in the
compute dtype (reduced floats in f32, as ATen's CPU and CUDA kernels do with
their ``acc_type``) and its result holds the op's dtype, each output rounded
once. ``cumsum``/``cumprod`` of integers or bools without ``dtype=`` are int64,
as torch promotes them; ``dtype=`` casts the input first. ``cummax``/``cummin``
give the running extremum and the last position holding it (NaN sticks), as
``torch.cummax``; bools compare as i32 and are cast back. A 0-d input is its
own scan."""

from __future__ import annotations

from xdsl.ir import SSAValue

from coil.dialects import dtypes
from coil.dialects.aten import AtenOp
from coil.dialects.body_builder import BodyBuilder, CannotLower, check_supported, compute_dtype
from coil.lowering.aten_to_loop.common import dtype_of, result_type, shape_of
from coil.lowering.aten_to_loop.lowerer import Lowerer, register
from coil.lowering.aten_to_loop.views import norm_dim


def _dim(op: AtenOp, x: SSAValue) -> int:
    rank = len(shape_of(x))
    d = op.arg("dim")
    if not -max(rank, 1) <= d < max(rank, 1):
        raise CannotLower(f"dimension {d} is out of range for rank {rank}")
    return norm_dim(d, rank)


def _copy(lw: Lowerer, x: SSAValue, out) -> SSAValue:
    """A 0-d scan: the element itself, in the result dtype."""
    return lw.pointwise([], out, lambda b, idx: b.cast(b.load(x, []), out))


def _scan_like(kind: str):
    def lower(lw: Lowerer, op: AtenOp):
        x = op.operands[0]
        check_supported(dtype_of(x))
        out = result_type(op).element_type
        if out == dtypes.i1:
            raise CannotLower(f"{op.name} to bool")
        if kind == "logsumexp" and not dtypes.is_float(out):
            raise CannotLower(f"logcumsumexp of {dtypes.name_of(out)}")
        dim = _dim(op, x)
        shape = shape_of(x)
        if not shape:
            return [_copy(lw, x, out)]
        acc = compute_dtype(out)

        def body(b: BodyBuilder, idx):
            return b.cast(b.cast(b.load(x, list(idx)), out), acc)  # dtype= casts first

        (result,) = lw.scan(kind, shape, dim, acc, body, result_dtype=out)
        return [result]

    return lower


register("aten.cumsum.default")(_scan_like("sum"))
register("aten.cumprod.default")(_scan_like("prod"))
register("aten.logcumsumexp.default")(_scan_like("logsumexp"))


def _running_extremum(kind: str):
    def lower(lw: Lowerer, op: AtenOp):
        x = op.operands[0]
        dtype = dtype_of(x)
        check_supported(dtype)
        dim = _dim(op, x)
        shape = shape_of(x)
        if not shape:
            zero = lw.pointwise([], dtypes.i64, lambda b, idx: b.const(0, dtypes.i64))
            return [_copy(lw, x, dtype), zero]
        # bools compare as integers (i1 is signed in arith: true < false).
        value_dtype = dtypes.i32 if dtype == dtypes.i1 else dtype
        values, positions = lw.scan(
            kind, shape, dim, value_dtype, lambda b, idx: b.load(x, list(idx))
        )
        if value_dtype != dtype:
            values = lw.pointwise(
                shape, dtype, lambda b, idx: b.cast(b.load(values, list(idx)), dtype)
            )
        return [values, positions]

    return lower


register("aten.cummax.default")(_running_extremum("argmax"))
register("aten.cummin.default")(_running_extremum("argmin"))
