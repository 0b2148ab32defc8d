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
f32), ``auto`` (the default) takes ``mode="max-autotune"``'s measured choice
where there is one and otherwise asks ``strategy/gemm.py``, which keeps cuBLAS
until its estimate is trusted (``ESTIMATE_CHOOSES``).
Matrix-vector products stay ``matvec.py``'s reductions (tried first).
"""

from __future__ import annotations

import logging

import sympy
from xdsl.ir import Operation, SSAValue

from coil.dialects import dtypes
from coil.dialects.aten import AtenOp
from coil.dialects.body_builder import BodyBuilder, CannotLower
from coil.dialects.symbolic import index_symbols, to_expr, torch_sympy
from coil.lowering.aten_to_loop.common import broadcast_index, result_type, shape_of, tensor_arg
from coil.lowering.aten_to_loop.depthwise import is_depthwise, lower_depthwise
from coil.lowering.aten_to_loop.lowerer import Lowerer, register
from coil.lowering.aten_to_loop.matvec import _is_matvec, _matvec
from coil.lowering.aten_to_loop.pointwise import _normalize
from coil.lowering.aten_to_loop.products import (
    TUNED,
    VIEWS,
    product_epilogue,
    tuned_choice,
)
from coil.strategy import gemm as G

log = logging.getLogger("coil")

FLOATS = (dtypes.f16, dtypes.bf16, dtypes.f32)
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
    tuned = tuned_choice(op)
    if tuned is not None and lw.gemm == "auto":
        return tuned[0] == "triton"
    if lw.gemm == "triton":
        return True
    # auto: the cost estimate, with the static sizes (or a hint for symbols).
    epilogue, extra = product_epilogue(op)
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
    # A Linear on [B, S, K] rows is view -> mm -> view back: the product is
    # computed over [B, S, N] directly, so its epilogue (over [B, S, N]) fuses.
    rows = None if batched else _row_view(op)
    out_shape = shape if rows is None else [*rows.results[0].type.shape]
    lead = out_shape[:-1]

    def flat_row(idx) -> sympy.Expr:
        if rows is None:
            return idx[0]
        flat, stride = sympy.Integer(0), sympy.Integer(1)
        for i, size in reversed(list(zip(idx, lead))):
            flat, stride = flat + i * stride, stride * to_expr(size)
        return flat

    def product(bb: BodyBuilder, idx):
        if batched:
            n, i, j, r = idx
            x, y = bb.load(a, [n, i, r]), bb.load(b, [n, r, j])
        else:
            i, j, r = flat_row(idx), idx[-2], idx[-1]
            x, y = bb.load(a, [i, r]), bb.load(b, [r, j])
        return bb.mul(bb.cast(x, acc), bb.cast(y, acc))

    tuned = tuned_choice(op)
    template = f"gemm:{tuned[1]}" if tuned is not None and tuned[1] else "gemm"
    split = _k_split(tuned, k) if not batched and rows is None else 1
    if split > 1:
        red = _decompose_k(lw, a, b, out_shape, to_expr(k), split, template)
    else:
        (red,) = lw.reduction("sum", out_shape, [k], acc, product, template=template)
    result = red
    if bias is not None or out.element_type != acc:
        result = _finish(lw, red, bias, alpha, beta, out_shape, shape, out.element_type, flat_row)
    if rows is None:
        return [result]
    # The view's readers read the [B, S, N] result; the product's own value
    # (read by nothing else) is its [M, N] view.
    rows.results[0].replace_all_uses_with(result)
    lw.aten_types[result] = rows.results[0].type
    i0, i1 = index_symbols(2)
    index = _unflatten(i0, [to_expr(s) for s in lead]) + [i1]
    return [lw.view(result, index, shape)]


def _k_split(tuned: tuple[str, str | None] | None, k) -> int:
    """The K split max-autotune chose (``...k4``), where K is static and divides."""
    if tuned is None or not tuned[1]:
        return 1
    try:
        split = G.parse_gemm_config(tuned[1]).k_split
    except ValueError:
        return 1
    kk = _static(k)
    return split if split > 1 and kk is not None and kk % split == 0 else 1


def _decompose_k(lw: Lowerer, a, b, out_shape, k: sympy.Expr, split: int, template: str):
    """Decompose-K (Inductor's ``decompose_k_subgraph_template``): the product
    of ``[M, K] @ [K, N]`` as ``split`` products over K's slices, one template
    whose batch is the slice (``[split, M, N]``, f32), then their sum over the
    slices in f32, which the finish rounds: more programs for a skinny output
    with a long K, each reading its slice."""
    acc = dtypes.f32
    part = k / split

    def product(bb: BodyBuilder, idx):
        p, i, j, r = idx
        kk = p * part + r
        return bb.mul(bb.cast(bb.load(a, [i, kk]), acc), bb.cast(bb.load(b, [kk, j]), acc))

    (parts,) = lw.reduction("sum", [split, *out_shape], [part], acc, product, template=template)

    def total(bb: BodyBuilder, idx):
        *ij, p = idx
        return bb.load(parts, [p, *ij])

    (red,) = lw.reduction("sum", out_shape, [split], acc, total)
    return red


def _unflatten(flat: sympy.Expr, sizes: list[sympy.Expr]) -> list[sympy.Expr]:
    # torch's FloorDiv and PythonMod, imported here only (fx-opt keeps torch out
    # of loop-level pipelines that need none: test/fx-opt/startup.mlir).
    fns = torch_sympy()
    out = []
    for k in range(len(sizes)):
        stride = sympy.Mul(*sizes[k + 1 :])
        e = fns.FloorDiv(flat, stride) if stride != 1 else flat
        out.append(fns.PythonMod(e, sizes[k]) if k else e)
    return out


def _row_view(op: AtenOp) -> Operation | None:
    """The view splitting the product's rows (``[M, N] -> [B, S, N]``), where it
    is the product's one reader."""
    uses = list(op.results[0].uses)
    if len(uses) != 1 or uses[0].operation.name not in VIEWS:
        return None
    view = uses[0].operation
    m, n = (to_expr(s) for s in result_type(op).shape)
    shape = [to_expr(s) for s in view.results[0].type.shape]
    if len(shape) < 3 or shape[-1] != n or sympy.simplify(sympy.Mul(*shape[:-1]) - m) != 0:
        return None
    return view


def _finish(lw, red, bias, alpha, beta, out_shape, shape, dtype, flat_row):
    """The pointwise nest after the product: the bias (scaled), the cast."""

    def finish(bb: BodyBuilder, idx):
        v = bb.load(red, list(idx))
        if bias is None:
            return v
        if alpha not in (1, None):
            v = bb.mul(v, lw.scalar(bb, alpha, acc))
        if beta == 0:
            return v
        at = list(idx) if len(shape) == len(out_shape) else [flat_row(idx), idx[-1]]
        c = bb.cast(bb.load(bias, broadcast_index(shape_of(bias), shape, at)), acc)
        if beta not in (1, None):
            c = bb.mul(c, lw.scalar(bb, beta, acc))
        return bb.add(v, c)

    acc = dtypes.f32
    return lw.pointwise(out_shape, dtype, finish)


__all__ = ["FLOATS", "TUNED", "tuned_choice"]


# ---- 1x1 convolutions -------------------------------------------------------


def _is_pointwise_conv(op: AtenOp) -> bool:
    """A 1x1 convolution with no padding, one group, any stride: at each output
    pixel a product of the input pixel's channels (at ``stride`` times its
    position) with the ``[C_out, C_in]`` weight (a strided 1x1 is a ResNet
    bottleneck's downsampling shortcut)."""
    w = tensor_arg(op, "weight")
    if w is None or len(shape_of(w)) < 3:
        return False
    if any(to_expr(s) != 1 for s in shape_of(w)[2:]):
        return False
    if op.arg("transposed") or _normalize(op.arg("groups")) != 1:
        return False
    if not all(isinstance(v := _normalize(s), int) and v >= 1 for s in op.arg("stride") or ()):
        return False
    return all(
        all(v == want for v in (op.arg(name) or ()))
        for name, want in (("padding", 0), ("dilation", 1))
    )


@register("aten.convolution.default")
def _conv1x1(lw: Lowerer, op: AtenOp):
    """A 1x1 convolution as a gemm template over the output
    ``[N, C_out, *spatial]`` (Inductor's ``conv1x1_via_mm``): rows are the pixels
    (N and the spatial dimensions, one flat row index in the kernel; a strided
    one reads every ``stride``-th input pixel), columns the output channels, K
    the input channels; the bias and what follows (a folded batch norm's scale
    and shift, ReLU, a residual add) fuse as for a ``Linear``. Only where
    ``gemm`` chooses the template; every other convolution is cuDNN's."""
    if not _is_pointwise_conv(op):
        if is_depthwise(op):
            return lower_depthwise(lw, op)
        raise CannotLower("a convolution (cuDNN)")
    x, w, bias = tensor_arg(op, "input"), tensor_arg(op, "weight"), tensor_arg(op, "bias")
    out = result_type(op)
    shape = list(out.shape)
    if len(shape) < 3 or not _conv_wanted(lw, op, x, w, shape):
        raise CannotLower("a convolution (cuDNN)")
    acc = dtypes.f32
    n_spatial = len(shape) - 2
    zeros = [sympy.Integer(0)] * n_spatial
    strides = [_normalize(v) for v in op.arg("stride") or ()] or [1]
    if len(strides) == 1:
        strides = strides * n_spatial

    def product(bb: BodyBuilder, idx):
        n, co, *px, r = idx
        xv = bb.load(x, [n, r, *[p * st for p, st in zip(px, strides)]])
        wv = bb.load(w, [co, r, *zeros])
        return bb.mul(bb.cast(xv, acc), bb.cast(wv, acc))

    k = shape_of(x)[1]
    tuned = tuned_choice(op)  # max-autotune's config, where it measured one
    template = f"gemm:{tuned[1]}" if tuned is not None and tuned[1] else "gemm"
    (red,) = lw.reduction("sum", shape, [k], acc, product, template=template)
    if bias is None and out.element_type == acc:
        return [red]

    def finish(bb: BodyBuilder, idx):
        v = bb.load(red, list(idx))
        if bias is None:
            return v
        return bb.add(v, bb.cast(bb.load(bias, [idx[1]]), acc))

    return [lw.pointwise(shape, out.element_type, finish)]


def _conv_wanted(lw: Lowerer, op: AtenOp, x: SSAValue, w: SSAValue, shape) -> bool:
    out = result_type(op)
    if lw.gemm == "extern" or out.element_type not in FLOATS:
        return False
    if x.type.element_type != out.element_type or w.type.element_type != out.element_type:
        return False
    tuned = tuned_choice(op)
    if tuned is not None and lw.gemm == "auto":
        return tuned[0] == "triton"
    if lw.gemm == "triton":
        return True
    epilogue, extra = product_epilogue(op)
    dims = [_static(s) or 64 for s in shape]
    nbytes = dtypes.itemsize(out.element_type)
    rows = dims[0]
    for d in dims[2:]:
        rows *= d
    s = G.GemmShape(
        m=rows,
        n=dims[1],
        k=_static(shape_of(x)[1]) or 256,
        in_bytes=nbytes,
        out_bytes=nbytes,
        tensor_cores=out.element_type != dtypes.f32 or lw.tf32,
        epilogue_reads=extra,
    )
    chosen, why = G.choose(s, lw.target, epilogue)
    log.debug("coil: 1x1 convolution %s (%s)", "template" if chosen else "cuDNN", why)
    return chosen
