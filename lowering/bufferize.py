"""bufferize: value-semantic loop nests become nests writing buffers.

Input: functions at the loop level (after ``convert-aten-to-loop`` and fusion):
tensor arguments are ``!buffer.buffer`` values with their real layout, every
other tensor is a ``!loop.tensor`` made by a top-level ``loop.pointwise`` /
``loop.reduction`` / ``loop.fused``, a ``loop.view`` or a ``buffer.extern``;
``loop.copy`` ops write graph inputs; the function attribute
``coil.result_types`` holds the types (eager's strides) of the results.

Output (the buffer level):

* each top-level nest writes ``buffer.alloc`` buffers in destination-passing
  style (``outs(%buf)``, no results); an output of the function is allocated
  with the layout eager returns, anything else row-major. Members of a
  ``loop.fused`` group stay value-semantic: only the group's results get buffers;
* a ``loop.view`` whose index map is strided-affine becomes ``buffer.view`` (no
  copy); another view read only by loads is folded into them (still no copy);
  otherwise it is materialized by a ``loop.pointwise`` copy;
* ``buffer.extern`` takes buffers; an operand whose layout differs from the one
  ATen saw (the region's block argument) is first copied into that layout,
  except an NHWC operand of a pooling or upsampling op, which ATen takes as it
  is (its result is then NHWC, as torch's meta function says); its
  results are buffers with the layouts the region's aten op returns; a large
  CUDA matrix product whose width is not a multiple of 16 bytes runs on a
  padded operand and is read through a view of its columns (``align-gemms``,
  ``gemm_alignment.py``; with ``pad-constants``, an operand computed from
  parameters alone is padded whatever the product's size);
* ``loop.copy %v, %dest`` becomes a ``loop.pointwise outs(%dest)`` just before
  ``func.return``, after every other read of ``%dest``: reads that follow the
  copy read ``%v`` instead; a result that aliases a mutated input through a
  value made before the copy is copied before the write (it keeps its value);
* a result whose layout differs from eager's is copied into eager's layout.

Guarantees: the function computes what it computed before; results have eager's
strides (size-1 dimensions included), except, with ``padded-results``, the
columns of a padded GEMM product where eager's are row-major: those keep the
padded row stride (as Inductor's ``pad_mm`` outputs do; a copy doubled GPT-2's
logits memory); no value-semantic top-level nest,
``loop.view``, ``loop.copy`` or ``!loop.tensor`` value is left (checked at the
end); ``coil.result_types`` is removed and the function type updated.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from coil.dialects import buffer as B
from coil.dialects import loop as L
from coil.dialects.aten import TensorType
from coil.dialects.layout import nonnegative, view_address
from coil.dialects.symbolic import ShapeAttr, SymInt, contiguous_strides, sym_eq, to_expr
from coil.lowering import gemm_alignment
from coil.strategy.hints import with_size_hints
from coil.transforms.aten_channels_last import channels_last_strides, is_channels_last
from coil.transforms.buffer_hoist_constants import ConstantValues
from coil.transforms.extern_effects import extern_mutated_operands, storage_roots
from coil.transforms.input_level import require_below_aten
from coil.transforms.loop_layout import LayoutRules, strides_through_view, writable
from coil.transforms.loop_utils import copy_nest, identity_copy_source

CHANNELS_LAST_FOLLOWING = frozenset(
    {
        "aten.avg_pool2d.default",
        "aten.max_pool2d_with_indices.default",
        "aten._adaptive_avg_pool2d.default",
        "aten.adaptive_max_pool2d.default",
        "aten.upsample_nearest2d.default",
        "aten.upsample_bilinear2d.default",
    }
)
"""ATen ops whose kernels (CPU and CUDA) take a channels-last input as it is and
allocate their results in the input's suggested memory format, as their meta
functions say: an NHWC operand needs no copy into the NCHW layout traced."""


def _channels_last_ordered(t: B.BufferType) -> bool:
    """A 4-D layout that is NHWC or a slice of one (a channel range of an NHWC
    tensor): channels innermost, then W, H, N (static strides, C, H, W > 1)."""
    if len(t.shape) != 4:
        return False
    dims = [to_expr(e) for e in (*t.shape, *t.strides)]
    if not all(e.is_Integer for e in dims):
        return False
    (n, c, h, w), (sn, sc, sh, sw) = [int(e) for e in dims[:4]], [int(e) for e in dims[4:]]
    if c == 1 or h * w == 1:
        return False  # NCHW and NHWC coincide, or nearly: ATen's choice is its own
    return sc == 1 and sw >= c and sh >= sw * w and (n == 1 or sn >= sh * h)


def same_layout(shape: Sequence[SymInt], a: Sequence[SymInt], b: Sequence[SymInt]) -> bool:
    """Strides ``a`` and ``b`` address a tensor of ``shape`` the same way (the
    stride of a size-1 dimension is never used)."""
    return all(to_expr(n) == 1 or sym_eq(x, y) for n, x, y in zip(shape, a, b))


def strided_layout(
    source: B.BufferType, index: Sequence[sympy.Expr], shape: Sequence[SymInt]
) -> tuple[list[sympy.Expr], sympy.Expr] | None:
    """The (strides, offset) of a view ``source[index]`` (index over the view's
    i0..), when the view's flat address is ``offset + sum(stride_k * i_k)`` with
    non-negative strides and offset; None when it is not (floordiv, mod ...)."""
    strides, offset = view_address(index, source.strides_attr.data, source.offset_attr.data, shape)
    for part in [*strides, offset]:
        if any(L.is_index_symbol(s) for s in part.free_symbols) or not nonnegative(part):
            return None
    for k, n in enumerate(shape):  # unused: give it the row-major stride
        if to_expr(n) == 1:
            strides[k] = to_expr(contiguous_strides(shape)[k])
    return strides, offset


def _retype_keeping_results(op: B.ExternOp, k: int, aten: Operation, new_type) -> bool:
    """Retype ``op``'s region argument ``k`` to ``new_type`` where torch's meta
    function gives ``aten`` the same result types with it; else leave it."""
    from coil.frontend.meta import NoMetaResult, meta_result_types

    arg = op.body.block.args[k]
    want = arg.type
    old = [r.type for r in aten.results]
    Rewriter.replace_value_with_new_type(arg, new_type)
    try:
        same = meta_result_types(aten) == old
    except NoMetaResult:
        same = False
    if not same:
        Rewriter.replace_value_with_new_type(op.body.block.args[k], want)
    return same


def function_device(fn: func.FuncOp) -> str:
    """The device the function's tensors live on (inputs first, then results)."""
    types = [a.type for a in fn.body.block.args]
    eager = fn.attributes.get("coil.result_types")
    if isinstance(eager, ArrayAttr):
        types += list(eager.data)
    for t in types:
        if isinstance(t, B.BufferType | TensorType):
            return t.device_attr.data
    return "cpu"


class _Bufferizer:
    """Bufferizes one function, top to bottom (producers come first)."""

    def __init__(
        self,
        fn: func.FuncOp,
        align_gemms: bool = True,
        padded_results: bool = False,
        tf32: bool = False,
        pad_constants: bool = False,
    ):
        self.fn = fn
        self.align_gemms = align_gemms
        self.pad_constants = pad_constants
        self.constants: ConstantValues | None = None
        self.tf32 = tf32
        self.padded_results = padded_results
        self.block = fn.body.block
        ret = self.block.last_op
        if not isinstance(ret, func.ReturnOp):
            raise AssertionError(f"bufferize: @{fn.sym_name.data} does not end with func.return")
        self.ret = ret
        self.device = function_device(fn)
        self.layouts = LayoutRules(fn)
        eager = fn.attributes.get("coil.result_types")
        self.eager: list[Attribute | None] = (
            list(eager.data) if isinstance(eager, ArrayAttr) else [None] * len(ret.arguments)
        )
        self.copies: list[L.CopyOp] = []
        # Products of padded GEMMs (gemm_alignment): their columns are returned
        # with the padded row stride, as Inductor returns them.
        self.padded: set[SSAValue] = set()
        # Loads that read a view's source since the view was folded into them:
        # they read it as it was at the view, even if a loop.copy writes it later.
        self.folded: set[Operation] = set()
        # Buffers a loop.scatter may update in place (note_scattered_into).
        self.scattered_in_place: set[SSAValue] = set()
        # Scatters whose result is a mutated input's new value, to update that
        # input in place (scatters_into_inputs).
        self.into_input: dict[L.ScatterOp, SSAValue] = {}

    # ---- helpers ----------------------------------------------------------------

    def eager_strides(self, value: SSAValue) -> Sequence[SymInt] | None:
        return self.layouts.eager_strides(value)

    def result_layout(self, value: SSAValue) -> Sequence[SymInt] | None:
        """The strides to store a nest's result with: ``transforms/loop_layout.py``'s
        rules (eager's where it is returned, an extern's, channels-last where it
        reads channels-last data, a returned permutation's), which
        ``loop-split-reduction`` asked before fusion."""
        return self.layouts.result_layout(value)

    def forward_copies_into_externs(self) -> None:
        """An extern call reads the source of an identity copy nest directly: the
        call's region already says the layout it wants (a copy in that layout
        is made in front of it where the source's differs, or the source's
        producer stores it so: ``result_layout``)."""
        for ext in [op for op in self.block.ops if isinstance(op, B.ExternOp)]:
            mutated = extern_mutated_operands(ext)
            for k, operand in enumerate(ext.args):
                source = identity_copy_source(operand)
                if source is None or k in mutated:
                    continue
                ext.operands[k] = source
                copy = operand.owner
                if not operand.uses:
                    Rewriter.erase_op(copy)

    def row_major_ffma_operands(self) -> None:
        """The viewed operands of FFMA products are declared row-major where
        the nest computing them can store them so (its own layout rules leave
        it free: not returned, not wanted otherwise by another call), so the
        change never costs a copy (``gemm_alignment.ffma_row_major_operands``)."""
        for op in self.block.ops:
            if not isinstance(op, B.ExternOp):
                continue
            for k in gemm_alignment.ffma_row_major_operands(op, self.tf32):
                view = op.args[k].owner
                traced = op.body.block.args[k].type
                gemm_alignment.declare_row_major(op, k)
                want = op.body.block.args[k].type
                stored = self.layouts.result_layout(view.source)
                exact = strides_through_view(
                    view.source.type.shape, view.index.data, want.shape, want.strides
                )
                if stored is None or exact is None or [to_expr(s) for s in stored] != exact:
                    Rewriter.replace_value_with_new_type(op.body.block.args[k], traced)

    def alloc(
        self,
        shape: Sequence[SymInt],
        element_type: Attribute,
        strides: Sequence[SymInt] | None,
        before: Operation,
        name: str | None,
    ) -> SSAValue:
        op = B.AllocOp(B.BufferType(shape, element_type, strides, 0, self.device))
        Rewriter.insert_op(op, InsertPoint.before(before))
        op.result.name_hint = name
        return op.result

    # ---- per op --------------------------------------------------------------------

    def run(self) -> None:
        self.forward_copies_into_externs()
        self.scatters_into_inputs()
        self.row_major_ffma_operands()
        for op in list(self.block.ops):
            if isinstance(op, L.LoopOp) and op.res:
                self.nest(op)
            elif isinstance(op, L.ViewOp):
                self.view(op)
            elif isinstance(op, B.ExternOp):
                self.extern(op)
            elif isinstance(op, L.CopyOp):
                self.copies.append(op)
                self.read_value_after(op)
        self.finish_results()
        self.check()

    def nest(self, op: L.LoopOp) -> None:
        if isinstance(op, L.ScatterOp):
            self.scatter(op)
            return
        outs = [
            self.alloc(r.type.shape, r.type.element_type, self.result_layout(r), op, r.name_hint)
            for r in op.res
        ]
        self.note_scattered_into(op.res, outs)
        new = type(op).build(
            operands=[outs],
            result_types=[[]],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
            regions=[op.detach_region(op.body)],
        )
        new.location = op.location
        Rewriter.insert_op(new, InsertPoint.before(op))
        for r, buf in zip(op.res, outs):
            r.replace_all_uses_with(buf)
        Rewriter.erase_op(op)

    def note_scattered_into(self, results: Sequence[SSAValue], bufs: Sequence[SSAValue]) -> None:
        """Remember the buffers of results whose one use is a scatter's ``into``:
        the scatter may update them in place (nothing else reads the old value)."""
        for r, buf in zip(results, bufs):
            uses = list(r.uses)
            if len(uses) == 1 and isinstance(uses[0].operation, L.ScatterOp):
                scatter = uses[0].operation
                if scatter.init and scatter.init[0] is r:
                    self.scattered_in_place.add(buf)

    def scatters_into_inputs(self) -> None:
        """Find the scatters that update a mutated input where it is (a static
        KV cache's ``cache[:, :, pos] = k``, functionalized into ``index_put``
        and a ``copy_`` back into the input; Inductor's reinplacing of
        ``index_put``): ``loop.scatter into(%arg)`` whose result, or an
        identity copy of it, is the one ``loop.copy`` into ``%arg``. The
        scatter then writes its few elements into ``%arg`` itself: no copy of
        the whole input before it, none back after it. Done where no read can
        tell: nothing reads ``%arg`` (directly or through a view) after the
        scatter but the copy, and neither the result nor ``%arg`` is returned.
        The identity copy is erased; the ``loop.copy`` then copies ``%arg``
        onto itself and goes away in :meth:`write_input`."""
        copies: dict[SSAValue, list[L.CopyOp]] = {}
        for op in self.block.ops:
            if isinstance(op, L.CopyOp):
                copies.setdefault(op.dest, []).append(op)
        for op in list(self.block.ops):
            if not isinstance(op, L.ScatterOp) or not op.res or len(op.init) != 1:
                continue
            (r,), (dest,) = op.res, op.init
            if not isinstance(dest.type, B.BufferType) or dest.owner is not self.block:
                continue  # a function argument's buffer only
            if len(copies.get(dest, [])) != 1:
                continue
            (copy,) = copies[dest]
            identity = None
            if copy.value is not r:
                if identity_copy_source(copy.value) is not r or len(list(copy.value.uses)) != 1:
                    continue
                identity = copy.value.owner
            t, want = r.type, dest.type
            if list(t.shape) != list(want.shape) or t.element_type != want.element_type:
                continue
            if _reaches_return(dest, self.ret) or any(u.operation is self.ret for u in r.uses):
                continue
            if any(op.is_before_in_block(top) for top in self._readers(dest, {op, copy})):
                continue
            if identity is not None:
                copy.operands[0] = r
                Rewriter.erase_op(identity)
            self.into_input[op] = dest

    def _readers(self, value: SSAValue, skip: set[Operation]) -> set[Operation]:
        """The top-level ops that read ``value`` or a view of it, but ``skip``."""
        readers: set[Operation] = set()
        pending, seen = [value], set()
        while pending:
            v = pending.pop()
            if v in seen:
                continue
            seen.add(v)
            for use in v.uses:
                top = use.operation
                while top.parent is not self.block:
                    top = top.parent_op()
                if top in skip:
                    continue
                if isinstance(top, B.ViewOp | L.ViewOp):
                    pending.append(top.result)
                    continue
                readers.add(top)
        return readers

    def scatter(self, op: L.ScatterOp) -> None:
        """A scatter updates its out in place, after the out holds ``init``: the
        mutated input it writes back into (:meth:`scatters_into_inputs`), the
        buffer ``init``'s producer wrote where the scatter is its one reader
        (``zeros(...).index_put_(...)``: no copy), else a copy of ``init``."""
        (r,) = op.res
        (init,) = op.init
        if op in self.into_input:
            buf = init
        elif init in self.scattered_in_place and isinstance(init.owner, B.AllocOp):
            buf = init
        else:
            layout = self.result_layout(r)
            buf = self.alloc(r.type.shape, r.type.element_type, layout, op, r.name_hint)
            Rewriter.insert_op(copy_nest(init, buf, location=op.location), InsertPoint.before(op))
        self.note_scattered_into([r], [buf])
        props = {k: v for k, v in op.properties.items() if k != "operandSegmentSizes"}
        new = L.ScatterOp.build(
            operands=[[], [buf]],  # (init, outs)
            result_types=[[]],
            properties=props,
            attributes=dict(op.attributes),
            regions=[op.detach_region(op.body)],
        )
        new.location = op.location
        Rewriter.insert_op(new, InsertPoint.before(op))
        r.replace_all_uses_with(buf)
        Rewriter.erase_op(op)

    def view(self, op: L.ViewOp) -> None:
        source, result = op.source, op.result
        shape, et = result.type.shape, result.type.element_type
        if not isinstance(source.type, B.BufferType):
            raise AssertionError(f"bufferize: loop.view of {source.type} (not bufferized)")
        layout = strided_layout(source.type, op.index.data, shape)
        if layout is not None:
            strides, offset = layout
            eager = self.eager_strides(result)
            if eager is not None and same_layout(shape, strides, eager):
                strides = list(eager)  # agree on size-1 dims too
            device = source.type.device_attr.data
            new = B.ViewOp(source, B.BufferType(shape, et, strides, offset, device))
            new.location = op.location
            Rewriter.insert_op(new, InsertPoint.before(op))
            new.result.name_hint = result.name_hint
            result.replace_all_uses_with(new.result)
            Rewriter.erase_op(op)
            return
        if all(isinstance(use.operation, L.LoadOp) for use in result.uses):
            self.fold_into_loads(op)
            return
        buf = self.alloc(shape, et, self.eager_strides(result), op, result.name_hint)
        copy = copy_nest(source, buf, op.index.data, op.location)
        Rewriter.insert_op(copy, InsertPoint.before(op))
        result.replace_all_uses_with(buf)
        Rewriter.erase_op(op)

    def fold_into_loads(self, op: L.ViewOp) -> None:
        """Read the view's source directly: load v[f] = load src[index(i := f)]."""
        syms = L.index_symbols(op.result.type.rank)
        for use in list(op.result.uses):
            load = use.operation
            subs = dict(zip(syms, load.index.data))
            index = [sympy.expand(e.xreplace(subs)) for e in op.index.data]
            load.index = ShapeAttr(index)
            load.operands[use.index] = op.source
            self.folded.add(load)
        Rewriter.erase_op(op)

    def follow_channels_last(self, op: B.ExternOp) -> None:
        """An ATen op of :data:`CHANNELS_LAST_FOLLOWING` reads an NHWC operand as it
        is (a slice of one, such as a Res2Net split piece, after a copy into
        dense NHWC), and returns what torch's meta function gives for it (the
        input's suggested memory format: NHWC), instead of a copy into the NCHW
        layout the trace saw: ResNet-D's avg-pool shortcut copied a [32, 256, 56, 56]
        block output to NCHW (49 MiB held next to it, at the plan's peak), and
        the pooled result back to NHWC for the next convolution."""
        inner = [o for o in op.body.block.ops if not isinstance(o, B.YieldOp)]
        if len(inner) != 1 or inner[0].name not in CHANNELS_LAST_FOLLOWING:
            return
        (aten,) = inner
        block = op.body.block
        tensors = [k for k, a in enumerate(block.args) if isinstance(a.type, TensorType)]
        if len(tensors) != 1:
            return
        (k,) = tensors
        arg, t = block.args[k], op.args[k].type
        want = arg.type
        if not isinstance(t, B.BufferType) or len(want.shape) != 4:
            return
        if same_layout(t.shape, t.strides, want.strides) or not _channels_last_ordered(t):
            return
        from coil.frontend.meta import NoMetaResult, meta_result_types

        old = [r.type for r in aten.results]
        nhwc = TensorType(
            want.shape, want.element_type, channels_last_strides(want.shape), want.device_attr.data
        )
        Rewriter.replace_value_with_new_type(arg, nhwc)
        try:
            new = meta_result_types(aten)
        except NoMetaResult:
            new = None
        if new is None or [x.shape for x in new] != [x.shape for x in old]:
            Rewriter.replace_value_with_new_type(block.args[k], want)  # as traced
            return
        for r, ty in zip(list(aten.results), new):
            Rewriter.replace_value_with_new_type(r, ty)

    def densify(self, op: B.ExternOp, k: int) -> TensorType | None:
        """Where ``op``'s operand ``k`` is copied into the layout ATen saw and that
        layout is not dense (a slice of a larger tensor: the traced ``split``
        piece a Res2Net block pools), a dense layout in the same dimension order
        instead: a copy into the traced strides allocates the whole parent's
        span (a [32, 52, 56, 56] piece held 39 MiB of a [32, 208, 56, 56]
        tensor's storage). The region's argument is retyped; kept only where
        torch's meta function gives the call's results the same types."""
        inner = [o for o in op.body.block.ops if not isinstance(o, B.YieldOp)]
        arg = op.body.block.args[k]
        want = arg.type
        shape = [to_expr(n) for n in want.shape]
        strides = [to_expr(st) for st in want.strides]
        if len(inner) != 1 or not all(e.is_Integer for e in shape + strides):
            return None
        span = 1 + sum((int(n) - 1) * int(st) for n, st in zip(shape, strides))
        numel = 1
        for n in shape:
            numel *= int(n)
        if numel == 0 or span <= numel:
            return None
        order = sorted(range(len(shape)), key=lambda d: (-int(strides[d]), d))
        dense = [0] * len(shape)
        step = 1
        for d in reversed(order):
            dense[d] = step
            step *= int(shape[d])
        (aten,) = inner
        new_type = TensorType(want.shape, want.element_type, dense, want.device_attr.data)
        return new_type if _retype_keeping_results(op, k, aten, new_type) else None

    def read_transposed(self, op: B.ExternOp, k: int, t: B.BufferType) -> bool:
        """Where ``op`` is a matrix product that reads its operand ``k`` as
        stored (row-major or its transpose: ``gemm_alignment.reads_either_order``),
        the region's argument is retyped to the stored layout, no copy; kept only
        where torch's meta function gives the call's results the same types."""
        if not gemm_alignment.reads_either_order(op, k, t.strides):
            return False
        (aten,) = [o for o in op.body.block.ops if not isinstance(o, B.YieldOp)]
        want = op.body.block.args[k].type
        given = TensorType(want.shape, want.element_type, t.strides, want.device_attr.data)
        return _retype_keeping_results(op, k, aten, given)

    def extern(self, op: B.ExternOp) -> None:
        self.follow_channels_last(op)
        mutated = extern_mutated_operands(op)
        for k, (operand, arg) in enumerate(zip(op.args, op.body.block.args)):
            t, want = operand.type, arg.type
            if not isinstance(t, B.BufferType) or not isinstance(want, TensorType):
                continue
            if k in mutated or same_layout(t.shape, t.strides, want.strides):
                continue
            if not writable(want.shape, want.strides):
                continue
            if self.read_transposed(op, k, t):
                continue
            want = self.densify(op, k) or want
            # A copy into NHWC for a convolution is named for what it does (its
            # kernel: coil_to_nhwc_4 for a weight, not coil_arg16_4).
            hint = operand.name_hint
            if is_channels_last(want):
                # (the value's counter dropped: relu_2_to_nhwc would keep it)
                stem = re.sub(r"_\d+$", "", hint) if hint else ""
                hint = f"{stem}_to_nhwc" if stem else "to_nhwc"
            buf = self.alloc(t.shape, t.element_type, want.strides, op, hint)
            Rewriter.insert_op(
                copy_nest(operand, buf, location=op.location), InsertPoint.before(op)
            )
            op.operands[k] = buf
        padding = None
        if self.align_gemms:
            padding = gemm_alignment.plan(op, self.tf32, self.constant_operands(op))
        view_type = gemm_alignment.rewrite(op, padding) if padding is not None else None
        term = op.body.block.last_op
        types = [
            B.BufferType(
                y.type.shape, y.type.element_type, y.type.strides, 0, y.type.device_attr.data
            )
            if isinstance(y.type, TensorType)
            else r.type
            for r, y in zip(op.res, term.values)
        ]
        new = B.ExternOp(list(op.args), types, op.detach_region(op.body))
        new.attributes.update(op.attributes)
        new.location = op.location
        Rewriter.insert_op(new, InsertPoint.before(op))
        for old, r in zip(op.res, new.res):
            r.name_hint = old.name_hint
        results = list(new.res)
        if view_type is not None:
            self.padded.add(new.res[0])
            # Readers see the [.., M, N] columns of the padded product.
            view = B.ViewOp(new.res[0], view_type)
            view.location = op.location
            Rewriter.insert_op(view, InsertPoint.after(new))
            results = [view.result]
        for old, r in zip(op.res, results):
            r.name_hint = old.name_hint
            old.replace_all_uses_with(r)
        Rewriter.erase_op(op)

    def constant_operands(self, op: B.ExternOp) -> frozenset[int]:
        """With ``pad-constants``: the positions of ``op``'s operands computed from
        parameters alone (``buffer-hoist-constants`` computes those once)."""
        if not self.pad_constants:
            return frozenset()
        if self.constants is None:
            self.constants = ConstantValues(self.fn)
        return frozenset(k for k, a in enumerate(op.args) if self.constants.is_constant(a))

    # ---- results and mutations --------------------------------------------------------

    def finish_results(self) -> None:
        """Copy results whose layout differs from eager's (or that alias an input
        about to be mutated), then write the mutated inputs, then return."""
        ret = self.ret
        dests = [c.dest for c in self.copies]
        mutated_roots = set().union(*(storage_roots(d) for d in dests)) if dests else set()
        copied: dict[tuple[SSAValue, tuple[sympy.Expr, ...]], SSAValue] = {}
        for k, value in enumerate(list(ret.arguments)):
            t, eager = value.type, self.eager[k]
            if not isinstance(t, B.BufferType):
                continue
            strides = t.strides
            if isinstance(eager, TensorType) and writable(eager.shape, eager.strides):
                strides = eager.strides
            aliases_mutated = bool(storage_roots(value) & mutated_roots)
            if same_layout(t.shape, t.strides, strides) and not aliases_mutated:
                continue
            if self.padded_results and not aliases_mutated and self.padded_rows(value, strides):
                continue
            key = (value, tuple(sympy.expand(to_expr(s)) for s in strides))
            if key not in copied:
                buf = self.alloc(t.shape, t.element_type, strides, ret, value.name_hint)
                Rewriter.insert_op(copy_nest(value, buf), InsertPoint.before(ret))
                copied[key] = buf
            ret.operands[k] = copied[key]
        for copy in self.copies:
            self.write_input(copy)

    def padded_rows(self, value: SSAValue, eager: Sequence[SymInt]) -> bool:
        """Whether ``value`` is the columns of a padded GEMM's product, row-major
        but for the padded row stride, where eager's result is row-major. Such a
        result is returned as it is, with the padded row stride, as Inductor
        returns its padded ``mm`` (on the H100, ``x @ w.t()`` of 4096 x 768 by
        768 x 50257 bf16: Inductor's output has row stride 50264, 467 MB peak,
        0.54 ms; coil's copy to eager's layout took 859 MB and 0.84 ms)."""
        t = value.type
        shape = list(t.shape)
        if len(shape) < 2 or not storage_roots(value) <= self.padded:
            return False
        if not same_layout(shape, eager, contiguous_strides(shape)):
            return False
        pitch = to_expr(t.strides[-2])
        wide = contiguous_strides(shape[:-1] + [pitch])
        return same_layout(shape, t.strides, wide)

    def read_value_after(self, copy: L.CopyOp) -> None:
        """Reads of the destination after the copy read the copied value (the
        write itself moves to the end, after the reads that come before it)."""
        before: set[Operation] = set()
        op = copy.prev_op
        while op is not None:
            before.add(op)
            op = op.prev_op
        for use in list(copy.dest.uses):
            if use.operation in self.folded:
                continue  # reads a view taken before the copy: the old value
            top = use.operation
            while top.parent_op() is not self.fn:
                top = top.parent_op()
            if top is not copy and top not in before:
                use.operation.operands[use.index] = copy.value

    def write_input(self, copy: L.CopyOp) -> None:
        value, dest = copy.value, copy.dest
        if self.write_in_place(copy):
            return
        Rewriter.erase_op(copy)
        if value is dest:
            return
        if storage_roots(value) & storage_roots(dest):
            # An in-place copy between overlapping layouts: stage it.
            t = value.type
            tmp = self.alloc(t.shape, t.element_type, None, self.ret, value.name_hint)
            Rewriter.insert_op(copy_nest(value, tmp), InsertPoint.before(self.ret))
            value = tmp
        Rewriter.insert_op(copy_nest(value, dest), InsertPoint.before(self.ret))

    def write_in_place(self, copy: L.CopyOp) -> bool:
        """Let the nest that computes a mutated input's new value write it into the
        input's buffer, with no copy (Inductor reinplaces such ``copy_`` epilogues:
        a compiled optimizer step writes each parameter and state once, not into a
        new buffer and then again through a copy kernel). Done where it cannot
        change what any read sees:

        * the value is one buffer of the input's type, written by one top-level
          nest (its ``outs``) and not returned (an output may not alias an input);
        * the input has no other ``loop.copy``, and no op after that nest reads
          it, directly or through a view (later reads were moved to the value);
        * inside the nest the input is read only where the value is written
          (``dest[i0, ..., ik]`` at the nest's own point, no indirect or masked
          read) and, in a fused group, only by members up to the one yielding
          the value: each element is read by the program that writes it, before
          it does.

        Returns whether it did (the copy is then erased)."""
        value, dest = copy.value, copy.dest
        alloc = value.owner
        if not isinstance(alloc, B.AllocOp) or value.type != dest.type:
            return False
        if sum(1 for c in self.copies if c.dest is dest) != 1:
            return False
        writer: L.LoopOp | None = None
        for use in value.uses:
            op = use.operation
            if isinstance(op, L.LoopOp) and op.parent is self.block and value in op.outs:
                if writer is not None:
                    return False
                writer = op
        if writer is None or _reaches_return(value, self.ret):
            return False
        if not self._reads_only_where_written(writer, dest, list(writer.outs).index(value)):
            return False
        readers: set[Operation] = set()
        pending, seen = [dest], set()
        while pending:
            v = pending.pop()
            if v in seen:
                continue
            seen.add(v)
            for use in v.uses:
                op = use.operation
                if op is copy:
                    continue
                if op is self.ret:
                    return False
                if isinstance(op, B.ViewOp) and op.parent is self.block:
                    pending.append(op.result)
                    continue
                top = op
                while top.parent is not self.block:
                    top = top.parent_op()
                readers.add(top)
        if any(r is not writer and writer.is_before_in_block(r) for r in readers):
            return False
        value.replace_all_uses_with(dest)
        Rewriter.erase_op(alloc)
        Rewriter.erase_op(copy)
        return True

    @staticmethod
    def _reads_only_where_written(writer: L.LoopOp, dest: SSAValue, out: int) -> bool:
        rank = len(dest.type.shape)
        if list(writer.ranges.data) != list(dest.type.shape):
            return False
        if isinstance(writer, L.FusedOp):
            term = writer.body.block.last_op
            producer = term.values[out].owner
            members = writer.members()
            if producer not in members:
                return False
            allowed = members[: members.index(producer) + 1]
        else:
            allowed = [writer]
        for load in writer.walk():
            if not isinstance(load, L.LoadOp) or load.source is not dest:
                continue
            nest = load.parent_op()
            while not isinstance(nest, L.LoopOp):
                nest = nest.parent_op()
            if nest not in allowed or load.indirect or load.mask is not None:
                return False
            if list(load.index.data) != nest.index_symbols()[:rank]:
                return False
        return True

    def check(self) -> None:
        fn = self.fn
        for op in self.block.ops:
            if isinstance(op, L.LoopOp) and op.res or isinstance(op, L.ViewOp | L.CopyOp):
                raise AssertionError(f"bufferize left {op.name} behind in @{fn.sym_name.data}")
            for r in op.results:
                if isinstance(r.type, L.LoopTensorType):
                    raise AssertionError(
                        f"bufferize left a !loop.tensor made by {op.name} in @{fn.sym_name.data}"
                    )
        fn.attributes.pop("coil.result_types", None)
        fn.function_type = builtin.FunctionType.from_lists(
            [a.type for a in self.block.args], [v.type for v in self.ret.arguments]
        )


def _reaches_return(value: SSAValue, ret: Operation) -> bool:
    """Whether ``value`` or a view of it is returned."""
    for use in value.uses:
        if use.operation is ret:
            return True
        if isinstance(use.operation, B.ViewOp) and _reaches_return(use.operation.result, ret):
            return True
    return False


@dataclass(frozen=True)
class BufferizePass(ModulePass):
    """Give every loop-level tensor a buffer (see the module doc)."""

    name = "bufferize"

    align_gemms: bool = True
    """Pad the operand of large CUDA matrix products whose width is not a multiple
    of 16 bytes (``gemm_alignment.py``), so cuBLAS runs its aligned kernels."""

    tf32: bool = False
    """cuBLAS may run f32 products in TF32 (``torch.backends.cuda.matmul.allow_tf32``,
    which the backend passes): only then are f32 products padded."""

    padded_results: bool = False
    """Return the columns of a padded product with the padded row stride instead
    of copying them to eager's layout (as Inductor's ``pad_mm`` outputs). The
    backend turns it on for inference graphs only: a training forward's results
    include the activations its backward was traced to read with eager's
    strides."""

    pad_constants: bool = False
    """Pad a product's operand computed from parameters alone (``coil.static``
    arguments) whatever the product's rows: ``buffer-hoist-constants{inference=true}``
    computes such a pad once per parameter version, not on every call. The
    backend turns both on for inference graphs."""

    @with_size_hints
    def apply(self, ctx: Context, op: ModuleOp) -> None:
        require_below_aten(op, "bufferize")
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and not fn.is_declaration:
                _Bufferizer(
                    fn, self.align_gemms, self.padded_results, self.tf32, self.pad_constants
                ).run()


__all__ = ["BufferizePass", "same_layout", "strided_layout", "writable"]
