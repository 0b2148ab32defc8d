"""Pointwise and scatter kernels (``kernel.py``): a 1-D ``[XBLOCK]`` tile, or a
2-D ``[YBLOCK, XBLOCK]`` tile where the loads and the store disagree on the
contiguous index (``tiling.py`` chooses), with the plan line and the estimate of
each tile. A mixin of ``kernel.KernelLowering``."""

from __future__ import annotations

import sympy
from xdsl.dialects import arith as xarith

from coil.dialects import loop as L
from coil.dialects import tt
from coil.dialects.symbolic import index_symbols
from coil.intmath import next_pow2
from coil.intmath import prod as _prod
from coil.lowering.loop_to_tt import tiling as T
from coil.lowering.loop_to_tt.body import Tile
from coil.lowering.loop_to_tt.kernel_index import XINDEX, YINDEX, cdiv
from coil.strategy import access as A
from coil.strategy import plan as P
from coil.strategy.cost import MARGIN, Estimate, sector_efficiency
from coil.transforms.loop_cost import compute_ops


class PointwiseTiles:
    """How pointwise and scatter nests lower (see ``KernelLowering``)."""

    # ---- pointwise ----

    def _pointwise(self) -> tuple[list[sympy.Expr], int]:
        op = self.nest
        ranges = op.ranges.data
        # Lanes walk the output's memory order (tiling.output_order).
        order = T.output_order(op, len(ranges))
        self.accesses = A.pointwise_accesses(op)  # the tiling's and the plan's
        opts = self.options
        plan = T.pointwise_tiling(
            op, opts.tile2d, opts.yblock, opts.xblock, order, accesses=self.accesses
        )
        if plan is not None:
            # 64 x 64 where the cost model says a whole line per tile row pays
            # (tiling.py LARGE_TILE; strategy/cost.py LINE).
            large = T.pointwise_tiling(
                op, opts.tile2d, opts.yblock, opts.xblock, order, self.accesses, large=True
            )
            if large is not None and (large.yblock, large.xblock) != (plan.yblock, plan.xblock):
                small_est = self._pointwise_estimate(order, plan)
                large_est = self._pointwise_estimate(order, large)
                if large_est.seconds < small_est.seconds * (1 - MARGIN):
                    plan = large
            return self._pointwise_2d(plan, order)
        xnumel = _prod(ranges)
        xblock = self._pointwise_xblock(xnumel)
        self.xblock, self.rblock, self.persistent = xblock, 0, False
        xmask = self._xindex(xblock, xnumel, 1)
        syms = index_symbols(len(ranges))
        self._bind_indices(XINDEX, [syms[k] for k in order], [ranges[k] for k in order])
        tile = Tile((xblock,), xmask)
        (value,) = self.body.emit(op.body.block, tile)
        self.body.store(op.outs[0], syms, value, tile)
        warps = self._pointwise_warps(xblock, xnumel)
        what = f"pointwise 1-D [XBLOCK {xblock}], {warps} warps"
        self._pointwise_plan(what, order, xblock, 0, 0, warps)
        return [cdiv(xnumel, xblock), sympy.Integer(1), sympy.Integer(1)], warps

    def _pointwise_warps(self, xblock: int, xnumel: sympy.Expr) -> int:
        """Warps of a 1-D tile: 8 elements a thread (Inductor's 256 a warp), but 4
        where the accesses go element by element. A masked tile whose element
        count is not a whole number of 16-byte vectors of the narrowest access:
        Triton cannot prove the mask constant over a vector, so each load and
        store is issued per element, and 8 such accesses a thread measured
        1.04-1.9x slower than 4 on all four odd-count shapes of the shape sweep
        (gelu_odd f32 and bf16, add_col_bcast f16, tiny_add; 4 a thread lost
        1.14x on the aligned silu_bias bf16): benchmarks/RESULTS.md, seventeenth
        session."""
        if xblock > 1024:
            return 8
        if xblock == 1024 and xnumel.is_Integer:
            widths = [a.weight for a in self.accesses if a.weight > 0]
            vector = 16 // min(widths) if widths and min(widths) <= 16 else 1
            if vector > 1 and int(xnumel) % vector:
                return 8
        return 4

    def _pointwise_xblock(self, xnumel: sympy.Expr) -> int:
        if self.options.xblock:
            return next_pow2(self.options.xblock)
        if xnumel.is_Integer:
            return min(1024, next_pow2(int(xnumel)))
        return 1024

    def _pointwise_estimate(self, order: list[int], tiling: T.Tiling2D) -> Estimate:
        return self._pointwise_cost(
            order, tiling.xblock, tiling.yblock, tiling.split, tiling.num_warps
        )

    def _pointwise_plan(
        self, what: str, order: list[int], xblock: int, yblock: int, split: int, warps: int
    ) -> None:
        """The plan line of a pointwise kernel: its tile and its estimate."""
        est = self._pointwise_cost(order, xblock, yblock, split, warps)
        self.plan = f"{what}: {est.summary()}"

    def _pointwise_cost(
        self, order: list[int], xblock: int, yblock: int, split: int, warps: int
    ) -> Estimate:
        """The estimate of a pointwise kernel's tile: its bytes, each access's
        contiguous run along the tile (``cost.sector_efficiency``)."""
        op = self.nest
        ranges = [op.ranges.data[k] for k in order]
        accesses = [A.permuted(a, order) for a in self.accesses]
        dims = A.nontrivial(ranges)
        moved = fetched = 0.0
        for a in accesses:
            if a.repeat:
                continue  # the bytes of an earlier load
            weight = a.weight / 2 if a.what == "store" else a.weight
            c = A.contiguous_dim(a, ranges)
            if c is not None and dims and c == dims[-1]:
                run = xblock * weight
            elif c is not None and split and c == split - 1:
                run = yblock * weight
            elif all(a.strides[k] == 0 for k in dims):
                continue  # a scalar: one read for the whole kernel
            else:
                run = weight
            # A load broadcast along some dimension (a bias over the rows)
            # fetches its tensor once; the repeats come from the cache.
            share = A.footprint_share(a, ranges, dims) if a.what != "store" else 1.0
            moved += weight * share
            fetched += weight * share / sector_efficiency(run)
        block = xblock * max(yblock, 1)
        efficiency = moved / fetched if fetched else 1.0
        target = self.options.target
        numel = _prod(ranges)
        ops = compute_ops(op)
        return P.pointwise_estimate(numel, block, warps, int(moved), ops, efficiency, target)

    def _pointwise_2d(self, plan: T.Tiling2D, order: list[int]) -> tuple[list[sympy.Expr], int]:
        """A ``[YBLOCK, XBLOCK]`` tile: ``yindex`` (``[YBLOCK, 1]``) over the flattened
        ``ranges[:split]``, ``xindex`` (``[1, XBLOCK]``) over ``ranges[split:]``, the
        ranges taken in ``order`` (see ``tiling.py``)."""
        op = self.nest
        b, it = self.b, self.index_type
        ranges = [op.ranges.data[k] for k in order]
        ysizes, xsizes = ranges[: plan.split], ranges[plan.split :]
        ynumel, xnumel = _prod(ysizes), _prod(xsizes)
        yblock, xblock = plan.yblock, plan.xblock
        self.xblock, self.yblock, self.rblock, self.persistent = xblock, yblock, 0, False
        xtiles, ytiles = cdiv(xnumel, xblock), cdiv(ynumel, yblock)
        if plan.grid_y:
            pid_x = b.cast_int(b.emit(tt.GetProgramIdOp(0)), it)
            pid_y = b.cast_int(b.emit(tt.GetProgramIdOp(1)), it)
            grid = [xtiles, ytiles, sympy.Integer(1)]
        else:  # grid y is limited to 65535 programs: one flat grid x, split here
            pid = b.cast_int(b.emit(tt.GetProgramIdOp(0)), it)
            pid.name_hint = "pid"
            n = b.emit_index(xtiles)
            pid_x = b.binary(xarith.RemSIOp, pid, n)
            pid_y = b.binary(xarith.DivSIOp, pid, n)
            grid = [xtiles * ytiles, sympy.Integer(1), sympy.Integer(1)]
        pid_x.name_hint, pid_y.name_hint = "pid_x", "pid_y"
        masks = []
        for sym, pid_v, block, numel, axis in (
            (YINDEX, pid_y, yblock, ynumel, 1),
            (XINDEX, pid_x, xblock, xnumel, 0),
        ):
            name = sym.name[0]
            offset = b.binary(xarith.MuliOp, pid_v, b.const(block, it))
            offset.name_hint = f"{name}offset"
            rng = b.cast_int(b.emit(tt.MakeRangeOp(0, block)), it)
            index = b.binary(xarith.AddiOp, offset, b.emit(tt.ExpandDimsOp(rng, axis)))
            index.name_hint = f"{name}index"
            b.bind(sym, index)
            numel = sympy.sympify(numel)
            if not (numel.is_Integer and int(numel) % block == 0):
                mask = b.cmpi(index, b.emit_index(numel), "slt")
                mask.name_hint = f"{name}mask"
                masks.append(mask)
        logical = index_symbols(len(ranges))
        syms = [logical[k] for k in order]
        self._bind_indices(YINDEX, syms[: plan.split], ysizes)
        self._bind_indices(XINDEX, syms[plan.split :], xsizes)
        mask = None
        for m in masks:
            mask = b.and_(mask, m)
        shape = (yblock, xblock)
        if mask is not None:
            mask = b.broadcast_to(mask, shape)
        tile = Tile(shape, mask)
        (value,) = self.body.emit(op.body.block, tile)
        self.body.store(op.outs[0], logical, value, tile)
        what = f"pointwise 2-D [YBLOCK {yblock}, XBLOCK {xblock}], {plan.num_warps} warps"
        self._pointwise_plan(what, order, xblock, yblock, plan.split, plan.num_warps)
        return grid, plan.num_warps

    # ---- scatters ----

    def _scatter(self) -> tuple[list[sympy.Expr], int]:
        """A 1-D tile over the points of ``ranges`` (the index's shape), as a
        pointwise nest's; each lane stores or combines its value at the element
        its indices name (``BodyEmitter.scatter``)."""
        op = self.nest
        assert isinstance(op, L.ScatterOp)
        ranges = op.ranges.data
        xnumel = _prod(ranges)
        if self.options.xblock:
            xblock = next_pow2(self.options.xblock)
        elif xnumel.is_Integer:
            xblock = min(1024, next_pow2(int(xnumel)))
        else:
            xblock = 1024
        self.xblock, self.rblock, self.persistent = xblock, 0, False
        xmask = self._xindex(xblock, xnumel, 1)
        self._bind_indices(XINDEX, index_symbols(len(ranges)), ranges)
        tile = Tile((xblock,), xmask)
        value, *indices = self.body.emit(op.body.block, tile)
        self.body.scatter(op, value, indices, tile)
        return [cdiv(xnumel, xblock), sympy.Integer(1), sympy.Integer(1)], 4
