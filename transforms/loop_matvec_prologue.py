"""``loop-matvec-prologue``: a row's normalization recomputed inside the
matrix-vector products that read it (RMSNorm/LayerNorm as their prologue).

At batch 1 a transformer layer runs ``norm(h)`` then products of the normed
row: one kernel reduces ``h`` (``sum(h * h)``) and writes ``h * rsqrt(..) * w``,
then each product's kernel reads that row. ``loop-fuse`` cannot join them: the
norm's reduction has one output (the row) and the product's has ``N`` (its
columns), so they are not siblings, and the product reads the normed row at
every reduction index, not at its own point.

This pass gives each such product its own copy of the norm's reduction over
the product's outputs: for a top-level reduction ``R`` over ``(O, K)`` whose
body loads a pointwise ``P`` at an index that does not move with ``O`` (the
vector of a matrix-vector product), where ``P`` reads reductions ``S`` with
one output each over the same ``K`` (the norm's statistics), every ``S`` is
cloned as ``S'`` over ``(O, K)`` -- the same sum for every output, each
program computing it for itself -- and ``P``'s body is inlined into ``R``,
reading ``S'`` at ``R``'s own point. ``loop-fuse`` then joins ``S'`` and ``R``
(a reduction chain, as softmax's max and sum): the norm and the product are
one kernel, and the normed row is never written. A product that reads the
same ``P`` twice (gate and up) gets one ``S'`` per product, and ``cse``
leaves one.

The cost is the statistics recomputed by every program of ``R``: ``K`` loads
of the row (from cache: each program reads the same ``K`` elements) and
``K`` multiply-adds per output, beside the ``K`` of the matrix that each
output reads anyway; a launch, a write and a read of the row are saved. Only
where it pays: ``S`` has one output row (a batch-1 row), ``R`` has more than
one output and reads at most ``max-read-bytes`` (a small matrix, whose time
is at most a launch's on the target: :func:`prologue_read_bytes`), and
``P`` and ``S`` are small bodies (``max-body-ops``).

Input: the loop level after ``loop-inline`` (top-level value-semantic nests).
Output: the same level; ``P`` and ``S`` are erased when nothing else reads
them. Guarantees: each product computes the same sums of the same values.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects import arith, builtin
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from coil.dialects import loop as L
from coil.dialects.symbolic import ShapeAttr
from coil.strategy.cost import DRAM_EFFICIENCY
from coil.strategy.hints import with_size_hints
from coil.strategy.target import Target, module_target
from coil.transforms.loop_cost import body_size, domain, estimate, external_sources, read_bytes
from coil.transforms.loop_inline import LoopInlinePass, _Inliner
from coil.transforms.loop_utils import ancestor_in, function_blocks, substitute_in_body


def _numel_one(ranges) -> bool:
    return all(r == 1 for r in ranges)


def _broadcast_load(load: L.LoadOp, outer: list[sympy.Symbol]) -> bool:
    """Whether ``load``'s index does not move with the symbols ``outer`` (the
    outer ranges of more than one point)."""
    if load.indirect or load.mask is not None:
        return False
    return all(not (sympy.sympify(e).free_symbols & set(outer)) for e in load.index.data)


def _statistics(producer: L.PointwiseOp, block: Block, inner) -> list[L.ReductionOp] | None:
    """The one-row reductions over ``inner`` that ``producer`` reads (None if
    none); other reductions it reads (a residual's product) are stored
    tensors like any other input."""
    found: list[L.ReductionOp] = []
    for load in producer.walk():
        if not isinstance(load, L.LoadOp):
            continue
        owner = load.source.owner
        if (
            isinstance(owner, L.ReductionOp)
            and owner.parent is block
            and not owner.is_bufferized
            and _numel_one(owner.ranges.data)
            and owner.reduction_ranges.data == inner
            and owner not in found
        ):
            found.append(owner)
    return found or None


def _spread(stat: L.ReductionOp, ranges, before: Operation) -> L.ReductionOp:
    """``stat`` (one output row) computed at every point of ``ranges``."""
    n_red = len(stat.reduction_ranges.data)
    old = stat.body.block
    new = L.new_body(len(ranges), n_red)
    mapping: dict[SSAValue, SSAValue] = {}
    n_old = len(stat.ranges.data)
    for arg in old.args[:n_old]:
        if arg.uses:
            zero = arith.ConstantOp(builtin.IntegerAttr(0, builtin.IndexType()))
            new.add_op(zero)
            mapping[arg] = zero.result
    for a, b in zip(old.args[n_old:], new.args[len(ranges) :]):
        mapping[a] = b
    for op in old.ops:
        new.add_op(op.clone(value_mapper=mapping))
    # the old outer symbols (all of size 1) are 0; the reduction symbols keep names
    substitute_in_body(new, {s: sympy.Integer(0) for s in L.index_symbols(n_old)})
    props = dict(stat.properties)
    props["ranges"] = ShapeAttr(list(ranges))
    types = [L.LoopTensorType(list(ranges), r.type.element_type) for r in stat.res]
    spread = L.ReductionOp.build(
        operands=[[]], result_types=[types], properties=props, regions=[Region(new)]
    )
    spread.location = stat.location
    for a, b in zip(stat.res, spread.res):
        b.name_hint = a.name_hint
    Rewriter.insert_op(spread, InsertPoint.before(before))
    return spread


def prologue_read_bytes(target: Target) -> float:
    """The most bytes a product may read and still take a norm prologue on
    ``target``: what its DRAM streams in one launch's time (``launch_s`` at
    the bandwidth a streaming kernel reaches). The prologue's re-reads of the
    row cost about one more pass of requests over the matrix, and save a
    launch: 6.0 MB on an H100, 8.6 on an H200, 3.6 on an A100."""
    return target.launch_s * target.dram_bytes_per_s * DRAM_EFFICIENCY


@dataclass(frozen=True)
class LoopMatvecProloguePass(ModulePass):
    """Row normalizations recomputed in the products that read them (module doc)."""

    name = "loop-matvec-prologue"

    max_body_ops: int = 64
    """The most ops the normalization (its pointwise part and its reductions)
    may hold to be recomputed in each product."""

    max_read_bytes: int = -1
    """The most bytes the product may read (its matrix) to take the prologue;
    -1: the target's (:func:`prologue_read_bytes`), 0: no limit. Every
    program of the product reads the row again for its statistics, a read
    per matrix row it owns at the kernel plan's 1-4 rows a program: from
    cache, but as many requests as the matrix's own. That pays only where the
    launch saved outweighs them: q/k/v of a 1024-wide layer (3 MB) does; for
    an MLP's 11.5 MB or a 65 MB output head coil's cost model estimates the
    fused kernel at twice the separate ones' time (``fx-opt --device h100
    --print-kernel-plans``), unmeasured on a GPU yet."""

    @with_size_hints
    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        limit = self.max_read_bytes
        if limit < 0:
            limit = prologue_read_bytes(module_target(op))
        for block in function_blocks(op):
            for nest in [o for o in block.ops if isinstance(o, L.ReductionOp)]:
                if nest.parent is block and not nest.is_bufferized:
                    self._rewrite(block, nest, limit)

    def _rewrite(self, block: Block, red: L.ReductionOp, limit: float) -> None:
        ranges = red.ranges.data
        if _numel_one(ranges):
            return
        reads = estimate(read_bytes(external_sources(red), domain(red)))
        if limit and reads > limit:
            return
        outer = L.index_symbols(len(ranges))
        moving = [s for s, n in zip(outer, ranges) if n != 1]  # size-1 ranges are 0
        inner = red.reduction_ranges.data
        for load in [o for o in red.walk() if isinstance(o, L.LoadOp)]:
            producer = load.source.owner
            if (
                not isinstance(producer, L.PointwiseOp)
                or producer.parent is not block
                or producer.is_bufferized
                or len(producer.res) != 1
                or not _broadcast_load(load, moving)
            ):
                continue
            stats = _statistics(producer, block, inner)
            if stats is None:
                continue
            size = body_size(producer) + sum(body_size(s) for s in stats)
            if self.max_body_ops and size > self.max_body_ops:
                continue
            spread = {s: _spread(s, ranges, red) for s in stats}
            _Inliner(LoopInlinePass(), block)._inline(producer, load)
            for inner_load in [o for o in red.walk() if isinstance(o, L.LoadOp)]:
                owner = inner_load.source.owner
                if owner in spread:
                    k = list(owner.res).index(inner_load.source)
                    new = L.LoadOp(spread[owner].res[k], list(outer), [], None)
                    new.location = inner_load.location
                    Rewriter.insert_op(new, InsertPoint.before(inner_load))
                    inner_load.result.replace_all_uses_with(new.result)
                    Rewriter.erase_op(inner_load)
            for dead in [producer, *stats]:
                if not any(r.uses for r in dead.results) and ancestor_in(dead, block):
                    Rewriter.erase_op(dead)
