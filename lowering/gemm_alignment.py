"""Aligned GEMMs for ``bufferize``: a matrix product whose output rows are not a
multiple of 16 bytes is computed on an operand padded to such a width.

cuBLAS picks its fast Hopper kernels only when the problem is aligned; an
output with 50257 bf16 columns (GPT-2's LM head) runs in a ``cutlass ... align1``
kernel seven times slower (an H100: 3.3 ms against 0.45 ms for Inductor). A
larger row stride for the output alone is not enough: the width N itself must
be a multiple of 8 (bf16), as Inductor's ``pad_mm`` makes it. So, for
``C[M, N] = A[M, K] @ B[K, N]`` (and ``bmm``, ``addmm``, ``baddbmm`` with
default ``beta``/``alpha``), an extern ``cat([B, zeros])`` (the bias
padded likewise) feeds the product, which writes ``[M, N + P]``; its readers
see the ``[M, N]`` view with row stride ``N + P``; ``bufferize`` copies a
returned result to eager's layout, and an ATen consumer's operand to the
layout it expects, as for any buffer.

A column-major B (``weight.t()`` of a ``Linear``) keeps its layout: the
weight gets zero rows, and the product reads the transpose.

A B computed from parameters alone (``constant``: a weight, or a weight's
transpose) is padded whatever M: ``buffer-hoist-constants`` moves the pad into
the constants function, which runs once per version of the weight, so no call
pays for it (Inductor pads such weights once under freezing). Any other B is
copied on every call, ``K x N`` elements against the product's ``M x N x K``
multiply-adds: the copy's share of the time is about ``e * F / (BW * M)``
(``e`` bytes an element, ``F`` the tensor-core rate, ``BW`` the memory
bandwidth), a function of M alone, so such a pad needs M >= ``MIN_ROWS`` (a
symbolic M at its size hint, ``strategy/hints.py``: the traced size). CUDA only, f16/bf16 (f32 where
TF32 is allowed, see :func:`plan`), static N.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from coil.dialects import buffer as B
from coil.dialects import loop as L
from coil.dialects.aten import TensorType, op_class_named
from coil.dialects.symbolic import contiguous_strides, to_expr
from coil.transforms.loop_cost import element_bytes, estimate

ALIGN_BYTES = 16
MIN_ROWS = 512
"""Output rows below which a per-call pad of B is not made. Not measured: at
H100 rates (bf16 ~800 TFLOP/s dense, 3.35 TB/s) ``e * F / BW`` is ~480 rows,
so at 512 rows the copy costs about as much as the aligned product, and pays
only where cuBLAS's unaligned kernel is at least twice as slow (GPT-2's
50257-wide LM head at 4096 rows: 3.3 ms unaligned, 0.45 ms aligned). It
applies only to operands computed on every call (activations: a ``bmm`` of two
of them); a weight's pad is computed once (``constant`` in :func:`plan`)."""

# The product's operands by schema name: (bias, the right-hand matrix).
GEMMS = {
    "aten.mm.default": (None, "mat2"),
    "aten.bmm.default": (None, "mat2"),
    "aten.addmm.default": ("self", "mat2"),
    "aten.baddbmm.default": ("self", "batch2"),
}
_FLOATS = ("f16", "bf16", "f32")


@dataclass
class GemmPadding:
    aten: Operation  # the product in the extern's region
    pad: int  # columns added to N


def plan(
    op: B.ExternOp, tf32: bool = False, constant: frozenset[int] = frozenset()
) -> GemmPadding | None:
    """Whether and how to pad the product ``op`` (an extern at the tensor level)
    calls. ``constant``: positions of ``op``'s operands computed from parameters
    alone, once per parameter version (their pad then needs no ``MIN_ROWS``).
    An f32 product is padded only where cuBLAS may use TF32 (``tf32``):
    without it cuBLAS runs FFMA kernels that do not need the alignment (on an
    H100, GPT-2's f32 LM head, 4096 x 768 by 768 x 50257, ran the same aligned
    kernel unpadded in eager), and the pad, the wider product and its copy to
    eager's layout in a training graph only cost time and memory."""
    inner = [o for o in op.body.block.ops if not isinstance(o, B.YieldOp)]
    if len(inner) != 1 or inner[0].name not in GEMMS or len(op.res) != 1:
        return None
    aten = inner[0]
    if any(k != "operandSegmentSizes" for k in aten.properties):
        return None  # beta/alpha given (printed only when not the default)
    t = aten.results[0].type
    if not isinstance(t, TensorType) or not t.device_attr.data.startswith("cuda"):
        return None
    if str(t.element_type) not in _FLOATS or (str(t.element_type) == "f32" and not tf32):
        return None
    shape = list(t.shape_attr.data)
    n, m = to_expr(shape[-1]), to_expr(shape[-2])
    if not n.is_Integer or list(t.strides_attr.data) != list(contiguous_strides(shape)):
        return None
    per_row = ALIGN_BYTES // element_bytes(t.element_type)
    n = int(n)
    if n < per_row or n % per_row == 0:
        return None
    (right,) = aten.operand_groups()[GEMMS[aten.name][1]]
    once = isinstance(right, BlockArgument) and right.index in constant
    if not once and estimate(m) < MIN_ROWS:
        return None
    return GemmPadding(aten, -(-n // per_row) * per_row - n)


def rewrite(op: B.ExternOp, padding: GemmPadding) -> B.BufferType:
    """Pad the right-hand matrix (and a bias over N) of ``op`` (an extern whose
    operands are buffers) by a ``buffer.extern`` of ``aten.cat`` with zeros
    placed before it, and widen the product in its region to ``[.., M, N+P]``.
    Returns the buffer type of the ``[.., M, N]`` view its readers use."""
    aten = padding.aten
    bias_name, right_name = GEMMS[aten.name]
    groups = aten.operand_groups()
    n = int(to_expr(aten.results[0].type.shape_attr.data[-1]))
    for name in (right_name, bias_name):
        if name is None:
            continue
        (value,) = groups[name]
        if isinstance(value, BlockArgument) and to_expr(value.type.shape_attr.data[-1]) == n:
            _pad_operand(op, value, n + padding.pad)
    t = aten.results[0].type
    shape = list(t.shape_attr.data)
    wide = shape[:-1] + [n + padding.pad]
    device = t.device_attr.data
    Rewriter.replace_value_with_new_type(
        aten.results[0], TensorType(wide, t.element_type, None, device)
    )
    return B.BufferType(shape, t.element_type, contiguous_strides(wide), 0, device)


def _column_major(t: TensorType) -> bool:
    """Whether ``t``'s last two dims are the transpose of a row-major matrix
    (a ``Linear`` weight read as ``weight.t()``: strides ``(.., 1, K)``)."""
    shape, strides = list(t.shape_attr.data), list(t.strides_attr.data)
    if len(shape) < 2 or not all(to_expr(e).is_Integer for e in shape + strides):
        return False
    k, n = int(to_expr(shape[-2])), int(to_expr(shape[-1]))
    return int(to_expr(strides[-2])) == 1 and int(to_expr(strides[-1])) == k and n > 1


def _pad_operand(op: B.ExternOp, arg: BlockArgument, width: int) -> None:
    """``op``'s operand for region argument ``arg``, padded with zero columns to
    ``width`` by its own extern (freed after the product by the memory plan).

    A column-major operand (``weight.t()``) is padded in its own layout: the
    row-major matrix behind it gets zero rows (a contiguous copy) and the
    product reads its transpose. Padding the transposed view itself made ATen
    copy it element by element across strides: GPT-2's 768 x 50257 LM head
    took 0.32 ms a call on an H100 for what a contiguous copy does in ~0.05."""
    t = arg.type
    shape = list(t.shape_attr.data)
    extra = width - int(to_expr(shape[-1]))
    device = t.device_attr.data
    wide = shape[:-1] + [width]
    block = Block(arg_types=[t])
    if _column_major(t):
        rank = len(shape)
        rows = shape[:-2] + [shape[-1], shape[-2]]  # the row-major matrix behind it
        padded_rows = rows[:-2] + [width, rows[-1]]
        padded = TensorType(
            wide, t.element_type, _swap_last(contiguous_strides(padded_rows)), device
        )
        transpose = op_class_named("aten.transpose.int")
        assert transpose is not None
        back = transpose.build_from(
            {"self": block.args[0]},
            {"dim0": rank - 2, "dim1": rank - 1},
            [TensorType(rows, t.element_type, _swap_last(t.strides_attr.data), device)],
        )
        grown = _zero_extend(back.results[0], rank - 2, extra, padded_rows)
        again = transpose.build_from(
            {"self": grown[-1].results[0]}, {"dim0": rank - 2, "dim1": rank - 1}, [padded]
        )
        calls = [back, *grown, again]
    else:
        padded = TensorType(wide, t.element_type, None, device)
        calls = _zero_extend(block.args[0], len(shape) - 1, extra, wide)
    for call in calls:
        call.location = op.location
    block.add_ops([*calls, B.YieldOp(calls[-1].results[0])])
    source = op.args[arg.index]
    pad = B.ExternOp(
        [source],
        [B.BufferType(wide, t.element_type, padded.strides_attr.data, 0, device)],
        Region(block),
    )
    pad.location = op.location
    pad.res[0].name_hint = f"{source.name_hint or 'mat'}_padded"
    Rewriter.insert_op(pad, InsertPoint.before(op))
    op.operands[arg.index] = pad.res[0]
    Rewriter.replace_value_with_new_type(arg, padded)


def _zero_extend(value: SSAValue, dim: int, extra: int, shape: list) -> list[Operation]:
    """``value`` with ``extra`` zeros appended along ``dim`` (result ``shape``,
    row-major): ``cat([value, value.new_zeros(...)])``. ATen's
    ``constant_pad_nd`` fills the whole result with zeros before copying the
    input in: GPT-2's 77 MB LM head took a 24 us fill and a 56 us copy a
    call on an H100, against Inductor's one 52 us pad kernel; the cat writes
    the zeros only where they go."""
    t = value.type
    zeros_shape = list(t.shape_attr.data)
    zeros_shape[dim] = extra
    new_zeros, cat = op_class_named("aten.new_zeros.default"), op_class_named("aten.cat.default")
    assert new_zeros is not None and cat is not None
    device = t.device_attr.data
    zeros_type = TensorType(zeros_shape, t.element_type, None, device)
    zeros = new_zeros.build_from({"self": value}, {"size": zeros_shape}, [zeros_type])
    joined = cat.build_from(
        {"tensors": [value, zeros.results[0]]},
        {"dim": dim},
        [TensorType(shape, t.element_type, None, device)],
    )
    return [zeros, joined]


def _swap_last(strides) -> list:
    """``strides`` with its last two entries exchanged (a transpose's layout)."""
    out = list(strides)
    out[-2], out[-1] = out[-1], out[-2]
    return out


# The matrix operands of each product by schema name.
MATRICES = {
    "aten.mm.default": ("self", "mat2"),
    "aten.bmm.default": ("self", "mat2"),
    "aten.addmm.default": ("mat1", "mat2"),
    "aten.baddbmm.default": ("batch1", "batch2"),
}


_BATCHED = ("aten.bmm.default", "aten.baddbmm.default")


def ffma_row_major_operands(op: B.ExternOp, tf32: bool = False) -> list[int]:
    """Positions of ``op``'s operands (a product at the loop level) to hand
    cuBLAS row-major, as Inductor does: where a matrix operand is computed by a
    loop nest and reaches the product through a ``loop.view`` (a transpose,
    a batch reshape), Inductor's ``mm_args`` realizes the view into a fresh
    buffer in the operand's own row-major order, and the nest writes it so.
    coil kept eager's strides instead (a transposed view of the nest's
    row-major result), so cuBLAS ran its ``tn`` kernel where Inductor's
    operands got ``nn``. Only CUDA f32 products without TF32, which run FFMA
    kernels: there ``nn`` was the faster one (H200, GPT-J's and CodeGen's f32
    attention scores, 96 x [512, 64] @ [64, 512] x 12 layers: cuBLAS
    ``sm80_xmma_gemm_f32f32 tn`` 1.403 and 1.627 ms a call against
    ``cutlass simt sgemm nn`` 1.200 and 1.203 ms for Inductor; one pair of
    models, so the rule is kept to the kernels it was measured on). The
    caller re-declares those operands row-major; ``loop_layout`` then stores
    the nest so that the view is (bufferize copies only where it cannot).

    Batched products only (``bmm``, ``baddbmm``: the attention scores it was
    measured on). For a 2-D ``mm`` it was slower: in a training backward a
    Linear's weight gradient ``dy.t() @ x`` got ``dy`` (a GELU or LayerNorm
    backward nest) stored column-major, so cuBLAS ran ``nn`` kernels where
    Inductor's eager layouts ran ``nt``/``tn`` (timm ViT-S/16 f32, batch 32, an
    H200: the backward's products 19.9 ms a step against Inductor's 19.15, the
    ``nn`` 128x128 and 64x128 kernels 3.34 ms against ``nt`` 128x128 and ``tn``
    64x64 at 2.11), and the input gradient ``dy @ W`` read the same ``dy``
    row-major, a copy of it per layer (before :func:`reads_either_order`)."""
    inner = [o for o in op.body.block.ops if not isinstance(o, B.YieldOp)]
    if len(inner) != 1 or inner[0].name not in MATRICES or tf32:
        return []
    aten = inner[0]
    if aten.name not in _BATCHED:
        return []
    t = aten.results[0].type
    if not isinstance(t, TensorType) or not t.device_attr.data.startswith("cuda"):
        return []
    if str(t.element_type) != "f32":
        return []
    groups = aten.operand_groups()
    out = []
    for name in MATRICES[aten.name]:
        (arg,) = groups[name]
        if not isinstance(arg, BlockArgument) or arg.owner is not op.body.block:
            continue
        want = arg.type
        if not isinstance(want, TensorType) or want.is_contiguous():
            continue
        view = op.args[arg.index].owner
        if isinstance(view, L.ViewOp) and isinstance(view.source.owner, L.LoopOp):
            out.append(arg.index)
    return out


def declare_row_major(op: B.ExternOp, k: int) -> None:
    """Re-declare ``op``'s region argument ``k`` row-major (see
    :func:`ffma_row_major_operands`)."""
    arg = op.body.block.args[k]
    t = arg.type
    shape = list(t.shape_attr.data)
    row_major = TensorType(shape, t.element_type, None, t.device_attr.data)
    Rewriter.replace_value_with_new_type(arg, row_major)


def _dense_matrix_orders(shape: list) -> list[list]:
    """The two layouts of a (batched) matrix of ``shape`` that cuBLAS reads as
    they are: row-major, and the transpose of a row-major matrix (column-major
    rows and columns, batches outermost)."""
    swapped = shape[:-2] + [shape[-1], shape[-2]]
    row = [to_expr(s) for s in contiguous_strides(shape)]
    col = [to_expr(s) for s in _swap_last(contiguous_strides(swapped))]
    return [row, col]


def reads_either_order(op: B.ExternOp, k: int, strides) -> bool:
    """Whether ``op`` (a product) may read its operand ``k`` with ``strides``
    instead of the layout its region declares, without a copy: ``k`` is a
    matrix operand of the product, and both the declared and the given layout
    are dense in one of the two orders cuBLAS takes as they are (row-major or
    column-major: ATen passes a transposed operand as ``transa``/``transb``,
    its ``prepare_batch_matrix_for_cublas`` copies neither). A nest result that
    two products read, one through a transpose, is then stored once: the
    gradient of an LM head's logits is read as ``dlogits.t() @ x`` for the
    weight's gradient and ``dlogits @ W`` for the input's, and
    :func:`ffma_row_major_operands` stores it column-major for the first, so
    the second copied all of it to row-major ([2048, 32000] f32, 250 MiB more
    at the backward's peak), where Inductor hands cuBLAS the one buffer in
    both products."""
    inner = [o for o in op.body.block.ops if not isinstance(o, B.YieldOp)]
    if len(inner) != 1 or inner[0].name not in MATRICES:
        return False
    arg = op.body.block.args[k]
    groups = inner[0].operand_groups()
    if not any(tuple(groups[name]) == (arg,) for name in MATRICES[inner[0].name]):
        return False
    if any(u.operation is not inner[0] for u in arg.uses):
        return False
    t = arg.type
    if not isinstance(t, TensorType) or len(t.shape_attr.data) < 2:
        return False
    shape = list(t.shape_attr.data)
    if not all(to_expr(s).is_Integer for s in [*shape, *t.strides_attr.data, *strides]):
        return False
    orders = _dense_matrix_orders(shape)
    declared = [to_expr(s) for s in t.strides_attr.data]
    given = [to_expr(s) for s in strides]
    return declared in orders and given in orders
