"""Matrix-vector products as loop reductions: ``mm`` and ``addmm`` where one
side of the product is a single row (``[1, K] @ [K, N]``, a ``Linear`` at batch
1) or a single column (``[M, K] @ [K, 1]``).

A matrix product is otherwise an ATen call (cuBLAS) by design. A
matrix-vector product is not compute-bound: it reads the matrix once, and at
small sizes its time is the launch. As a ``loop.reduction`` over K (products
in f32, accumulated in f32, rounded once, as cuBLAS does) it becomes a Triton
kernel that ``loop-fuse`` can give its consumers as an epilogue: a batch-1
``Linear`` + bias + activation is one kernel instead of cuBLAS's GEMV and a
pointwise kernel. Inductor decomposes the same products into a multiply and a
sum (``torch/_inductor/decomposition.py``, ``mm``), but only under coordinate
descent tuning, because its reduction tiles did not reach cuBLAS's bandwidth
otherwise. On an H100 coil's kernel reads a bf16 4096 x 4096 matrix in
0.0118 ms (95 % of the copy bandwidth; cuBLAS's GEMV 0.0104) and an f32 one
in 0.0225 (cuBLAS 0.0267), and every ``linear_b1`` row of
``benchmarks/roofline.py`` wins on wall time, one launch instead of two
(``benchmarks/RESULTS.md``, ninth session).

Only where the matrix is read along its contiguous dimension: a ``Linear``'s
``[N, K]`` weight (read through its transpose), or ``[M, K] @ [K, 1]`` with
a row-major ``[M, K]``: each output is then a contiguous row. A row-major
``[K, N]`` matrix (GPT-2's ``Conv1D`` weight) makes it a column sum over K
rows, too short to fill the GPU in coil's column tiles: on an H100 the
768 x 3072 bf16 case took 0.0168 ms against cuBLAS's 0.0085 (the best tile
of a sweep, 0.0113), so it stays cuBLAS's.

Only on CUDA by default (``convert-aten-to-loop{matvec=auto}``): on the CPU
ATen's GEMV is faster than Triton's interpreter. ``matvec=on`` lowers them on
any device (the CPU tests run the kernels this way), ``matvec=off`` never.
A product of a few rows (``[M, K] @ [K, N]``, 2 <= M <= 16: a decode step's
batch) with such a weight is the same reduction over ``[M, N]``: its kernel
computes all M rows a program (``loop_to_tt/kernel_group.py``
``_shared_rows``), so the weight streams once, M accumulators a lane. Where
``matvec=auto`` takes it is ``strategy/rows.py``'s estimate against cuBLAS's
product (and the epilogue kernel it needs); ``matvec=on`` takes every one.
``gemm=triton`` (templates forced) and a product ``mode="max-autotune"``
measured keep theirs.
More rows stay cuBLAS's (or ``gemm.py``'s template, which registers the ops
and tries this first).
"""

from __future__ import annotations

import logging

from coil.dialects import dtypes
from coil.dialects.aten import AtenOp
from coil.dialects.body_builder import BodyBuilder, CannotLower
from coil.dialects.symbolic import to_expr
from coil.lowering.aten_to_loop.common import broadcast_index, result_type, shape_of, tensor_arg
from coil.lowering.aten_to_loop.lowerer import Lowerer
from coil.lowering.aten_to_loop.pointwise import _normalize
from coil.lowering.aten_to_loop.products import product_epilogue, tuned_choice
from coil.strategy import rows as R

log = logging.getLogger("coil")

FLOATS = (dtypes.f16, dtypes.bf16, dtypes.f32)


def _is_matvec(lw: Lowerer, op: AtenOp) -> bool:
    out = result_type(op)
    if lw.matvec == "off" or (lw.matvec == "auto" and not out.device_attr.data.startswith("cuda")):
        return False
    if out.element_type not in FLOATS:
        return False
    m, n = (to_expr(s) for s in out.shape)
    rows = m.is_Integer and 2 <= int(m) <= R.MAX_ROWS and n != 1
    if m == 1 or rows:  # [M, K] @ [K, N]: the matrix is mat2, K its dimension 0
        matrix, k_dim = tensor_arg(op, "mat2"), 0
    elif n == 1:  # [M, K] @ [K, 1]: the matrix is the left one, K its dimension 1
        matrix, k_dim = tensor_arg(op, "mat1" if op.name == "aten.addmm.default" else "self"), 1
    else:
        return False
    layout = lw.aten_types.get(matrix, matrix.type)
    strides = getattr(layout, "strides", None)
    if not (bool(strides) and to_expr(strides[k_dim]) == 1):
        return False
    if not rows:
        return True
    if lw.matvec == "on":
        return lw.gemm != "triton"
    return _rows_pay(lw, op, int(m))


def _rows_pay(lw: Lowerer, op: AtenOp, m: int) -> bool:
    """Whether a product of ``m`` rows streams its weight faster than cuBLAS
    (``strategy/rows.py``), at the static sizes."""
    if lw.gemm == "triton" or tuned_choice(op) is not None:
        return False  # templates forced, or max-autotune measured the product
    out = result_type(op)
    n, k = to_expr(out.shape[1]), to_expr(shape_of(tensor_arg(op, "mat2"))[0])
    if not (n.is_Integer and k.is_Integer):
        return False
    epilogue, extra = product_epilogue(op)
    elem = dtypes.itemsize(out.element_type)
    take, why = R.choose(m, int(n), int(k), elem, lw.target, epilogue, extra)
    log.debug("coil: %s of %d rows: %s", op.name, m, why)
    return take


def _matvec(lw: Lowerer, op: AtenOp):
    if not _is_matvec(lw, op):
        raise CannotLower("a matrix product (cuBLAS)")
    bias = tensor_arg(op, "self") if op.name == "aten.addmm.default" else None
    if bias is not None and (
        _normalize(op.arg("beta")) not in (1, None) or _normalize(op.arg("alpha")) not in (1, None)
    ):
        raise CannotLower("addmm with beta or alpha")
    a, b = tensor_arg(op, "mat1" if bias is not None else "self"), tensor_arg(op, "mat2")
    out = result_type(op)
    m, n = shape_of(a)[0], shape_of(b)[1]
    acc = dtypes.f32

    def product(bb: BodyBuilder, idx):
        i, j, k = idx
        return bb.mul(bb.cast(bb.load(a, [i, k]), acc), bb.cast(bb.load(b, [k, j]), acc))

    (red,) = lw.reduction("sum", [m, n], [shape_of(a)[1]], acc, product)
    if bias is None and out.element_type == acc:
        return [red]

    def finish(bb: BodyBuilder, idx):
        v = bb.load(red, list(idx))
        if bias is not None:
            index = broadcast_index(shape_of(bias), [m, n], list(idx))
            v = bb.add(v, bb.cast(bb.load(bias, index), acc))
        return v

    return [lw.pointwise([m, n], out.element_type, finish)]
