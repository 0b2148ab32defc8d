"""Matrix products as ``tt.dot`` templates: ``mm``, ``addmm``, ``bmm`` and
``baddbmm`` (a ``Linear`` is ``addmm`` or ``mm`` of a transposed weight view;
``matmul``'s batch and broadcast forms reach here as ``bmm``/``mm`` of views).

A product becomes ``loop.reduction sum [batch.., M, N] [K] template gemm``,
whose body is ``a[.., i, k] * b[.., k, j]`` in f32 (the operands' own loads,
widened), and a pointwise nest after it that rounds the f32 accumulator to
the result dtype (adding ``addmm``'s bias, scaled by ``beta`` and ``alpha``).
As a reduction it fuses like one: ``loop-fuse`` makes the pointwise nests
that read it at its own point its epilogue (the bias, the activation, a
residual add, the cast), and ``loop-inline`` puts cheap producers of its
operands (a cast, a scale) into its body, the prologue; ``convert-loop-to-tt``
emits the group as one Triton kernel with ``tl.dot`` over K
(``loop_to_tt/gemm.py``). Inductor's ``tuned_mm`` / ``tuned_addmm`` /
``tuned_bmm`` (``torch/_inductor/kernel/mm.py``, ``bmm.py``) are the model.

Which products (``convert-aten-to-loop{gemm=...}``, the backend option
``gemm``): ``extern`` keeps every one an ATen call (cuBLAS), ``triton`` makes
every one that the template takes a template (floating dtypes f16, bf16,
f32), ``auto`` (the default) asks ``strategy/gemm.py``: only on a GPU, only
where the product's result feeds a pointwise consumer, and only where the
estimate says the fused kernel beats cuBLAS plus that consumer's kernel.
Matrix-vector products stay ``matvec.py``'s reductions (tried first).
"""

from __future__ import annotations

import logging

from xdsl.ir import SSAValue

from coil.dialects import dtypes
from coil.dialects.aten import AtenOp
from coil.dialects.body_builder import BodyBuilder, CannotLower
from coil.dialects.symbolic import to_expr
from coil.lowering.aten_to_loop.common import broadcast_index, result_type, shape_of, tensor_arg
from coil.lowering.aten_to_loop.matvec import _is_matvec, _matvec
from coil.lowering.aten_to_loop.pointwise import _normalize
from coil.lowering.convert_aten_to_loop import LOWERINGS, Lowerer, register
from coil.strategy import gemm as G

log = logging.getLogger("coil")

FLOATS = (dtypes.f16, dtypes.bf16, dtypes.f32)
_VIEWS = ("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default")
_CASTS = ("aten._to_copy.default", "prims.convert_element_type.default")
MAX_GRID_Y = 65535  # the batch is the grid's second axis


def _operands(op: AtenOp) -> tuple[SSAValue | None, SSAValue, SSAValue]:
    """(bias or None, a, b)."""
    if op.name in ("aten.addmm.default", "aten.baddbmm.default"):
        return (
            tensor_arg(op, "self"),
            tensor_arg(op, "mat1" if "addmm" in op.name else "batch1"),
            (tensor_arg(op, "mat2" if "addmm" in op.name else "batch2")),
        )
    return None, tensor_arg(op, "self"), tensor_arg(op, "mat2")


def _epilogue(op: AtenOp) -> tuple[bool, int]:
    """Whether the product's one reader (through views) is pointwise, and the
    bytes per output element that reader reads besides the product."""
    value = op.results[0]
    while True:
        uses = list(value.uses)
        if len(uses) != 1:
            return False, 0
        user = uses[0].operation
        if user.name in _VIEWS:
            value = user.results[0]
            continue
        break
    lowering = LOWERINGS.get(user.name)
    if user.name not in _CASTS and (
        lowering is None or not lowering.__module__.endswith("aten_to_loop.pointwise")
    ):
        return False, 0
    extra = 0
    for operand in user.operands:
        if operand is not value and hasattr(operand.type, "element_type"):
            shape = getattr(operand.type, "shape", ())
            if len(shape) >= 2:  # a residual, not a broadcast vector
                extra += dtypes.itemsize(operand.type.element_type)
    return True, extra


def _static(e: object) -> int | None:
    v = to_expr(e)
    return int(v) if v.is_Integer else None


def _wanted(lw: Lowerer, op: AtenOp, a: SSAValue, b: SSAValue) -> bool:
    out = result_type(op)
    if lw.gemm == "extern" or out.element_type not in FLOATS:
        return False
    if a.type.element_type != out.element_type or b.type.element_type != out.element_type:
        return False
    shape = [to_expr(s) for s in out.shape]
    if len(shape) == 3 and (batch := _static(shape[0])) is not None and batch > MAX_GRID_Y:
        return False
    if lw.gemm == "triton":
        return True
    # auto: the cost estimate, with the static sizes (or a hint for symbols).
    epilogue, extra = _epilogue(op)
    dims = [_static(s) or 4096 for s in shape]
    k = _static(shape_of(a)[-1]) or 4096
    nbytes = dtypes.itemsize(out.element_type)
    s = G.GemmShape(
        m=dims[-2],
        n=dims[-1],
        k=k,
        batch=dims[0] if len(dims) == 3 else 1,
        in_bytes=nbytes,
        out_bytes=nbytes,
        tensor_cores=out.element_type != dtypes.f32 or lw.tf32,
        epilogue_reads=extra,
    )
    chosen, why = G.choose(s, lw.target, epilogue)
    log.debug("coil: %s %s: %s (%s)", op.name, "template" if chosen else "extern", why, s)
    return chosen


@register("aten.mm.default", "aten.addmm.default", "aten.bmm.default", "aten.baddbmm.default")
def _gemm(lw: Lowerer, op: AtenOp):
    if op.name in ("aten.mm.default", "aten.addmm.default") and _is_matvec(lw, op):
        return _matvec(lw, op)
    bias, a, b = _operands(op)
    if not _wanted(lw, op, a, b):
        raise CannotLower("a matrix product (cuBLAS)")
    beta = _normalize(op.arg("beta")) if bias is not None else None
    alpha = _normalize(op.arg("alpha")) if bias is not None else None
    if bias is not None and not all(isinstance(v, int | float | None) for v in (beta, alpha)):
        raise CannotLower("addmm with a tensor beta or alpha")
    out = result_type(op)
    shape = list(out.shape)
    batched = len(shape) == 3
    k = shape_of(a)[-1]
    acc = dtypes.f32

    def product(bb: BodyBuilder, idx):
        if batched:
            n, i, j, r = idx
            x, y = bb.load(a, [n, i, r]), bb.load(b, [n, r, j])
        else:
            i, j, r = idx
            x, y = bb.load(a, [i, r]), bb.load(b, [r, j])
        return bb.mul(bb.cast(x, acc), bb.cast(y, acc))

    (red,) = lw.reduction("sum", shape, [k], acc, product, template="gemm")
    if bias is None and out.element_type == acc:
        return [red]

    def finish(bb: BodyBuilder, idx):
        v = bb.load(red, list(idx))
        if bias is None:
            return v
        if alpha not in (1, None):
            v = bb.mul(v, lw.scalar(bb, alpha, acc))
        if beta == 0:
            return v
        c = bb.cast(bb.load(bias, broadcast_index(shape_of(bias), shape, list(idx))), acc)
        if beta not in (1, None):
            c = bb.mul(c, lw.scalar(bb, beta, acc))
        return bb.add(v, c)

    return [lw.pointwise(shape, out.element_type, finish)]


__all__ = ["FLOATS"]
