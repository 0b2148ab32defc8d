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

``KernelLowering`` (here: the ABI, the kernel's attributes, the dispatch on the
nest) mixes in one class per concern: ``kernel_index.py`` (binding
``xindex``/``yindex``/``rindex``, their masks and the loop indices),
``kernel_pointwise.py`` (1-D and 2-D pointwise tiles, scatters),
``kernel_scan.py`` (scans), ``kernel_group.py`` (a reduction group's members and
its tile: unrolled window, pointwise group, planned ``[XBLOCK, RBLOCK]``) and
``kernel_rows.py`` (the persistent, looped and online-softmax bodies of a row).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sympy
from xdsl.dialects.builtin import (
    ArrayAttr,
    StringAttr,
    i32,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.transforms.dead_code_elimination import region_dce

from coil.dialects import loop as L
from coil.dialects import tt
from coil.dialects.buffer import BufferType
from coil.dialects.symbolic import is_index_symbol
from coil.intmath import next_pow2
from coil.intmath import prod as _prod
from coil.ir import source_line, source_op
from coil.lowering.loop_to_tt.body import BodyEmitter, checked_dims
from coil.lowering.loop_to_tt.builder import KernelBuilder, LoweringError
from coil.lowering.loop_to_tt.eviction import EvictionPlan
from coil.lowering.loop_to_tt.kernel_group import GroupTiles
from coil.lowering.loop_to_tt.kernel_index import IndexBinding
from coil.lowering.loop_to_tt.kernel_pointwise import PointwiseTiles
from coil.lowering.loop_to_tt.kernel_rows import RowBodies
from coil.lowering.loop_to_tt.kernel_scan import ScanTile
from coil.strategy import plan as P
from coil.strategy.gemm import GemmConfig
from coil.strategy.target import TARGETS, Target
from coil.transforms.loop_cost import nest_cost


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
# The builder of one kernel
# --------------------------------------------------------------------------


class KernelLowering(IndexBinding, PointwiseTiles, ScanTile, GroupTiles, RowBodies):
    """One loop nest as one ``tt.func``: the ABI and the entry here, the tiles in
    the mixins (see the module docstring)."""

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
            big = self._index_points() >= 2**31 - 2**16
            for buf in buffers:
                big |= int(buf.type.storage_numel()) >= 2**31
        self.index_type = i32 if static and not big else i64

    def _index_points(self) -> int:
        """The largest flat index the kernel computes (static sizes): every
        point of the nest and its reduction."""
        return int(_prod(self.nest.ranges.data)) * int(_prod(self._rranges()))

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


def launch_config(k: Kernel) -> dict:
    from xdsl.dialects.builtin import IntegerAttr

    return {
        "num_warps": IntegerAttr(k.num_warps, 64),
        "num_stages": IntegerAttr(k.num_stages, 64),
    }


__all__ = ["Kernel", "KernelLowering", "Options", "kernel_name", "launch_config", "next_pow2"]
