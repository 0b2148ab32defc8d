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
* an ``scf.for`` over K in steps of ``BLOCK_K`` computes ``a`` on a
  ``[BLOCK_M, BLOCK_K]`` tile and ``b`` on ``[BLOCK_K, BLOCK_N]`` (each
  side's slice of the body, with its K index bound to that side's lanes),
  and accumulates ``tt.dot(a, b, acc)`` in f32. Sides that widen 16-bit
  floats to f32 are multiplied in the 16-bit type (the tensor cores' input,
  as cuBLAS does: each product is exact in f32); f32 sides use
  ``inputPrecision = ieee``, or ``tf32`` where cuBLAS may (``tf32=true``).
  Lanes past K are zeroed after the prologue (a prologue of 0 need not be 0);
* after the loop the group's pointwise members (the *epilogue*: the cast,
  bias, activation, residual add) run on the accumulator tile and store
  their outputs, masked at the M and N edges.

A nest this template does not fit (another reduction in the group, a body
that is not such a product) raises :class:`NotATemplate`; ``build_kernel``
then lowers it as an ordinary reduction (correct, slower) after a warning.
The config (block sizes, warps, stages, ``GROUP_M``) comes from
``strategy/gemm.py``, or from ``Options.gemm_config``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import sympy
from torch.utils._sympy.functions import FloorDiv, PythonMod
from xdsl.dialects import arith as xarith
from xdsl.dialects import scf
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, bf16, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from coil.dialects import loop as L
from coil.dialects import tt
from coil.dialects.symbolic import index_symbols, symbol
from coil.dialects.tt import element_of
from coil.lowering.loop_to_tt.body import Tile
from coil.lowering.loop_to_tt.kernel import KernelLowering, _prod
from coil.lowering.loop_to_tt.kernel_group import group_members
from coil.lowering.loop_to_tt.kernel_index import cdiv
from coil.strategy import gemm as G
from coil.strategy import hints

log = logging.getLogger("coil")

PID = symbol("pid")
PID_BATCH = symbol("pid_batch")
RM = symbol("rm")  # the flat row index of several M dimensions
KA = symbol("ka")  # the K index of A's lanes, [1, BLOCK_K]
KB = symbol("kb")  # the K index of B's lanes, [BLOCK_K, 1]


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
        rm = self._offsets(pid_m, bm, 1, "rm")
        rn = self._offsets(pid_n, bn, 0, "rn")
        if batch:
            pidb = b.cast_int(b.emit(tt.GetProgramIdOp(1)), it)
            pidb.name_hint = "pid_batch"
            b.bind(PID_BATCH, pidb)
            self._bind_indices(PID_BATCH, [isyms[k] for k in batch], [ranges[k] for k in batch])
        if len(m_dims) == 1:
            b.bind(isyms[m_dims[0]], rm)
        elif m_dims:
            b.bind(RM, rm)
            self._bind_indices(RM, [isyms[k] for k in m_dims], [ranges[k] for k in m_dims])
        if n_dims:
            b.bind(isyms[n_dims[0]], rn)
        mmask = self._edge(rm, m_ext, bm, "mmask")
        nmask = self._edge(rn, n_ext, bn, "nmask")

        # ---- the K loop ----
        acc0 = b.const(0.0, value.type, (bm, bn))
        loop_body = Block(arg_types=[it, acc0.type])
        loop_body.args[0].name_hint = "k0"
        loop_body.args[1].name_hint = "acc"
        rka, rkb = self._range(bk, 0), self._range(bk, 1)  # loop-invariant lanes
        with b.at(loop_body):
            k0 = loop_body.args[0]
            ka = b.binary(xarith.AddiOp, k0, rka)
            kb = b.binary(xarith.AddiOp, k0, rkb)
            ka.name_hint, kb.name_hint = "ka", "kb"
            b.bind(KA, ka)
            b.bind(KB, kb)
            kmask_a = self._edge(ka, k_extent, bk, "kmask")
            kmask_b = self._edge(kb, k_extent, bk, "kmask")
            a = self._side(a_ops, a_src, (bm, bk), mmask, kmask_a, rsym, KA)
            bv = self._side(b_ops, b_src, (bk, bn), nmask, kmask_b, rsym, KB)
            dot = b.emit(tt.DotOp(a, bv, loop_body.args[1], precision))
            b.insert(scf.YieldOp(dot))
        loop = scf.ForOp(
            b.const(0, it), b.emit_index(k_extent), b.const(bk, it), [acc0], Region(loop_body)
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

    def _range(self, block: int, axis: int) -> SSAValue:
        """``arange(block)`` as ``[block, 1]`` (axis 1) or ``[1, block]`` (axis 0)."""
        b = self.b
        r = b.cast_int(b.emit(tt.MakeRangeOp(0, block)), self.index_type)
        return b.emit(tt.ExpandDimsOp(r, axis))

    def _offsets(self, pid: sympy.Expr, block: int, axis: int, hint: str) -> SSAValue:
        b = self.b
        start = b.binary(xarith.MuliOp, b.emit_index(pid), b.const(block, self.index_type))
        v = b.binary(xarith.AddiOp, start, self._range(block, axis))
        v.name_hint = hint
        return v

    def _edge(self, idx: SSAValue, extent: sympy.Expr, block: int, hint: str) -> SSAValue | None:
        if extent.is_Integer and int(extent) % block == 0:
            return None
        v = self.b.cmpi(idx, self.b.emit_index(extent), "slt")
        v.name_hint = hint
        return v

    def _side(
        self,
        ops: Sequence[Operation],
        value: SSAValue,
        shape: tuple[int, int],
        edge: SSAValue | None,
        kmask: SSAValue | None,
        rsym: sympy.Symbol,
        ksym: sympy.Symbol,
    ) -> SSAValue:
        """One operand's tile: its slice of the body with K read at ``ksym``."""
        b = self.b
        mask = b.and_(edge, kmask)
        if mask is not None:
            mask = b.broadcast_to(mask, shape)
        block = _side_block(_slice(ops[0].parent_block(), value), value)
        try:
            (v,) = self.body.emit(block, Tile(shape, mask, {rsym: ksym}))
        finally:
            _drop(block)
        v = b.broadcast_to(v, shape)
        if kmask is not None and not isinstance(v.owner, tt.LoadOp):
            # A masked load gives 0 past K already; a prologue of 0 may not.
            zero = b.const(0, element_of(v.type), shape)
            v = b.select(b.broadcast_to(kmask, shape), v, zero)
        return v


def _hint(e: sympy.Expr) -> int:
    """An extent at the size hints (``strategy/hints.py``), 4096 a symbol without one."""
    return hints.value(e, 4096)


__all__ = ["GemmLowering", "NotATemplate", "find_gemm"]
