"""The bodies of a reduction row (``kernel.py``): persistent (the whole row
in registers, each reduction a ``tt.reduce``), looped (one ``scf.for`` per phase
with ``[XBLOCK, RBLOCK]`` accumulators), and the online softmax (a sum of
``exp(a - max)`` accumulated next to its max). A mixin of
``kernel.KernelLowering``."""

from __future__ import annotations

import sympy
from xdsl.dialects import arith as xarith
from xdsl.dialects import math as xmath
from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    i64,
)
from xdsl.ir import SSAValue

from coil.dialects.tt import element_of
from coil.lowering.loop_to_tt import reductions as R
from coil.lowering.loop_to_tt.kernel_group import (
    Member,
    online_softmax_pairs,
    schedule_members,
)


class RowBodies:
    """How a reduction's row is walked (see ``KernelLowering``)."""

    # persistent: whole rows in registers, members in order

    def _persistent(self) -> None:
        b = self.b
        # Only per-row results: the rows stream through once (eviction.py).
        self.body.eviction.streaming = not any(
            m.kind == "P2" and (id(m.op), 0) in self.outputs for m in self.members
        )
        for m in self.members:
            if m.kind == "P1":
                self._set_results(m, self._compute_pointwise(m))
            elif m.kind == "P2":
                key = self._member_key(m.op.results[0], m.subs) if m.op.results else None
                vals = self.b.lookup(key) if key is not None else None
                if (id(m.op), 0) in self.outputs:
                    vals = [vals] if vals is not None else self._compute_pointwise(m)
                    self._store_outputs(m, vals)
            else:
                (v,) = self.body.emit(m.op.body.block, self._member_tile(self.tile2, m))
                self._set_results(m, self._reduce_row(m.op.kind.data, v))
        del b

    def _reduce_row(self, kind: str, v: SSAValue) -> list[SSAValue]:
        b = self.b
        mask = self.tile2.mask
        elem = element_of(v.type)
        shape = self.tile2.shape
        if kind == "welford":
            if sympy.sympify(self.rnumel).is_Integer:
                n = b.const(int(self.rnumel), elem, (self.xblock, 1))
            else:  # a host.variants row: its length is a size argument
                count = b.to_float(b.emit_index(self.rnumel), elem)
                n = b.broadcast_to(count, (self.xblock, 1))
            x = b.select(mask, v, b.const(0, elem, shape)) if mask is not None else v
            mean = b.binary(
                xarith.DivfOp,
                self._expand(R.reduce(b, "sum", [x])[0]),
                n,
            )
            d = b.binary(xarith.SubfOp, v, mean)
            d2 = b.binary(xarith.MulfOp, d, d)
            if mask is not None:
                d2 = b.select(mask, d2, b.const(0, elem, shape))
            m2 = self._expand(R.reduce(b, "sum", [d2])[0])
            return [mean, m2, n]
        ident = b.const(R.identity(kind, elem), elem, shape)
        if mask is not None:
            v = b.select(mask, v, ident)
        if kind in R.ARG_KINDS:
            _, idx = R.reduce(b, kind, [v, self._rindex_i64()])
            return [self._expand(idx)]
        return [self._expand(R.reduce(b, kind, [v])[0])]

    # looped: one scf.for per phase

    def _looped(self, rbase: SSAValue, rnumel: sympy.Expr, rblock: int) -> None:
        b = self.b
        online = online_softmax_pairs(self.members) if self.options.online_softmax else {}
        if online:
            schedule_members(self.members, online)
        reds = [m for m in self.members if m.kind == "R"]
        p2_out = [m for m in self.members if m.kind == "P2" and (id(m.op), 0) in self.outputs]
        n_loops = max([m.phase + 1 for m in reds] + [m.avail + 1 for m in p2_out] + [1])
        pending_p1 = [m for m in self.members if m.kind == "P1"]
        shape = (self.xblock, rblock)
        for k in range(n_loops):
            for m in [m for m in pending_p1 if m.avail <= k]:
                self._set_results(m, self._compute_pointwise(m))
                pending_p1.remove(m)
            here = [m for m in reds if m.phase == k]
            inits: list[SSAValue] = []
            for m in here:
                inits += self._acc_init(m, shape)
            with self._r_loop(inits, rnumel, rblock, rbase) as rloop:
                self._rtile(rloop.rindex, rnumel, rblock)
                accs = rloop.carried
                new: list[SSAValue] = []
                steps: dict[int, tuple[SSAValue, SSAValue]] = {}  # id -> (old, new)
                for m in here:
                    n_acc = len(self._acc_init_kinds(m))
                    mine, accs = accs[:n_acc], accs[n_acc:]
                    if id(m) in online:
                        new += self._online_update(m, online[id(m)], mine, steps)
                        continue
                    new += self._acc_update(m, mine)
                    steps[id(m)] = (mine[0], new[-1])
                for m in p2_out:
                    if m.avail == k:
                        vals = b.lookup(self._member_key(m.op.results[0], m.subs))
                        vals = [vals] if vals is not None else self._compute_pointwise(m)
                        self._store_outputs(m, vals)
                b.insert(scf.YieldOp(*new))
            results = list(rloop.op.res)
            finals: dict[int, SSAValue] = {}  # id -> the per-lane accumulator of a max
            for m in here:
                n_acc = len(self._acc_init_kinds(m))
                mine, results = results[:n_acc], results[n_acc:]
                if id(m) in online:
                    top = online[id(m)]
                    total = self._online_final(mine[0], finals[id(top)], top)
                    self._set_results(m, [total])
                    continue
                finals[id(m)] = mine[0]
                self._set_results(m, self._acc_final(m, mine))
        for m in pending_p1:
            self._set_results(m, self._compute_pointwise(m))

    def _acc_init_kinds(self, m: Member) -> list[str]:
        kind = m.op.kind.data
        if kind == "welford":
            return ["mean", "m2", "weight"]
        if kind in R.ARG_KINDS:
            return ["value", "index"]
        return ["value"]

    def _elem(self, m: Member):
        return m.op.body.block.last_op.values[0].type

    def _acc_init(self, m: Member, shape) -> list[SSAValue]:
        b = self.b
        kind, elem = m.op.kind.data, self._elem(m)
        if kind == "welford":
            return [b.const(0, elem, shape)] * 3
        if kind in R.ARG_KINDS:
            return [b.const(R.identity(kind, elem), elem, shape), b.const(0, i64, shape)]
        return [b.const(R.identity(kind, elem), elem, shape)]

    def _acc_update(self, m: Member, acc: list[SSAValue]) -> list[SSAValue]:
        b = self.b
        kind = m.op.kind.data
        (v,) = self.body.emit(m.op.body.block, self._member_tile(self.tile2, m))
        if kind == "welford":
            new = R.welford_step(b, acc, v)
        elif kind in R.ARG_KINDS:
            new = R.combine(b, kind, acc, [v, self._rindex_i64()])
        else:
            new = R.combine(b, kind, acc, [v])
        mask = self.tile2.mask
        if mask is not None:
            new = [b.select(mask, x, a) for x, a in zip(new, acc)]
        return new

    # online softmax: a sum of exp(a - max) next to its max (online_softmax_pairs)

    def _online_update(
        self,
        m: Member,
        top: Member,
        acc: list[SSAValue],
        steps: dict[int, tuple[SSAValue, SSAValue]],
    ) -> list[SSAValue]:
        """``s * exp(m_old - m_new) + exp(a - m_new)`` per lane: the max's update
        (``steps``) came first in this loop body. Where the max did not change the
        scale is 1 (also for lanes still at -inf, where exp(-inf - -inf) is NaN)."""
        b = self.b
        m_old, m_new = steps[id(top)]
        # the body's max is the running one
        b.remember(self._member_key(top.op.results[0], {}), m_new)
        (term,) = self.body.emit(m.op.body.block, self.tile2)
        elem = element_of(term.type)
        same = b.cmpf(m_old, m_new, "oeq")
        scale = self._exp(b.binary(xarith.SubfOp, m_old, m_new))
        scale = b.select(same, b.const(1.0, elem, self.tile2.shape), scale)
        (s,) = acc
        new = b.binary(xarith.AddfOp, b.binary(xarith.MulfOp, s, scale), term)
        mask = self.tile2.mask
        if mask is not None:
            new = b.select(mask, new, s)
        return [new]

    def _online_final(self, s: SSAValue, lanes: SSAValue, top: Member) -> SSAValue:
        """The row's sum from per-lane (s, max) pairs: each lane rescaled to the
        row's max (read back from the max member's result)."""
        b = self.b
        row = b.broadcast_to(b.lookup(self._member_key(top.op.results[0], {})), self.tile2.shape)
        same = b.cmpf(lanes, row, "oeq")
        scale = self._exp(b.binary(xarith.SubfOp, lanes, row))
        scaled = b.select(same, s, b.binary(xarith.MulfOp, s, scale))
        return self._expand(R.reduce(b, "sum", [scaled])[0])

    def _exp(self, x: SSAValue) -> SSAValue:
        return self.b.emit(xmath.ExpOp(x))

    def _acc_final(self, m: Member, acc: list[SSAValue]) -> list[SSAValue]:
        b = self.b
        kind = m.op.kind.data
        out = R.reduce(b, kind, acc)
        if kind in R.ARG_KINDS:
            return [self._expand(out[1])]
        return [self._expand(v) for v in out]
