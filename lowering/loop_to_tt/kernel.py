"""One bufferized loop nest → one ``tt.func`` kernel and its launch.

Tiling follows Inductor's TritonKernel:

* pointwise: a 1-D tile of ``XBLOCK`` points of the flattened ``ranges``
  (``xindex = pid * XBLOCK + arange``, ``i_k = xindex // stride_k % d_k``);
  where the loads and the store disagree on the contiguous loop index
  (transposes, permutes), a 2-D tile ``[YBLOCK, XBLOCK]``: ``yindex``
  (``[YBLOCK, 1]``) over ``ranges[:split]``, ``xindex`` (``[1, XBLOCK]``) over
  ``ranges[split:]`` (``tiling.py`` chooses the split and the blocks);
* reductions and fused groups: a 2-D tile ``[XBLOCK, RBLOCK]``, rows ``xindex``
  as ``[XBLOCK, 1]`` and reduction lanes ``rindex`` as ``[1, RBLOCK]``. A short
  static row is *persistent* (all of it in registers, each reduction a
  ``tt.reduce`` where it appears); otherwise the row is walked by ``scf.for``
  loops over ``roffset`` with ``[XBLOCK, RBLOCK]`` accumulators, one loop per
  *phase*: a member that needs a reduction of the group starts a later loop
  (softmax: max, then sum of exp, then the stores). Pointwise members over
  ``ranges ++ reduction_ranges`` are recomputed in every phase that reads them.
  An outer reduction (loads contiguous along the output index) takes a wide
  ``XBLOCK`` and a short looped ``RBLOCK``. Rows are walked in the order their
  loads lay them out (C innermost for a channels-last tensor). The tile comes
  from the kernel strategy (``coil/strategy/plan.py``), which every kernel
  records with its estimate as ``coil.plan``.

Launch ABI (brief §1): pointer arguments for the buffers read then written
(deduplicated), i64 arguments for seeds, then one i64 per size symbol.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import sympy
from torch.utils._sympy.functions import FloorDiv, PythonMod
from xdsl.dialects import arith as xarith
from xdsl.dialects import math as xmath
from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    StringAttr,
    i32,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.transforms.dead_code_elimination import region_dce

from coil.dialects import loop as L
from coil.dialects import tt
from coil.dialects.buffer import BufferType
from coil.dialects.symbolic import index_symbols, is_index_symbol, symbol
from coil.dialects.tt import element_of
from coil.intmath import cdiv as int_cdiv
from coil.intmath import next_pow2
from coil.intmath import prod as _prod
from coil.ir import source_line, source_op
from coil.lowering.loop_to_tt import reductions as R
from coil.lowering.loop_to_tt import scans as S
from coil.lowering.loop_to_tt import tiling as T
from coil.lowering.loop_to_tt.body import BodyEmitter, Tile, checked_dims
from coil.lowering.loop_to_tt.builder import KernelBuilder, LoweringError
from coil.lowering.loop_to_tt.eviction import EvictionPlan
from coil.strategy import access as A
from coil.strategy import plan as P
from coil.strategy.cost import MARGIN, Estimate, sector_efficiency
from coil.strategy.gemm import GemmConfig
from coil.strategy.target import TARGETS, Target
from coil.transforms.loop_cost import compute_ops, element_bytes, nest_cost

log = logging.getLogger("coil")

XINDEX = symbol("xindex")
YINDEX = symbol("yindex")
RINDEX = symbol("rindex")


@dataclass(frozen=True)
class Options:
    """The pass's tiling options (0 = heuristic)."""

    xblock: int = 0
    rblock: int = 0
    num_warps: int = 0
    num_stages: int = 0
    persistent_threshold: int = 4096
    bounds_check: bool = True
    online_softmax: bool = True
    tile2d: str = "auto"  # "auto": [YBLOCK, XBLOCK] tiles where strides disagree; "off"
    yblock: int = 0
    outer_reduction: bool = True  # outer reductions: wide XBLOCK, short looped RBLOCK
    eviction: str = "auto"  # L2 eviction hints of loads: "auto", "stream", "off" (eviction.py)
    target: Target = TARGETS["cpu-interpreter"]  # what the plans are for (strategy/target.py)
    gemm_config: GemmConfig | None = None  # a gemm template's config (None: strategy/gemm.py's)
    tf32: bool = False  # f32 gemm templates multiply in TF32 (as cuBLAS may)
    # A symbolic reduced size is at most this (a host.variants kernel, planned
    # as a row of this length: strategy/variants.py); 0: any size.
    rbound: int = 0


@dataclass
class Kernel:
    """A built kernel and what its launch needs."""

    func: tt.FuncOp
    grid: list[sympy.Expr]
    args: list[SSAValue]
    scalars: list[sympy.Symbol]
    num_warps: int
    num_stages: int
    # The tile it was built with (rblock 0 for pointwise), for autotuning's dedup.
    xblock: int = 0
    rblock: int = 0
    persistent: bool = False
    yblock: int = 0  # a 2-D pointwise tile's rows (0: 1-D or a reduction)
    plan: str = ""  # the plan and its estimate (strategy/plan.py), for review
    # What a reduction's plan depends on (None for other kernels): the
    # variants' planner asks the strategy about it (strategy/variants.py).
    shape: P.ReductionShape | None = None


# Scans: a row of at most SCAN_PERSISTENT static elements is scanned whole,
# longer ones in chunks of SCAN_RBLOCK; rows a program takes fill SCAN_TILE
# lanes. Inductor's persistent-reduction limit for inner rows (1024,
# triton_heuristics' persistent_reduction configs) bounds a row held in
# registers with a tt.scan over it; not yet measured for coil's scans.
SCAN_PERSISTENT = 1024
SCAN_RBLOCK = 1024
SCAN_TILE = 1024

# The largest static window a reduction unrolls in registers (``_unrolls``);
# Inductor lowers pooling windows up to 25 points as pointwise kernels.
UNROLL = 25


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


def _hint(v: SSAValue) -> str | None:
    h = v.name_hint
    if not h:
        return None
    # AOTAutograd's placeholder names (arg16_1, primals_3, tangents_1) say which
    # input of one graph a value is, nothing about what a kernel does.
    h = re.sub(r"^(?:arg|primals|tangents)_?\d+(?:_\d+)*(?:_|$)", "", h)
    h = re.sub(r"_\d+$", "", h)
    h = re.sub(r"\W", "_", h)
    if not h or h[0].isdigit():
        return None
    return h


def kernel_name(nest: L.LoopOp, counter: int, prefix: str = "") -> str:
    hints: list[str] = []
    values: list[SSAValue] = []
    if isinstance(nest, L.FusedOp):
        for m in nest.members():
            values.extend(m.results)
    values.extend(nest.outs)
    for v in values:
        h = _hint(v)
        if h and h not in hints:
            hints.append(h)
    if not hints:
        hints = [
            {
                "loop.pointwise": "pointwise",
                "loop.reduction": "reduction",
                "loop.scan": "scan",
                "loop.scatter": "scatter",
            }.get(nest.name, "fused")
        ]
    return f"coil_{prefix}{'_'.join(hints[:4])}_{counter}"


def _source_lines(nest: Operation) -> list[str]:
    """The distinct "file:line" the nest's ops came from, in source order (files in
    order of first use, lines ascending)."""
    lines: dict[str, None] = {}
    for op in nest.walk():
        if (text := source_line(op.location)) is not None:
            lines.setdefault(text)
    files = list(dict.fromkeys(t.rpartition(":")[0] for t in lines))
    return sorted(
        lines, key=lambda t: (files.index(t.rpartition(":")[0]), int(t.rpartition(":")[2]))
    )


def _aten_ops(nest: Operation) -> list[str]:
    """The distinct aten ops (``aten.amax``) the nest's ops were lowered from, in
    program order (a body's ops before the nest holding them: producers inlined
    into a reduction come before it)."""
    names: dict[str, None] = {}
    for op in nest.walk(region_first=True):
        if (name := source_op(op.location)) is not None:
            names.setdefault(name)
    return list(names)


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


def _members(nest: L.LoopOp) -> list[Member]:
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
    _schedule(members)
    return members


def _schedule(members: list[Member], joined: dict[int, Member] | None = None) -> None:
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


# --------------------------------------------------------------------------
# The builder of one kernel
# --------------------------------------------------------------------------


class KernelLowering:
    def __init__(self, nest: L.LoopOp, name: str, options: Options, kind: str):
        self.nest = nest
        self.name = name
        self.options = options
        self.kind = kind
        self.yblock = 0
        self.plan = ""  # the kernel's plan and estimate (strategy/plan.py)
        self.member_results: set[SSAValue] = set()
        if isinstance(nest, L.FusedOp):
            self.member_results = {r for m in nest.members() for r in m.results}
        self._collect_operands()

    # ---- ABI ----

    def _collect_operands(self) -> None:
        nest = self.nest
        reads: list[SSAValue] = []
        seeds: list[SSAValue] = []
        exprs: list[sympy.Expr] = list(nest.ranges.data)
        if isinstance(nest, L.ReductionOp | L.FusedOp):
            exprs += list(nest.reduction_ranges.data)
        for op in nest.walk():
            if isinstance(op, L.LoadOp):
                exprs += list(op.index.data)
                if op.indirect and self.options.bounds_check:
                    exprs += [size for _, size in checked_dims(op)]
                if op.source in self.member_results:
                    continue
                if not isinstance(op.source.type, BufferType):
                    raise LoweringError(
                        f"convert-loop-to-tt: {nest.name} reads {op.source.type}, not a "
                        "buffer; run bufferize first"
                    )
                if op.source not in reads:
                    reads.append(op.source)
            elif isinstance(op, L.IndexOp):
                exprs.append(op.value)
            elif isinstance(op, L.RandOp | L.RandnOp):
                exprs.append(op.offset.data[0])
                if op.seed not in seeds:
                    seeds.append(op.seed)
        if isinstance(nest, L.ScatterOp):
            exprs += list(nest.index.data)
            if self.options.bounds_check:
                exprs += [size for _, size in checked_dims(nest)]
        outs = list(nest.outs)
        buffers = reads + [o for o in outs if o not in reads]
        for buf in buffers:
            exprs += list(buf.type.strides_attr.data)
        self.buffers = buffers
        self.seeds = seeds
        names: list[str] = []
        counts = {"in_ptr": 0, "out_ptr": 0, "in_out_ptr": 0}
        for buf in buffers:
            key = (
                "in_out_ptr"
                if buf in reads and buf in outs
                else "in_ptr"
                if buf in reads
                else "out_ptr"
            )
            names.append(f"{key}{counts[key]}")
            counts[key] += 1
        syms: set[sympy.Symbol] = set()
        for e in exprs:
            syms |= {s for s in sympy.sympify(e).free_symbols if not is_index_symbol(s)}
        self.scalars = sorted(syms, key=lambda s: s.name)
        self.arg_names = (
            names + [f"seed{k}" for k in range(len(seeds))] + [s.name for s in self.scalars]
        )
        self.device = str(outs[0].type.device_attr.data) if outs else "cpu"
        # Index type: i32 when everything is static and fits.
        # A buffer of dynamic size read at static indices (an indirect load from a
        # table of s0 rows) still needs i64: its extent is unknown.
        static = not self.scalars and all(
            sympy.sympify(buf.type.storage_numel()).is_Integer for buf in buffers
        )
        big = False
        if static:
            total = int(_prod(nest.ranges.data)) * int(_prod(self._rranges()))
            big = total >= 2**31 - 2**16
            for buf in buffers:
                big |= int(buf.type.storage_numel()) >= 2**31
        self.index_type = i32 if static and not big else i64

    def _rranges(self) -> tuple[sympy.Expr, ...]:
        if isinstance(self.nest, L.ReductionOp | L.FusedOp):
            return tuple(self.nest.reduction_ranges.data)
        return ()

    # ---- entry ----

    def build(self) -> Kernel:
        arg_types = [tt.PointerType(b.type.element_type) for b in self.buffers]
        arg_types += [i64] * (len(self.seeds) + len(self.scalars))
        func = tt.FuncOp(self.name, arg_types, [], visibility="public")
        func.attributes["coil.kind"] = StringAttr(self.kind)
        func.attributes["coil.device"] = StringAttr(self.device)
        func.attributes["coil.source_lines"] = ArrayAttr(
            [StringAttr(s) for s in _source_lines(self.nest)]
        )
        func.attributes["coil.aten_ops"] = ArrayAttr([StringAttr(s) for s in _aten_ops(self.nest)])
        # What the kernel reads, writes and computes, for review (loop_cost.py).
        func.attributes["coil.cost"] = StringAttr(nest_cost(self.nest).summary())
        block = func.body.block
        for arg, name in zip(block.args, self.arg_names):
            arg.name_hint = name
        self.ptr_of = dict(zip(self.buffers, block.args[: len(self.buffers)]))
        n_ptr = len(self.buffers)
        self.seed_of = dict(zip(self.seeds, block.args[n_ptr : n_ptr + len(self.seeds)]))
        self.b = KernelBuilder(block, self.index_type)
        for sym, arg in zip(self.scalars, block.args[n_ptr + len(self.seeds) :]):
            self.b.bind(sym, arg)
        self.body = BodyEmitter(
            self.b,
            self.device,
            self._pointer,
            self._member_value,
            self._seed,
            bounds_check=self.options.bounds_check,
            eviction=EvictionPlan(self.options.eviction),
        )
        if isinstance(self.nest, L.PointwiseOp):
            grid, warps = self._pointwise()
        elif isinstance(self.nest, L.ScanOp):
            grid, warps = self._scan()
        elif isinstance(self.nest, L.ScatterOp):
            grid, warps = self._scatter()
        else:
            grid, warps = self._group()
        if self.plan:
            func.attributes["coil.plan"] = StringAttr(self.plan)
        self.body.eviction.finish()
        self.b.insert(tt.ReturnOp())
        region_dce(func.body)  # constants and splats a broadcast made unnecessary
        return Kernel(
            func,
            grid,
            list(self.buffers) + list(self.seeds),
            list(self.scalars),
            self.options.num_warps or warps,
            self.options.num_stages or getattr(self, "num_stages", 1),
            self.xblock,
            self.rblock,
            self.persistent,
            self.yblock,
            self.plan,
            getattr(self, "rshape", None),
        )

    def _pointer(self, buf: SSAValue) -> SSAValue:
        return self.ptr_of[buf]

    def _seed(self, v: SSAValue) -> SSAValue:
        if v not in self.seed_of:
            raise LoweringError("convert-loop-to-tt: a random op's seed is not a kernel operand")
        return self.seed_of[v]

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
        if xnumel.is_Integer and int(xnumel) % xblock == 0:
            return None
        xmask = b.cmpi(xindex, b.emit_index(xnumel), "slt")
        xmask.name_hint = "xmask"
        return xmask

    def _bind_indices(self, flat: sympy.Symbol, syms, sizes) -> None:
        self.body.flat_groups.append((flat, tuple(syms), tuple(sizes)))
        for s, e in zip(syms, decompose(flat, sizes)):
            v = self.b.emit_index(e)
            if not v.name_hint:
                v.name_hint = s.name
            self.b.bind(s, v)

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
        warps = 4 if xblock <= 1024 else 8
        what = f"pointwise 1-D [XBLOCK {xblock}], {warps} warps"
        self._pointwise_plan(what, order, xblock, 0, 0, warps)
        return [cdiv(xnumel, xblock), sympy.Integer(1), sympy.Integer(1)], warps

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
            body = Block(arg_types=[it] + [v.type for v in inits])
            body.args[0].name_hint = "roffset"
            lb, ub, step = b.const(0, it), b.emit_index(rnumel), b.const(rblock, it)
            with b.at(body):
                self.body.eviction.streaming = True
                rindex = b.binary(xarith.AddiOp, body.args[0], rbase)
                rindex.name_hint = "rindex"
                self._rtile(rindex, rnumel, rblock, [rnumel])
                carry = list(body.args[1:])
                values = S.combine(b, kind, carry, chunk(), self.device)
                store(values)
                is_last = b.cmpi(rbase, b.const(rblock - 1, it), "eq")
                b.insert(scf.YieldOp(*[S.last(b, v, is_last) for v in values]))
                self.body.eviction.streaming = False
            b.insert(scf.ForOp(lb, ub, step, inits, Region(body)))
        warps = 8 if xblock * rblock >= 4096 else 4
        return [cdiv(xnumel, xblock), sympy.Integer(1), sympy.Integer(1)], warps

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
        self.members = _members(nest)
        self.outputs: dict[tuple[int, int], list[SSAValue]] = {}
        self._collect_outputs()
        unrolled = self._unrolls(xnumel, rnumel)
        if unrolled:
            persistent, rblock, inner = True, 1, False
            xblock = min(1024, next_pow2(int(xnumel))) if xnumel.is_Integer else 1024
            if self.options.xblock:
                xblock = next_pow2(self.options.xblock)
            warps = P.warps_for(xblock, rblock, inner)
            # Each lane reads its window: every read counted, an upper bound
            # (overlapping windows of neighbours hit the cache).
            acc = self.access
            nbytes = acc.point_bytes * int(rnumel) + acc.row_bytes + 4
            est = P.pointwise_estimate(
                xnumel, xblock, warps, nbytes, max(1, acc.ops), 1.0, self.options.target
            )
            what = f"window of {rnumel} unrolled, [XBLOCK {xblock}], {warps} warps"
            self.plan = f"{what}: {est.summary()}"
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
                tile = Tile(self.tile1.shape, self.tile1.mask, dict(zip(self.rsyms, at)))
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
        return P.ReductionShape(
            xnumel,
            rnumel,
            self.access,
            phases=max(1, phases),
            accumulators=accumulators,
            out_bytes=out_bytes or 4,
            point_out_bytes=point_out_bytes,
            reductions=max(1, len(reds)),
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

    def _member_value(self, value: SSAValue, tile: Tile) -> SSAValue | None:
        if value not in self.member_results:
            return None
        found = self.b.lookup(("member", value))
        if found is not None:
            return found
        member = next(m for m in self.members if value in m.op.results)
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
            self.b.remember(("member", r), v)
        return vals

    def _store_outputs(self, m: Member, values: Sequence[SSAValue]) -> None:
        for k, v in enumerate(values):
            for out in self.outputs.get((id(m.op), k), []):
                if m.kind == "P2":
                    self.body.store(out, self.isyms + self.rsyms, v, self.tile2)
                else:
                    self.body.store(out, self.isyms, v, self.tile1)

    def _set_results(self, m: Member, values: Sequence[SSAValue]) -> None:
        for r, v in zip(m.op.results, values):
            self.b.remember(("member", r), v)
        self._store_outputs(m, values)

    def _expand(self, v: SSAValue) -> SSAValue:
        return self.b.emit(tt.ExpandDimsOp(v, 1))

    def _rindex_i64(self) -> SSAValue:
        return self.b.broadcast_to(self.b.cast_int(self.rindex, i64), self.tile2.shape)

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
                vals = self.b.lookup(("member", m.op.results[0])) if m.op.results else None
                if (id(m.op), 0) in self.outputs:
                    vals = [vals] if vals is not None else self._compute_pointwise(m)
                    self._store_outputs(m, vals)
            else:
                (v,) = self.body.emit(m.op.body.block, self.tile2)
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
        b, it = self.b, self.index_type
        online = online_softmax_pairs(self.members) if self.options.online_softmax else {}
        if online:
            _schedule(self.members, online)
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
            body = Block(arg_types=[it] + [v.type for v in inits])
            body.args[0].name_hint = "roffset"
            lb, ub, step = b.const(0, it), b.emit_index(rnumel), b.const(rblock, it)
            with b.at(body):
                self.body.eviction.streaming = True
                rindex = b.binary(xarith.AddiOp, body.args[0], rbase)
                rindex.name_hint = "rindex"
                self._rtile(rindex, rnumel, rblock)
                accs = list(body.args[1:])
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
                        vals = b.lookup(("member", m.op.results[0]))
                        vals = [vals] if vals is not None else self._compute_pointwise(m)
                        self._store_outputs(m, vals)
                b.insert(scf.YieldOp(*new))
                self.body.eviction.streaming = False
            loop = scf.ForOp(lb, ub, step, inits, Region(body))
            b.insert(loop)
            results = list(loop.res)
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
        (v,) = self.body.emit(m.op.body.block, self.tile2)
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
        b.remember(("member", top.op.results[0]), m_new)  # the body's max is the running one
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
        row = b.broadcast_to(b.lookup(("member", top.op.results[0])), self.tile2.shape)
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


def build_kernel(nest: L.LoopOp, name: str, options: Options, kind: str) -> Kernel:
    from coil.lowering.loop_to_tt import gemm

    if gemm.find_gemm(nest) is not None:
        try:
            return gemm.GemmLowering(nest, name, options, "gemm").build()
        except gemm.NotATemplate as e:
            log.warning(
                "coil: %s: not a gemm template (%s); lowered as a reduction", name, e.args[0]
            )
    return KernelLowering(nest, name, options, kind).build()


def launch_config(k: Kernel) -> dict:
    from xdsl.dialects.builtin import IntegerAttr

    return {
        "num_warps": IntegerAttr(k.num_warps, 64),
        "num_stages": IntegerAttr(k.num_stages, 64),
    }


__all__ = ["Kernel", "Options", "build_kernel", "kernel_name", "launch_config", "next_pow2"]
