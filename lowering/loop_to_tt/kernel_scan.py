"""Scan kernels (``kernel.py``): a ``[XBLOCK, RBLOCK]`` tile with lanes along
the scanned dimension, a short row scanned whole, a long one in chunks carrying
the running prefix. A mixin of ``kernel.KernelLowering``."""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    i64,
)
from xdsl.ir import SSAValue

from coil.dialects import loop as L
from coil.dialects import tt
from coil.dialects.symbolic import index_symbols
from coil.dialects.tt import element_of
from coil.intmath import next_pow2
from coil.intmath import prod as _prod
from coil.lowering.loop_to_tt import scans as S
from coil.lowering.loop_to_tt import tiling as T
from coil.lowering.loop_to_tt.body import Tile
from coil.lowering.loop_to_tt.kernel_index import XINDEX, cdiv
from coil.strategy import plan as P
from coil.transforms.loop_cost import element_bytes

# Scans: a row of at most SCAN_PERSISTENT static elements is scanned whole,
# longer ones in chunks of SCAN_RBLOCK; rows a program takes fill SCAN_TILE
# lanes. Inductor's persistent-reduction limit for inner rows (1024,
# triton_heuristics' persistent_reduction configs) bounds a row held in
# registers with a tt.scan over it; not yet measured for coil's scans.
SCAN_PERSISTENT = 1024
SCAN_RBLOCK = 1024
SCAN_TILE = 1024


class ScanTile:
    """How ``loop.scan`` nests lower (see ``KernelLowering``)."""

    # ---- scans ----

    def _scan(self) -> tuple[list[sympy.Expr], int]:
        """A ``[XBLOCK, RBLOCK]`` tile: rows over the ranges but the scanned one,
        lanes along it. A row of at most ``SCAN_PERSISTENT`` static elements is
        scanned whole (``tt.scan``); a longer or dynamic one in chunks by an
        ``scf.for`` carrying the running prefix of each row (``[XBLOCK, 1]``):
        each chunk is scanned, combined with the carry, stored, and its last
        element is the next carry (Inductor's looped scan)."""
        op = self.nest
        assert isinstance(op, L.ScanOp)
        b, it = self.b, self.index_type
        kind, d = op.kind.data, op.scan_dim
        ranges = [sympy.sympify(r) for r in op.ranges.data]
        syms = index_symbols(len(ranges))
        outer = [k for k in range(len(ranges)) if k != d]
        # Lanes walk the output's memory order (tiling.output_order), the scanned
        # dimension taken out.
        order = [k for k in T.output_order(op, len(ranges)) if k != d]
        xnumel, rnumel = _prod([ranges[k] for k in outer]), ranges[d]
        opts = self.options
        # An outer scan (the output contiguous along a row index, not the scanned
        # one: x.cumsum(0)) takes the outer reductions' tile: wide rows, short
        # chunks, so each chunk's loads and stores are contiguous along rows.
        out_t = op.outs[0].type
        strides = [sympy.sympify(st) for st in out_t.strides_attr.data]
        columns = bool(order) and strides[d] != 1 and strides[order[-1]] == 1
        limit = min(opts.persistent_threshold, P.OUTER_PERSISTENT if columns else SCAN_PERSISTENT)
        persistent = rnumel.is_Integer and int(rnumel) <= limit
        outer_x, outer_r = P.outer_scan_tile(
            xnumel, rnumel, element_bytes(out_t.element_type), opts.target
        )
        if persistent:
            rblock = next_pow2(int(rnumel))
        elif opts.rblock:
            rblock = next_pow2(opts.rblock)
        else:
            rblock = outer_r if columns else SCAN_RBLOCK
        if not persistent and rnumel.is_Integer:
            rblock = min(rblock, next_pow2(int(rnumel)))
        if opts.xblock:
            xblock = next_pow2(opts.xblock)
        elif columns:
            xblock = outer_x
        else:
            xblock = max(1, min(64, SCAN_TILE // rblock))
            if xnumel.is_Integer:
                xblock = min(xblock, next_pow2(int(xnumel)))
        self.xblock, self.rblock, self.persistent = xblock, rblock, persistent
        self.xmask = self._xindex(xblock, xnumel, 2)
        self.isyms, self.rsyms = [syms[k] for k in outer], [syms[d]]
        self._bind_indices(XINDEX, [syms[k] for k in order], [ranges[k] for k in order])
        rbase = b.emit(tt.ExpandDimsOp(b.cast_int(b.emit(tt.MakeRangeOp(0, rblock)), it), 0))
        rbase.name_hint = "rbase"
        self.tile1 = Tile((xblock, 1), self.xmask)
        outs = list(op.outs)

        def chunk() -> list[SSAValue]:
            (v,) = self.body.emit(op.body.block, self.tile2)
            srcs = [v]
            if kind in S.ARG_KINDS:
                srcs.append(self._rindex_i64())
            return S.scan(b, kind, srcs, self.device)

        def store(values: Sequence[SSAValue]) -> None:
            for out, v in zip(outs, values):
                want = out.type.element_type
                if element_of(v.type) != want:
                    v = b.to_float(v, want)
                self.body.store(out, syms, v, self.tile2)

        if persistent:
            self._rtile(rbase, rnumel, rblock, [rnumel])
            self.body.eviction.streaming = True
            store(chunk())
        else:
            elem = element_of(op.body.block.last_op.values[0].type)
            carry_types = [elem, i64] if kind in S.ARG_KINDS else [elem]
            inits = [
                b.const(v, t, (xblock, 1)) for v, t in zip(S.identities(kind, elem), carry_types)
            ]
            with self._r_loop(inits, rnumel, rblock, rbase) as rloop:
                self._rtile(rloop.rindex, rnumel, rblock, [rnumel])
                carry = rloop.carried
                values = S.combine(b, kind, carry, chunk(), self.device)
                store(values)
                is_last = b.cmpi(rbase, b.const(rblock - 1, it), "eq")
                b.insert(scf.YieldOp(*[S.last(b, v, is_last) for v in values]))
        warps = 8 if xblock * rblock >= 4096 else 4
        return [cdiv(xnumel, xblock), sympy.Integer(1), sympy.Integer(1)], warps
