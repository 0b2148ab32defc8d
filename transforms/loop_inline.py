"""``loop-inline``: vertical fusion of pointwise producers and views into the
bodies that read them (Inductor's ``inner_fn`` inlining and its ``realize``
decisions).

A tensor-level ``loop.pointwise`` P read by ``loop.load %P[e0, ...]`` inside another
nest's body is recomputed there: the load is replaced by a clone of P's body with
P's index symbols ``i_k`` substituted by ``e_k`` (in every index expression of the
clone: loads, ``loop.index``, random offsets), and the value P yields replaces the
load. A load of a ``loop.view`` V becomes a load of V's source with V's index map
composed.

Whether P is recomputed or stored once is decided for P as a whole, with its
body already holding the producers inlined into it (producers are visited
first, so the cost seen is the total being recomputed, as Inductor's
``num_reads``/``inner_fn_opcount`` see the composed ``inner_fn``):

* P is stored anyway (returned, passed to an extern, copied, viewed by something
  that stays): every reader loads it. Recomputing would only trade one load for
  P's own inputs and drag P's producers along, so kernels would grow with depth.
* P is read once: inlined (nothing is recomputed).
* P is read by several loads: inlined only when cheap (``max-cost`` compute ops,
  ``max-reads`` distinct tensors) and when the bytes its readers then read
  (P's inputs, once per reading nest) do not exceed a store of P and its reads.
* P whose elements its readers would compute more than once (a broadcast into
  a larger nest, a pooling window): inlined only when cheap, and when the
  repeated arithmetic costs at most ``recompute-margin`` times storing P (a
  launch, the write, each load's read of it).
* No reader's body may grow past ``max-body-ops`` (the compile-time guard: a
  kernel that would is split by storing P).

Inlining is all or nothing per producer: a P that stays is loaded everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects import arith, builtin
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.transforms.common_subexpression_elimination import cse

from coil.dialects import buffer as B
from coil.dialects import loop as L
from coil.intmath import prod
from coil.strategy import gemm as G
from coil.strategy.access import element_bytes
from coil.strategy.cost import lane_ops_per_s, ops_per_byte, store_seconds
from coil.strategy.hints import with_size_hints
from coil.strategy.target import TARGETS, Target, module_target
from coil.transforms.extern_effects import extern_mutated_operands
from coil.transforms.loop_cost import (
    body_size,
    compute_ops,
    domain,
    estimate,
    external_sources,
    numel,
    read_bytes,
    tensor_bytes,
)
from coil.transforms.loop_utils import (
    ancestor_in,
    captured_values,
    exprs_of,
    function_blocks,
    identity_copy_source,
    map_exprs,
    zero_constant,
)

# Integer ops that trap on a zero divisor: never evaluated on a masked-off lane's 0.
_TRAPPING = (
    arith.DivSIOp,
    arith.DivUIOp,
    arith.RemSIOp,
    arith.RemUIOp,
    arith.FloorDivSIOp,
    arith.CeilDivSIOp,
    arith.CeilDivUIOp,
)


def _may_trap(op: Operation) -> bool:
    """Whether ``op`` divides by a value that may be zero on a masked-off lane:
    a divisor that is a nonzero constant never is (a max-pool backward's
    window offsets, unflattened by their constant extents)."""
    if not isinstance(op, _TRAPPING):
        return False
    divisor = op.operands[1].owner
    if isinstance(divisor, arith.ConstantOp) and isinstance(divisor.value, builtin.IntegerAttr):
        return divisor.value.value.data == 0
    return True


_MAX_ROUNDS = 4
"""Rounds of producer decisions at most (each after the first only revisits what
the one before merged; two suffice for torch's decompositions seen so far)."""


def module_target_of(block: Block) -> Target:
    """The target of the module holding ``block`` (``coil.target``), the
    interpreter's where the block is in no module."""
    op = block.parent_op()
    while op is not None and not isinstance(op, builtin.ModuleOp):
        op = op.parent_op()
    return module_target(op) if op is not None else TARGETS["cpu-interpreter"]


def _indirect_symbols(expr: sympy.Expr) -> set[sympy.Symbol]:
    return {s for s in expr.free_symbols if s.name.startswith("t") and s.name[1:].isdigit()}


def _compact_indirect(
    index: list[sympy.Expr], indirect: list[SSAValue]
) -> tuple[list[sympy.Expr], list[SSAValue]]:
    """Drop the indirect operands no index expression names, renumbering the rest."""
    used = set().union(*(sympy.sympify(e).free_symbols for e in index)) if index else set()
    keep = [k for k in range(len(indirect)) if L.indirect_symbol(k) in used]
    if len(keep) == len(indirect):
        return index, indirect
    rename = {L.indirect_symbol(k): L.indirect_symbol(n) for n, k in enumerate(keep)}
    return [sympy.sympify(e).xreplace(rename) for e in index], [indirect[k] for k in keep]


def _through_views(values: set[SSAValue]) -> set[SSAValue]:
    """``values`` and the sources of the ``loop.view``s among them, transitively
    (a view reads its source where it is used once inlined)."""
    out: set[SSAValue] = set()
    stack = list(values)
    while stack:
        v = stack.pop()
        if v not in out:
            out.add(v)
            if isinstance(v.owner, L.ViewOp):
                stack.append(v.owner.source)
    return out


def _body_loads_of(value: SSAValue) -> list[L.LoadOp]:
    """The loads of ``value`` that sit in a loop body."""
    return [
        u.operation
        for u in value.uses
        if isinstance(u.operation, L.LoadOp)
        and u.index == 0
        and L.enclosing_loop(u.operation) is not None
    ]


def _same_load(a: L.LoadOp, b: L.LoadOp) -> bool:
    return (
        a.source == b.source
        and a.index.data == b.index.data
        and tuple(a.indirect) == tuple(b.indirect)
        and a.mask == b.mask
    )


def _dedupe_loads(loads: list[L.LoadOp]) -> list[L.LoadOp]:
    """Merge identical loads of one producer in one block (the later reuses the
    earlier), so a body reading P twice at the same index recomputes it once."""
    kept: list[L.LoadOp] = []
    order = {}
    for load in loads:
        block = load.parent_block()
        if block not in order:
            order[block] = {op: k for k, op in enumerate(block.ops)}
    for load in sorted(loads, key=lambda op: order[op.parent_block()][op]):
        twin = next(
            (k for k in kept if k.parent_block() is load.parent_block() and _same_load(k, load)),
            None,
        )
        if twin is None:
            kept.append(load)
            continue
        load.result.replace_all_uses_with(twin.result)
        Rewriter.erase_op(load)
    return kept


def _is_load_in_body(op: Operation) -> bool:
    return isinstance(op, L.LoadOp) and L.enclosing_loop(op) is not None


def _widened_for_many(loads: list[L.LoadOp]) -> bool:
    """Whether the one reader is a nest that only widens the producer's
    elements (``x.float()``, a bf16 model's decompositions upcast before
    computing) and is read by several nests: inlined there, a producer too
    costly to recompute would be stored widened (EfficientNet-B0 kept a 147 MB
    f32 copy of a 74 MB bf16 activation that its squeeze-excite mean and
    product both read); stored as it is, the widening is inlined into each
    reader instead."""
    if len(loads) != 1:
        return False
    load = loads[0]
    reader = load.parent_op()
    if not isinstance(reader, L.PointwiseOp) or len(reader.res) != 1:
        return False
    ops = list(reader.body.block.ops)
    return (
        len(ops) == 3
        and ops[0] is load
        and list(load.index.data) == reader.index_symbols()
        and isinstance(ops[1], arith.ExtFOp)
        and isinstance(ops[2], L.YieldOp)
        and len(list(reader.res[0].uses)) > 1
    )


def _iprod(values) -> int:
    return int(prod(list(values)))


def _reused(producer: L.PointwiseOp, loads: list[L.LoadOp]) -> bool:
    """Whether inlined, ``producer`` would be computed more than once per
    element: its loads, over their readers' iterations, hit its elements more
    often than it has elements. One load can do that -- a pooling window (a
    reduction over the window reads each element up to kh*kw times), a
    broadcast into a larger nest, an upsample's taps -- so counting loads
    misses it. Inductor realizes such producers (``realize_hint`` on a pool's
    or upsample's input: "elements are reused") unless they are trivial; here
    they must be cheap. A max pool of GoogLeNet's inception output had the
    concatenation with each branch's batch norm and ReLU inlined into its 3x3
    window: 20 loads and ~80 ops per window tap, 1.87 ms on an H200 where
    Inductor's cat + pool took ~0.1 ms."""
    hits = sum(_hits(load) for load in loads)
    return hits > estimate(numel(producer.ranges.data))


def _lanes(loads: list[L.LoadOp]) -> int:
    """Iterations of the nests that execute ``loads``, masked-off lanes
    included: inlined, the producer's arithmetic runs on each of them (a
    concatenation evaluates every branch for every element and selects one).
    Segformer's decode head concatenated four bilinear upsamples (~60 ops
    each) in one kernel that computed all four per element: 2.19 ms on an
    H200, where Inductor, which concatenates complex inputs by writing each
    into its slice, took ~0.4 ms."""
    return sum(estimate(domain(nest)) for nest in map(L.enclosing_loop, loads) if nest)


def _hits(load: L.LoadOp) -> int:
    """How many times ``load`` reads an element of its source over the
    iterations of its nest: per source dimension, the iterations of the
    nest's indices its expression uses -- at most the dimension's extent where
    one index with a unit coefficient walks it (a concatenation's or a pad's
    shifted, masked read: the rest is masked off) -- times the extents of the
    nest's indices no expression uses (a broadcast). An indirect index counts
    its dimension's extent."""
    nest = L.enclosing_loop(load)
    if nest is None:
        return 0
    extents = [*nest.ranges.data]
    if isinstance(nest, L.ReductionOp | L.FusedOp):
        extents += list(nest.reduction_ranges.data)
    syms = nest.index_symbols()
    extent = {s: estimate(n) for s, n in zip(syms, extents)}
    source = [estimate(n) for n in load.source.type.shape_attr.data]
    used: set[sympy.Symbol] = set()
    hits = 1
    for e, dim in zip(load.index.data, source):
        e = sympy.sympify(e)
        mine = [s for s in e.free_symbols if s in extent]
        used.update(mine)
        if _indirect_symbols(e):
            hits *= dim
        elif len(mine) == 1 and abs(e.coeff(mine[0], 1)) == 1 and e.is_polynomial(mine[0]):
            hits *= min(extent[mine[0]], dim)
        else:
            hits *= _iprod(extent[s] for s in mine)
    return hits * _iprod(extent[s] for s in syms if s not in used)


def _epilogue_broadcast_into_reduction(producer: L.PointwiseOp, loads: list[L.LoadOp]) -> bool:
    """Whether ``producer`` computes on a reduction's results (``loop-fuse``
    makes it that reduction's epilogue) and a reduction reads it by broadcast:
    the load's index leaves out one of the reader's output dimensions, so
    inlined, each element would be recomputed once per output along it. A
    batch-1 ``Linear`` + GELU read by the next one (``aten_to_loop/matvec.py``)
    recomputed the bias and GELU 256 times per element, in registers of
    ``[XBLOCK, RBLOCK]`` tiles; stored by the epilogue, it is one load of the
    vector, and still no extra launch."""
    if not any(isinstance(s.owner, L.ReductionOp) for s in external_sources(producer.body.block)):
        return False
    for load in loads:
        reader = L.enclosing_loop(load)
        if not isinstance(reader, L.ReductionOp):
            continue
        used = set().union(*(sympy.sympify(e).free_symbols for e in load.index.data))
        kept = zip(reader.index_symbols(), reader.ranges.data)
        if any(sym not in used and estimate(extent) > 1 for sym, extent in kept):
            return True
    return False


def _costly_gemm_prologue(producer: L.PointwiseOp, loads: list[L.LoadOp]) -> bool:
    """Whether a gemm template reads ``producer`` as an operand and recomputing it
    there costs more than storing it (``strategy/gemm.py``,
    :func:`~coil.strategy.gemm.cheap_prologue`): the template computes its
    operand tiles once per output tile along the other side, so a GELU before
    the next Linear (GPT-2's MLP) ran its tanh chain ``N / BLOCK_N`` times per
    element in the K loop, in f32, off the asynchronous copies; stored, it is
    the previous product's epilogue (``loop-fuse``) and one bf16 load here."""
    if not any(
        isinstance(r := L.enclosing_loop(load), L.ReductionOp) and r.is_gemm for load in loads
    ):
        return False
    return not G.cheap_prologue(compute_ops(producer.body.block), _math_ops(producer.body.block))


def _gemm_epilogue_into_reduction(producer: L.PointwiseOp, loads: list[L.LoadOp]) -> bool:
    """Whether ``producer`` reads a gemm template's result (the product's own
    finish: its rounding, bias, a residual add) and would be inlined into a
    reduction, or into a pointwise nest only reductions and their epilogues
    read (a cast to the norm's f32). Stored, it is the template's epilogue (``loop-fuse``) and the
    template writes the 16-bit finish the reduction reads (through the cast,
    inlined there); inlined into the reduction (GPT-2's last projection into
    the final layer norm), the template wrote its f32 accumulator and the norm
    read it, the bias and the residual: 10 bytes an element moved, not 4."""

    def is_gemm(v: SSAValue) -> bool:
        while isinstance(v.owner, L.ViewOp):
            v = v.owner.source
        return isinstance(v.owner, L.ReductionOp) and v.owner.is_gemm

    def is_reduction(nest: Operation | None) -> bool:
        return isinstance(nest, L.ReductionOp) and not nest.is_gemm

    def only_reductions_read(nest: L.PointwiseOp) -> bool:
        """Read only by reductions and by their epilogues (nests that also
        read those reductions' results: a norm's normalizing step)."""
        reads = _body_loads_of(nest.res[0])
        if not reads or len(reads) != len(list(nest.res[0].uses)):
            return False  # stored anyway (a result, or read by a view)
        readers = {L.enclosing_loop(ld) for ld in reads}
        reductions = {r for r in readers if is_reduction(r)}
        results = {v for r in reductions for v in r.results}
        return bool(reductions) and all(
            r in reductions
            or (
                isinstance(r, L.PointwiseOp)
                and any(isinstance(o, L.LoadOp) and o.source in results for o in r.walk())
            )
            for r in readers
        )

    if not any(is_gemm(ld.source) for ld in producer.body.block.ops if isinstance(ld, L.LoadOp)):
        return False
    for load in loads:
        reader = L.enclosing_loop(load)
        if is_reduction(reader):
            return True
        if isinstance(reader, L.PointwiseOp) and only_reductions_read(reader):
            return True
    return False


def _math_ops(block: Block) -> int:
    return sum(1 for op in block.walk() if op.name.startswith("math."))


@dataclass(frozen=True)
class LoopInlinePass(ModulePass):
    """Inline tensor-level ``loop.pointwise`` producers and ``loop.view``s into the
    loop bodies that load them, where recomputing pays (see the module docstring).

    Input: loop-level IR (value-semantic nests, views, externs). Output: the same
    computation with fewer nests; every load of an inlined producer is gone. A chain
    of pointwise ops read once each becomes one nest. Not inlined: reductions
    (their results are materialized), bufferized nests, producers whose body holds
    nested regions, a producer stored anyway, a shared producer that is expensive
    (``max-cost``, ``max-reads``) or whose readers would read more bytes than a
    store saves, one that would push a reader past ``max-body-ops``, a
    reduction's epilogue that a reduction reads by broadcast, a gemm template's
    operand that is not a cheap prologue (a cast, a scale), a producer
    reading an input that a ``loop.copy`` overwrites before a reader, and one a
    load cannot take after substitution: an indirect index reaching a
    ``loop.index``/random offset, or trapping integer division under a mask.
    Masked loads stay exact: the inlined loads carry the mask (``arith.andi`` with
    their own) and the value is ``arith.select``-ed to the 0 a masked load reads.
    Guarantees: no reader's body exceeds ``max-body-ops`` because of inlining, and
    recomputation never repeats a producer that is stored anyway.
    """

    name = "loop-inline"

    max_cost: int = 30
    """Compute ops (of the producer with its own inlined producers) above which a
    producer read more than ``max-uses`` times is stored instead (Inductor's
    ``realize_opcount_threshold``)."""
    max_reads: int = 4
    """Distinct tensors read above which a producer read more than ``max-uses``
    times is stored instead (Inductor's ``realize_reads_threshold``)."""
    max_uses: int = 1
    """Loads a producer may be recomputed in whatever its cost."""
    recompute_margin: float = 4.0
    """How many times a store (a launch, a write, each reader's read) recomputing
    a reused producer must cost before the producer is stored instead (0: never
    for that reason). The estimate counts loop-level ops, not the 2-3x more
    instructions 64-bit index math, divisions and transcendentals compile to,
    and a stored producer is one more launch on a host-bound model: only clear
    cases move."""
    max_body_ops: int = 400
    """Ops a reader's body may hold after inlining (0 = no limit): beyond it the
    producer is stored, so no kernel grows past what Triton compiles quickly."""
    inline_views: bool = True
    """Compose ``loop.view`` index maps into the loads that read them."""

    @with_size_hints
    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        target = module_target(op)
        for block in function_blocks(op):
            _Inliner(self, block, target).run()


class _Inliner:
    def __init__(self, options: LoopInlinePass, block: Block, target: Target | None = None):
        self.options = options
        self.block = block
        self.target = target if target is not None else module_target_of(block)

    def run(self) -> None:
        # Views first, readers before what they view, so chains collapse and every
        # producer's readers load it directly.
        if self.options.inline_views:
            for op in reversed(list(self.block.ops)):
                if isinstance(op, L.ViewOp) and op.parent_block() is self.block:
                    self._inline_view(op)
        # A producer whose identity copy is stored anyway (a layout change for an
        # extern) is stored: its later readers load the copy.
        for op in list(self.block.ops):
            if isinstance(op, L.PointwiseOp) and op.res and op.parent_block() is self.block:
                self._read_stored_copy(op)
        # Then producers first: when a producer is decided, its body already holds
        # the producers inlined into it, so its cost is the total recomputed.
        # Repeated while a round inlines something: a producer read by two nests
        # that one of them then absorbs (a bilinear upsample's decomposition:
        # the top row's lerp is read by the bottom-minus-top difference and by
        # the final lerp, which absorbs the difference) is read by one nest in
        # the next round, at one index, so nothing is recomputed by inlining it.
        for _ in range(_MAX_ROUNDS):
            inlined = False
            for op in list(self.block.ops):
                if isinstance(op, L.PointwiseOp) and op.res and op.parent_block() is self.block:
                    inlined |= self._inline_pointwise(op)
            if not inlined:
                break

    # ---- views ----

    def _inline_view(self, view: L.ViewOp) -> None:
        source_index = view.index.data
        syms = L.index_symbols(len(view.result.type.shape_attr.data))
        if view.source.type == view.result.type and list(source_index) == syms:
            view.result.replace_all_uses_with(view.source)  # an identity view
            Rewriter.erase_op(view)
            return
        # A view of this view reads the source directly (chains collapse), unless a
        # loop.copy overwrites the source in between (the view holds the old data).
        read = _through_views({view.source})
        for use in list(view.result.uses):
            outer = use.operation
            if (
                isinstance(outer, L.ViewOp)
                and outer.parent_block() is self.block
                and not self._copy_between(view, read, outer)
            ):
                sub = dict(zip(syms, outer.index.data))
                index = [e.xreplace(sub) for e in source_index]
                composed = L.ViewOp(view.source, index, outer.result.type)
                composed.result.name_hint = outer.result.name_hint
                composed.location = outer.location
                Rewriter.insert_op(composed, InsertPoint.before(outer))
                outer.result.replace_all_uses_with(composed.result)
                Rewriter.erase_op(outer)
        loads = _body_loads_of(view.result)
        for load in loads:
            if self._copy_between(view, read, load):
                continue
            sub = dict(zip(syms, load.index.data))
            index, indirect = _compact_indirect(
                [e.xreplace(sub) for e in source_index], list(load.indirect)
            )
            new = L.LoadOp(view.source, index, indirect, load.mask)
            new.result.name_hint = load.result.name_hint
            new.location = load.location
            Rewriter.insert_op(new, InsertPoint.before(load))
            load.result.replace_all_uses_with(new.result)
            Rewriter.erase_op(load)
        if not view.result.uses:
            Rewriter.erase_op(view)

    # ---- pointwise producers ----

    def _read_stored_copy(self, producer: L.PointwiseOp) -> None:
        """Readers of ``producer`` placed after an identity copy of it that is
        stored anyway load that copy instead.

        ``aten-channels-last`` gives a convolution a ``clone`` of its input in
        the channels-last layout; at this level that is a nest reading
        ``producer`` element for element, which ``bufferize`` stores in the
        layout the convolution wants, and the one stored copy of ``producer``.
        Left reading ``producer``, its other readers recomputed it from its own
        inputs, which then stayed alive until the last of them: a ResNet-D
        shortcut's average pool, after the next block's main path, kept the
        residual sum's two 49 MiB inputs alive through it (SE-ResNeXt-26d at
        batch 32: three 49 MiB buffers above Inductor's peak, where Inductor
        stores the block output once, in the convolution's layout, and pools
        that). Reading the copy is one pass over the stored tensor, never more
        bytes than recomputing, and ``producer`` itself is then read once (by
        the copy) and inlined into it."""
        copy = next(
            (
                nest
                for u in producer.res[0].uses
                if isinstance(nest := u.operation.parent_op(), L.PointwiseOp)
                and nest.parent_block() is self.block
                and len(nest.res) == 1
                and identity_copy_source(nest.res[0]) is producer.res[0]
            ),
            None,
        )
        if copy is None or all(_is_load_in_body(u.operation) for u in copy.res[0].uses):
            return  # no copy, or one that is itself inlined: nothing stored to read
        after = False
        order = {}
        for op in self.block.ops:
            order[op] = after
            after = after or op is copy
        read = _through_views(captured_values(producer))
        for load in _body_loads_of(producer.res[0]):
            top = ancestor_in(load, self.block)
            if top is None or top is copy or not order.get(top, False):
                continue
            if self._copy_between(copy, read | {copy.res[0]}, load):
                continue
            new = L.LoadOp(copy.res[0], list(load.index.data), list(load.indirect), load.mask)
            new.result.name_hint = load.result.name_hint
            new.location = load.location
            Rewriter.insert_op(new, InsertPoint.before(load))
            load.result.replace_all_uses_with(new.result)
            Rewriter.erase_op(load)

    def _inline_pointwise(self, producer: L.PointwiseOp) -> bool:
        """Inline ``producer`` into its readers where that pays; whether it did."""
        body = producer.body.block
        if any(op.regions for op in body.ops):
            return False
        loads = _dedupe_loads(_body_loads_of(producer.res[0]))
        if not loads or len(loads) != len(list(producer.res[0].uses)):
            return False  # unread, or stored anyway: readers load it
        if not self._pays(producer, loads):
            return False
        if _widened_for_many(loads) and not self._cheap(producer):
            return False
        if _reused(producer, loads) and (
            not self._cheap(producer) or self._recomputing_costs_more(producer, loads)
        ):
            return False
        if self._wasted_lanes_cost_more(producer, loads):
            return False
        if _epilogue_broadcast_into_reduction(producer, loads):
            return False
        if _costly_gemm_prologue(producer, loads):
            return False
        if _gemm_epilogue_into_reduction(producer, loads):
            return False
        if not all(self._can_inline(producer, load) for load in loads):
            return False
        readers = {ancestor_in(load, self.block) for load in loads}
        for load in loads:
            self._inline(producer, load)
        Rewriter.erase_op(producer)
        # The clones repeat what the reader already computes (the same index
        # math of two gathers of one input, a producer's own producer inlined
        # twice): merged, so the costs and sizes later decisions read are those
        # of the kernel that will be compiled (Inductor counts its inner_fn
        # through a CSE, ``OpCounterCSE``).
        for reader in readers:
            if reader is not None:
                cse(reader)
        return True

    def _cheap(self, producer: L.PointwiseOp) -> bool:
        """Whether ``producer`` is cheap enough to recompute wherever it is read."""
        body = producer.body.block
        o = self.options
        return compute_ops(body) <= o.max_cost and len(external_sources(body)) <= o.max_reads

    def _recomputing_costs_more(self, producer: L.PointwiseOp, loads: list[L.LoadOp]) -> bool:
        """Whether recomputing a reused ``producer`` (:func:`_reused`: a
        broadcast into a larger nest, a window) at every hit would take longer
        than ``recompute-margin`` times storing it in a kernel of its own and
        loading it back in each reader (``cost.store_seconds``): its ops times
        the readers' iterations beyond one per element (:func:`_lanes`), at the
        target's issue rate (``cost.lane_ops_per_s``), against the write and,
        per load, the elements it reads (at most the table: a broadcast's
        repeated reads hit L2). A cheap producer (``max-cost`` ops) can still
        be too costly to repeat when the broadcast is wide: DeBERTa's two
        log-bucketed relative-position indices (28 and 29 ops over [512, 512])
        were recomputed for each of 96 heads in the attention softmax, ~21 us
        each on an H200 against ~3 us to store them (Inductor computes both
        tables once and gathers through them); a padding mask's 3 ops over
        [8, 512, 512] broadcast over 12 heads stay inlined (2 us against 3),
        and so does a bias every layer reads whole (MPNet's relative-position
        bias, 17 ops over [2, 12, 512, 512] read by 12 layers: storing it
        means 12 reads of 12.6 MB)."""
        margin = self.options.recompute_margin
        count = estimate(numel(producer.ranges.data))
        extra = _lanes(loads) - count
        ops = compute_ops(producer.body.block)
        if margin <= 0 or extra <= 0 or ops == 0:
            return False
        recompute = extra * ops / lane_ops_per_s(self.target)
        width = element_bytes(producer.res[0].type.element_type)
        reads = sum(min(_lanes([load]), count) for load in loads)
        store = store_seconds(self.target, count * width, reads * width)
        return recompute > margin * store

    def _wasted_lanes_cost_more(self, producer: L.PointwiseOp, loads: list[L.LoadOp]) -> bool:
        """Whether inlined, ``producer``'s arithmetic on its readers' masked-off
        lanes (a concatenation evaluates every branch per element) would cost
        more than storing it and loading it back: the ops wasted per element
        against what the target computes while its DRAM moves the bytes of a
        store and a load (``cost.ops_per_byte``: the bandwidth per issue rate
        read from the device or its description, ``coil.target``). One
        upsample beside a plain input (half the lanes wasted) is computed in
        the concatenation; four upsamples of Segformer's decode head (three
        quarters wasted, bf16) are stored."""
        count = estimate(numel(producer.ranges.data))
        extra = _lanes(loads) - count
        if extra <= 0 or compute_ops(producer.body.block) <= self.options.max_cost:
            return False
        wasted = extra * compute_ops(producer.body.block) / count
        per_byte = ops_per_byte(self.target)
        return wasted > per_byte * 2 * element_bytes(producer.res[0].type.element_type)

    def _pays(self, producer: L.PointwiseOp, loads: list[L.LoadOp]) -> bool:
        """Whether recomputing ``producer`` at each of ``loads`` beats storing it."""
        o = self.options
        body = producer.body.block
        readers: dict[Operation, int] = {}
        for load in loads:
            top = ancestor_in(load, self.block)
            if top is None:
                return False
            readers[top] = readers.get(top, 0) + 1
        if o.max_body_ops:
            size = body_size(body)
            if any(body_size(r) + n * size > o.max_body_ops for r, n in readers.items()):
                return False
        if len(loads) <= o.max_uses:
            return True
        sources = external_sources(body)
        if compute_ops(body) > o.max_cost or len(sources) > o.max_reads:
            return False
        # Bytes: each reading nest reads the producer's inputs, against one pass
        # over them, one store and one load per reading nest.
        n = len(readers)
        inputs = estimate(read_bytes(sources, numel(producer.ranges.data)))
        stored = estimate(tensor_bytes(producer.res[0].type))
        return (n - 1) * inputs <= (n + 1) * stored

    def _can_inline(self, producer: L.PointwiseOp, load: L.LoadOp) -> bool:
        consumer = L.enclosing_loop(load)
        if consumer is None:
            return False
        body = producer.body.block
        if load.mask is not None and any(_may_trap(op) for op in body.ops):
            return False
        # Index symbols whose substitute needs an indirect operand cannot reach
        # ops without indirect operands (loop.index, random offsets, block args).
        syms = producer.index_symbols()
        indirect_dims = {
            s for s, e in zip(syms, load.index.data) if _indirect_symbols(sympy.sympify(e))
        }
        if indirect_dims:
            for op in body.ops:
                if isinstance(op, L.IndexOp | L.RandOp | L.RandnOp):
                    exprs = exprs_of(op) or ()
                    if any(e.free_symbols & indirect_dims for e in exprs):
                        return False
            for arg, s in zip(body.args, syms):
                if s in indirect_dims and arg.uses:
                    return False
        return not self._copy_between(producer, _through_views(captured_values(producer)), load)

    def _copy_between(self, start: Operation, read: set[SSAValue], user: Operation) -> bool:
        """Whether a ``loop.copy`` or an in-place extern call overwrites one of
        ``read`` between ``start`` and the top-level op holding ``user``
        (recomputing there would read the new data)."""
        top = ancestor_in(user, self.block)
        if top is None:
            return True
        op = start.next_op
        while op is not None and op is not top:
            if isinstance(op, L.CopyOp) and op.dest in read:
                return True
            if isinstance(op, B.ExternOp) and any(
                _through_views({op.args[k]}) & read for k in extern_mutated_operands(op)
            ):
                return True  # an ATen call writing an operand in place (add_, copy_ ...)
            op = op.next_op
        return False

    def _inline(self, producer: L.PointwiseOp, load: L.LoadOp) -> None:
        consumer = L.enclosing_loop(load)
        assert consumer is not None
        body = producer.body.block
        syms = producer.index_symbols()
        targets = [sympy.sympify(e) for e in load.index.data]
        consumer_syms = {s: a for s, a in zip(consumer.index_symbols(), consumer.body.block.args)}
        new_ops: list[Operation] = []
        mapping: dict[SSAValue, SSAValue] = {}

        # The producer's block arguments, where used directly, become the consumer's
        # (or a loop.index computing the substituted expression).
        for arg, expr in zip(body.args, targets):
            if not arg.uses:
                continue
            if expr in consumer_syms:
                mapping[arg] = consumer_syms[expr]
            else:
                idx = L.IndexOp(expr, builtin.IndexType())
                new_ops.append(idx)
                mapping[arg] = idx.result

        mask = load.mask
        yielded: SSAValue | None = None
        for op in body.ops:
            if isinstance(op, L.YieldOp):
                yielded = mapping.get(op.values[0], op.values[0])
                break
            if isinstance(op, L.LoadOp):
                new_ops.extend(self._substituted_load(op, load, syms, targets, mapping, mask))
                continue
            clone = op.clone(value_mapper=mapping)
            for old, new in zip(op.results, clone.results):
                mapping[old] = new
            if isinstance(clone, L.IndexOp | L.RandOp | L.RandnOp):
                sub = dict(zip(syms, targets))
                map_exprs(clone, lambda e: e.xreplace(sub))
            new_ops.append(clone)
        assert yielded is not None
        if mask is not None:
            zero = zero_constant(yielded.type)
            select = arith.SelectOp(mask, yielded, zero.result)
            new_ops.extend([zero, select])
            yielded = select.result
        for op in new_ops:  # provenance: recomputed ops still come from the producer
            if isinstance(op.location, builtin.UnknownLoc):
                op.location = producer.location
        Rewriter.insert_op(new_ops, InsertPoint.before(load))
        if yielded.name_hint is None and load.result.name_hint is not None:
            yielded.name_hint = load.result.name_hint
        load.result.replace_all_uses_with(yielded)
        Rewriter.erase_op(load)

    @staticmethod
    def _substituted_load(
        op: L.LoadOp,
        consumer_load: L.LoadOp,
        syms: list[sympy.Symbol],
        targets: list[sympy.Expr],
        mapping: dict[SSAValue, SSAValue],
        mask: SSAValue | None,
    ) -> list[Operation]:
        """The producer's load ``op`` read at the consumer's index: its own indirect
        operands keep t0.., the consumer's follow them (renumbered)."""
        own = [mapping.get(v, v) for v in op.indirect]
        shift = {
            L.indirect_symbol(k): L.indirect_symbol(k + len(own))
            for k in range(len(consumer_load.indirect))
        }
        sub = {s: e.xreplace(shift) for s, e in zip(syms, targets)}
        index = [sympy.sympify(e).xreplace(sub) for e in op.index.data]
        out: list[Operation] = []
        own_mask = mapping.get(op.mask, op.mask) if op.mask is not None else None
        if mask is not None and own_mask is not None:
            both = arith.AndIOp(mask, own_mask)
            both.location = op.location
            out.append(both)
            own_mask = both.result
        elif mask is not None:
            own_mask = mask
        index, indirect = _compact_indirect(index, own + list(consumer_load.indirect))
        new = L.LoadOp(op.source, index, indirect, own_mask)
        new.result.name_hint = op.result.name_hint
        new.location = op.location
        mapping[op.result] = new.result
        out.append(new)
        return out
