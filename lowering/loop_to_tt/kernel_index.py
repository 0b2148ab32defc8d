"""Index binding of ``tt`` kernels (``kernel.py``): the block indices
``xindex``/``yindex``/``rindex`` and their masks, the loop indices decomposed
from a flat block index, and the ceiling division of a symbolic size. A mixin of
``kernel.KernelLowering``, whose builder and tile state it uses."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import sympy
from torch.utils._sympy.functions import FloorDiv, PythonMod
from xdsl.dialects import arith as xarith
from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    i64,
)
from xdsl.ir import Block, Region, SSAValue

from coil.dialects import tt
from coil.dialects.symbolic import symbol
from coil.intmath import cdiv as int_cdiv
from coil.intmath import prod as _prod
from coil.lowering.loop_to_tt.body import Tile

XINDEX = symbol("xindex")
YINDEX = symbol("yindex")
RINDEX = symbol("rindex")


def cdiv(n: sympy.Expr, d: int) -> sympy.Expr:
    n = sympy.sympify(n)
    if n.is_Integer:
        return sympy.Integer(int_cdiv(int(n), d))
    return FloorDiv(n + d - 1, d) if d != 1 else n


def decompose(flat: sympy.Symbol, sizes: Sequence[sympy.Expr]) -> list[sympy.Expr]:
    """Row-major indices of ``flat`` over ``sizes``: ``flat // stride_k % d_k`` (no mod
    for the first dimension, no division for the last)."""
    out = []
    n = len(sizes)
    if any(d == 0 for d in sizes):  # an empty nest: no point is visited (and no // 0)
        return [sympy.Integer(0)] * n
    for k, d in enumerate(sizes):
        if d == 1:
            out.append(sympy.Integer(0))
            continue
        stride = _prod(sizes[k + 1 :])
        e = FloorDiv(flat, stride) if stride != 1 else flat
        if k > 0:
            e = PythonMod(e, d)
        out.append(e)
    del n
    return out


@dataclass
class RLoop:
    """A loop over the reduction dimension (``IndexBinding._r_loop``): inside
    its body, ``rindex`` and the values it carries; after it, the ``scf.for``."""

    rindex: SSAValue
    carried: list[SSAValue]
    op: scf.ForOp | None = field(default=None)


class IndexBinding:
    """Binds the kernel's index symbols (see ``KernelLowering``)."""

    # ---- common tile pieces ----

    def _xindex(self, xblock: int, xnumel: sympy.Expr, rank: int) -> SSAValue | None:
        """Binds ``xindex`` (``[XBLOCK]`` or ``[XBLOCK, 1]``); returns the x mask."""
        b, it = self.b, self.index_type
        pid = b.emit(tt.GetProgramIdOp(0))
        pid.name_hint = "pid"
        xoffset = b.binary(
            xarith.MuliOp,
            b.cast_int(pid, it),
            b.const(xblock, it),
        )
        xoffset.name_hint = "xoffset"
        rng = b.cast_int(b.emit(tt.MakeRangeOp(0, xblock)), it)
        if rank == 2:
            rng = b.emit(tt.ExpandDimsOp(rng, 1))
        xindex = b.binary(xarith.AddiOp, xoffset, rng)
        xindex.name_hint = "xindex"
        b.bind(XINDEX, xindex)
        xnumel = sympy.sympify(xnumel)
        if xnumel.is_Integer and int(xnumel) > 0:
            # On every lane a bounds check looks at (the mask's, or all where
            # the grid covers xnumel exactly): value_range's seed.
            b.ranges[xindex] = (0, int(xnumel) - 1)
        # No mask where every lane is in range; an empty nest (a zero-size
        # dimension) still masks all: a split's finish launches one program.
        if xnumel.is_Integer and int(xnumel) > 0 and int(xnumel) % xblock == 0:
            return None
        xmask = b.cmpi(xindex, b.emit_index(xnumel), "slt")
        xmask.name_hint = "xmask"
        return xmask

    @contextmanager
    def _r_loop(
        self, inits: Sequence[SSAValue], rnumel: sympy.Expr, rblock: int, rbase: SSAValue
    ) -> Iterator[RLoop]:
        """Emit into the body of a loop over ``rnumel`` in steps of ``rblock``
        carrying ``inits`` (``roffset`` and ``rindex = roffset + rbase``; loads
        stream); the caller ends the body with its ``scf.yield``. On exit the
        ``scf.for`` is inserted and set as the loop's ``op``."""
        b, it = self.b, self.index_type
        body = Block(arg_types=[it] + [v.type for v in inits])
        body.args[0].name_hint = "roffset"
        lb, ub, step = b.const(0, it), b.emit_index(rnumel), b.const(rblock, it)
        with b.at(body):
            self.body.eviction.streaming = True
            rindex = b.binary(xarith.AddiOp, body.args[0], rbase)
            rindex.name_hint = "rindex"
            loop = RLoop(rindex, list(body.args[1:]))
            yield loop
            self.body.eviction.streaming = False
        loop.op = scf.ForOp(lb, ub, step, list(inits), Region(body))
        b.insert(loop.op)

    def _bind_indices(self, flat: sympy.Symbol, syms, sizes) -> None:
        self.body.flat_groups.append((flat, tuple(syms), tuple(sizes)))
        for s, e in zip(syms, decompose(flat, sizes)):
            v = self.b.emit_index(e)
            if not v.name_hint:
                v.name_hint = s.name
            self.b.bind(s, v)

    def _rtile(
        self,
        rindex_offset: SSAValue,
        rnumel: sympy.Expr,
        rblock: int,
        rsizes: Sequence[sympy.Expr] | None = None,
    ) -> None:
        """Binds rindex and the r indices (``self.rsyms`` over ``rsizes``, default
        the reduction ranges); sets the 2-D tile."""
        b = self.b
        rindex = rindex_offset
        b.bind(RINDEX, rindex)
        self.rindex = rindex
        rmask = None
        # An empty row (rnumel 0) still has a 1-wide block: mask it off.
        if not (rnumel.is_Integer and int(rnumel) > 0 and int(rnumel) % rblock == 0):
            rmask = b.cmpi(rindex, b.emit_index(rnumel), "slt")
            rmask.name_hint = "rmask"
        if rsizes is not None:  # a scan's one dimension
            self._bind_indices(RINDEX, self.rsyms, rsizes)
        else:
            rranges = self._rranges()
            rorder = [k for k in range(len(rranges)) if k not in self.access.rorder]
            rorder += list(self.access.rorder)  # size-1 dimensions first: their index is 0
            rsyms = [self.rsyms[k] for k in rorder]
            self._bind_indices(RINDEX, rsyms, [rranges[k] for k in rorder])
        shape = (self.xblock, rblock)
        mask = b.and_(self.xmask, rmask)
        if mask is not None:
            mask = b.broadcast_to(mask, shape)
        self.tile2 = Tile(shape, mask)

    def _expand(self, v: SSAValue) -> SSAValue:
        return self.b.emit(tt.ExpandDimsOp(v, 1))

    def _rindex_i64(self) -> SSAValue:
        return self.b.broadcast_to(self.b.cast_int(self.rindex, i64), self.tile2.shape)
