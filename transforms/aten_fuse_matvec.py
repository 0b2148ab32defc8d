"""aten-fuse-matvec: matrix-vector products of one input, one launch.

At batch 1 a transformer layer's projections of the same normalized vector --
q, k and v; gate and up -- are separate ``mm(x, w.t())`` of one row, each a
kernel that reads its weight once (``lowering/aten_to_loop/matvec.py``).
Their launches, not their bytes, are what a decode step spends its time on
beside the weights. ``loop-fuse`` already joins such products when their
outputs have the same width (gate and up: one kernel); q (``H * D`` wide)
and k, v (``H_kv * D``, grouped-query attention) differ, so they stay apart.

This pass rewrites ``mm(x, t(w_1)) ... mm(x, t(w_n))`` -- the same ``x`` of one
row, each ``w_i`` an ``[N_i, K]`` row-major matrix (a ``Linear``'s weight),
same dtype and device, not all of one width -- to one
``mm(x, t(cat([w_1 ... w_n])))`` and a slice of its columns per product
(gpt-fast writes the fused ``wqkv`` by hand;
Inductor concatenates the weights under freezing, ``concat_linear`` in
``fx_passes/freezing_patterns.py``, or batches the products,
``group_batch_fusion.py``). The concatenation is never materialized: it
lowers to index math, ``loop-inline`` moves it into the one matrix-vector
reduction, and each program loads from the weight its rows fall in (masked
loads), so the kernel reads each weight once, as before, in one launch.

Input and output: aten-level functions after ``cse`` (so the products of
one ``x`` share its value). Only products on a CUDA device, where they become
matrix-vector reductions (``all-devices=true``: every device, for the CPU
tests with ``convert-aten-to-loop{matvec=on}``). Guarantees: each product's
result is replaced by the same columns of the fused product (each column the
same sum, so the values are the same), with the product's type (eager's
slice has the fused width as its row stride, but the row is the only one: a
size-1 dimension's stride addresses nothing, and the function's results keep
their types); products whose weights are not all defined before
the first of them, or with symbolic sizes, are left alone, and so are
products all of one width (gate and up): ``loop-fuse`` joins those as
siblings, and an epilogue that reads them at one point (``SiLU(gate) * up``)
joins too, which it could not as two column ranges of one product.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from coil.dialects.aten import TensorType
from coil.dialects.aten_ops import (
    AtenCatOp,
    AtenMmOp,
    AtenPermuteOp,
    AtenSliceTensorOp,
    AtenTOp,
)
from coil.dialects.symbolic import contiguous_strides, to_expr


def _static(shape) -> list[int] | None:
    dims = [to_expr(s) for s in shape]
    return [int(d) for d in dims] if all(d.is_Integer for d in dims) else None


def linear_weight(mat2: SSAValue) -> SSAValue | None:
    """``w`` where ``mat2`` is ``t(w)`` or ``permute(w, [1, 0])`` of a row-major
    ``[N, K]`` ``w``."""
    op = mat2.owner
    if isinstance(op, AtenPermuteOp):
        if list(op.arg("dims")) != [1, 0]:
            return None
    elif not isinstance(op, AtenTOp):
        return None
    w = op.operands[0]
    t = w.type
    if not isinstance(t, TensorType) or len(t.shape) != 2:
        return None
    shape = _static(t.shape)
    if shape is None or _static(t.strides) != [int(to_expr(s)) for s in contiguous_strides(shape)]:
        return None
    return w


def _matvec(op: Operation, on_all_devices: bool) -> tuple[SSAValue, SSAValue] | None:
    """(x, w) of ``mm(x, t(w))`` with ``x`` one row, or None."""
    if not isinstance(op, AtenMmOp):
        return None
    x, out = op.operands[0], op.result.type
    if not isinstance(out, TensorType) or not isinstance(x.type, TensorType):
        return None
    if not on_all_devices and not out.device_attr.data.startswith("cuda"):
        return None
    shape = _static(out.shape)
    if shape is None or shape[0] != 1:
        return None
    w = linear_weight(op.operands[1])
    if w is None or w.type.element_type != out.element_type:
        return None
    return x, w


def _defined_before(value: SSAValue, op: Operation, block: Block) -> bool:
    owner = value.owner
    if not isinstance(owner, Operation):
        return owner is block
    return owner.parent is block and owner.is_before_in_block(op)


def _fuse(block: Block, group: list[tuple[AtenMmOp, SSAValue]]) -> None:
    first = group[0][0]
    x = first.operands[0]
    out = first.result.type
    k = _static(group[0][1].type.shape)[1]
    widths = [_static(w.type.shape)[0] for _, w in group]
    total = sum(widths)
    dtype, device = out.element_type, out.device_attr.data
    weights = [w for _, w in group]
    cat = AtenCatOp.build_from(
        {"tensors": weights}, {}, [TensorType([total, k], dtype, None, device)]
    )
    t = AtenPermuteOp.build_from(
        {"self": cat.result}, {"dims": [1, 0]}, [TensorType([k, total], dtype, [1, k], device)]
    )
    mm = AtenMmOp.build_from(
        {"self": x, "mat2": t.result}, {}, [TensorType([1, total], dtype, None, device)]
    )
    new: list[Operation] = [cat, t, mm]
    cat.result.name_hint = "fused_weight"
    mm.result.name_hint = "fused"
    slices = []
    start = 0
    for (op, _), n in zip(group, widths):
        piece = AtenSliceTensorOp.build_from(
            {"self": mm.result},
            {"dim": 1, "start": start, "end": start + n},
            [TensorType([1, n], dtype, None, device)],
        )
        piece.result.name_hint = op.result.name_hint
        new.append(piece)
        slices.append(piece)
        start += n
    Rewriter.insert_op(new, InsertPoint.before(first))
    for (op, _), piece in zip(group, slices):
        transpose = op.operands[1].owner
        op.result.replace_all_uses_with(piece.result)
        Rewriter.erase_op(op)
        if isinstance(transpose, Operation) and not transpose.results[0].uses:
            Rewriter.erase_op(transpose)


def fuse_matvecs(block: Block, on_all_devices: bool = False) -> int:
    """Fuse the matrix-vector products of ``block`` that share an input; returns
    how many fused products it made."""
    groups: dict[SSAValue, list[tuple[AtenMmOp, SSAValue]]] = {}
    for op in block.ops:
        found = _matvec(op, on_all_devices)
        if found is not None:
            x, w = found
            groups.setdefault(x, []).append((op, w))  # type: ignore[arg-type]
    made = 0
    for x, members in groups.items():
        t = x.type
        keep = [
            (op, w)
            for op, w in members
            if _defined_before(w, members[0][0], block)
            and w.type.element_type == members[0][1].type.element_type
            and w.type.device_attr == members[0][1].type.device_attr
            and _static(w.type.shape)[1] == _static(t.shape)[1]
        ]
        widths = {_static(w.type.shape)[0] for _, w in keep}
        # Products of one width are loop-fuse's siblings already (one kernel),
        # and there an epilogue reading several of them at one point (SiLU(gate)
        # * up) joins that kernel; as columns of one product it could not.
        if len(keep) >= 2 and len(widths) > 1:
            _fuse(block, keep)
            made += 1
    return made


@dataclass(frozen=True)
class AtenFuseMatvecPass(ModulePass):
    """Matrix-vector products of one input as one product (see the module doc)."""

    name = "aten-fuse-matvec"

    all_devices: bool = False
    """Rewrite products on every device, not only CUDA ones."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and not fn.is_declaration:
                fuse_matvecs(fn.body.block, self.all_devices)
