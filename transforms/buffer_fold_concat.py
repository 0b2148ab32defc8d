"""``buffer-fold-concat``: a concatenation's stored inputs written straight into
their slices of its buffer (Inductor's ``ConcatKernel``, which realizes each
input computed by a kernel into a ``NonOwningLayout`` view of the output).

``convert-aten-to-loop`` lowers ``cat`` to one pointwise nest over the output
that evaluates, per element, which input it lies in (``i_d < b_j``, one compare
per boundary) and selects that input's masked load. Where an input is cheap,
``loop-inline`` computes it inside that nest; where it is costly (a bilinear
upsample: ~60 ops an element), it is stored by its own kernel and the
concatenation copies it once more: a store, a load and a store of every
element where one store suffices, in whatever layout the producer chose (an
upsample of a channels-last image stored NCHW gathered its taps across
512-byte strides, then the concatenation transposed it back to NHWC).

On the buffer level, for each top-level ``loop.pointwise`` whose yield is such a
chain of selects over one dimension ``d`` (``select(i_d < b_0, X_0,
select(i_d < b_1, X_1, ... X_n))``, the form the lowering emits), a branch
``X_k`` is *folded* when it is a plain load of a buffer ``A`` at the identity
index shifted by the branch's start (its mask, if any, true over the branch)
and ``A`` is a ``buffer.alloc`` of the branch's shape and the output's dtype
that exactly one top-level nest writes (``outs``) and that is otherwise only
read: loaded by kernels, or read by extern calls (neither written in place nor
returned as a view), views read so, or the function's return. Then:

* the output's ``buffer.alloc`` moves up before the first folded input's;
* where every other reader of ``A`` can read its slice, ``A`` becomes a
  ``buffer.view`` of the output (its slice along ``d``, with the output's
  strides): its producer writes there, its other readers read there, and
  ``A``'s allocation is gone. A kernel's load can read any strides; an extern
  call only where the slice has ``A``'s own strides (offset aside: a
  concatenation along the outermost dimension), since ATen makes a dense copy
  of other strides for many ops (``_convolution`` calls
  ``input.contiguous(memory_format)``): a channel slice of a batch of images
  read by a convolution would cost that copy, at the call, instead of ``A``;
* where one cannot (an extern reads ``A`` across other strides, ``A`` is
  returned or viewed), ``A`` stays for those readers and its producer, a
  ``loop.pointwise``, becomes a ``loop.fused`` group storing its one value
  into ``A`` and into the slice (Inductor's realize-into copy for a
  ``ConcatKernel`` input whose layout a convolution fixed, fused into the
  input's kernel): GhostNet's primary half, read by the depthwise
  convolution and the concatenation. The concatenation no longer reads ``A``,
  so ``A`` dies at its last other reader; the peak is the same where that
  reader is the op before the concatenation (GhostNet: 85.75 MiB planned,
  batch 32, before and after);
* each maximal run of branches that are not folded (an extern's result, a graph
  input, a value computed inside the concatenation) is written by a copy of the
  concatenation nest restricted to the run's range (index ``i_d`` shifted by the
  run's start, outs the run's slice), its decided comparisons folded to
  constants and the other branches' ops erased;
* the concatenation nest is erased.

A concatenation with no foldable branch is left as it is (one kernel). Runs
after ``bufferize`` (and ``buffer-hoist-constants``, so parameter-only work has
left), before ``memory-plan``. Guarantees: every element of the output is
written exactly once, by the producer of its input or by a run's copy, with
the value the concatenation computed; no producer writes memory other than its
slice (and a group's ``A``); the output's layout is unchanged (producers take it).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func
from xdsl.ir import Block, Operation, Region, SSAValue, Use
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from coil.dialects import buffer as B
from coil.dialects import loop as L
from coil.dialects.symbolic import ShapeAttr, to_expr
from coil.transforms.extern_effects import extern_mutated_operands, extern_results_alias
from coil.transforms.loop_utils import function_blocks, map_exprs

_WRITERS = (L.PointwiseOp, L.ReductionOp, L.FusedOp, L.ScanOp)
"""Nests that write every element of each of their ``outs`` (a scatter does not)."""


@dataclass
class _Concat:
    """A concatenation nest read as branches along ``dim``."""

    dim: int
    bounds: list[sympy.Expr]  # b_0 < b_1 < ... (the starts of branches 1..n)
    conds: list[SSAValue]  # conds[j] is ``i_dim < bounds[j]``
    values: list[SSAValue]  # the value of each branch (len(bounds) + 1)

    def start(self, k: int) -> sympy.Expr:
        return sympy.Integer(0) if k == 0 else self.bounds[k - 1]

    def end(self, k: int, extent: sympy.Expr) -> sympy.Expr:
        return extent if k == len(self.bounds) else self.bounds[k]


def _boundary(cond: SSAValue, syms: list[sympy.Symbol]) -> tuple[int, sympy.Expr] | None:
    """``(d, b)`` where ``cond`` is ``i_d < b`` as the cat lowering writes it:
    ``arith.cmpi slt, (loop.index i_d - b), 0``."""
    cmp = cond.owner
    if not isinstance(cmp, arith.CmpiOp) or cmp.predicate.value.data != 2:  # slt
        return None
    lhs, rhs = cmp.lhs.owner, cmp.rhs.owner
    if not isinstance(lhs, L.IndexOp) or not isinstance(rhs, arith.ConstantOp):
        return None
    if not isinstance(rhs.value, builtin.IntegerAttr) or rhs.value.value.data != 0:
        return None
    e = sympy.expand(sympy.sympify(lhs.value))
    used = [k for k, s in enumerate(syms) if s in e.free_symbols]
    if len(used) != 1:
        return None
    d = used[0]
    bound = sympy.expand(syms[d] - e)
    if bound.free_symbols & set(syms):
        return None
    return d, bound


def _concat_of(nest: L.PointwiseOp) -> _Concat | None:
    term = nest.body.block.last_op
    if not isinstance(term, L.YieldOp) or len(term.values) != 1:
        return None
    syms = nest.index_symbols()
    value = term.values[0]
    dim, bounds, conds, values = None, [], [], []
    while isinstance(value.owner, arith.SelectOp):
        sel = value.owner
        got = _boundary(sel.cond, syms)
        if got is None or (dim is not None and got[0] != dim):
            break
        if bounds and not _before(bounds[-1], got[1]):
            break
        dim = got[0]
        bounds.append(got[1])
        conds.append(sel.cond)
        values.append(sel.lhs)
        value = sel.rhs
    if dim is None:
        return None
    values.append(value)
    extent = to_expr(nest.ranges.data[dim])
    if not (_before(0, bounds[0]) and _before(bounds[-1], extent)):
        return None
    return _Concat(dim, bounds, conds, values)


def _before(a: sympy.Expr | int, b: sympy.Expr) -> bool:
    """``a < b`` provably (sizes are positive: ``s0 + 2 > s0``)."""
    diff = sympy.expand(sympy.sympify(b) - sympy.sympify(a))
    if diff.is_number:
        return bool(diff > 0)
    if diff.is_positive:
        return True
    try:  # a polynomial in positive sizes with positive coefficients
        poly = sympy.Poly(diff, *sorted(diff.free_symbols, key=str))
    except sympy.PolynomialError:
        return False
    return all(c > 0 for c in poly.coeffs())


def _decided(cat: _Concat, lo: int, hi: int) -> dict[SSAValue, bool]:
    """The comparisons whose value is the same over branches ``lo..hi``:
    ``i_d < b_j`` is false past boundary j (j < lo) and true before it (j >= hi)."""
    out: dict[SSAValue, bool] = {}
    for j, c in enumerate(cat.conds):
        if j < lo:
            out[c] = False
        elif j >= hi:
            out[c] = True
    return out


def _combine(op: Operation, a: bool | None, b: bool | None) -> bool | None:
    """The value of the i1 ``and``/``or``/``xor`` ``op`` of operand values ``a``
    and ``b`` (None: unknown), where they decide it."""
    if isinstance(op, arith.AndIOp) and (a is False or b is False):
        return False
    if isinstance(op, arith.OrIOp) and (a is True or b is True):
        return True
    if a is None or b is None:
        return None
    if isinstance(op, arith.XOrIOp):
        return a != b
    return (a and b) if isinstance(op, arith.AndIOp) else (a or b)


_BOOL_OPS = (arith.XOrIOp, arith.AndIOp, arith.OrIOp)


def _true_over(mask: SSAValue, known: dict[SSAValue, bool]) -> bool | None:
    """The value of the i1 ``mask`` where the comparisons have the ``known`` values
    (None where it is not decided by them)."""
    if mask in known:
        return known[mask]
    op = mask.owner
    if isinstance(op, _BOOL_OPS):
        return _combine(op, _true_over(op.lhs, known), _true_over(op.rhs, known))
    return _i1_value(mask)


class _Folder:
    def __init__(self, block: Block):
        self.block = block

    def run(self) -> bool:
        changed = False
        for op in list(self.block.ops):
            if isinstance(op, L.PointwiseOp) and op.parent_block() is self.block and op.outs:
                changed |= self.fold(op)
        return changed

    # -- which branches fold ---------------------------------------------------

    def writer(
        self, buf: SSAValue, nest: Operation, slice_strides: list[sympy.Expr]
    ) -> tuple[Operation, bool] | None:
        """``(w, in_slice)``: ``w`` the one top-level nest writing all of ``buf``,
        a fresh allocation nothing else writes; ``in_slice`` whether every other
        reader can read it in its slice of the concatenation (strides
        ``slice_strides``). A kernel's load can; an extern call can where the
        slice has ``buf``'s own strides (offset aside): ATen's convolution and
        most kernels make a dense copy (``input.contiguous(format)``) of any
        other strides, so a channel slice of a batch of images read by a
        convolution would cost that copy at the call instead of the buffer it
        saves. Where ``in_slice`` is False, ``buf`` stays (for those readers)
        and its writer, a ``loop.pointwise``, writes the slice beside it (see
        :meth:`fold`). None where neither is possible: a second writer, an
        extern that writes ``buf`` in place, a reader of its storage other than
        loads, extern operands, views read so and the function's return."""
        if not isinstance(buf.owner, B.AllocOp) or buf.owner.parent_block() is not self.block:
            return None
        writer = None
        in_slice = True
        same = all(
            sympy.expand(to_expr(a) - b) == 0 for a, b in zip(buf.type.strides, slice_strides)
        )
        for use in buf.uses:
            op = use.operation
            if isinstance(op, L.LoadOp):
                continue
            if isinstance(op, _WRITERS) and op.parent_block() is self.block:
                if op.operands[use.index] not in op.outs or writer is not None:
                    return None
                writer = op
                continue
            if not _read_only(use):
                return None
            if not (same and isinstance(op, B.ExternOp)):
                in_slice = False
        if writer is None or not writer.is_before_in_block(nest):
            return None
        # No read of the buffer inside its writer (it would read its own slice).
        if any(isinstance(o, L.LoadOp) and o.source is buf for o in writer.walk()):
            return None
        if not in_slice and not isinstance(writer, L.PointwiseOp):
            return None
        return writer, in_slice

    def foldable(self, nest: L.PointwiseOp, cat: _Concat, k: int) -> SSAValue | None:
        """The buffer branch ``k`` copies, where its producer can write the slice."""
        load = cat.values[k].owner
        if not isinstance(load, L.LoadOp) or load.indirect:
            return None
        src = load.source
        out = nest.outs[0].type
        t = src.type
        if not isinstance(t, B.BufferType) or t.element_type != out.element_type:
            return None
        syms = nest.index_symbols()
        lo = cat.start(k)
        extent = to_expr(nest.ranges.data[cat.dim])
        want = [s - lo if q == cat.dim else s for q, s in enumerate(syms)]
        got = [sympy.sympify(e) for e in load.index.data]
        if len(got) != len(want) or any(sympy.expand(a - b) != 0 for a, b in zip(got, want)):
            return None
        shape = [to_expr(n) for n in t.shape]
        wanted = [to_expr(n) for n in out.shape]
        wanted[cat.dim] = sympy.expand(cat.end(k, extent) - lo)
        if any(sympy.expand(a - b) != 0 for a, b in zip(shape, wanted)):
            return None
        if load.mask is not None and _true_over(load.mask, _decided(cat, k, k)) is not True:
            return None
        return src

    # -- the rewrite -----------------------------------------------------------

    def fold(self, nest: L.PointwiseOp) -> bool:
        cat = _concat_of(nest)
        if cat is None or len(nest.outs) != 1:
            return False
        out = nest.outs[0]
        if not isinstance(out.owner, B.AllocOp) or out.owner.parent_block() is not self.block:
            return False
        strides = [to_expr(e) for e in out.type.strides]
        # branch -> (its buffer, the buffer's writer, whether readers read the slice)
        folded: dict[int, tuple[SSAValue, Operation, bool]] = {}
        for k in range(len(cat.values)):
            src = self.foldable(nest, cat, k)
            if src is None or any(src is f[0] for f in folded.values()):
                continue
            got = self.writer(src, nest, strides)
            if got is not None:
                folded[k] = (src, *got)
        if not folded:
            return False
        allocs = {f[0].owner for f in folded.values()}
        first = next(op for op in self.block.ops if op in allocs)
        alloc = out.owner
        if first.is_before_in_block(alloc):
            alloc.detach()
            Rewriter.insert_op(alloc, InsertPoint.before(first))
        extent = to_expr(nest.ranges.data[cat.dim])
        for k, (src, writer, in_slice) in folded.items():
            view = self.slice(out, cat.dim, cat.start(k), cat.end(k, extent), src.name_hint)
            if in_slice:
                Rewriter.insert_op(view, InsertPoint.before(src.owner))
                src.replace_all_uses_with(view.result)
                Rewriter.erase_op(src.owner)
            else:
                Rewriter.insert_op(view, InsertPoint.before(writer))
                _write_beside(writer, view.result)
        # The branches left: one restricted copy of the nest per run of them.
        k = 0
        n = len(cat.values)
        while k < n:
            if k in folded:
                k += 1
                continue
            end = k
            while end + 1 < n and end + 1 not in folded:
                end += 1
            self.restricted(nest, cat, k, end)
            k = end + 1
        Rewriter.erase_op(nest)
        return True

    @staticmethod
    def slice(out: SSAValue, dim: int, lo: sympy.Expr, hi: sympy.Expr, name: str | None):
        t = out.type
        shape = list(t.shape)
        shape[dim] = sympy.expand(hi - lo)
        offset = sympy.expand(to_expr(t.offset) + lo * to_expr(t.strides[dim]))
        view = B.ViewOp(
            out, B.BufferType(shape, t.element_type, list(t.strides), offset, t.device_attr.data)
        )
        view.result.name_hint = name
        return view

    def restricted(self, nest: L.PointwiseOp, cat: _Concat, lo: int, hi: int) -> None:
        """A copy of ``nest`` computing branches ``lo..hi`` only, into their slice."""
        extent = to_expr(nest.ranges.data[cat.dim])
        start, end = cat.start(lo), cat.end(hi, extent)
        out = nest.outs[0]
        view = self.slice(out, cat.dim, start, end, out.name_hint)
        ranges = list(nest.ranges.data)
        ranges[cat.dim] = sympy.expand(end - start)
        body = Region()
        mapping: dict[SSAValue, SSAValue] = {}
        nest.body.clone_into(body, value_mapper=mapping)
        block = body.block
        sym = nest.index_symbols()[cat.dim]
        for op in block.walk():
            map_exprs(op, lambda e: sympy.expand(e.xreplace({sym: sym + start})))
        arg = block.args[cat.dim]
        if arg.uses:
            shifted = L.IndexOp(sym + start, builtin.IndexType())
            Rewriter.insert_op(shifted, InsertPoint.at_start(block))
            arg.replace_all_uses_with(shifted.result)
        # The clone's comparisons decided over the run become constants.
        for cond, value in _decided(cat, lo, hi).items():
            clone = mapping[cond]
            const = arith.ConstantOp(builtin.IntegerAttr(int(value), builtin.i1))
            Rewriter.insert_op(const, InsertPoint.before(clone.owner))
            clone.replace_all_uses_with(const.result)
        _fold_constant_i1(block)
        _erase_dead(block)
        new = L.PointwiseOp.build(
            operands=[[view.result]],
            result_types=[[]],
            properties={**dict(nest.properties), "ranges": type(nest.ranges)(ranges)},
            attributes=dict(nest.attributes),
            regions=[body],
        )
        new.location = nest.location
        Rewriter.insert_op([view, new], InsertPoint.before(nest))


def _read_only(use: Use) -> bool:
    """Whether ``use`` only reads the buffer's storage: a kernel's load, the
    function's return, an extern operand the call neither writes nor returns a
    view of, or a view whose uses only read."""
    op = use.operation
    if isinstance(op, L.LoadOp | func.ReturnOp):
        return True
    if isinstance(op, B.ExternOp):
        return use.index not in extern_mutated_operands(op) and not extern_results_alias(op)
    if isinstance(op, B.ViewOp):
        return all(_read_only(u) for u in op.result.uses)
    return False


def _write_beside(writer: L.PointwiseOp, slice_: SSAValue) -> None:
    """``writer`` (a bufferized ``loop.pointwise``) as a ``loop.fused`` group that
    stores its one value into its buffer and into ``slice_`` (Inductor's copy
    into a ``ConcatKernel`` input's slice, fused into the input's kernel)."""
    buf = writer.outs[0]
    member = L.PointwiseOp.build(
        operands=[[]],
        result_types=[[L.LoopTensorType(list(writer.ranges.data), buf.type.element_type)]],
        properties=dict(writer.properties),
        regions=[writer.detach_region(writer.body)],
    )
    member.location = writer.location
    member.res[0].name_hint = buf.name_hint
    group = L.FusedOp.build(
        operands=[[buf, slice_]],
        result_types=[[]],
        properties={"ranges": writer.ranges, "reduction_ranges": ShapeAttr([])},
        attributes=dict(writer.attributes),
        regions=[Region(Block([member, L.YieldOp(member.res[0], member.res[0])]))],
    )
    group.location = writer.location
    Rewriter.replace_op(writer, group)


def _i1_value(v: SSAValue) -> bool | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, builtin.IntegerAttr):
        if op.value.type == builtin.i1:
            return bool(op.value.value.data)
    return None


def _fold_constant_i1(block: Block) -> None:
    """Selects, masks and boolean ops over constant conditions folded (a run's
    branches past its comparisons; their loads then lose their masks)."""
    for op in list(block.ops):
        if isinstance(op, arith.SelectOp):
            c = _i1_value(op.cond)
            if c is not None:
                op.result.replace_all_uses_with(op.lhs if c else op.rhs)
        elif isinstance(op, _BOOL_OPS) and op.result.type == builtin.i1:
            a, b = _i1_value(op.lhs), _i1_value(op.rhs)
            value = _combine(op, a, b)
            if value is None and isinstance(op, arith.AndIOp) and True in (a, b):
                op.result.replace_all_uses_with(op.rhs if a is True else op.lhs)
            if value is not None:
                const = arith.ConstantOp(builtin.IntegerAttr(int(value), builtin.i1))
                Rewriter.insert_op(const, InsertPoint.before(op))
                op.result.replace_all_uses_with(const.result)
        elif isinstance(op, L.LoadOp) and op.mask is not None and _i1_value(op.mask) is True:
            new = L.LoadOp(op.source, list(op.index.data), list(op.indirect), None)
            new.result.name_hint = op.result.name_hint
            new.location = op.location
            Rewriter.insert_op(new, InsertPoint.before(op))
            op.result.replace_all_uses_with(new.result)
            Rewriter.erase_op(op)


def _erase_dead(block: Block) -> None:
    """Ops whose results nothing uses, last first (a body is pure but its yield)."""
    for op in reversed(list(block.ops)):
        if isinstance(op, L.YieldOp) or op.regions:
            continue
        if op.results and not any(r.uses for r in op.results):
            Rewriter.erase_op(op)


@dataclass(frozen=True)
class BufferFoldConcatPass(ModulePass):
    """Write a concatenation's stored inputs straight into their slices of its
    buffer (see the module docstring).

    Input: buffer-level IR (after ``bufferize``). Output: the same computation,
    each folded input's ``buffer.alloc`` replaced by a ``buffer.view`` of the
    concatenation's buffer and the concatenation nest replaced by restricted
    copies over the branches not folded (none where all fold)."""

    name = "buffer-fold-concat"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for block in function_blocks(op):
            _Folder(block).run()
