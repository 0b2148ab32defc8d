"""A ``loop.reduction ... template gemm`` (with its ``loop.fused`` epilogue) as
one Triton matmul kernel: Inductor's ``mm`` template
(``torch/_inductor/kernel/mm.py``, ``mm_template``) written in the tt dialect.

The reduction's body is ``a * b`` in f32 where ``a`` depends on the output
index M and the K index and ``b`` on K and N (``aten_to_loop/gemm.py`` lowers
``mm``/``addmm``/``bmm``/``baddbmm`` so; ``loop-inline`` may have put cheap
producers of either operand in, the *prologue*). The kernel:

* program ``pid`` of grid axis 0 takes the output tile ``[BLOCK_M, BLOCK_N]``
  at ``(pid_m, pid_n)``, swizzled in groups of ``GROUP_M`` rows of tiles so
  that programs running together share their A rows and B columns in L2;
  grid axis 1 walks the batch dimensions (those both operands read);
* the operands read the tile's rows and columns wrapped into range
  (``rm % M``, ``rn % N``, as Inductor's template and Triton's tutorial), so
  their loads need no edge mask; the wrapped lanes run in groups of
  ``gcd(M, BLOCK_M)`` consecutive indices, which ``tt.multiple_of`` /
  ``tt.max_contiguous`` say where Triton cannot see it through the ``%``;
* each operand load whose address is affine in K (all of a plain operand's)
  gets its pointer tile built once before the K loop, at K = the tile's
  lanes, carried through the loop and advanced by ``BLOCK_K`` times its K
  stride each step; other loads (a masked or indirect read in a prologue)
  are addressed in the loop as the body says;
* an ``scf.for`` over K in steps of ``BLOCK_K`` loads each operand's tile
  (``[BLOCK_M, BLOCK_K]``, ``[BLOCK_K, BLOCK_N]``), masked only past K
  (``offs_k < K - k0``, none where ``BLOCK_K`` divides K), computes the rest
  of that side's slice of the body on it (the prologue) and accumulates
  ``tt.dot(a, b, acc)`` in f32. Sides that widen 16-bit
  floats to f32 are multiplied in the 16-bit type (the tensor cores' input,
  as cuBLAS does: each product is exact in f32); f32 sides use
  ``inputPrecision = ieee``, or ``tf32`` where cuBLAS may (``tf32=true``).
  Lanes past K are zeroed after the prologue (a prologue of 0 need not be 0);
* after the loop the group's pointwise members (the *epilogue*: the cast,
  bias, activation, residual add) run on the accumulator tile and store
  their outputs, masked at the M and N edges.

A nest this template does not fit (another reduction in the group, a body
that is not such a product) raises :class:`NotATemplate`; ``build_kernel``
(``convert_loop_to_tt.py``) then lowers it as an ordinary reduction (correct,
slower) after a warning.
The config (block sizes, warps, stages, ``GROUP_M``) comes from
``strategy/gemm.py``, or from ``Options.gemm_config``. Index math is i32 where
every buffer has fewer than 2**31 elements (``_index_points``: the M x N x K
points are no index; a lane past an edge may wrap, and is never used).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import sympy
from torch.utils._sympy.functions import FloorDiv, PythonMod
from xdsl.dialects import arith as xarith
from xdsl.dialects import scf
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, bf16, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from coil.dialects import loop as L
from coil.dialects import tt
from coil.dialects.buffer import BufferType
from coil.dialects.symbolic import index_symbols, symbol
from coil.dialects.tt import element_of, shape_of
from coil.intmath import prod as _prod
from coil.lowering.loop_to_tt.body import Tile
from coil.lowering.loop_to_tt.kernel import KernelLowering
from coil.lowering.loop_to_tt.kernel_group import group_members
from coil.lowering.loop_to_tt.kernel_index import cdiv, decompose
from coil.strategy import gemm as G
from coil.strategy import hints

log = logging.getLogger("coil")

PID = symbol("pid")
PID_BATCH = symbol("pid_batch")
RM = symbol("rm")  # the flat row index of several M dimensions
RMW = symbol("rm_wrapped")  # A's rows wrapped into [0, M)
RNW = symbol("rn_wrapped")  # B's columns wrapped into [0, N)
K0 = symbol("k0")  # the K loop's start of the current step
KLA = symbol("kla")  # the K lanes of A's tile, [1, BLOCK_K]
KLB = symbol("klb")  # the K lanes of B's tile, [BLOCK_K, 1]


class NotATemplate(Exception):
    """The nest is not a product the gemm template takes (the reason)."""


def find_gemm(nest: L.LoopOp) -> L.ReductionOp | None:
    """The gemm reduction of a nest (itself, or a member of its group)."""
    if isinstance(nest, L.ReductionOp):
        return nest if nest.is_gemm else None
    if isinstance(nest, L.FusedOp):
        for m in nest.members():
            if isinstance(m, L.ReductionOp) and m.is_gemm:
                return m
    return None


def _slice(block: Block, value: SSAValue) -> list[Operation]:
    """The body ops ``value`` depends on, in block order."""
    need: set[Operation] = set()
    work = [value]
    while work:
        v = work.pop()
        op = v.owner
        if not isinstance(op, Operation) or op.parent_block() is not block or op in need:
            continue
        need.add(op)
        work.extend(op.operands)
    return [op for op in block.ops if op in need]


def _symbols_of(ops: Sequence[Operation]) -> set[sympy.Symbol]:
    syms: set[sympy.Symbol] = set()
    for op in ops:
        if isinstance(op, L.LoadOp):
            for e in op.index.data:
                syms |= sympy.sympify(e).free_symbols
        elif isinstance(op, L.IndexOp):
            syms |= sympy.sympify(op.value).free_symbols
        elif isinstance(op, L.RandOp | L.RandnOp):
            raise NotATemplate("a random draw in the product")
    return syms


def _side_block(ops: Sequence[Operation], value: SSAValue) -> Block:
    """A detached block computing ``value`` from clones of ``ops``."""
    block = Block()
    mapping: dict[SSAValue, SSAValue] = {}
    for op in ops:
        new = op.clone(value_mapper=mapping)
        block.add_op(new)
    block.add_op(L.YieldOp(mapping.get(value, value)))
    return block


def _drop(block: Block) -> None:
    for op in reversed(list(block.ops)):
        op.drop_all_references()


class GemmLowering(KernelLowering):
    """``KernelLowering`` whose group is a gemm template and its epilogue."""

    def build(self):
        kernel = super().build()
        s = self.gemm_shape
        kernel.func.attributes["coil.gemm_shape"] = ArrayAttr(
            [IntegerAttr(v, i64) for v in (s.m, s.n, s.k, s.batch, s.in_bytes)]
        )
        return kernel

    def _group(self) -> tuple[list[sympy.Expr], int]:
        nest = self.nest
        b, it = self.b, self.index_type
        red = find_gemm(nest)
        assert red is not None
        ranges = list(nest.ranges.data)
        n = len(ranges)
        self.members = group_members(nest)
        if any(m.kind == "P2" or (m.kind == "R" and m.op is not red) for m in self.members):
            raise NotATemplate("the group holds more than the product and its epilogue")
        self.outputs = {}
        self._collect_outputs()
        (k_extent,) = red.reduction_ranges.data
        k_extent = sympy.sympify(k_extent)
        isyms = index_symbols(n, 1)[:n]
        rsym = index_symbols(n, 1)[n]
        body = red.body.block
        (value,) = body.last_op.values
        mul = value.owner
        if not isinstance(mul, xarith.MulfOp):
            raise NotATemplate("the body is not a product")
        a_val, b_val = mul.lhs, mul.rhs
        a_ops, b_ops = _slice(body, a_val), _slice(body, b_val)
        sa, sb = _symbols_of(a_ops), _symbols_of(b_ops)
        if rsym not in sa or rsym not in sb:
            # one side constant along K, or the operands' roles swapped
            raise NotATemplate("a side of the product does not read along K")
        m_dims = [k for k, s in enumerate(isyms) if s in sa and s not in sb]
        n_dims = [k for k, s in enumerate(isyms) if s in sb and s not in sa]
        if len(n_dims) > 1:
            raise NotATemplate("more than one N dimension")
        batch = [k for k in range(n) if k not in m_dims + n_dims]
        # Several M dimensions (a Linear's [B, S] rows) are one flat row index.
        m_ext = _prod([ranges[k] for k in m_dims])
        n_ext = ranges[n_dims[0]] if n_dims else sympy.Integer(1)
        batch_ext = _prod([ranges[k] for k in batch])

        # 16-bit operands widened to f32 multiply in their own type.
        elem_a = a_val.type
        a_src, b_src = a_val, b_val
        ea, eb = a_val.owner, b_val.owner
        # Triton's interpreter multiplies bf16 blocks wrongly (tl.dot of two bf16
        # 16x16 blocks was off by 1e10 with Triton 3.5's): there, bf16 sides stay
        # widened (the products are exact in f32 either way).
        if (
            isinstance(ea, xarith.ExtFOp)
            and isinstance(eb, xarith.ExtFOp)
            and ea.input.type == eb.input.type
            and not (ea.input.type == bf16 and not self.device.startswith("cuda"))
        ):
            a_src, b_src = ea.input, eb.input
            elem_a = ea.input.type
        f32_inputs = elem_a == value.type
        precision = ("tf32" if self.options.tf32 else "ieee") if f32_inputs else "tf32"

        shape = G.GemmShape(
            m=_hint(m_ext),
            n=_hint(n_ext),
            k=_hint(k_extent),
            batch=_hint(batch_ext),
            in_bytes=2 if not f32_inputs else 4,
            out_bytes=4,
            tensor_cores=not f32_inputs or self.options.tf32,
        )
        tuned = red.template_config  # chosen at compile time (runtime/gemm_autotune.py)
        cfg = (
            self.options.gemm_config
            or (G.parse_gemm_config(tuned) if tuned else None)
            or G.heuristic(shape, self.options.target)
        )
        bm, bn, bk = cfg.block_m, cfg.block_n, cfg.block_k
        self.xblock, self.rblock, self.yblock, self.persistent = bm, bk, bn, False
        self.gemm_config = cfg
        self.num_stages = cfg.num_stages
        self.plan = f"gemm template {cfg.summary()}, inputs {elem_a}, precision {precision}"
        if tuned and not self.options.gemm_config:
            self.plan += " (tuned at compile time)"

        # ---- program -> tile (group-M swizzle) ----
        pid = b.cast_int(b.emit(tt.GetProgramIdOp(0)), it)
        pid.name_hint = "pid"
        b.bind(PID, pid)
        npm, npn = cdiv(m_ext, bm), cdiv(n_ext, bn)
        group = min(cfg.group_m, int(npm)) if npm.is_Integer else cfg.group_m
        if group <= 1:
            pid_m, pid_n = FloorDiv(PID, npn), PythonMod(PID, npn)
        else:
            width = group * npn
            first = FloorDiv(PID, width) * group
            size = sympy.Min(npm - first, group)
            pid_m = first + PythonMod(PythonMod(PID, width), size)
            pid_n = FloorDiv(PythonMod(PID, width), size)
        if npn == 1:
            pid_m, pid_n = PID, sympy.Integer(0)
        rm, rm_a = self._offsets(pid_m, bm, m_ext, 1, "rm")
        rn, rn_b = self._offsets(pid_n, bn, n_ext, 0, "rn")
        b.bind(RMW, rm_a)
        b.bind(RNW, rn_b)
        if batch:
            pidb = b.cast_int(b.emit(tt.GetProgramIdOp(1)), it)
            pidb.name_hint = "pid_batch"
            b.bind(PID_BATCH, pidb)
            self._bind_indices(PID_BATCH, [isyms[k] for k in batch], [ranges[k] for k in batch])
        # The operands read rows and columns wrapped into range (Inductor's
        # ``rm % M``): their loads need no edge mask, the store keeps it.
        wrap_a: dict[sympy.Expr, sympy.Expr] = {}
        if len(m_dims) == 1:
            b.bind(isyms[m_dims[0]], rm)
            wrap_a[isyms[m_dims[0]]] = RMW
        elif m_dims:
            b.bind(RM, rm)
            self._bind_indices(RM, [isyms[k] for k in m_dims], [ranges[k] for k in m_dims])
            wrap_a[RM] = RMW
            m_sizes = [ranges[k] for k in m_dims]
            wrap_a.update(zip([isyms[k] for k in m_dims], decompose(RMW, m_sizes)))
        wrap_b: dict[sympy.Expr, sympy.Expr] = {}
        if n_dims:
            b.bind(isyms[n_dims[0]], rn)
            wrap_b[isyms[n_dims[0]]] = RNW
        mmask = self._edge(rm, m_ext, bm, "mmask")
        nmask = self._edge(rn, n_ext, bn, "nmask")

        # ---- operand pointers, built once and advanced along K ----
        rka, rkb = self._range(bk, 0), self._range(bk, 1)  # loop-invariant lanes
        b.bind(KLA, rka)
        b.bind(KLB, rkb)
        sides = [
            self._operand(body, a_src, (bm, bk), rsym, KLA, wrap_a),
            self._operand(body, b_src, (bk, bn), rsym, KLB, wrap_b),
        ]
        carried = [ld for side in sides for ld in side.loads if ld.step is not None]

        # ---- the K loop ----
        acc0 = b.const(0.0, value.type, (bm, bn))
        loop_body = Block(arg_types=[it, acc0.type] + [ld.pointer.type for ld in carried])
        loop_body.args[0].name_hint = "k0"
        loop_body.args[1].name_hint = "acc"
        for ld, arg in zip(carried, loop_body.args[2:]):
            arg.name_hint = ld.pointer.name_hint
        even_k = k_extent.is_Integer and int(k_extent) % bk == 0
        try:
            with b.at(loop_body):
                k0 = loop_body.args[0]
                b.bind(K0, k0)
                kmask_a = kmask_b = None
                if not even_k:
                    # Inductor's form: lanes below what is left of K.
                    left = b.binary(xarith.SubiOp, b.emit_index(k_extent), k0)
                    kmask_a, kmask_b = b.cmpi(rka, left, "slt"), b.cmpi(rkb, left, "slt")
                    kmask_a.name_hint = kmask_b.name_hint = "kmask"
                pointers = dict(zip(carried, loop_body.args[2:]))
                a = self._side(sides[0], mmask, kmask_a, rsym, K0 + KLA, pointers)
                bv = self._side(sides[1], nmask, kmask_b, rsym, K0 + KLB, pointers)
                dot = b.emit(tt.DotOp(a, bv, loop_body.args[1], precision))
                advanced = []
                for ld in carried:
                    ptr = pointers[ld]
                    step = b.broadcast_to(ld.step, shape_of(ptr.type))
                    nxt = b.emit(tt.AddPtrOp(ptr, step))
                    nxt.name_hint = ptr.name_hint
                    advanced.append(nxt)
                b.insert(scf.YieldOp(dot, *advanced))
        finally:
            for side in sides:
                _drop(side.block)
        loop = scf.ForOp(
            b.const(0, it),
            b.emit_index(k_extent),
            b.const(bk, it),
            [acc0] + [ld.pointer for ld in carried],
            Region(loop_body),
        )
        b.insert(loop)
        acc = loop.res[0]
        acc.name_hint = "acc"

        # ---- the epilogue ----
        self.isyms = list(isyms)
        self.rsyms = []
        mask = b.and_(mmask, nmask)
        if mask is not None:
            mask = b.broadcast_to(mask, (bm, bn))
        self.tile1 = Tile((bm, bn), mask)
        for m in self.members:
            if m.op is red:
                self._set_results(m, [acc])
            else:
                self._set_results(m, self._compute_pointwise(m))
        # The shape class, for the candidate configs of gemm-autotune.
        self.gemm_shape = shape
        grid = [cdiv(m_ext, bm) * cdiv(n_ext, bn), batch_ext, sympy.Integer(1)]
        return grid, cfg.num_warps

    # ---- pieces ----

    def _index_points(self) -> int:
        """A template computes no flat index over M x N x K: its lanes index the
        output tile and each operand's slice, inside their buffers (whose sizes
        the index type is checked against); a lane past an edge is masked, so
        an offset that wraps there is never used."""
        return int(_prod(self.nest.ranges.data))

    def _range(self, block: int, axis: int) -> SSAValue:
        """``arange(block)`` as ``[block, 1]`` (axis 1) or ``[1, block]`` (axis 0)."""
        b = self.b
        r = b.cast_int(b.emit(tt.MakeRangeOp(0, block)), self.index_type)
        return b.emit(tt.ExpandDimsOp(r, axis))

    def _offsets(
        self, pid: sympy.Expr, block: int, extent: sympy.Expr, axis: int, hint: str
    ) -> tuple[SSAValue, SSAValue]:
        """The tile's output rows (or columns) ``pid * block + arange(block)``,
        expanded along ``axis``, and the same wrapped into ``[0, extent)`` for
        the operands' loads (``rm % M``, itself where ``block`` divides
        ``extent``). The wrapped lanes keep runs of ``gcd(extent, block)``
        consecutive indices starting at multiples of it, which the hints say
        (Triton cannot see through ``%``)."""
        b, it = self.b, self.index_type
        start = b.binary(xarith.MuliOp, b.emit_index(pid), b.const(block, it))
        lanes = b.binary(xarith.AddiOp, start, b.cast_int(b.emit(tt.MakeRangeOp(0, block)), it))
        v = b.emit(tt.ExpandDimsOp(lanes, axis))
        v.name_hint = hint
        if extent.is_Integer and int(extent) % block == 0:
            return v, v
        w = b.binary(xarith.RemSIOp, lanes, b.emit_index(extent))
        g = math.gcd(int(extent), block) if extent.is_Integer else 1
        if g > 1:
            w = b.emit(tt.MultipleOfOp(w, [g]))
            w = b.emit(tt.MaxContiguousOp(w, [g]))
        w = b.emit(tt.ExpandDimsOp(w, axis))
        w.name_hint = f"{hint}_wrapped"
        return v, w

    def _edge(self, idx: SSAValue, extent: sympy.Expr, block: int, hint: str) -> SSAValue | None:
        if extent.is_Integer and int(extent) % block == 0:
            return None
        v = self.b.cmpi(idx, self.b.emit_index(extent), "slt")
        v.name_hint = hint
        return v

    def _operand(
        self,
        body: Block,
        value: SSAValue,
        shape: tuple[int, int],
        rsym: sympy.Symbol,
        klanes: sympy.Symbol,
        wrap: dict[sympy.Expr, sympy.Expr],
    ) -> _Operand:
        """One operand's slice of the body, and the pointers of its loads that
        are affine in K (all of a plain operand's): built here, before the K
        loop, at K = the tile's lanes and rows wrapped into range; the loop
        advances them by ``BLOCK_K`` times their K stride."""
        b = self.b
        block = _side_block(_slice(body, value), value)
        side = _Operand(block, shape)
        sizes = set(self.scalars)
        for op in block.ops:
            if not (
                isinstance(op, L.LoadOp)
                and isinstance(op.source.type, BufferType)
                and not op.indirect
                and op.mask is None
            ):
                continue  # emitted in the loop as the body says (edge-masked)
            at_lanes = Tile(shape, None, {rsym: klanes})
            off = self.body.address(op.source.type, op.index.data, at_lanes)
            off = off.xreplace(wrap)
            expanded = sympy.expand(off)
            stride = expanded.coeff(klanes)
            rest = sympy.expand(expanded - stride * klanes)
            if klanes in rest.free_symbols or not stride.free_symbols <= sizes:
                continue  # K not affine here
            ptr = self.body.pointers(op.source, off, Tile(shape, None))
            ptr.name_hint = f"{'a' if klanes == KLA else 'b'}_ptrs"
            step = None if stride == 0 else b.emit_index(stride * self.rblock)
            side.loads.append(_Load(op, ptr, step))
        return side

    def _side(
        self,
        side: _Operand,
        edge: SSAValue | None,
        kmask: SSAValue | None,
        rsym: sympy.Symbol,
        k: sympy.Expr,
        pointers: dict[_Load, SSAValue],
    ) -> SSAValue:
        """One operand's tile in the K loop: its loads through their pointers
        (masked past K only), the rest of its slice with K read at ``k``."""
        b = self.b
        shape = side.shape
        preloaded = {}
        for ld in side.loads:
            ptr = pointers.get(ld, ld.pointer)
            if kmask is not None and ld.step is not None:
                mask = b.broadcast_to(kmask, shape)
                other = b.const(0, element_of(ld.op.result.type), shape)
                load = tt.LoadOp(ptr, mask, other)
            else:
                load = tt.LoadOp(ptr)
            preloaded[ld.op] = b.emit(load)
        mask = b.and_(edge, kmask)
        if mask is not None:
            mask = b.broadcast_to(mask, shape)
        self.body.preloaded.update(preloaded)
        try:
            (v,) = self.body.emit(side.block, Tile(shape, mask, {rsym: k}))
        finally:
            for op in preloaded:
                del self.body.preloaded[op]
        v = b.broadcast_to(v, shape)
        if kmask is not None and not isinstance(v.owner, tt.LoadOp):
            # A masked load gives 0 past K already; a prologue of 0 may not.
            zero = b.const(0, element_of(v.type), shape)
            v = b.select(b.broadcast_to(kmask, shape), v, zero)
        return v


@dataclass(eq=False)
class _Load:
    """An operand load through pointers advanced along K (``step``: the
    advance, None for a load that does not read along K)."""

    op: L.LoadOp
    pointer: SSAValue
    step: SSAValue | None


@dataclass
class _Operand:
    """One side of the product: a detached clone of its slice of the body."""

    block: Block
    shape: tuple[int, int]
    loads: list[_Load] = field(default_factory=list)


def _hint(e: sympy.Expr) -> int:
    """An extent at the size hints (``strategy/hints.py``), 4096 a symbol without one."""
    return hints.value(e, 4096)


__all__ = ["GemmLowering", "NotATemplate", "find_gemm"]
