"""``loop-split-reduction``: split a reduction with few outputs and many reduced
elements into two nests (Inductor's split reductions, ``Reduction.num_splits`` /
``create_multilayer``).

A ``loop.reduction`` becomes one kernel whose grid is its outputs over a block
of rows, so a full reduction runs in one program and a column sum of a tall
matrix in a handful. Split, the reduced dimension ``D`` (the outermost reduction
range, or all of them flattened) is cut into ``nsplit`` chunks of ``chunk``:

* stage 1 reduces each chunk: ranges ``[nsplit] ++ ranges``, reduction ranges
  ``[chunk] ++ rest`` (the split index ``i0`` leads, so a column reduction's
  stage 1 still reads rows of consecutive columns), its body the original one
  with ``r0 -> i0*chunk + r0``; where ``nsplit*chunk > D`` (a size that does not
  divide, or a dynamic one) every load that reads at ``r0`` is masked with
  ``i0*chunk + r0 < D`` and the body yields the kind's identity there;
* stage 2 reduces the ``nsplit`` partials of each output, and the original
  results' uses read it.

Kinds: sum/prod/max/min/any/all reduce partials with the same kind. argmax
(argmin) keeps per chunk the max (min) and its arg; stage 2 takes the max of
the partial values and then the smallest global index among the chunks that
hold it (NaN matching NaN), so ties keep the first index as eager does.
welford reduces each chunk to (mean, m2) -- as two sums (sum, then the squared
deviations from the chunk's mean) where chunks are masked, since a masked lane
must not count -- and stage 2 combines them exactly (Chan's formula written as
sums: mean = sum(n_s*mean_s)/N, m2 = sum(m2_s + n_s*(mean_s - mean)^2)); the
count is the reduction's numel. Everything is expressed with existing kinds and
masked loads, so the reference executor, fusion and the Triton lowering need
nothing new.

A softmax denominator, a sum of ``exp(a - g(M))`` where ``M`` is a max over the
same domain of the same ``a`` that was split the same way and ``g`` the
identity or logsumexp's ``M if |M| != inf else 0``, is split *online* (the
split form of the online softmax): stage 1 sums ``exp(a - g(m_s))`` against
its own chunk's max ``m_s`` (the max's stage-1 partial, so both stage-1 nests
read ``a`` in one kernel), and stage 2 rescales each chunk's sum to the
overall max, ``sum_s s_s * exp(g(m_s) - g(M))`` (0 for a chunk whose max is
-inf below a finite overall max: its terms are all 0). Split plainly, the
sum's stage 1 would wait for the max's stage 2 and read ``a`` again: a column
softmax read its input three times (max, sum, output) where it now reads it
twice.

Whether to split, and into how many chunks (``split=0``), is the kernel
strategy's (``coil/strategy/plan.py``, ``split_plan``): the cost model's
estimate of both stages (stage 1 with the tile ``convert-loop-to-tt`` will
give it, and the finish) against the one kernel, on the target the module
names (``coil.target``). It asks on the layouts ``bufferize`` will store the
tensors with (``transforms/loop_layout.py``: an activation of a channels-last
convolution is NHWC, so its spatial mean is an outer reduction, contiguous
along the channels), and cuts the reduction dimensions in the order the loads
lay them out: a one-group GroupNorm over NHWC is chunked along H*W with the
channels innermost, not along C with a stride. (On the H100 a bf16
``x.var(0)`` of 32768 x 2048 took 0.071 ms with 256-row chunks and 0.086 ms
with 128-row ones, Inductor 0.068, benchmarks/tile_sweep.py; the model ranks
them the same way.) Dynamic reduced sizes are planned as long ones: a static
chunk and ``(D + chunk - 1) floordiv chunk`` chunks, masked, so the number of
programs follows the size at run time (one a stage for a small one); dynamic
output counts are not split. At most ``max-split`` (4096) chunks are taken,
so a static stage 2 of an inner split is one persistent row per output;
stage 2 is a reduction again and is asked once more if static (a dynamic one
is not split again). ``print-plans`` prints each verdict with its estimates.

Runs on tensor-level loop IR before ``loop-fuse`` (after ``loop-inline``, so
stage 1 carries the inlined producers and the consumers read stage 2): fusion
then groups each stage with its siblings and epilogues as for any reduction.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func
from xdsl.dialects.builtin import IndexType, StringAttr, i1, i64
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from coil.dialects import loop as L
from coil.dialects.body_builder import BodyBuilder, is_float
from coil.dialects.symbolic import ShapeAttr, index_symbols, torch_sympy
from coil.intmath import prod
from coil.strategy.access import (
    StridesOf,
    classify_reduction,
    element_bytes,
    order_from_strides,
    row_major,
)
from coil.strategy.hints import with_size_hints
from coil.strategy.plan import PERSISTENT_THRESHOLD, ReductionShape, SplitPlan, split_plan
from coil.strategy.target import Target, module_target
from coil.transforms.loop_layout import LayoutRules
from coil.transforms.loop_utils import (
    EXPR_PROPERTIES,
    exprs_of,
    function_blocks,
    substitute_in_body,
)


def identity(kind: str, t: Attribute) -> bool | int | float:
    """What a masked-off lane yields: neutral for ``kind``."""
    if kind in ("sum", "any"):
        return 0
    if kind in ("prod", "all"):
        return 1
    if is_float(t):
        return -math.inf if kind in ("max", "argmax") else math.inf
    if t == i1:
        return 0 if kind in ("max", "argmax") else 1
    width = t.width.data
    return -(2 ** (width - 1)) if kind in ("max", "argmax") else 2 ** (width - 1) - 1


@dataclass(frozen=True)
class LoopSplitReductionPass(ModulePass):
    """Split reductions with few outputs and many reduced elements in two stages.

    Input: tensor-level loop IR (top-level ``loop.reduction`` ops; best after
    ``loop-inline``, before ``loop-fuse``). Output: each reduction the heuristic
    (or ``split``) picks replaced by a stage-1 reduction over ``[nsplit] ++
    ranges`` into partials and a stage-2 reduction (for argmax/argmin and
    welford a short chain of them, plus pointwise nests) over ``ranges`` with
    the original results' types; everything else unchanged. Results equal the
    original ones up to the order of floating-point operations (argmax/argmin
    indices exactly, first index on ties).
    """

    name = "loop-split-reduction"

    split: int = 0
    """0: the strategy's choice; 1: never split; N >= 2: split every reduction
    over at least N elements in N chunks (once; for tests and experiments)."""
    num_sms: int = 0
    """0: the target's SM count (``coil.target``, strategy/target.py); N: plan as
    if the GPU had N SMs."""
    max_split: int = 4096
    """At most this many chunks per output: a static stage 2 is then one
    persistent row per output. (With 16384, a full reduction of 2^26 elements
    took three kernels; on the H100 its second and third took 5.6 us where
    Inductor's one second kernel took 2.8, ncu.)"""
    print_plans: bool = False
    """Print on stderr, for each reduction with static outputs, the strategy's
    verdict and the estimates behind it (``fx-opt --print-kernel-plans``)."""

    @with_size_hints
    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        target = module_target(op)
        for block in function_blocks(op):
            fn = block.parent_op()
            layouts = LayoutRules(fn) if isinstance(fn, func.FuncOp) else None
            work = [o for o in block.ops if isinstance(o, L.ReductionOp) and not o.is_bufferized]
            maxima: dict[SSAValue, _SplitMax] = {}
            while work:
                red = work.pop(0)
                plan = self._plan(red, target, layouts.strides if layouts else None)
                if not self.split and (top := _denominator_max(red, maxima)) is not None:
                    # A softmax denominator of a split max takes the max's plan:
                    # split alike, its stage 1 runs against each chunk's max in
                    # the max's stage-1 kernel (online, _Splitter), where a plan
                    # of its own (the two estimates differ: exp, one more
                    # accumulator's worth of work) reads the input again after
                    # the max's finish.
                    plan = top.plan
                    if self.print_plans:
                        print(
                            f"loop-split-reduction: %{red.res[0].name_hint or 'reduction'}: "
                            f"the denominator of a split max, split as it is: "
                            f"{plan.nsplit} chunks of {plan.chunk}",
                            file=sys.stderr,
                        )
                if plan is None:
                    continue
                stage2 = _Splitter(red, plan, maxima).run()
                if not self.split and plan.nsplit.is_Integer:
                    # A static stage 2 may still be long (a huge full reduction);
                    # a dynamic one is not split again (it would never end).
                    work.extend(stage2)

    # ---- the decision: the strategy's (strategy/plan.py) -----------------------

    def _plan(
        self, red: L.ReductionOp, target: Target, strides_of: StridesOf | None
    ) -> SplitPlan | None:
        kind = red.kind.data
        rranges = red.reduction_ranges.data
        if not rranges or self.split == 1 or red.is_gemm:
            return None  # a gemm template's K loop is its own (strategy/gemm.py)
        elem = red.body.block.last_op.values[0].type
        if kind in ("argmax", "argmin") and elem == i1:
            return None

        def layout(value: SSAValue):
            got = strides_of(value) if strides_of is not None else None
            if got is None and isinstance(value.type, L.LoopTensorType):
                return row_major(value.type.shape)
            return got

        # The layouts bufferize will store these tensors with (loop_layout.py):
        # the kernel walks its outputs in its result's order and reads its
        # inputs as they will be stored, so the vote is the back end's.
        ranges = red.ranges.data
        out = layout(red.res[0])
        order = order_from_strides(ranges, out) if out is not None else None
        access = classify_reduction(red, order, layout)
        accumulators = {"welford": 3, "argmax": 2, "argmin": 2}.get(kind, 1)
        shape = ReductionShape(
            prod(ranges),
            prod(rranges),
            access,
            accumulators=accumulators,
            welford=int(kind == "welford"),
            out_bytes=sum(element_bytes(r.type.element_type) for r in red.res),
        )
        why: list[str] = []
        plan = split_plan(
            shape,
            list(rranges),
            target,
            forced=self.split,
            max_split=self.max_split,
            persistent_threshold=PERSISTENT_THRESHOLD,
            num_sms=self.num_sms,
            explain=why,
        )
        if self.print_plans and not self.split:
            name = red.res[0].name_hint or "reduction"
            what = f"%{name} [{', '.join(map(str, ranges))}] x [{', '.join(map(str, rranges))}]"
            verdict = why[0] if plan is not None else f"not split: {'; '.join(why)}"
            print(f"loop-split-reduction: {what}, {access.axis}: {verdict}", file=sys.stderr)
        return plan


def _inline_constant(nest: L.PointwiseOp) -> None:
    """Compute a constant nest (welford's count) in the bodies that load it, so
    it is no kernel of its own; kept where something else uses it."""
    term = nest.body.block.last_op
    for use in list(nest.res[0].uses):
        load = use.operation
        if not isinstance(load, L.LoadOp) or load.indirect or load.mask is not None:
            continue
        mapping: dict[SSAValue, SSAValue] = {}
        for op in nest.body.block.ops:
            if op is term:
                continue
            clone = op.clone(value_mapper=mapping)
            Rewriter.insert_op(clone, InsertPoint.before(load))
            for a, b in zip(op.results, clone.results):
                mapping[a] = b
        load.result.replace_all_uses_with(mapping[term.values[0]])
        Rewriter.erase_op(load)
    if not nest.res[0].uses:
        Rewriter.erase_op(nest)


# --------------------------------------------------------------------------
# The rewrite
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _SplitMax:
    """A max reduction split by this pass, for the softmax denominators that
    read its result: its stage-1 partials, the value its stage-1 body reduces
    (before any chunk mask), its plan and its reduction ranges."""

    partial: SSAValue
    value: SSAValue
    plan: SplitPlan
    reduction_ranges: ShapeAttr


Renaming = dict[sympy.Symbol, sympy.Expr]


def _same_tree(a: SSAValue, b: SSAValue, ra: Renaming, rb: Renaming) -> bool:
    """Whether ``a`` and ``b``, in two loop bodies, compute the same scalar: the
    same ops with the same properties over the same loads (same source, and
    the same index once ``ra`` and ``rb`` rename each body's index symbols
    into shared ones). Index arguments used as values must sit at the same
    position, under renamings that leave them alone."""
    if a is b:
        return True
    if a.type != b.type:
        return False
    if isinstance(a, BlockArgument) or isinstance(b, BlockArgument):
        return (
            isinstance(a, BlockArgument)
            and isinstance(b, BlockArgument)
            and a.index == b.index
            and all(k == v for k, v in (*ra.items(), *rb.items()))
        )
    x, y = a.owner, b.owner
    if not isinstance(x, Operation) or not isinstance(y, Operation):
        return False
    if (
        x.name != y.name
        or x.regions
        or y.regions
        or a.index != b.index
        or x.attributes != y.attributes
        or len(x.operands) != len(y.operands)
    ):
        return False

    # Index expressions (a load's index, loop.index's, a random op's offset)
    # compare renamed; every other property as it is.
    held = EXPR_PROPERTIES.get(type(x))
    if held is not None:
        ex, ey = exprs_of(x), exprs_of(y)
        if [sympy.sympify(e).xreplace(ra) for e in ex] != [
            sympy.sympify(e).xreplace(rb) for e in ey
        ]:
            return False
    if {k: v for k, v in x.properties.items() if k != held} != {
        k: v for k, v in y.properties.items() if k != held
    }:
        return False
    if isinstance(x, L.LoadOp):
        if x.source is not y.source or len(x.indirect) != len(y.indirect):
            return False
        if (x.mask is None) != (y.mask is None):
            return False
        pairs = list(zip(x.indirect, y.indirect))
        if x.mask is not None:
            pairs.append((x.mask, y.mask))
        return all(_same_tree(p, q, ra, rb) for p, q in pairs)
    return all(_same_tree(p, q, ra, rb) for p, q in zip(x.operands, y.operands))


def _constant(v: SSAValue, value: float) -> bool:
    """Whether ``v`` is an ``arith.constant`` float equal to ``value``."""
    op = v.owner
    if not isinstance(op, arith.ConstantOp):
        return False
    held = getattr(op.value, "value", None)
    return held is not None and held.data == value


def _shift_of_max(rhs: SSAValue) -> tuple[list[L.LoadOp], bool] | None:
    """What a softmax denominator subtracts, if it is ``M`` (a max's result)
    read by one load (``exp(x - M)``) or logsumexp's ``select(|M| == inf, 0,
    M)`` reading it twice: the loads of M and whether it is the second form;
    else None."""
    op = rhs.owner
    if isinstance(op, L.LoadOp):
        return [op], False
    if not (isinstance(op, arith.SelectOp) and isinstance(op.rhs.owner, L.LoadOp)):
        return None
    load = op.rhs.owner
    cmp, zero = op.cond.owner, op.lhs
    if not (isinstance(cmp, arith.CmpfOp) and cmp.predicate.value.data == 1):  # oeq
        return None
    absf = cmp.lhs.owner
    if not (
        isinstance(absf, Operation)
        and absf.name == "math.absf"
        and isinstance(absf.operands[0].owner, L.LoadOp)
        and _constant(cmp.rhs, math.inf)
        and _constant(zero, 0.0)
    ):
        return None
    other = absf.operands[0].owner
    if other.source is not load.source:
        return None
    if other is load:
        # One load of M read by both (CSE after loop-inline put g(M) into the
        # sum's body, and merged its two loads).
        return [load], True
    return [load, other], True


def _denominator_max(red: L.ReductionOp, maxima: dict[SSAValue, _SplitMax]) -> _SplitMax | None:
    """The split max whose result the sum ``red`` shifts its ``exp`` by (a
    softmax denominator, ``exp(a - g(M))``, over the same reduction ranges and
    element type), or None. Whether the rest lines up (the same ``a``, ``M``
    read at the sum's own output) is ``_Splitter._online_denominator``'s."""
    if red.kind.data != "sum" or not maxima:
        return None
    exp = red.body.block.last_op.values[0].owner
    if not (isinstance(exp, Operation) and exp.name == "math.exp"):
        return None
    sub = exp.operands[0].owner
    if not isinstance(sub, arith.SubfOp) or (shift := _shift_of_max(sub.rhs)) is None:
        return None
    top = maxima.get(shift[0][0].source)
    if top is None or top.value.type != exp.result.type:
        return None
    if top.reduction_ranges != red.reduction_ranges:
        return None
    return top


class _Splitter:
    def __init__(self, red: L.ReductionOp, plan: SplitPlan, maxima: dict[SSAValue, _SplitMax]):
        self.red, self.plan = red, plan
        self.maxima = maxima
        self.value: SSAValue | None = None  # what the last stage-1 body reduces
        self.kind = red.kind.data
        self.ranges = tuple(red.ranges.data)
        self.n = len(self.ranges)
        rr = tuple(red.reduction_ranges.data)
        # The reduction dimensions slowest first (the order the loads lay them
        # out in): the split cuts the first, or all of them flattened.
        self.order = list(plan.rorder) or list(range(len(rr)))
        self.rest_dims = [] if plan.flatten else sorted(self.order[1:])
        self.rest = tuple(rr[k] for k in self.rest_dims)
        self.elem = red.body.block.last_op.values[0].type
        self.new_ops: list[Operation] = []
        self.name = red.res[0].name_hint or "red"

    # -- building blocks --

    def _emit(self, op: Operation, hints: tuple[str, ...] = ()) -> Operation:
        op.location = self.red.location
        for r, h in zip(op.results, hints):
            r.name_hint = h
        self.new_ops.append(op)
        return op

    def _reduction(self, kind: str, ranges, rranges, block: Block, types, hints) -> L.ReductionOp:
        props = {
            "kind": StringAttr(kind),
            "ranges": ShapeAttr(list(ranges)),
            "reduction_ranges": ShapeAttr(list(rranges)),
        }
        res = [L.LoopTensorType(list(ranges), t) for t in types]
        op = L.ReductionOp.build(
            operands=[[]], result_types=[res], properties=props, regions=[Region(block)]
        )
        return self._emit(op, hints)

    def _pointwise(self, block: Block, t: Attribute, hint: str) -> L.PointwiseOp:
        op = L.PointwiseOp.build(
            operands=[[]],
            result_types=[[L.LoopTensorType(list(self.ranges), t)]],
            properties={"ranges": ShapeAttr(list(self.ranges))},
            regions=[Region(block)],
        )
        return self._emit(op, (hint,))

    def _stage1_body(
        self, yield_kind: str | None
    ) -> tuple[Block, BodyBuilder, SSAValue, SSAValue | None]:
        """The original body over ``[nsplit] ++ ranges`` x ``[chunk] ++ rest``, its
        yield removed: (block, builder at its end, yielded value, valid flag)."""
        p, n = self.plan, self.n
        red = self.red
        m_old = len(red.reduction_ranges.data)
        m_new = 1 + len(self.rest)
        old_syms = index_symbols(n, m_old)
        new_syms = index_symbols(n + 1, m_new)
        split_sym, r0 = new_syms[0], new_syms[n + 1]
        pos = split_sym * p.chunk + r0  # along the split dimension
        sub: dict[sympy.Symbol, sympy.Expr] = {old_syms[k]: new_syms[k + 1] for k in range(n)}
        if p.flatten:
            sizes = red.reduction_ranges.data
            stride = sympy.Integer(1)
            fd, pm = torch_sympy().FloorDiv, torch_sympy().PythonMod
            for j in reversed(range(m_old)):
                k = self.order[j]
                e = pos if stride == 1 else fd(pos, stride)
                if j > 0:
                    e = pm(e, sizes[k])
                sub[old_syms[n + k]] = e
                stride = stride * sizes[k]
        else:
            sub[old_syms[n + self.order[0]]] = pos
            for j, k in enumerate(self.rest_dims):
                sub[old_syms[n + k]] = new_syms[n + 2 + j]
        region = red.body.clone()
        old = region.block
        new = L.new_body(n + 1, m_new)
        arg_exprs: list[tuple[SSAValue, sympy.Expr]] = []
        for k, arg in enumerate(old.args):
            target = sub[old_syms[k]]
            if isinstance(target, sympy.Symbol) and target in new_syms:
                arg.replace_all_uses_with(new.args[new_syms.index(target)])
            elif arg.uses:
                arg_exprs.append((arg, target))
        for op in list(old.ops):
            op.detach()
            new.add_op(op)
        substitute_in_body(new, sub)
        prologue: list[Operation] = []
        for arg, e in arg_exprs:
            idx = L.IndexOp(e, IndexType())
            prologue.append(idx)
            arg.replace_all_uses_with(idx.result)
        valid = None
        if p.masked:
            g = L.IndexOp(pos, i64)
            d = L.IndexOp(p.dim, i64)
            cmp = arith.CmpiOp(g, d, "slt")
            cmp.result.name_hint = "valid"
            prologue += [g, d, cmp]
            valid = cmp.result
        first = new.first_op
        for op in prologue:
            op.location = red.location
            Rewriter.insert_op(op, InsertPoint.before(first))
        if valid is not None:
            for load in [o for o in new.walk() if isinstance(o, L.LoadOp)]:
                if not any(r0 in e.free_symbols for e in load.index.data):
                    continue
                mask = valid
                if load.mask is not None:
                    both = arith.AndIOp(valid, load.mask)
                    Rewriter.insert_op(both, InsertPoint.before(load))
                    mask = both.result
                masked = L.LoadOp(load.source, load.index.data, list(load.indirect), mask)
                masked.result.name_hint = load.result.name_hint
                masked.location = load.location
                Rewriter.insert_op(masked, InsertPoint.before(load))
                load.result.replace_all_uses_with(masked.result)
                Rewriter.erase_op(load)
        term = new.last_op
        v = term.values[0]
        Rewriter.erase_op(term)
        b = BodyBuilder(new, n + 1, m_new)
        self.value = v
        if valid is not None and yield_kind is not None:
            v = b.select(valid, v, b.const(identity(yield_kind, v.type), v.type))
        return new, b, v, valid

    def _stage1(self, kind: str, types, hints, yield_kind: str | None = None) -> L.ReductionOp:
        block, b, v, _ = self._stage1_body(yield_kind or kind)
        b.yield_(v)
        return self._reduction(
            kind,
            (self.plan.nsplit, *self.ranges),
            (self.plan.chunk, *self.rest),
            block,
            types,
            hints,
        )

    def _stage2_builder(self) -> tuple[Block, BodyBuilder, list[sympy.Expr]]:
        """A body over ``ranges`` x ``[nsplit]``: (block, builder, partial index)."""
        block = L.new_body(self.n, 1)
        syms = index_symbols(self.n, 1)
        return block, BodyBuilder(block, self.n, 1), [syms[self.n], *syms[: self.n]]

    def _stage2(self, kind: str, partial: SSAValue, hint: str) -> L.ReductionOp:
        block, b, at = self._stage2_builder()
        b.yield_(b.load(partial, at))
        t = partial.type.element_type
        return self._reduction(kind, self.ranges, (self.plan.nsplit,), block, [t], (hint,))

    # -- the kinds --

    def run(self) -> list[L.ReductionOp]:
        kind = self.kind
        if kind in ("argmax", "argmin"):
            results, stage2 = self._arg()
        elif kind == "welford":
            results, stage2 = self._welford()
        elif kind == "sum" and (online := self._online_denominator()) is not None:
            results, stage2 = online
        else:
            part = self._stage1(kind, [self.elem], (f"{self.name}_part",))
            last = self._stage2(kind, part.res[0], self.name)
            results, stage2 = [last.res[0]], [last]
            if kind == "max":
                self.maxima[last.res[0]] = _SplitMax(
                    part.res[0], self.value, self.plan, self.red.reduction_ranges
                )
        red = self.red
        for op in self.new_ops:
            Rewriter.insert_op(op, InsertPoint.before(red))
        for old, new in zip(red.res, results):
            old.replace_all_uses_with(new)
        Rewriter.erase_op(red)
        if self.kind == "welford":
            _inline_constant(results[2].owner)
        return stage2

    def _online_denominator(self) -> tuple[list[SSAValue], list[L.ReductionOp]] | None:
        """A sum of ``exp(a - g(M))``, ``M`` a max of the same ``a`` split by this
        pass with the same plan and read at this sum's own output, ``g`` the
        identity or logsumexp's ``M if |M| != inf else 0``, split online (see
        the module's docstring); ``None``, with nothing built, otherwise."""
        top = _denominator_max(self.red, self.maxima)
        if top is None or top.plan != self.plan:
            return None
        exp = self.red.body.block.last_op.values[0].owner
        sub = exp.operands[0].owner
        shift = _shift_of_max(sub.rhs)
        overall, masked_inf = shift[0][0].source, shift[1]
        n, p = self.n, self.plan
        own = index_symbols(n + 1)  # the split index, then the outputs'
        m_shape = overall.type.shape
        block, b, v, _ = self._stage1_body("sum")
        sub = self.value.owner.operands[0].owner  # exp(a - g(M)), before any chunk mask
        loads, _ = _shift_of_max(sub.rhs)
        # Each load of M is read once, or twice where one load serves both
        # reads of logsumexp's guard.
        uses = 2 if masked_inf and len(loads) == 1 else 1
        at = loads[0].index.data
        # M read at this sum's own output: its unit dimensions at 0, the others
        # the sum's non-unit output indices in order.
        wanted = [own[k + 1] for k, size in enumerate(self.ranges) if size != 1]
        if (
            len(m_shape) != len(at)
            or any(e != 0 for e, size in zip(at, m_shape) if size == 1)
            or [e for e, size in zip(at, m_shape) if size != 1] != wanted
            or any(o.index.data != at or o.indirect or o.mask is not None for o in loads)
            or any(o.result.uses.get_length() != uses for o in loads)
            or not _same_tree(sub.lhs, top.value, *self._renamings(at, m_shape))
        ):
            block.erase()
            return None
        # Stage 1: against the chunk's own max, not the overall one.
        for load in loads:
            chunk_max = L.LoadOp(top.partial, [own[0], *at])
            chunk_max.result.name_hint = "chunk_max"
            Rewriter.insert_op(chunk_max, InsertPoint.before(load))
            load.result.replace_all_uses_with(chunk_max.result)
            Rewriter.erase_op(load)
        b.yield_(v)
        ranges, rranges = (p.nsplit, *self.ranges), (p.chunk, *self.rest)
        part = self._reduction("sum", ranges, rranges, block, [self.elem], (f"{self.name}_part",))
        # Stage 2: each chunk's sum rescaled to the overall max, s * exp(g(m) - g(M));
        # a chunk whose max is -inf adds 0 (its s may be NaN: exp(-inf - -inf)),
        # unless the overall max is -inf too, where eager's terms are NaN as well.
        block, b, at2 = self._stage2_builder()
        down = {own[k + 1]: sym for k, sym in enumerate(index_symbols(n))}
        at_m = [sympy.sympify(e).xreplace(down) for e in at]
        s = b.load(part.res[0], at2)
        m = b.load(top.partial, [at2[0], *at_m])

        def g(x: SSAValue) -> SSAValue:
            if not masked_inf:
                return x
            infinite = b.cmp("eq", b.math("absf", x), b.const(math.inf, x.type))
            return b.select(infinite, b.const(0.0, x.type), x)

        top_max = b.load(overall, at_m)
        scaled = b.mul(s, b.math("exp", b.sub(g(m), g(top_max))))
        lowest = b.const(-math.inf, m.type)
        empty = b.andi(b.cmp("eq", m, lowest), b.cmp("ne", top_max, lowest))
        b.yield_(b.select(empty, b.const(0.0, m.type), scaled))
        last = self._reduction("sum", self.ranges, (p.nsplit,), block, [self.elem], (self.name,))
        return [last.res[0]], [last]

    def _renamings(self, at: tuple, m_shape: tuple) -> tuple[Renaming, Renaming]:
        """This sum's and its max's stage-1 index symbols renamed into shared
        ones: unit output dimensions to 0, the max's outputs to the sum's
        (``at``, where the sum reads the max; the split index and the reduction
        symbols have the same names in both bodies)."""
        own = index_symbols(self.n + 1)[1:]
        mine = {sym: sympy.Integer(0) for sym, size in zip(own, self.ranges) if size == 1}
        theirs = {
            sym: sympy.sympify(e).xreplace(mine)
            for sym, e in zip(index_symbols(len(m_shape) + 1)[1:], at)
        }
        return mine, theirs

    def _arg(self) -> tuple[list[SSAValue], list[L.ReductionOp]]:
        kind, elem, p = self.kind, self.elem, self.plan
        vkind = "max" if kind == "argmax" else "min"
        vals = self._stage1(vkind, [elem], (f"{self.name}_val",))
        args = self._stage1(kind, [i64], (f"{self.name}_arg",), yield_kind=vkind)
        best = self._stage2(vkind, vals.res[0], f"{self.name}_best")
        block, b, at = self._stage2_builder()
        v = b.load(vals.res[0], at)
        top = b.load(best.res[0], list(index_symbols(self.n)))
        match = b.cmp("eq", v, top)
        if is_float(elem):
            match = b.ori(match, b.andi(b.isnan(v), b.isnan(top)))
        s = index_symbols(self.n, 1)[self.n]
        pos = b.add(b.load(args.res[0], at), b.index(s * p.chunk * p.unit, i64))
        b.yield_(b.select(match, pos, b.const(2**63 - 1, i64)))
        first = self._reduction("min", self.ranges, (p.nsplit,), block, [i64], (self.name,))
        return [first.res[0]], [best, first]

    def _welford(self) -> tuple[list[SSAValue], list[L.ReductionOp]]:
        p, n, elem = self.plan, self.n, self.elem
        nsplit = p.nsplit
        part_at = list(index_symbols(n + 1))

        def chunk_count(b: BodyBuilder, split_index: sympy.Expr) -> SSAValue:
            """Elements of the reduction domain in chunk ``split_index`` (as ``elem``)."""
            if not p.masked:
                return b.cast(b.index(p.chunk * p.unit, i64), elem)
            left = b.sub(b.index(p.dim, i64), b.index(split_index * p.chunk, i64))
            rows = b.maximum(b.minimum(left, b.index(p.chunk, i64)), b.const(0, i64))
            if p.unit != 1:
                rows = b.mul(rows, b.index(p.unit, i64))
            return b.cast(rows, elem)

        if p.masked:
            # A masked lane must not count: per chunk the sum, then the squared
            # deviations from the chunk's mean (both plain sums).
            total = self._stage1("sum", [elem], (f"{self.name}_psum",))
            block, b, v, valid = self._stage1_body(None)
            cnt = chunk_count(b, index_symbols(n + 1)[0])
            mean_s = b.truediv(b.load(total.res[0], part_at), cnt)
            d = b.sub(v, mean_s)
            b.yield_(b.select(valid, b.mul(d, d), b.const(0.0, elem)))
            m2 = self._reduction(
                "sum",
                (nsplit, *self.ranges),
                (p.chunk, *self.rest),
                block,
                [elem],
                (f"{self.name}_pm2",),
            )
            sums, m2s = total.res[0], m2.res[0]
        else:
            w = self._stage1(
                "welford", [elem] * 3, (f"{self.name}_pmean", f"{self.name}_pm2", f"{self.name}_pn")
            )
            sums, m2s = w.res[0], w.res[1]

        def weighted(b: BodyBuilder, at, cnt: SSAValue | None) -> SSAValue:
            """n_s * mean_s of chunk ``s`` (a masked split keeps the sum itself)."""
            x = b.load(sums, at)
            return x if p.masked else b.mul(x, cnt)

        s = index_symbols(n, 1)[n]
        # sum over chunks of n_s * mean_s
        block, b, at = self._stage2_builder()
        b.yield_(weighted(b, at, None if p.masked else chunk_count(b, s)))
        tot = self._reduction("sum", self.ranges, (nsplit,), block, [elem], (f"{self.name}_sum",))
        rnumel = prod(self.red.reduction_ranges.data)
        own = list(index_symbols(n))

        def overall_mean(b: BodyBuilder) -> SSAValue:
            return b.truediv(b.load(tot.res[0], own), b.cast(b.index(rnumel, i64), elem))

        # m2 = sum over chunks of m2_s + n_s * (mean_s - mean)^2 (empty chunks add 0)
        block, b, at = self._stage2_builder()
        cnt = chunk_count(b, s)
        ws = weighted(b, at, cnt)
        mean = overall_mean(b)
        zero = b.const(0.0, elem)
        empty = b.cmp("eq", cnt, zero)
        d = b.sub(b.truediv(ws, b.select(empty, b.const(1.0, elem), cnt)), mean)
        spread = b.select(empty, zero, b.mul(cnt, b.mul(d, d)))
        b.yield_(b.add(b.load(m2s, at), spread))
        m2_final = self._reduction(
            "sum", self.ranges, (nsplit,), block, [elem], (f"{self.name}_m2",)
        )
        block = L.new_body(n)
        b = BodyBuilder(block, n)
        b.yield_(overall_mean(b))
        mean_final = self._pointwise(block, elem, f"{self.name}_mean")
        block = L.new_body(n)
        b = BodyBuilder(block, n)
        b.yield_(b.cast(b.index(rnumel, i64), elem))
        count = self._pointwise(block, elem, f"{self.name}_count")
        results = [mean_final.res[0], m2_final.res[0], count.res[0]]
        return results, [tot, m2_final]


__all__ = ["LoopSplitReductionPass"]
