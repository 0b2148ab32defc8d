"""The layout each tensor of a loop-level function is stored with: one set of rules,
asked by ``bufferize`` (which stores it so) and, before it, by the passes whose
decisions depend on it (``loop-split-reduction`` votes inner or outer on the
layouts the kernel will read, not on row-major guesses).

A nest's result is stored, first rule that applies:

* with eager's strides where the function returns it (``coil.result_types``);
* in the layout an extern call reading it wants (a channels-last convolution's
  input), where that layout can be written;
* channels-last where the nest reads channels-last data along its own output
  (Inductor's ``ComputedBuffer.get_fill_order``: an unconstrained buffer takes
  the stride order of its reads): a 4-D nest whose loads of 4-D images are
  contiguous along the channels more than along the width -- an activation of
  a channels-last convolution's output, and also a max pool's or an
  upsample's window over one, where the reads are not at the nest's own point;
* where a permutation of it is returned or read by an extern call, the strides
  that give that view the wanted layout;
* where a matrix product reads a view of it (a transpose and a batch reshape)
  declared row-major (``bufferize`` declares the operands of FFMA products so,
  ``gemm_alignment.ffma_row_major_operands``), the strides that make the view
  row-major, as Inductor realizes a product's viewed operand;
* row-major.

Graph inputs and extern results are buffers whose layouts are given.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import sympy
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr
from xdsl.ir import Attribute, Operation, SSAValue

from coil.dialects import buffer as B
from coil.dialects import loop as L
from coil.dialects.aten import TensorType
from coil.dialects.symbolic import SymInt, contiguous_strides, eval_over_range, to_expr
from coil.strategy.access import element_bytes, linear_strides
from coil.transforms.aten_channels_last import channels_last_strides
from coil.transforms.extern_effects import extern_mutated_operands


def writable(shape: Sequence[SymInt], strides: Sequence[SymInt]) -> bool:
    """Distinct elements of the layout never share an address (so a nest can
    write it): no stride 0 on a dimension > 1, and, when static, no overlap."""
    dims = [(to_expr(n), to_expr(s)) for n, s in zip(shape, strides) if to_expr(n) != 1]
    if any(n == 0 for n, _ in dims):
        return True
    if any(s == 0 or s.is_negative for _, s in dims):
        return False
    if not all(n.is_Integer and s.is_Integer for n, s in dims):
        return True
    span = 1
    for n, s in sorted(dims, key=lambda d: int(d[1])):
        if int(s) < span:
            return False
        span = int(s) * int(n)
    return True


class LayoutRules:
    """The layouts of one function's tensors (see the module docstring)."""

    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        ret = fn.body.block.last_op
        self.ret = ret if isinstance(ret, func.ReturnOp) else None
        eager = fn.attributes.get("coil.result_types")
        n = len(self.ret.arguments) if self.ret is not None else 0
        self.eager: list[Attribute | None] = (
            list(eager.data) if isinstance(eager, ArrayAttr) else [None] * n
        )
        self._memo: dict[SSAValue, tuple | None] = {}

    # -- what callers ask -------------------------------------------------------

    def strides(self, value: SSAValue) -> tuple | None:
        """The strides ``value`` is (or will be) stored with; None where it is no
        tensor with a layout (a scalar, a member of a fused group)."""
        t = value.type
        if isinstance(t, B.BufferType):
            return tuple(t.strides_attr.data)
        if not isinstance(t, L.LoopTensorType):
            return None
        if isinstance(value.owner, B.ExternOp):  # what ATen returns (bufferize keeps it)
            got = _extern_result_strides(value)
            if got is not None:
                return got
        if value not in self._memo:
            self._memo[value] = None  # a cycle (none in SSA) reads row-major
            chosen = self.result_layout(value)
            shape = t.shape
            self._memo[value] = tuple(
                to_expr(s) for s in (chosen if chosen is not None else contiguous_strides(shape))
            )
        return self._memo[value]

    def result_layout(self, value: SSAValue) -> Sequence[SymInt] | None:
        """The strides to store a nest's result with (the rules of the module
        docstring), or None for row-major."""
        own = self.eager_strides(value)
        if own is not None:
            return own
        wanted = self.extern_layout(value) or self.read_layout(value)
        if wanted is not None:
            return wanted
        for use in value.uses:
            view = use.operation
            if not isinstance(view, L.ViewOp):
                continue
            shape = view.result.type.shape
            syms = L.index_symbols(len(shape))
            index = [sympy.sympify(e) for e in view.index.data]
            # A permutation, which may also add size-1 dimensions (a fused group
            # without its unit ranges, viewed back: loop_fuse squeezes them).
            if len(set(index)) != len(index) or not all(e in syms for e in index):
                continue
            if any(to_expr(n) != 1 for n, q in zip(shape, syms) if q not in index):
                continue
            want = self.eager_strides(view.result) or self.extern_layout(view.result)
            if want is None:
                continue
            # source dim k is read by view dim q(k): its stride is the view's there.
            strides = [want[syms.index(e)] for e in index]
            if writable(value.type.shape, strides):
                return strides
        return self.product_operand_layout(value)

    def product_operand_layout(self, value: SSAValue) -> Sequence[SymInt] | None:
        """Strides under which a view of ``value`` that a matrix product reads
        is row-major, where the product's region declares that operand
        row-major and the view is not so over a row-major ``value`` (a batch
        reshape of a transpose: ``bufferize`` re-declares the operands of FFMA
        products so, see ``gemm_alignment.ffma_row_major_operands``), as
        Inductor realizes a product's viewed operand in its own order."""
        for use in value.uses:
            view = use.operation
            if not isinstance(view, L.ViewOp) or view.source is not value:
                continue
            for read in view.result.uses:
                ext = read.operation
                if not isinstance(ext, B.ExternOp) or not _is_product(ext):
                    continue
                want = ext.body.block.args[read.index].type
                if not isinstance(want, TensorType) or not want.is_contiguous():
                    continue
                strides = strides_through_view(
                    value.type.shape, view.index.data, view.result.type.shape, want.strides
                )
                if strides is not None and writable(value.type.shape, strides):
                    return strides
        return None

    # -- the rules --------------------------------------------------------------

    def positions(self, value: SSAValue) -> list[int]:
        if self.ret is None:
            return []
        return [k for k, v in enumerate(self.ret.arguments) if v is value]

    def eager_strides(self, value: SSAValue) -> Sequence[SymInt] | None:
        """Eager's strides for a result of the function (first position it is
        returned at), when that layout can be written; None otherwise."""
        for k in self.positions(value):
            t = self.eager[k]
            if isinstance(t, TensorType) and writable(t.shape, t.strides):
                return t.strides
        return None

    def extern_layout(self, value: SSAValue) -> Sequence[SymInt] | None:
        """The first non-row-major layout an extern call reading ``value`` (and
        not writing it) wants, where it can be written."""
        for use in value.uses:
            ext = use.operation
            if not isinstance(ext, B.ExternOp) or use.index in extern_mutated_operands(ext):
                continue
            want = ext.body.block.args[use.index].type
            if (
                isinstance(want, TensorType)
                and writable(want.shape, want.strides)
                and not want.is_contiguous()
            ):
                return want.strides
        return None

    def read_layout(self, value: SSAValue) -> Sequence[SymInt] | None:
        """Channels-last strides where the nest making ``value`` (4-D) reads 4-D
        images contiguous along its channel index more than along its width (the
        bytes of such loads vote): a convolution's NHWC output flows through the
        kernels after it in NHWC (eager's TensorIterator keeps it too), pools
        and upsamples of it included, rather than being transposed to NCHW and
        back."""
        shape = list(value.type.shape)
        if len(shape) != 4 or to_expr(shape[1]) == 1:
            return None
        nhwc = channels_last_strides(shape)
        if not writable(shape, nhwc):
            return None
        producer = _producer(value)
        if producer is None:
            return None
        syms = L.index_symbols(4)
        member_results = set()
        if isinstance(value.owner, L.FusedOp):
            member_results = {r for op in value.owner.members() for r in op.results}
        zero = {s: 0 for s in L.index_symbols(len(producer.ranges.data), 8)[4:]}
        channels = width = 0
        for load in producer.walk():
            if not isinstance(load, L.LoadOp) or load.source in member_results:
                continue
            t = load.source.type
            rank = len(getattr(t, "shape_attr", ArrayAttr([])).data)
            if load.indirect:
                # A gather (a bilinear upsample's taps, an index): its rows
                # follow the nest's indices through the indirect operands, so
                # only the positional part of its address orders the layout.
                if _gather_along_channels(load, self.strides(load.source), syms, shape):
                    channels += element_bytes(t.element_type)
                continue
            if rank != 4:
                continue
            # Symbolic strides vote too (a dynamic batch or image size): only
            # the coefficient of each index matters, and the channel stride of
            # an NHWC image is 1 at every size.
            strides = self.strides(load.source)
            if strides is None:
                continue
            index = [sympy.sympify(e).xreplace(zero) for e in load.index.data]
            address = sum((e * to_expr(st) for e, st in zip(index, strides)), sympy.Integer(0))
            along = linear_strides(address, syms, [to_expr(d) for d in shape])
            if any(a is None for a in along):
                continue
            moves = [k for k in range(4) if to_expr(shape[k]) != 1 and along[k] != 0]
            weight = element_bytes(t.element_type)
            if along[1] == 1 and any(k in moves for k in (2, 3)):
                channels += weight
            elif along[3] == 1 and to_expr(shape[3]) != 1 and any(k in moves for k in (1, 2)):
                width += weight
        if channels > width:
            return nhwc
        return None


def _gather_along_channels(
    load: L.LoadOp, strides: Sequence | None, syms: list[sympy.Symbol], shape: Sequence[SymInt]
) -> bool:
    """Whether the gather ``load`` (of a source of any rank: a Linear's ``[B*HW,
    C]`` output viewed as an image) reads contiguously along the nest's
    channel index (stride 1 in ``i1``, the indirect operands held at 0) while
    its indirect operands move with the nest's spatial indices (``i2``/``i3``):
    a gather of a channels-last image, whose 1-D tile walking NCHW would read
    every tap a whole row of channels apart (Inductor's fill order, from the
    stride of each index in the read)."""
    if strides is None:
        return False
    held = {L.indirect_symbol(k): 0 for k in range(len(load.indirect))}
    held.update({s: 0 for s in L.index_symbols(len(syms), 8)[len(syms) :]})
    index = [sympy.sympify(e).xreplace(held) for e in load.index.data]
    address = sum((e * to_expr(st) for e, st in zip(index, strides)), sympy.Integer(0))
    along = linear_strides(address, syms, [to_expr(d) for d in shape])
    if along[1] != 1 or any(a is None for a in along):
        return False
    moved = set().union(*(_indices_of(v) for v in load.indirect))
    return bool(moved & {syms[2], syms[3]}) or along[2] != 0 or along[3] != 0


def _indices_of(value: SSAValue) -> set[sympy.Symbol]:
    """The loop indices a body value depends on (through ``loop.index``
    expressions and the body's block arguments)."""
    out: set[sympy.Symbol] = set()
    seen: set[SSAValue] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        owner = v.owner
        if isinstance(owner, Operation):
            if isinstance(owner, L.IndexOp):
                out |= {s for s in sympy.sympify(owner.value).free_symbols if s.name[:1] in "ir"}
                continue
            todo.extend(owner.operands)
        else:  # a block argument: the loop index of its position
            parent = owner.parent_op() if owner is not None else None
            if isinstance(parent, L.LoopOp) and parent.BODY_HAS_INDICES:
                out.add(parent.index_symbols()[v.index])
    return out


_PRODUCTS = ("aten.mm.default", "aten.bmm.default", "aten.addmm.default", "aten.baddbmm.default")


def _is_product(ext: B.ExternOp) -> bool:
    inner = [o for o in ext.body.block.ops if not isinstance(o, B.YieldOp)]
    return len(inner) == 1 and inner[0].name in _PRODUCTS


def strides_through_view(
    source_shape: Sequence[SymInt],
    index: Sequence[sympy.Expr],
    view_shape: Sequence[SymInt],
    want: Sequence[SymInt],
) -> list[SymInt] | None:
    """Strides for a source of ``source_shape`` under which the view reading
    ``source[index(v)]`` at each view point ``v`` has strides ``want``, or None
    where there are none (static shapes only). Each source index must depend
    on one view index (a permutation, a reshape: ``i0 floordiv 4``,
    ``i0 mod 4``); the address a view index contributes is then checked over
    its whole range, so the strides are exact, not guessed."""
    sizes = [to_expr(n) for n in view_shape]
    source = [to_expr(n) for n in source_shape]
    wanted = [to_expr(w) for w in want]
    if not all(n.is_Integer for n in sizes + source + wanted):
        return None
    syms = L.index_symbols(len(view_shape))
    exprs = [sympy.sympify(e) for e in index]
    owner: list[int | None] = []
    for e, n in zip(exprs, source):
        used = [q for q, s in enumerate(syms) if s in e.free_symbols]
        if len(used) > 1 or (not used and (e != 0 or n != 1)):
            return None
        owner.append(used[0] if used else None)
    # Each source index over its view index's whole range, at once (exact
    # integers; a sympy substitution per point cost seconds per view).
    values = {q: np.arange(int(sizes[q]), dtype=np.int64) for q in set(owner) if q is not None}
    points: list = []
    for e, q in zip(exprs, owner):
        points.append(None if q is None else eval_over_range(e, syms[q], values[q]))
        if q is not None and points[-1] is None:
            return None  # an index form the evaluator does not know: no strides
    strides: list[SymInt] = []
    for p, q in zip(points, owner):
        if q is None:
            strides.append(1)
            continue
        # the first value of view index q at which source index k is 1
        ones = np.nonzero(p[1:] == 1)[0]
        if len(ones) == 0:
            strides.append(1)  # source dim of size 1
            continue
        strides.append(int(wanted[q]) * (int(ones[0]) + 1))
    for q in range(len(syms)):
        if q not in values:  # a view index no source index reads (a broadcast)
            if sizes[q] != 1 and wanted[q] != 0:
                return None
            continue
        got = sum(int(strides[k]) * points[k] for k, o in enumerate(owner) if o == q)
        if not np.array_equal(got, int(wanted[q]) * values[q]):
            return None
    return strides


def _extern_result_strides(value: SSAValue) -> tuple | None:
    """The strides the aten op of an extern call returns its result ``value`` with."""
    term = value.owner.body.block.last_op
    if term is None or value.index >= len(term.operands):
        return None
    t = term.operands[value.index].type
    if isinstance(t, TensorType):
        return tuple(to_expr(s) for s in t.strides)
    return None


def _producer(value: SSAValue) -> Operation | None:
    """The nest computing ``value`` over its own indices: a top-level pointwise or
    reduction nest, or the member of a fused group it yields (with as many
    ranges as ``value`` has dimensions)."""
    owner = value.owner
    if isinstance(owner, L.FusedOp):
        term = owner.body.block.last_op
        inner = term.operands[value.index].owner if term is not None else None
        if isinstance(inner, L.PointwiseOp | L.ReductionOp) and len(inner.ranges.data) == len(
            value.type.shape
        ):
            return inner
        return None
    if isinstance(owner, L.PointwiseOp | L.ReductionOp):
        return owner
    return None


def function_layouts(fn: func.FuncOp) -> LayoutRules:
    return LayoutRules(fn)


__all__ = ["LayoutRules", "function_layouts", "writable"]
