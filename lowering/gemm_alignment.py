"""Aligned GEMM outputs for ``bufferize``: a matrix product whose rows are not a
multiple of 16 bytes writes into a padded allocation.

cuBLAS picks its fast Hopper kernels only when every leading dimension is a
multiple of 16 bytes; an output with 50257 bf16 columns (GPT-2's LM head) runs
in an ``align1`` kernel seven times slower (measured on an H100: 3.3 ms against
0.45 ms for Inductor, which pads: ``comprehensive_padding``/``pad_mm``). ATen's
``out=`` variants accept an output whose row stride is larger than its width,
so coil allocates ``[.., M, N_pad]`` (``N_pad`` the next multiple of 16 bytes)
and calls ``aten::mm.out(a, b, out=<the [.., M, N] view>)``: no copy of any
input, the padding columns are never read, and consumers read the view through
its strides (``bufferize`` copies a returned result to eager's layout, and an
ATen consumer's operand to the layout it expects, as for any other buffer).

Applies to ``mm``, ``bmm``, ``addmm`` and ``baddbmm`` (default ``beta``/``alpha``)
on CUDA in f16, bf16 and f32 whose static row width is misaligned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from coil.dialects import buffer as B
from coil.dialects.aten import OperandRefAttr, OperatorOp, TensorType
from coil.dialects.symbolic import contiguous_strides, to_expr
from coil.transforms.loop_cost import element_bytes

ALIGN_BYTES = 16
OUT_VARIANTS = {
    "aten.mm.default": "aten::mm.out",
    "aten.bmm.default": "aten::bmm.out",
    "aten.addmm.default": "aten::addmm.out",
    "aten.baddbmm.default": "aten::baddbmm.out",
}
_FLOATS = ("f16", "bf16", "f32")


@dataclass
class GemmPadding:
    aten: Operation  # the mm/bmm/addmm/baddbmm op in the extern's region
    padded_shape: list  # the allocation: [.., M, N_pad]
    view: B.BufferType  # the [.., M, N] output view of it


def plan(op: B.ExternOp) -> GemmPadding | None:
    """How to pad the output of ``op`` (an extern at the tensor level), if it is a
    GEMM worth padding."""
    inner = [o for o in op.body.block.ops if not isinstance(o, B.YieldOp)]
    if len(inner) != 1 or inner[0].name not in OUT_VARIANTS or len(op.res) != 1:
        return None
    aten = inner[0]
    # beta/alpha (and anything else non-tensor) are printed only when not the
    # default: the out variant below passes tensors alone.
    if any(k not in ("operandSegmentSizes",) for k in aten.properties):
        return None
    t = aten.results[0].type
    if not isinstance(t, TensorType) or not t.device_attr.data.startswith("cuda"):
        return None
    if str(t.element_type) not in _FLOATS:
        return None
    shape = list(t.shape_attr.data)
    n = to_expr(shape[-1])
    if not n.is_Integer or list(t.strides_attr.data) != list(contiguous_strides(shape)):
        return None
    size = element_bytes(t.element_type)
    per_row = ALIGN_BYTES // size
    n = int(n)
    if n < per_row or (n * size) % ALIGN_BYTES == 0:
        return None
    padded = shape[:-1] + [-(-n // per_row) * per_row]
    view = B.BufferType(shape, t.element_type, contiguous_strides(padded), 0, t.device_attr.data)
    return GemmPadding(aten, padded, view)


def rewrite(
    op: B.ExternOp,
    padding: GemmPadding,
    alloc: Callable[[Sequence, Attribute, str | None], SSAValue],
) -> SSAValue:
    """Give ``op`` (about to be rebuilt on buffers) an ``out`` operand: a view of a
    padded allocation, which the region's out variant writes. Returns the view
    (the extern's new operand, appended to its arguments)."""
    t = padding.view
    base = alloc(padding.padded_shape, t.element_type, op.res[0].name_hint)
    view = B.ViewOp(base, t)
    Rewriter.insert_op(view, InsertPoint.before(op))
    view.result.name_hint = op.res[0].name_hint
    block = op.body.block
    out_arg = block.insert_arg(
        TensorType(t.shape_attr.data, t.element_type, t.strides_attr.data, t.device_attr.data),
        len(block.args),
    )
    out_arg.name_hint = "out"
    aten = padding.aten
    inputs = [*aten.operands, out_arg]
    call = OperatorOp(
        OUT_VARIANTS[aten.name],
        ArrayAttr([OperandRefAttr(k) for k in range(len(aten.operands))]),
        DictionaryAttr({"out": OperandRefAttr(len(aten.operands))}),
        inputs,
        [out_arg.type],
    )
    call.location = aten.location
    Rewriter.replace_op(aten, call)
    call.results[0].name_hint = aten.results[0].name_hint
    return view.result
