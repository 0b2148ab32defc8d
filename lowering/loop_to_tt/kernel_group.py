"""Reductions and fused groups (``kernel.py``): the group's members and the
loop (phase) each accumulates in, the online-softmax pairs, and the tile: a
small window unrolled per lane, a pointwise group's 1-D tile, or the
``[XBLOCK, RBLOCK]`` tile the strategy plans; the members' values and stores.
The bodies over a row are ``kernel_rows.py``'s. A mixin of
``kernel.KernelLowering``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import sympy
from xdsl.dialects import arith as xarith
from xdsl.dialects.builtin import (
    i64,
)
from xdsl.ir import Operation, SSAValue

from coil.dialects import loop as L
from coil.dialects import tt
from coil.dialects.symbolic import index_symbols
from coil.intmath import next_pow2
from coil.intmath import prod as _prod
from coil.lowering.loop_to_tt import reductions as R
from coil.lowering.loop_to_tt import tiling as T
from coil.lowering.loop_to_tt.body import Tile
from coil.lowering.loop_to_tt.builder import LoweringError
from coil.lowering.loop_to_tt.kernel_index import XINDEX, cdiv, decompose
from coil.strategy import access as A
from coil.strategy import plan as P

# The largest static window a reduction unrolls in registers (``_unrolls``);
# Inductor lowers pooling windows up to 25 points as pointwise kernels.
UNROLL = 25

SHARED_ROWS = 16
"""The most rows of a leading output dimension a program computes all of
(``_shared_rows``): a decode batch of up to 16 sequences, M accumulators a
lane besides the tile's own."""


# --------------------------------------------------------------------------
# Group structure
# --------------------------------------------------------------------------


@dataclass
class Member:
    op: L.LoopOp
    kind: str  # "R" (reduction), "P1" (pointwise over ranges), "P2" (over ranges ++ rr)
    subs: dict[sympy.Symbol, sympy.Expr] = field(default_factory=dict)
    deps: list[Member] = field(default_factory=list)
    phase: int = 0  # loop in which a reduction accumulates
    avail: int = 0  # first loop whose body may read the value


def group_members(nest: L.LoopOp) -> list[Member]:
    n = len(nest.ranges.data)
    if isinstance(nest, L.ReductionOp):
        return [Member(nest, "R")]
    members = []
    m_rr = len(nest.reduction_ranges.data)
    for op in nest.members():
        if isinstance(op, L.ReductionOp):
            members.append(Member(op, "R"))
        elif len(op.ranges.data) == n:
            members.append(Member(op, "P1"))
        else:
            syms = index_symbols(n + m_rr)
            rs = index_symbols(n, m_rr)[n:]
            members.append(Member(op, "P2", {syms[n + k]: rs[k] for k in range(m_rr)}))
    by_result = {r: m for m in members for r in m.op.results}
    for m in members:
        for op in m.op.walk():
            if isinstance(op, L.LoadOp) and op.source in by_result:
                d = by_result[op.source]
                if d not in m.deps:
                    m.deps.append(d)
    schedule_members(members)
    return members


def schedule_members(members: list[Member], joined: dict[int, Member] | None = None) -> None:
    """Each member's phase (the loop a reduction accumulates in) and avail (the
    first loop that may read its value), in program order. ``joined``: id of a
    reduction -> the one whose loop it shares (an online softmax sum with its max)."""
    joined = joined or {}
    for m in members:
        if id(m) in joined:
            m.phase, m.avail = joined[id(m)].phase, joined[id(m)].avail
            continue
        a = max((d.avail for d in m.deps), default=0)
        if m.kind == "R":
            m.phase, m.avail = a, a + 1
        else:
            m.avail = a


def online_softmax_pairs(members: list[Member]) -> dict[int, Member]:
    """Sum reductions that can share their max's loop: id(sum) -> the max member.

    A sum whose body yields ``exp(a - m)``, ``m`` the row's max (another member of
    the group, read once, there) and ``a`` free of ``m``, is a softmax
    denominator. Accumulated next to the running max and rescaled whenever the
    max grows (``s * exp(m_old - m_new) + exp(a - m_new)``, the online softmax),
    it needs no loop of its own: one read of the row instead of two."""
    pairs: dict[int, Member] = {}
    reds = {r: m for m in members if m.kind == "R" for r in m.op.results}
    for m in members:
        if m.kind != "R" or m.op.kind.data != "sum" or len(m.deps) != 1:
            continue
        top = m.deps[0]
        if top.kind != "R" or top.op.kind.data != "max":
            continue
        block = m.op.body.block
        (value,) = block.last_op.values
        exp = value.owner
        if not (isinstance(exp, Operation) and exp.name == "math.exp"):
            continue
        sub = exp.operands[0].owner
        if not (isinstance(sub, xarith.SubfOp) and isinstance(sub.rhs.owner, L.LoadOp)):
            continue
        load = sub.rhs.owner
        if reds.get(load.source) is not top or load.result.uses.get_length() != 1:
            continue
        (top_value,) = top.op.body.block.last_op.values
        if sub.result.uses.get_length() != 1 or value.type != top_value.type:
            continue
        if any(isinstance(o, L.LoadOp) and o.source in reds and o is not load for o in m.op.walk()):
            continue
        pairs[id(m)] = top
    return pairs


class GroupTiles:
    """How reductions and fused groups choose their tile (see ``KernelLowering``)."""

    # ---- reductions and groups ----

    def _group(self) -> tuple[list[sympy.Expr], int]:
        nest = self.nest
        b, it = self.b, self.index_type
        ranges, rranges = nest.ranges.data, self._rranges()
        n = len(ranges)
        xnumel, rnumel = _prod(ranges), _prod(rranges)
        # Lanes walk the output's memory order (tiling.output_order), and rows
        # the order the loads lay the reduction out in (a channels-last
        # tensor's mean over (C, H, W) walks H, W, C: strategy/access.py).
        self.order = T.output_order(nest, n)
        self.access = A.classify_reduction(nest, self.order)
        self.members = group_members(nest)
        self.outputs: dict[tuple[int, int], list[SSAValue]] = {}
        self._collect_outputs()
        self.rows = self._shared_rows(ranges, rranges)
        if self.rows:
            # Each program computes all rows of the leading dimension for its
            # tile of the others: the loads that do not depend on it (a
            # weight's rows) are read once for all of them (rows_unrolled).
            xnumel = _prod(ranges[1:])
            self.order = [k for k in self.order if k != 0]
        unrolled = self._unrolls(xnumel, rnumel)
        if unrolled:
            persistent, rblock, inner = True, 1, False
            # Each lane reads its window: every read counted, an upper bound
            # (overlapping windows of neighbours hit the cache).
            acc = self.access
            nbytes = acc.point_bytes * int(rnumel) + acc.row_bytes + 4
            target = self.options.target
            note = ""
            if self.options.xblock:
                xblock = next_pow2(self.options.xblock)
                warps = P.warps_for(xblock, rblock, inner)
                est = P.pointwise_estimate(
                    xnumel, xblock, warps, nbytes, max(1, acc.ops), 1.0, target
                )
            else:
                xblock, warps, est, note = P.window_tile(xnumel, nbytes, max(1, acc.ops), target)
            what = f"window of {rnumel} unrolled, [XBLOCK {xblock}], {warps} warps"
            self.plan = f"{what}: {est.summary()}" + (f"; {note}" if note else "")
        elif not rranges:
            # Pointwise members only (loop-fuse's sibling groups): a pointwise
            # nest's tile, XBLOCK points of one row each.
            persistent, rblock, inner = True, 1, False
            xblock = self._pointwise_xblock(xnumel)
            warps = P.warps_for(xblock, rblock, inner)
            acc = self.access
            est = P.pointwise_estimate(
                xnumel,
                xblock,
                warps,
                acc.point_bytes + acc.row_bytes,
                max(1, acc.ops),
                1.0,
                self.options.target,
            )
            self.plan = f"pointwise group [XBLOCK {xblock}], {warps} warps: {est.summary()}"
        else:
            tile = self._reduction_tile(xnumel, rnumel)
            persistent, xblock, rblock = tile.persistent, tile.xblock, tile.rblock
            inner, warps = tile.inner, tile.warps
            self.plan = tile.summary()
            if self.access.rorder != tuple(sorted(self.access.rorder)):
                self.plan += f"; rows walked in order {list(self.access.rorder)}"
        self.xblock, self.rblock, self.persistent = xblock, rblock, persistent
        self.xmask = self._xindex(xblock, xnumel, 2)
        self.isyms = index_symbols(n, len(rranges))[:n]
        if self.rows:
            self.plan += f"; {self.rows} rows a program, unrolled (loads shared by the rows once)"
            i0 = self.isyms[0]
            self.members = [
                Member(m.op, m.kind, {**m.subs, i0: sympy.Integer(c)}, m.deps, m.phase, m.avail)
                for m in self.members
                for c in range(self.rows)
            ]
        self.rsyms = index_symbols(n, len(rranges))[n:]
        self._bind_indices(
            XINDEX, [self.isyms[k] for k in self.order], [ranges[k] for k in self.order]
        )
        rbase = b.emit(tt.ExpandDimsOp(b.cast_int(b.emit(tt.MakeRangeOp(0, rblock)), it), 0))
        rbase.name_hint = "rbase"
        self.tile1 = Tile((xblock, 1), self.xmask)
        self.rnumel = rnumel
        if unrolled:
            self._unrolled(int(rnumel))
        elif persistent:
            self._rtile(rbase, rnumel, rblock)
            self._persistent()
        else:
            self._looped(rbase, rnumel, rblock)
        return [cdiv(xnumel, xblock), sympy.Integer(1), sympy.Integer(1)], warps

    def _shared_rows(self, ranges, rranges) -> int:
        """The rows of the leading output dimension each program computes all of
        (0: none): a small static count (2 to :data:`SHARED_ROWS`) of a group of
        sums (a matrix product of a few rows, ``[M, K] @ [K, N]``: M rows) whose
        loads moving along the reduction and the other outputs read at least
        as many bytes a point independently of that dimension (the weight's
        rows) as depending on it (the rows of ``x``); a vector alike for all
        outputs (a norm's weight) comes from the cache and does not count.
        Each program then reads the shared rows once for all M (each member
        emitted once a row, the shared loads one load), where a tile over all
        outputs reads them once a row.
        Inductor has no such tile; it is the form of a GEMV over a few
        vectors (the weight streamed once, M accumulators a lane)."""
        if len(ranges) < 2 or not rranges or self.options.xblock:
            return 0
        rows = sympy.sympify(ranges[0])
        if not rows.is_Integer or not 2 <= int(rows) <= SHARED_ROWS:
            return 0
        if any(m.kind == "R" and m.op.kind.data != "sum" for m in self.members):
            return 0
        n = len(ranges)
        syms = index_symbols(n, len(rranges))
        i0, rs = syms[0], set(syms[n:])
        shared = per_row = 0
        for m in self.members:
            if m.kind == "P1":
                continue
            names = dict(m.subs)
            for op in m.op.walk():
                if not isinstance(op, L.LoadOp) or op.source in self.member_results:
                    continue
                index = [sympy.sympify(e).xreplace(names) for e in op.index.data]
                used = set().union(*(e.free_symbols for e in index)) if index else set()
                if not used & rs:
                    continue
                size = A.element_bytes(op.source.type.element_type)
                if i0 in used:
                    per_row += size
                elif used & set(syms[1:n]):  # streamed with the outputs (a weight's rows)
                    shared += size
        return int(rows) if shared and shared >= per_row else 0

    def _unrolls(self, xnumel: sympy.Expr, rnumel: sympy.Expr) -> bool:
        """Whether the nest is a small window reduced in registers, one output per
        lane (``_unrolled``): one reduction (not Welford), alone or with pointwise
        members over its outputs (a cast, a copy into the result), over at most
        ``UNROLL`` static points, whose loads are contiguous along the output (an
        outer reduction: a channels-last max pool's 3x3 window). A ``[XBLOCK,
        RBLOCK]`` tile would leave most of each program's lanes on a padded
        window and put few outputs in a program; Inductor lowers such pools as
        pointwise kernels with the window unrolled."""
        nest, opts = self.nest, self.options
        kinds = [m.kind for m in self.members]
        if kinds.count("R") != 1 or "P2" in kinds:
            return False
        reds = [nest] if isinstance(nest, L.ReductionOp) else list(nest.members())
        if any(isinstance(r, L.ReductionOp) and r.kind.data == "welford" for r in reds):
            return False
        if not rnumel.is_Integer or not 1 <= int(rnumel) <= UNROLL or opts.rblock:
            return False
        if opts.xblock == 1 and int(rnumel) > 1:
            # One output a program (a merged split finish takes stage 1's
            # XBLOCK): unrolled, the window's reads go one after another in one
            # lane of the program; a [1, RBLOCK] tile reads them across lanes at
            # once. A row sum of 8 x 100003 f32 in 25 chunks ran 9.0 us with its
            # finish unrolled, 8.5 with it as a [1, 32] tile (devlogs/30, H200,
            # the same stage 1). Wider given tiles (XBLOCK 8-32: channels-last
            # means' and column sums' finishes) stay unrolled: the sweep timed
            # no tile against them.
            return False
        return bool(opts.outer_reduction and self.access.axis == "outer")

    def _unrolled(self, rnumel: int) -> None:
        """The reduction over each lane's window, point by point: the body at each
        static window index, combined elementwise in index order (the first
        index wins an arg reduction's tie, NaN propagates as in ``tt.reduce``);
        pointwise members over the outputs around it, as in ``_persistent``."""
        b = self.b
        rranges = [sympy.sympify(d) for d in self._rranges()]
        for m in self.members:
            if m.kind == "P1":
                self._set_results(m, self._compute_pointwise(m))
                continue
            kind = m.op.kind.data
            acc: list[SSAValue] | None = None
            for r in range(rnumel):
                at = decompose(sympy.Integer(r), rranges)
                # The member's renaming (its row of ``_shared_rows``) and the
                # window point.
                subs = {**m.subs, **dict(zip(self.rsyms, at))}
                tile = Tile(self.tile1.shape, self.tile1.mask, subs)
                (v,) = self.body.emit(m.op.body.block, tile)
                vals = [v]
                if kind in R.ARG_KINDS:
                    vals.append(b.const(r, i64, self.tile1.shape))
                acc = vals if acc is None else R.combine(b, kind, acc, vals)
            assert acc is not None
            self._set_results(m, [acc[1]] if kind in R.ARG_KINDS else acc)

    def _reduction_tile(self, xnumel: sympy.Expr, rnumel: sympy.Expr) -> P.ReductionTile:
        """The tile the strategy plans for this kernel (``strategy/plan.py``): the
        access pattern picks the shape, the cost model the quantities."""
        opts = self.options
        shape = self.rshape = self.reduction_shape(xnumel, rnumel)
        return P.reduction_tile(
            shape,
            opts.target,
            xblock=opts.xblock,
            rblock=opts.rblock,
            persistent_threshold=opts.persistent_threshold,
            outer_tiles=opts.outer_reduction,
            rbound=opts.rbound,
        )

    def reduction_shape(self, xnumel: sympy.Expr, rnumel: sympy.Expr) -> P.ReductionShape:
        """What the plan depends on: the access, the loops over a row, what a
        lane accumulates and what the kernel writes."""
        reds = [m for m in self.members if m.kind == "R"]
        p2_out = [m for m in self.members if m.kind == "P2" and (id(m.op), 0) in self.outputs]
        phases = max([m.phase + 1 for m in reds] + [m.avail + 1 for m in p2_out] + [1])
        if self.options.online_softmax:
            phases -= len(online_softmax_pairs(self.members))
        accumulators = sum(len(self._acc_init_kinds(m)) for m in reds) or 1
        per_point = {out for m in p2_out for out in self.outputs.get((id(m.op), 0), [])}
        out_bytes = point_out_bytes = 0
        for out in self.nest.outs:
            size = A.element_bytes(out.type.element_type)
            if out in per_point:
                point_out_bytes += size
            else:
                out_bytes += size
        rows = max(1, getattr(self, "rows", 0))
        return P.ReductionShape(
            xnumel,
            rnumel,
            self.access,
            phases=max(1, phases),
            accumulators=accumulators * rows,
            out_bytes=(out_bytes or 4) * rows,
            point_out_bytes=point_out_bytes * rows,
            reductions=max(1, len(reds)) * rows,
            welford=sum(m.op.kind.data == "welford" for m in reds) * rows,
        )

    def _collect_outputs(self) -> None:
        nest = self.nest
        if isinstance(nest, L.ReductionOp):
            for k, out in enumerate(nest.outs):
                self.outputs.setdefault((id(nest), k), []).append(out)
            return
        term = nest.body.block.last_op
        for v, out in zip(term.values, nest.outs):
            self.outputs.setdefault((id(v.owner), v.index), []).append(out)

    def _row_of(self, subs) -> sympy.Expr | None:
        """The row of the leading dimension ``subs`` fixes (``_shared_rows``), or None."""
        return subs.get(self.isyms[0]) if getattr(self, "rows", 0) else None

    def _member_key(self, value: SSAValue, subs) -> tuple:
        return ("member", value, self._row_of(subs))

    def _member_tile(self, tile: Tile, m: Member) -> Tile:
        """``tile`` with member ``m``'s renaming (its row, its reduction indices)."""
        return Tile(tile.shape, tile.mask, m.subs) if m.subs else tile

    def _member_value(self, value: SSAValue, tile: Tile) -> SSAValue | None:
        if value not in self.member_results:
            return None
        found = self.b.lookup(self._member_key(value, tile.subs))
        if found is not None:
            return found
        row = self._row_of(tile.subs)
        member = next(
            m for m in self.members if value in m.op.results and self._row_of(m.subs) == row
        )
        if member.kind != "P2":
            raise LoweringError(
                f"convert-loop-to-tt: {member.op.name} result read before it is computed"
            )
        vals = self._compute_pointwise(member)
        return vals[value.index]

    def _compute_pointwise(self, m: Member) -> list[SSAValue]:
        tile = self.tile1 if m.kind == "P1" else self.tile2
        tile = Tile(tile.shape, tile.mask, m.subs)
        vals = self.body.emit(m.op.body.block, tile)
        for r, v in zip(m.op.results, vals):
            self.b.remember(self._member_key(r, m.subs), v)
        return vals

    def _store_outputs(self, m: Member, values: Sequence[SSAValue]) -> None:
        for k, v in enumerate(values):
            for out in self.outputs.get((id(m.op), k), []):
                if m.kind == "P2":
                    tile = self._member_tile(self.tile2, m)
                    self.body.store(out, self.isyms + self.rsyms, v, tile)
                else:
                    self.body.store(out, self.isyms, v, self._member_tile(self.tile1, m))

    def _set_results(self, m: Member, values: Sequence[SSAValue]) -> None:
        for r, v in zip(m.op.results, values):
            self.b.remember(self._member_key(r, m.subs), v)
        self._store_outputs(m, values)
