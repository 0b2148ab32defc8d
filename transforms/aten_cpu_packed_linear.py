"""aten-cpu-packed-linear: a CPU inference graph's ``Linear`` products read a
weight packed once for the BLAS, not repacked on every call.

ATen's CPU GEMM (``addmm``/``mm``, what a ``Linear`` decomposes to) copies its
weight into the blocked layout its microkernel reads on every call. For a
parameter that is work done again call after call: Inductor's CPU freezing
passes replace such products with ``mkl::_mkl_linear`` (float32) and
``mkldnn::_linear_pointwise`` (bfloat16) over a weight packed at compile time
(``torch/_inductor/fx_passes/mkldnn_fusion.py``). This pass rewrites

    %wt = aten.permute.default(%w, dims = [1, 0])        // %w {coil.static}
    %y = aten.addmm.default(%b, %x, %wt)                 // or aten.mm(%x, %wt)

to ``%y = aten.operator "coil::packed_linear"(%x, %w, %b)``
(``dialects/torch_library.py``), which packs the weight at its first call,
keeps the packed copy while the weight lives and packs again when the weight
changes (its ``_version`` or data pointer), so the graph stays a function of
its inputs and an in-place update of a weight (``load_state_dict``) is seen.

Which products (the measurements: a 2-core Sapphire Rapids Xeon, one thread,
``F.linear`` against the packed call, 4 row counts x 6 weight shapes from 64x64
to 4096x1024, benchmarks/RESULTS.md, twenty-first session):

* CPU, ``inference=true`` (the backend sets it for inference graphs: a
  training step changes its weights every call), a weight that is a 2-D
  row-major ``coil.static``/``coil.constant`` argument (a parameter), read
  transposed (``permute [1, 0]`` or ``t``), a 1-D bias (or none) of the
  product's dtype, ``beta = alpha = 1``; under bfloat16 ``torch.autocast``
  the weight is ``_to_copy(p, dtype=bf16)`` of a float32 parameter ``p``,
  made on every call, and the operator gets ``p`` and packs it as bfloat16
  once (a 1024 -> 4096 -> 1024 MLP at 16 rows, one thread: 2.33 ms a call
  under autocast, 1.51 in bfloat16, eager's autocast 1.83);
* a weight of at least 2**18 elements (:data:`MIN_WEIGHT`: below it the
  packed call's own ~7 us outweigh what packing saves);
* float32 with more than one row (packed: 1.1-2.5x from 8 rows up, ~1.0x and
  once 0.79x at one row, where ATen's GEMV reads the weight once anyway);
  bfloat16 at any row count (1.2-2.4x); symbolic row counts count as
  several rows (MKL packs float32 per row count: a weight keeps a pack for
  each of the first eight it meets).
* only where this process has the packed kernels (MKL for float32, oneDNN with
  bfloat16 support), checked when the pass runs (``probe=false``: not
  checked); ``coil::packed_linear`` checks again at run time and falls back
  to ``F.linear``.

Input and output: aten-level functions. Guarantees: each rewritten product's
result has its type (the packed kernels return a new row-major tensor, as
``addmm`` does); the products' values are the same sums accumulated in the
packed kernels' order (float32: MKL's sgemm; bfloat16: oneDNN with float32
accumulation, as ATen's bfloat16 GEMM).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    NoneAttr,
)
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from coil.dialects.aten import TensorType
from coil.dialects.aten_base import OperandRefAttr, OperatorOp
from coil.dialects.aten_ops import Aten_ToCopyOp, AtenAddmmOp, AtenMmOp
from coil.dialects.symbolic import to_expr
from coil.transforms.aten_fuse_matvec import linear_weight

OPERATOR = "coil::packed_linear"
STATIC_ATTRS = ("coil.static", "coil.constant")
"""Arguments passed unchanged call after call (parameters, buffers), as
``buffer-hoist-constants`` reads them (an aten pass imports no buffer pass)."""
MIN_WEIGHT = 2**18
"""Smaller weights stay ATen's: the packed call costs ~7 us more of Python
than ``addmm`` in a compiled graph (two 64x64 products at 8 rows, packed with
this limit lifted: 80.4 vs 67.0 us a call), where a 256x256 weight saves 3-34
us and a 768x768 one 50-1100 (the table in the module doc's measurement)."""


def _is_parameter(fn: func.FuncOp, w: SSAValue) -> bool:
    if not isinstance(w, BlockArgument) or w.owner is not fn.body.block:
        return False
    attrs = fn.arg_attrs.data if fn.arg_attrs is not None else ()
    if w.index >= len(attrs) or not isinstance(attrs[w.index], DictionaryAttr):
        return False
    return any(name in attrs[w.index].data for name in STATIC_ATTRS)


def _one(attr: object) -> bool:
    if attr is None:
        return True
    if isinstance(attr, IntegerAttr | FloatAttr):
        return float(attr.value.data) == 1.0
    return False


def _rows(x: TensorType) -> int | None:
    """The row count, or None when symbolic."""
    rows = to_expr(x.shape[0])
    return int(rows) if rows.is_Integer else None


def _bf16_of_f32(w: TensorType, out: TensorType) -> bool:
    return str(w.dtype) == "torch.float32" and str(out.dtype) == "torch.bfloat16"


def _autocast_source(w: SSAValue, out: TensorType) -> SSAValue:
    """Under ``torch.autocast`` (bfloat16), a float32 parameter ``p`` reaches
    the product as ``_to_copy(p, dtype=bf16)``, made on every call: ``p``
    itself, which the operator packs as bfloat16 once (what eager's autocast
    weight cache and Inductor's freezing do). Anything else: ``w``."""
    op = w.owner
    if not isinstance(op, Aten_ToCopyOp) or not isinstance(op.self.type, TensorType):
        return w
    if any(
        getattr(op, name) is not None and not isinstance(getattr(op, name), NoneAttr)
        for name in ("layout", "device", "pin_memory", "memory_format")
    ):
        return w
    source = op.self.type
    same_layout = list(source.shape) == list(w.type.shape) and list(source.strides) == list(
        w.type.strides
    )
    return op.self if same_layout and _bf16_of_f32(source, out) else w


def packed_product(
    fn: func.FuncOp, op: Operation, probe: bool = True
) -> tuple[SSAValue, SSAValue, SSAValue | None] | None:
    """``(x, w, bias)`` where ``op`` is a product this pass rewrites, else None."""
    from coil.dialects.torch_library import packable

    if isinstance(op, AtenAddmmOp):
        if not (_one(op.beta) and _one(op.alpha)):
            return None
        bias, x, mat2 = op.self, op.mat1, op.mat2
    elif isinstance(op, AtenMmOp):
        bias, (x, mat2) = None, op.operands
    else:
        return None
    out = op.results[0].type
    if not isinstance(out, TensorType) or not isinstance(x.type, TensorType):
        return None
    if out.device_attr.data != "cpu" or len(x.type.shape) != 2 or not out.is_contiguous():
        return None  # (the packed kernels return a new row-major tensor)
    w = linear_weight(mat2)
    if w is None:
        return None
    w = _autocast_source(w, out)
    if not _is_parameter(fn, w):
        return None
    dtype = out.dtype
    if x.type.element_type != out.element_type:
        return None
    if w.type.element_type != out.element_type and not _bf16_of_f32(w.type, out):
        return None
    if bias is not None:
        b = bias.type
        if not isinstance(b, TensorType) or len(b.shape) != 1 or b.element_type != out.element_type:
            return None
        if to_expr(b.shape[0]) != to_expr(w.type.shape[0]):
            return None
    if probe and not packable(dtype):
        return None
    rows = _rows(x.type)
    n, k = (int(to_expr(s)) for s in w.type.shape)
    if n * k < MIN_WEIGHT or (str(dtype) == "torch.float32" and rows == 1):
        return None
    return x, w, bias


def pack_products(fn: func.FuncOp, probe: bool = True) -> int:
    """Rewrite ``fn``'s packable products; returns how many."""
    made = 0
    for op in list(fn.body.block.ops):
        found = packed_product(fn, op, probe)
        if found is None:
            continue
        x, w, bias = found
        inputs = [x, w] + ([bias] if bias is not None else [])
        third = OperandRefAttr(2) if bias is not None else NoneAttr()
        args = [OperandRefAttr(0), OperandRefAttr(1), third]
        call = OperatorOp(
            OPERATOR, ArrayAttr(args), DictionaryAttr({}), inputs, [op.results[0].type]
        )
        call.outputs[0].name_hint = op.results[0].name_hint
        transpose = op.operands[-1].owner
        cast = transpose.operands[0].owner if isinstance(transpose, Operation) else None
        Rewriter.replace_op(op, call)
        for dead in (transpose, cast):  # the weight's transpose, and its autocast copy
            if isinstance(dead, Operation) and not dead.results[0].uses:
                Rewriter.erase_op(dead)
        made += 1
    return made


@dataclass(frozen=True)
class AtenCpuPackedLinearPass(ModulePass):
    """CPU products of parameters over a weight packed once (see the module doc)."""

    name = "aten-cpu-packed-linear"

    inference: bool = False
    """The functions are inference graphs (the pass acts only on those)."""

    probe: bool = True
    """Rewrite only products whose dtype this process has packed kernels for
    (false: whatever the machine, as the lit tests do; the operator falls
    back to ``F.linear`` at run time where the kernels are missing)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.inference:
            return
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and not fn.is_declaration:
                pack_products(fn, self.probe)


__all__ = ["AtenCpuPackedLinearPass", "pack_products", "packed_product"]
