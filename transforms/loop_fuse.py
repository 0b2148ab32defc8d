"""``loop-fuse``: group reductions with their siblings and epilogues into
``loop.fused`` kernels (Inductor's scheduler fusion of reduction nodes).

Starting from each top-level ``loop.reduction`` R over (O, I), later nests join R's
group when they are

* sibling reductions over the same (O, I) (horizontal fusion),
* pointwise nests over O ++ I or O that read a member (epilogues), or
* reductions over (O, I) that read a member (softmax's sum after its max).

The group replaces R in place: a joining nest moves up to it, so everything it
reads must be defined before R, be a member, or be a pure nest/view/constant that
can move up with it (and does not itself read a member). Nothing moves across a
``loop.copy`` or an op with unknown effects. The group yields the member tensors
used outside it.

Then pointwise nests that ``loop-inline`` left separate (each is stored: a
result, an input's new value, a value read by several) form groups of their
own (``allow-pointwise-siblings``): a later nest over the same ranges joins an
earlier one when it reads the same tensor at its own point, or the earlier
one's result there, so the kernel reads each input once and writes every
result (Inductor fuses such siblings by their shared reads). A compiled
optimizer step's parameter, first and second moment updates read the same
gradient and moments: one kernel per parameter writes all three. Only nests
whose loads are all at their own point or broadcasts join (a transpose keeps
its 2-D tile); a nest may move up across a ``loop.copy`` that does not write
what it reads, nothing else that writes memory.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects import arith, builtin
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import Pure

from coil.dialects import buffer as B
from coil.dialects import loop as L
from coil.dialects.symbolic import ShapeAttr
from coil.strategy.hints import with_size_hints
from coil.transforms.extern_effects import extern_mutated_operands
from coil.transforms.loop_cost import body_size
from coil.transforms.loop_utils import (
    ancestor_in,
    captured_values,
    function_blocks,
    identity_copy_source,
    squeeze_unit_ranges,
)


def _squeezed(ranges: tuple) -> tuple:
    return tuple(r for r in ranges if r != 1)


def _movable(op: Operation) -> bool:
    """Ops with no side effects, that may be reordered with the nests they feed."""
    if isinstance(op, L.PointwiseOp | L.ReductionOp | L.FusedOp):
        return not op.is_bufferized
    return isinstance(op, L.ViewOp | arith.ConstantOp) or op.has_trait(Pure)


def _barrier(op: Operation) -> bool:
    """Ops a nest may not move across (they write memory a nest may read)."""
    if _movable(op):
        return False
    # A functional ATen call (most externs) and a seed draw touch no tensor a
    # nest reads; an in-place extern (add_, copy_ ...), a loop.copy or anything
    # unknown may.
    if isinstance(op, B.ExternOp):
        return bool(extern_mutated_operands(op))
    return not isinstance(op, L.SeedOp)


@dataclass(frozen=True)
class LoopFusePass(ModulePass):
    """Form ``loop.fused`` groups around top-level reductions.

    Input: tensor-level loop IR (best after ``loop-inline``). Output: each
    reduction with the later reductions over the same ranges and the pointwise
    epilogues that read it in one ``loop.fused`` (a group has at least two members,
    at most ``max-members``, and at most ``max-body-ops`` ops in all); results
    unchanged. Value-semantic nests only.
    """

    name = "loop-fuse"

    allow_horizontal: bool = True
    """Group sibling reductions over the same ranges even when they do not read
    each other."""
    allow_reduction_epilogue: bool = True
    """Group pointwise consumers (over O or O ++ I) of member tensors."""
    allow_reduction_chain: bool = True
    """Group later reductions over the same ranges that read members."""
    allow_reduction_prologue: bool = True
    """Group a pointwise producer over O ++ I that a reduction reads and that is
    stored for later readers too (it moves down to the reduction)."""
    max_members: int = 64
    """Nests one group may hold at most."""
    max_body_ops: int = 800
    """Ops the group's members may hold together (0 = no limit): a nest that
    would push the kernel past it stays out (its inputs are stored), so no
    kernel grows past what Triton compiles quickly."""
    allow_pointwise_siblings: bool = True
    """Group pointwise nests over the same ranges that read the same tensor at
    their own point, or a member's result there (multi-output pointwise
    kernels; see ``_PointwiseGroup``)."""

    @with_size_hints
    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for block in function_blocks(op):
            index = _BlockIndex(block)
            for reduction in [o for o in block.ops if isinstance(o, L.ReductionOp)]:
                if reduction.parent_block() is block and not reduction.is_bufferized:
                    _Group(self, index, reduction).build()
            if self.allow_pointwise_siblings:
                _PointwiseGroups(self, block).build()


def _shape_key(op: Operation) -> tuple | None:
    """What a group's member must match, for a nest that could be one."""
    if isinstance(op, L.ReductionOp):
        return ("reduction", _squeezed(op.ranges.data), op.reduction_ranges.data)
    if isinstance(op, L.PointwiseOp):
        return ("pointwise", _squeezed(op.ranges.data))
    return None


class _BlockIndex:
    """What every group of one function block asks, computed once for the pass.

    Without it each reduction scanned (and walked) every later op of the
    function, which grew with the square of the model's depth. Kept valid
    across groups: nests are found by shape (a group visits only the nests it
    could take, in order), captured values are cached per op (and dropped for
    ops whose operands a group rewrites), and each op's *fence* -- the last
    op it depends on, through movable ops only, that cannot move itself -- is
    memoized. A fence after the root rules a nest out before any walk: the
    nest could only join by moving above it. Ops that cannot move are never
    moved by the pass, so fences stay true as groups form."""

    def __init__(self, block: Block):
        self.block = block
        self.nests: dict[tuple, list[Operation]] = {}
        self.barriers: list[Operation] = []
        self._captured: dict[Operation, set[SSAValue]] = {}
        self._fence: dict[Operation, Operation | None] = {}
        self._order: dict[Operation, int] = {}
        for k, op in enumerate(block.ops):
            if (key := _shape_key(op)) is not None and not op.is_bufferized:  # type: ignore[attr-defined]
                self.nests.setdefault(key, []).append(op)
            if _barrier(op):
                self.barriers.append(op)
            if not _movable(op):
                self._order[op] = k
            self.fence(op)  # in order: every producer is memoized first

    def captured(self, op: Operation) -> set[SSAValue]:
        found = self._captured.get(op)
        if found is None:
            found = self._captured[op] = captured_values(op)
        return found

    def forget(self, op: Operation) -> None:
        """``op``'s operands changed: recompute what depends on them when asked."""
        self._captured.pop(op, None)
        self._fence.pop(op, None)

    def fence(self, op: Operation) -> Operation | None:
        """The last unmovable op ``op`` depends on through movable ops (``op``
        itself when it cannot move), or None."""
        if op in self._fence:
            return self._fence[op]
        if not _movable(op):
            self._fence[op] = op
            return op
        last: Operation | None = None
        for v in self.captured(op):
            owner = v.owner
            if not isinstance(owner, Operation):
                continue  # a function argument
            top = ancestor_in(owner, self.block)
            if top is None or top is op:
                continue
            f = self.fence(top)
            # Any such op after a root rules the nest out; the latest one does so
            # for the most roots.
            order = self._order
            if f is not None and (last is None or order.get(f, -1) > order.get(last, -1)):
                last = f
        self._fence[op] = last
        return last


class _Group:
    def __init__(self, options: LoopFusePass, index: _BlockIndex, root: L.ReductionOp):
        self.options = options
        self.index = index
        self.block = index.block
        self.root = root
        # Compared without size-1 ranges (keepdim reductions): members are squeezed
        # when the group is built.
        self.outer = _squeezed(root.ranges.data)
        self.inner = root.reduction_ranges.data
        self.members: list[L.LoopOp] = [root]
        self.member_values: set[SSAValue] = set()
        self.member_readers: set[Operation] = set()  # top-level ops reading a member
        self.hoisted: list[Operation] = []
        self.hoisted_set: set[Operation] = set()
        self.size = body_size(root)
        self._add_values(root)

    def _add_values(self, member: Operation) -> None:
        self.member_values.update(member.results)
        for v in member.results:
            for use in v.uses:
                if (top := ancestor_in(use.operation, self.block)) is not None:
                    self.member_readers.add(top)

    # ---- membership ----

    def _shape_ok(self, op: Operation) -> bool:
        ranges = _squeezed(op.ranges.data)
        if isinstance(op, L.ReductionOp):
            return ranges == self.outer and op.reduction_ranges.data == self.inner
        if isinstance(op, L.PointwiseOp):
            return ranges in (self.outer, self.outer + self.inner)
        return False

    def _reads_member(self, op: Operation) -> bool:
        return op in self.member_readers

    def _coordinates(self, op: L.LoopOp) -> tuple[list[sympy.Expr], list[sympy.Expr]]:
        """The symbols of ``op``'s body that run over the group's outer and
        reduction ranges (its size-1 ranges, squeezed away, have none)."""
        ranges = op.ranges.data
        syms = op.index_symbols()
        outer = [s for s, r in zip(syms, ranges) if r != 1]
        if isinstance(op, L.ReductionOp):
            return outer, syms[len(ranges) :]
        n = len(self.outer)
        return outer[:n], outer[n:]

    def _reads_aligned(self, op: L.LoopOp) -> bool:
        """Whether every load of a member in ``op`` reads the element the group
        computes at the same point: a member's result row ``i`` exists only in the
        kernel instance for row ``i`` (a transposed or flipped read would need
        another row's result)."""
        if op not in self.member_readers:
            return True  # no load of a member to misread
        outer, inner = self._coordinates(op)
        for load in op.walk():
            if not isinstance(load, L.LoadOp) or load.source not in self.member_values:
                continue
            # A reduction's result covers the outer ranges; a pointwise member's, its own.
            producer = load.source.owner
            produced_inner = (
                self._coordinates(producer)[1] if isinstance(producer, L.PointwiseOp) else []
            )
            want = outer + (inner if produced_inner else [])
            shape = load.source.type.shape_attr.data
            got = [e for e, n in zip(load.index.data, shape) if n != 1]
            if load.indirect or len(inner) < len(produced_inner) or got != want:
                return False
        return True

    def _wanted(self, op: Operation) -> bool:
        if not isinstance(op, L.PointwiseOp | L.ReductionOp) or op.is_bufferized:
            return False
        if self.root.is_gemm or (isinstance(op, L.ReductionOp) and op.is_gemm):
            # A gemm template (loop_to_tt/gemm.py) takes epilogues over its
            # outputs only: no sibling or chained reductions, no [O ++ I] nests.
            if not isinstance(op, L.PointwiseOp) or _squeezed(op.ranges.data) != self.outer:
                return False
        if not self._shape_ok(op) or not self._reads_aligned(op):  # type: ignore[arg-type]
            return False
        o = self.options
        reads = self._reads_member(op)
        if isinstance(op, L.PointwiseOp):
            return reads and o.allow_reduction_epilogue
        return (reads and o.allow_reduction_chain) or (not reads and o.allow_horizontal)

    def _fits(self, op: Operation) -> bool:
        limit = self.options.max_body_ops
        return not limit or self.size + body_size(op) <= limit

    def _hoist_plan(
        self, op: Operation, pos: dict[Operation, int], barriers: list[int]
    ) -> list[Operation] | None:
        """Ops defined between the root and ``op`` that ``op`` needs and that must move
        above the group with it, or None when ``op`` cannot join. ``barriers``:
        the sorted positions of the ops nothing may move across."""
        root_pos = pos[self.root]
        # Moving up past ops between the root and op: none may be a barrier.
        first = bisect.bisect_right(barriers, root_pos)
        if first < len(barriers) and barriers[first] < pos[op]:
            return None
        plan: list[Operation] = []
        seen: set[Operation] = set()

        def need(o: Operation, first: bool) -> bool:
            for v in self.index.captured(o):
                if v in self.member_values:
                    if not first:  # a hoisted op may not read the group
                        return False
                    continue
                owner = v.owner
                if not isinstance(owner, Operation):
                    continue  # a function argument
                top = ancestor_in(owner, self.block)
                if top is None or top in seen or pos.get(top, -1) < root_pos:
                    continue
                if top in self.hoisted_set or top in self.members:
                    continue
                if not _movable(top) or not need(top, False):
                    return False
                seen.add(top)
                plan.append(top)
            return True

        if not need(op, True):
            return None
        return sorted(plan, key=lambda o: pos[o])

    def _candidates(self, pos: dict[Operation, int]) -> list[Operation]:
        """The nests after the root, in order, whose shape lets them join."""
        keys = [("reduction", self.outer, self.inner), ("pointwise", self.outer)]
        if self.inner:
            keys.append(("pointwise", self.outer + self.inner))
        root_pos = pos[self.root]
        found = [
            op
            for key in keys
            for op in self.index.nests.get(key, ())
            if pos.get(op, -1) > root_pos and not op.is_bufferized  # type: ignore[attr-defined]
        ]
        return sorted(found, key=pos.__getitem__)

    def _fenced_off(self, op: Operation, pos: dict[Operation, int]) -> bool:
        """``op`` reads no member and depends, through movable ops, on an op after
        the root that cannot move: it could never move up to the group."""
        if op in self.member_readers:
            return False
        fence = self.index.fence(op)
        return fence is not None and pos.get(fence, -1) > pos[self.root]

    # ---- rewriting ----

    def _prologue(self, pos: dict[Operation, int], barriers: list[int]) -> L.PointwiseOp | None:
        """A pointwise nest over O ++ I that the root reads at its own point and
        that can move down to the root: nothing between them reads it, no
        barrier lies between them (``x = hardswish(bn(conv)); x.mean((2, 3))``
        with ``x`` stored too: one kernel writes ``x`` and reduces it)."""
        root_pos = pos[self.root]
        for load in self.root.walk():
            if not isinstance(load, L.LoadOp):
                continue
            producer = load.source.owner
            if (
                not isinstance(producer, L.PointwiseOp)
                or producer.is_bufferized
                or producer.parent_block() is not self.block
                or _squeezed(producer.ranges.data) != self.outer + self.inner
                or len(producer.res) != 1
            ):
                continue
            p = pos[producer]
            first = bisect.bisect_right(barriers, p)
            if first < len(barriers) and barriers[first] < root_pos:
                continue
            readers = {ancestor_in(u.operation, self.block) for u in producer.res[0].uses}
            if any(r is None or p < pos.get(r, -1) < root_pos for r in readers):
                continue
            group = _Group(self.options, self.index, self.root)
            group.members = [producer, self.root]
            group._add_values(producer)
            if not group._reads_aligned(self.root) or not self._fits(producer):
                continue
            return producer
        return None

    def build(self) -> None:
        pos = {o: k for k, o in enumerate(self.block.ops)}
        barriers = sorted(pos[b] for b in self.index.barriers if b in pos)
        prologue = (
            self._prologue(pos, barriers)
            if self.options.allow_reduction_prologue and not self.root.is_gemm
            else None
        )
        if prologue is not None:
            self.members.insert(0, prologue)
            self.size += body_size(prologue)
            self._add_values(prologue)
        for cursor in self._candidates(pos):
            if len(self.members) >= self.options.max_members:
                break
            if cursor in self.hoisted_set or self._fenced_off(cursor, pos):
                continue
            if self._wanted(cursor) and self._fits(cursor):
                plan = self._hoist_plan(cursor, pos, barriers)
                if plan is not None:
                    self.size += body_size(cursor)
                    for o in plan:
                        if o not in self.hoisted_set:
                            self.hoisted.append(o)
                            self.hoisted_set.add(o)
                    self.members.append(cursor)  # type: ignore[arg-type]
                    self._add_values(cursor)
        if len(self.members) < 2:
            return
        self._rewrite(pos)

    def _rewrite(self, pos: dict[Operation, int]) -> None:
        for op in sorted(self.hoisted, key=lambda o: pos[o]):
            op.detach()
            Rewriter.insert_op(op, InsertPoint.before(self.root))
        if self.members[0] is not self.root:  # a prologue moves down to the root
            self.members[0].detach()
            Rewriter.insert_op(self.members[0], InsertPoint.before(self.root))
        self.members = [squeeze_unit_ranges(m) for m in self.members]  # type: ignore[arg-type]
        self.root = next(m for m in self.members if isinstance(m, L.ReductionOp))
        members = set(self.members)
        leaving = [
            v
            for m in self.members
            for v in m.results
            if any(ancestor_in(u.operation, self.block) not in members for u in v.uses)
        ]
        group = L.FusedOp.build(
            operands=[[]],
            result_types=[[v.type for v in leaving]],
            properties={
                "ranges": ShapeAttr(self.outer),
                "reduction_ranges": self.root.properties["reduction_ranges"],
            },
            regions=[[Block()]],
        )
        group.location = self.root.location  # members keep their own
        Rewriter.insert_op(group, InsertPoint.before(self.members[0]))
        body = group.body.block
        for member in self.members:
            member.detach()
            body.add_op(member)
        body.add_op(L.YieldOp(*leaving))
        for old, new in zip(leaving, group.res):
            new.name_hint = old.name_hint
            for use in list(old.uses):
                top = ancestor_in(use.operation, self.block)
                if top is not group and top is not None:
                    self.index.forget(top)
            old.replace_uses_with_if(
                new, lambda u: ancestor_in(u.operation, self.block) is not group
            )


def _own_point(load: L.LoadOp, syms: list[sympy.Symbol]) -> bool:
    """Whether ``load`` reads its source at the nest's point ``syms``, or at a
    broadcast of it (index symbols in order, each at most once, the other
    coordinates constant): a load a 1-D tile reads contiguously or as a splat."""
    if load.indirect or load.mask is not None:
        return False
    last = -1
    for e in load.index.data:
        e = sympy.sympify(e)
        if e.is_Integer:
            continue
        if e not in syms or syms.index(e) <= last:
            return False
        last = syms.index(e)
    return True


class _PointwiseGroup:
    """An earlier pointwise nest (the root) and the later ones over its ranges
    that share its reads: they move up to it and become one ``loop.fused``
    with no reduction ranges (members in order: each reads the others' results
    at the same point, from registers)."""

    def __init__(
        self,
        options: LoopFusePass,
        block: Block,
        root: L.PointwiseOp,
        tileable: dict[Operation, bool] | None = None,
    ):
        self.options = options
        self.block = block
        self.root = root
        self.tileable = {} if tileable is None else tileable  # by nest: its loads' indices only
        self.ranges = list(root.ranges.data)
        self.members: list[L.PointwiseOp] = [root]
        self.reads = self._point_reads(root)
        self.size = body_size(root)

    def _point_reads(self, op: L.PointwiseOp) -> set[tuple]:
        syms = op.index_symbols()
        return {
            (load.source, tuple(load.index.data))
            for load in op.walk()
            if isinstance(load, L.LoadOp)
            and not load.indirect
            and load.mask is None
            and list(load.index.data) == syms
        }

    def _tileable(self, op: L.PointwiseOp) -> bool:
        if op not in self.tileable:
            syms = op.index_symbols()
            loads = (ld for ld in op.walk() if isinstance(ld, L.LoadOp))
            self.tileable[op] = all(_own_point(ld, syms) for ld in loads)
        return self.tileable[op]

    def wants(
        self, op: Operation, root: int, position: dict[SSAValue, int], written: set[SSAValue]
    ) -> bool:
        """Whether ``op`` joins the group whose root is at block position
        ``root`` (``position``: where each value of the block was defined)."""
        if not isinstance(op, L.PointwiseOp) or op.is_bufferized:
            return False
        if list(op.ranges.data) != self.ranges or not self._tileable(op):
            return False
        limit = self.options.max_body_ops
        if limit and self.size + body_size(op) > limit:
            return False
        members = {v for m in self.members for v in m.results}
        syms = op.index_symbols()
        reads_member = False
        for load in op.walk():
            if isinstance(load, L.LoadOp) and load.source in members:
                if list(load.index.data) != syms:
                    return False  # another point's result: not in this program
                reads_member = True
        if not reads_member and not (self._point_reads(op) & self.reads):
            return False
        for v in captured_values(op):
            if v in members:
                continue
            if v in written:
                return False  # written by a loop.copy it would move above
            if position.get(v, root) >= root:
                return False  # made after the root (or by a rewrite): it cannot move up to it
        return True

    def add(self, op: L.PointwiseOp) -> None:
        self.members.append(op)
        self.reads |= self._point_reads(op)
        self.size += body_size(op)

    def rewrite(self) -> None:
        members = set(self.members)
        leaving = [
            v
            for m in self.members
            for v in m.results
            if any(ancestor_in(u.operation, self.block) not in members for u in v.uses)
        ]
        group = L.FusedOp.build(
            operands=[[]],
            result_types=[[v.type for v in leaving]],
            properties={"ranges": ShapeAttr(self.ranges), "reduction_ranges": ShapeAttr([])},
            regions=[[Block()]],
        )
        group.location = self.root.location
        Rewriter.insert_op(group, InsertPoint.before(self.root))
        body = group.body.block
        for member in self.members:
            member.detach()
            body.add_op(member)
        body.add_op(L.YieldOp(*leaving))
        for old, new in zip(leaving, group.res):
            new.name_hint = old.name_hint
            old.replace_uses_with_if(
                new, lambda u: ancestor_in(u.operation, self.block) is not group
            )


def _forwarded_copy(op: Operation) -> bool:
    """An identity copy nest read only by extern calls that do not write it:
    ``bufferize`` hands the calls its source and erases it (a layout-only
    ``clone`` in front of a convolution). Grouped with siblings it would be a
    member's result, stored: a second copy of the tensor."""
    if not isinstance(op, L.PointwiseOp) or len(op.res) != 1:
        return False
    (r,) = op.res
    if identity_copy_source(r) is None or not r.uses:
        return False
    for use in r.uses:
        ext = use.operation
        if not isinstance(ext, B.ExternOp):
            return False
        mutated = extern_mutated_operands(ext)
        if any(a is r and k in mutated for k, a in enumerate(ext.args)):
            return False
    return True


class _PointwiseGroups:
    """Every pointwise group of one block, roots in order (see ``_PointwiseGroup``).

    A root considers the later nests over its ranges up to the next barrier.
    The block is indexed once (candidates by ranges, barrier and copy
    positions, each nest's point reads), so the scan per root visits only
    nests of its shape: scanning every later op for every root made the pass
    quadratic in the block's length (a traced 8-layer Llama's forward, 1187
    FX nodes: 0.6 s of the pass's 0.66 in these scans)."""

    def __init__(self, options: LoopFusePass, block: Block):
        self.options = options
        self.block = block

    def build(self) -> None:
        ops = list(self.block.ops)
        position: dict[SSAValue, int] = {a: -1 for a in self.block.args}
        barriers: list[int] = []
        copies: list[tuple[int, SSAValue]] = []  # loop.copy positions and what they write
        candidates: dict[tuple, list[int]] = {}  # pointwise nests by their ranges
        for k, op in enumerate(ops):
            for r in op.results:
                position[r] = k
            if isinstance(op, L.CopyOp):
                copies.append((k, op.dest))
            elif _barrier(op):
                barriers.append(k)
            elif isinstance(op, L.PointwiseOp) and not op.is_bufferized and not _forwarded_copy(op):
                candidates.setdefault(tuple(op.ranges.data), []).append(k)
        # Roots in block order (a group's rewrite changes what later nests read).
        order = sorted(
            (k, key, n) for key, where in candidates.items() for n, k in enumerate(where)
        )
        taken: set[Operation] = set()
        tileable: dict[Operation, bool] = {}
        for k, key, n in order:
            root = ops[k]
            if root in taken or len(root.res) != 1:
                continue
            group = _PointwiseGroup(self.options, self.block, root, tileable)
            if not group._tileable(root):
                continue
            i = bisect.bisect_right(barriers, k)
            stop = barriers[i] if i < len(barriers) else len(ops)
            later = [j for j in candidates[key][n + 1 :] if j < stop]
            self._grow(group, ops, k, later, position, copies, taken)
            if len(group.members) > 1:
                taken.update(group.members)
                group.rewrite()

    def _grow(
        self,
        group: _PointwiseGroup,
        ops: list[Operation],
        root: int,
        later: list[int],
        position: dict[SSAValue, int],
        copies: list[tuple[int, SSAValue]],
        taken: set[Operation],
    ) -> None:
        """Add to ``group`` the nests at positions ``later`` (after ``root``, of
        its ranges, before the next barrier) that it wants, in order."""
        written: set[SSAValue] = set()  # inputs a loop.copy writes between the root and here
        c = bisect.bisect_right(copies, root, key=lambda e: e[0])
        for j in later:
            if len(group.members) >= self.options.max_members:
                return
            while c < len(copies) and copies[c][0] < j:
                written.add(copies[c][1])
                c += 1
            op = ops[j]
            if op not in taken and group.wants(op, root, position, written):
                group.add(op)  # type: ignore[arg-type]
