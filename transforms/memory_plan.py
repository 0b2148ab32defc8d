"""memory-plan: free buffers after their last use and reuse dead storage.

Input: functions at the buffer level (after ``bufferize``, no ``buffer.dealloc``
or ``buffer.reuse`` yet). Liveness runs over the top-level op order; a use inside
a nest body, through a ``buffer.view``, or through an extern result that may
alias its operands (the aten schema says which do: ``extern_effects``) counts
at the top-level op.

Output:

* ``buffer.dealloc %b`` right after the last use of each ``buffer.alloc`` and
  of each fresh extern result (what ATen allocated for a call whose schema
  returns no alias) that is not a result of the function and not aliased by one;
* with ``reuse=true`` (default) first a GEMM extern (``mm``, ``bmm``,
  ``addmm``, ``baddbmm``) with a row-major product writes it through its
  ``out=`` form into a new ``buffer.alloc`` and has no result (readers read the
  buffer), so the plan below places products like a kernel's outputs
  (Inductor's ``extern_kernels.mm(..., out=buf)``); then
* with ``reuse=true`` a later ``buffer.alloc`` with the same storage
  size in bytes (symbolic equality), dtype and device as a dead allocation
  (an allocation or a fresh extern result)
  becomes ``buffer.reuse %dead : A -> B`` placed just before its first use
  (Inductor's buffer reuse; the most recently freed buffer first). ``%dead``
  then gets no dealloc of its own: the reusing buffer inherits its storage.
  A dead buffer is first offered in place (a pointwise nest that reads it only
  at the addresses it writes), and is not held for a later allocation across
  an extern call with fresh results (ATen allocates those itself, and could
  take the freed storage: Inductor allocates extern outputs from its pool),
  nor, where sizes are static, across a point where the plan reaches its
  peak (a hold saves an allocator call, never memory; see
  :func:`_holds_at_peak`); a function argument marked ``coil.donated`` (a
  backward's saved activation that only it reads: AOTAutograd's donated
  buffers, see the importer) is offered in place too where it dies, never
  pooled nor freed by the plan (the wrapper drops its name), as Inductor's
  ``DonatedBuffer``: an LM head's logits gradient takes the saved logits'
  storage (``test/python/test_donated_buffers.py`` has the measurement);
* the function attribute ``coil.peak_bytes = #coil.expr<...>``: the largest
  number of bytes held by ``buffer.alloc`` storage and fresh extern results at
  any point (inputs and ATen's workspaces excluded), ``max(...)`` where sizes
  are symbolic and not comparable.

Collectives (``dialects/c10d.py``) run in the background from the extern that
starts one to the ``wait_tensor`` of its result: every buffer a collective
reads counts as used at that wait, so it is neither freed nor reused while the
communication may still read it (Inductor's out-of-place collective safety).
The pass checks that no op in between writes such a buffer, or reads the
collective's result (or a buffer an in-place collective writes), and fails
naming both ops otherwise.

Guarantees: no storage is freed or reused while any alias of it may still be
read or written (by a kernel, ATen or a collective in flight), or while a
function result refers to it.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from coil.dialects import buffer as B
from coil.dialects import loop as L
from coil.dialects.aten import AtenOp, op_class_named
from coil.dialects.c10d import WAIT_TENSOR, collective_waits
from coil.dialects.symbolic import ExprAttr, sym_eq, to_expr, torch_sympy
from coil.ir import source_line
from coil.transforms.extern_effects import (
    extern_mutated_operands,
    extern_results_alias,
    storage_roots,
)
from coil.transforms.input_level import require_below_aten


def peak(values: list[sympy.Expr]) -> sympy.Expr:
    """The maximum of ``values``: the provable maximum, else torch's ``Max`` of
    the candidates no other candidate provably exceeds."""
    cands: list[sympy.Expr] = []
    for v in (sympy.expand(v) for v in values):
        if any((c - v).is_nonnegative for c in cands):
            continue
        cands = [c for c in cands if not (v - c).is_nonnegative] + [v]
    if not cands:
        return sympy.Integer(0)
    return cands[0] if len(cands) == 1 else torch_sympy().Max(*cands)


def _holder_bytes(v: SSAValue) -> sympy.Expr:
    return v.type.storage_bytes()


def _liveness(
    ops: list[Operation], ret: Operation
) -> tuple[list[set[SSAValue]], dict[SSAValue, int], set[SSAValue]]:
    """(the storage roots each top-level op uses, each root's last use, the
    roots a function result holds). A collective reads its inputs, and writes
    its results, until its wait: they stay alive until then (to the end, and
    held by the result, when it is waited only at the return)."""
    used = [{r for o in top.walk() for v in o.operands for r in storage_roots(v)} for top in ops]
    last = {root: k for k, roots in enumerate(used) for root in roots}
    protected = set().union(set(), *(storage_roots(v) for v in ret.operands))
    for k, wait in collective_waits(ops).items():
        values = [*ops[k].operands, *ops[k].results]
        for root in set().union(set(), *(storage_roots(v) for v in values)):
            last[root] = max(last.get(root, wait), wait)
            if ops[wait] is ret:
                protected.add(root)
    return used, last, protected


IN_PLACE_VARIANTS = {
    "aten.index_put.default": "aten.index_put_.default",
    "aten.scatter.value": "aten.scatter_.value",
    "aten.scatter.src": "aten.scatter_.src",
    "aten.scatter_add.default": "aten.scatter_add_.default",
}
"""Out-of-place ATen ops (a copy of ``self`` with some elements changed) and
their in-place forms, for :func:`_externs_in_place`."""


def _externs_in_place(ops: list[Operation], ret: Operation) -> None:
    """An extern calling one of :data:`IN_PLACE_VARIANTS` on a ``self`` buffer
    that dies there calls the in-place form instead: ATen then writes into that
    buffer rather than allocating a copy of it (Inductor lowers these ops to a
    mutation of a fresh buffer). The embedding's backward,
    ``index_put(full(0), [ids], grad, accumulate=True)``, held the zeros and
    ATen's copy at once: 2 x 154 MB for GPT-2's word embedding in f32.

    ``self`` must be a whole buffer this function allocated (not an argument,
    not a view, not returned), used by nothing after the extern nor by its
    other operands, and laid out as the extern's result."""
    _, last, protected = _liveness(ops, ret)
    for k, op in enumerate(ops):
        if not isinstance(op, B.ExternOp) or len(op.res) != 1:
            continue
        inner = [o for o in op.body.block.ops if not isinstance(o, B.YieldOp)]
        if len(inner) != 1 or not isinstance(inner[0], AtenOp):
            continue
        variant = op_class_named(IN_PLACE_VARIANTS.get(inner[0].name, ""))
        self_arg = inner[0].operands[0] if inner[0].operands else None
        if variant is None or not (
            isinstance(self_arg, BlockArgument) and self_arg.owner is op.body.block
        ):
            continue
        buf = op.args[self_arg.index]
        fresh = isinstance(buf.owner, B.AllocOp) or (
            isinstance(buf.owner, B.ExternOp) and not extern_results_alias(buf.owner)
        )
        others = [a for j, a in enumerate(op.args) if j != self_arg.index]
        if (
            not fresh
            # the same tensor also as another operand (index_put(a, idx, a)):
            # the extern's arguments hold it once, so `others` cannot see it
            or self_arg in list(inner[0].operands)[1:]
            or buf in protected
            or last.get(buf) != k
            or buf.type != op.res[0].type
            or any(buf in storage_roots(a) for a in others)
        ):
            continue
        schema = variant.schema()
        attrs = {
            spec.name: inner[0].properties[spec.accessor]
            for spec in schema.props
            if spec.accessor in inner[0].properties
        }
        new = variant.build_from_attrs(
            inner[0].operand_groups(), attrs, [r.type for r in inner[0].results]
        )
        Rewriter.replace_op(inner[0], new)


OUT_VARIANTS = {
    "aten.mm.default": "aten.mm.out",
    "aten.bmm.default": "aten.bmm.out",
    "aten.addmm.default": "aten.addmm.out",
    "aten.baddbmm.default": "aten.baddbmm.out",
}
"""GEMMs and their ``out=`` forms, for :func:`_externs_into_buffers`."""


def _externs_into_buffers(ops: list[Operation]) -> None:
    """An extern calling one of :data:`OUT_VARIANTS` writes its product into a
    ``buffer.alloc`` of the product's (row-major) layout through the ``out=``
    form, as Inductor's ``extern_kernels.mm(..., out=buf)``, and has no result:
    its readers read that buffer. The plan below then frees and reuses that
    storage like a kernel's. Left to ATen, each product was a fresh allocation
    per call (GPT-2 at batch 1: 48 of them), and a dead buffer could not be
    held across the call for a later reuse."""
    for op in ops:
        if not isinstance(op, B.ExternOp) or len(op.res) != 1:
            continue
        block = op.body.block
        inner = [o for o in block.ops if not isinstance(o, B.YieldOp)]
        if len(inner) != 1 or not isinstance(inner[0], AtenOp):
            continue
        call, t = inner[0], op.res[0].type
        variant = op_class_named(OUT_VARIANTS.get(call.name, ""))
        if (
            variant is None
            or list(block.last_op.operands) != [call.results[0]]
            or not isinstance(t, B.BufferType)
            or not t.is_contiguous()
            or to_expr(t.offset_attr.data) != 0
        ):
            continue
        alloc = B.AllocOp(t)
        alloc.result.name_hint = op.res[0].name_hint
        Rewriter.insert_op(alloc, InsertPoint.before(op))
        r = call.results[0].type  # the out tensor's type too: same layout
        out = block.insert_arg(r, len(block.args))
        out.name_hint = "out"
        attrs = {
            spec.name: call.properties[spec.accessor]
            for spec in call.schema().props
            if spec.accessor in call.properties
        }
        new = variant.build_from_attrs({**call.operand_groups(), "out": out}, attrs, [r])
        new.location = call.location
        Rewriter.replace_op(call, new)
        # Destination-passing style: the call yields nothing, its readers read
        # the buffer it writes.
        Rewriter.replace_op(block.last_op, B.YieldOp())
        body = op.detach_region(op.body)
        dps = B.ExternOp([*op.args, alloc.result], [], body)
        dps.location = op.location
        Rewriter.replace_op(op, dps, [alloc.result])


def _plan(fn: func.FuncOp, reuse: bool) -> None:
    block = fn.body.block
    if "coil.peak_bytes" in fn.attributes:
        return  # already planned: planning again changes nothing
    if reuse:
        _externs_in_place(list(block.ops), block.last_op)
        _externs_into_buffers(list(block.ops))
    ops = list(block.ops)
    ret = block.last_op
    pos = {o: k for k, o in enumerate(ops)}
    holders = [o.result for o in ops if isinstance(o, B.AllocOp)]
    # What ATen allocates for an extern is storage too: freed at its last use
    # (else every matmul result of a model stays alive to the end of the call).
    holders += [
        r
        for o in ops
        if isinstance(o, B.ExternOp) and not extern_results_alias(o)
        for r in o.res
        if isinstance(r.type, B.BufferType)
    ]
    used, last, protected = _liveness(ops, ret)
    for k, wait in collective_waits(ops).items():
        _check_in_flight(ops, used, k, wait)
    last_use = {h: max(pos[h.owner], last.get(h, pos[h.owner])) for h in holders}
    # Donated arguments: storage the function may take over in place where
    # it dies (never pooled, never freed here: the wrapper drops its name).
    donated_at: dict[int, list[SSAValue]] = {}
    for a in _donated_arguments(fn):
        if a not in protected and a in last:
            donated_at.setdefault(last[a], []).append(a)
            last_use[a] = last[a]
    first_use: dict[SSAValue, int] = {}
    for k, roots in enumerate(used):
        for root in roots:
            if root in last_use:
                first_use.setdefault(root, k)

    # Phase 1: which allocation takes over which dead one (simulated in order),
    # then no dead buffer held where that makes the peak.
    dies_at: dict[int, list[SSAValue]] = {}
    for h in holders:
        if h not in protected:
            dies_at.setdefault(last_use[h], []).append(h)
    blocked: list[int] = []  # op positions no dead buffer may be held across
    takes_over = _assign(ops, dies_at, first_use, last_use, reuse, blocked, donated_at)
    best: tuple[int, dict[SSAValue, SSAValue]] | None = None
    for _ in range(MAX_HOLD_ROUNDS):
        held = _holds_at_peak(ops, holders, takes_over, last_use, protected)
        if held is None:  # symbolic sizes: the plan as assigned
            break
        top, at_peak = held
        if best is None or top < best[0]:
            best = (top, takes_over)
        if not at_peak:
            break
        blocked = sorted(set(blocked) | at_peak)
        takes_over = _assign(ops, dies_at, first_use, last_use, reuse, blocked, donated_at)
    if best is not None:
        takes_over = best[1]

    # Phase 2: rewrite. A holder that is taken over is freed by its successor.
    renamed: dict[SSAValue, SSAValue] = {}
    for h, dead in takes_over.items():
        new = B.ReuseOp(renamed.get(dead, dead), h.type)
        new.result.name_hint = h.name_hint
        Rewriter.insert_op(new, InsertPoint.before(ops[first_use[h]]))
        h.replace_all_uses_with(new.result)
        Rewriter.erase_op(h.owner)
        renamed[h] = new.result
    taken = set(takes_over.values())
    for k in sorted(dies_at, reverse=True):
        for h in reversed(dies_at[k]):
            if h not in taken:
                Rewriter.insert_op(B.DeallocOp(renamed.get(h, h)), InsertPoint.after(ops[k]))

    # Phase 3: the peak, over the final op order.
    live, points = sympy.Integer(0), [sympy.Integer(0)]
    for o in block.ops:
        if isinstance(o, B.AllocOp):
            live += _holder_bytes(o.result)
            points.append(live)
        elif isinstance(o, B.ExternOp) and not extern_results_alias(o):
            for r in o.res:
                if isinstance(r.type, B.BufferType):
                    live += _holder_bytes(r)
            points.append(live)
        elif isinstance(o, B.DeallocOp):
            live -= _holder_bytes(o.buffer)
    fn.attributes["coil.peak_bytes"] = ExprAttr(peak(points))


MAX_HOLD_ROUNDS = 16
"""Rounds of :func:`_holds_at_peak` and reassignment at most: each blocks the
points where the plan reaches its peak with a dead buffer held. A round's
plan peaks elsewhere, or at those points with nothing held (the end); a
6-block residual stack and the eleven benchmark models need at most a few."""


def _assign(
    ops: list[Operation],
    dies_at: dict[int, list[SSAValue]],
    first_use: dict[SSAValue, int],
    last_use: dict[SSAValue, int],
    reuse: bool,
    blocked: list[int],
    donated_at: dict[int, list[SSAValue]] | None = None,
) -> dict[SSAValue, SSAValue]:
    """Which allocation takes over which dead holder (new -> dead), simulated in
    op order: in place first, else the most recently freed dead buffer of the
    same storage size, dtype and device that would not be held, dead, across
    a ``blocked`` op position (sorted). ``donated_at`` (position -> the
    ``coil.donated`` arguments whose last use it is) are offered in place
    only, as Inductor reuses a backward's donated buffers. ``dies_at`` and
    ``donated_at`` are not changed."""
    dying = {k: list(v) for k, v in dies_at.items()}
    donated = {k: list(v) for k, v in (donated_at or {}).items()}
    pool: list[SSAValue] = []  # dead, not yet reused; most recent last
    takes_over: dict[SSAValue, SSAValue] = {}
    for k, top in enumerate(ops):
        if reuse and isinstance(top, B.AllocOp):
            h, t = top.result, top.result.type
            start = first_use.get(h)
            # In place first: a dead buffer from the pool would leave the kernel's
            # dying inputs and its result all alive at once.
            candidates = [*dying.get(start, []), *donated.get(start, [])]
            dead = _in_place(ops[start], h, candidates) if start is not None else None
            if dead is not None:
                (dying if dead in dying.get(start, []) else donated)[start].remove(dead)
                takes_over[h] = dead
            for dead in reversed(pool) if start is not None and h not in takes_over else ():
                d = dead.type
                gap = bisect.bisect_right(blocked, last_use[dead])
                if (
                    last_use[dead] < start
                    and (gap == len(blocked) or blocked[gap] >= k)
                    and d.element_type == t.element_type
                    and d.device_attr == t.device_attr
                    and sym_eq(d.storage_bytes(), t.storage_bytes())
                ):
                    pool.remove(dead)
                    takes_over[h] = dead
                    break
        if isinstance(top, B.ExternOp) and not extern_results_alias(top):
            # ATen allocates this call's results from the caching allocator,
            # which could hand them a freed dead buffer; one held here for a
            # later buffer.reuse could not serve them. So dead buffers are not
            # held across such a call: they are freed where they die. (ConvNeXt:
            # a block's LayerNorm output, dead after fc1, was held for the next
            # block while fc2's result was allocated anew: 18 MB over
            # Inductor's peak, which allocates extern outputs itself.)
            pool.clear()
        pool.extend(dying.get(k, []))
    return takes_over


def _holds_at_peak(
    ops: list[Operation],
    holders: list[SSAValue],
    takes_over: dict[SSAValue, SSAValue],
    last_use: dict[SSAValue, int],
    protected: set[SSAValue],
) -> tuple[int, set[int]] | None:
    """(the peak bytes of the plan ``takes_over`` makes, the op positions where
    it reaches that peak while a dead buffer is held there for a later
    allocation); None where sizes are symbolic.

    Holding a dead buffer for a later allocation of its size saves an
    allocator call but never memory: freed where it dies, its storage would
    not count until the new allocation. Where the hold spans the peak it
    costs the peak its size. ConvNeXt-Tiny's depthwise-convolution output,
    dead after the LayerNorm, was held through the 4x-wide fc1 product for
    fc2's product: planned peak 128.6 MiB where Inductor measured 111."""
    pos = {o: k for k, o in enumerate(ops)}
    size: dict[SSAValue, int] = {}
    for h in holders:
        b = _holder_bytes(h)
        if not b.is_Integer:
            return None
        size[h] = int(b)
    successor = {dead: new for new, dead in takes_over.items()}
    # Each storage: from the head's allocation to the last use of the last
    # holder to take it over (to the end where a result holds it).
    delta = [0] * (len(ops) + 1)
    for head in holders:
        if head in takes_over:
            continue
        tail = head
        while tail in successor:
            tail = successor[tail]
        end = len(ops) - 1 if tail in protected else max(pos[tail.owner], last_use[tail])
        delta[pos[head.owner]] += size[head]
        delta[end + 1] -= size[head]
    live, total = [], 0
    for d in delta[:-1]:
        total += d
        live.append(total)
    top = max(live, default=0)
    points = {
        k
        for new, dead in takes_over.items()
        for k in range(last_use[dead] + 1, pos[new.owner])
        if live[k] == top
    }
    return top, points


def _donated_arguments(fn: func.FuncOp) -> list[SSAValue]:
    """The buffer arguments marked ``coil.donated`` (a backward's saved
    activations that only it reads: AOTAutograd's donated buffers, see the
    importer)."""
    if fn.arg_attrs is None:
        return []
    return [
        a
        for a, attrs in zip(fn.args, fn.arg_attrs.data)
        if "coil.donated" in attrs.data and isinstance(a.type, B.BufferType)
    ]


def _fused_member_writing(group: L.FusedOp, out: SSAValue) -> L.PointwiseOp | None:
    """The member of ``group`` whose value ``group`` stores into ``out``, where the
    kernel computes it in one pass with everything that reads it: a pointwise
    member over the group's full ranges that reads no reduction of the group
    (directly or through other members), in a group whose reductions read no
    reduction of it (no second loop over the row: convert-loop-to-tt recomputes
    a full-range member in every loop that reads it, which would read the
    storage written in the first)."""
    outs = list(group.outs)
    if outs.count(out) != 1:
        return None
    member = group.body.block.last_op.operands[outs.index(out)].owner
    if not isinstance(member, L.PointwiseOp) or member.parent_op() is not group:
        return None
    made = {r: m for m in group.members() for r in m.results}
    needs: dict[Operation, bool] = {}  # member -> reads a reduction's result

    def reads_reduction(m: Operation) -> bool:
        if m not in needs:
            needs[m] = False
            sources = {
                o.source.owner for o in m.walk() if isinstance(o, L.LoadOp) and o.source in made
            }
            needs[m] = any(isinstance(d, L.ReductionOp) or reads_reduction(d) for d in sources)
        return needs[m]

    if reads_reduction(member):
        return None
    if any(reads_reduction(m) for m in group.members() if isinstance(m, L.ReductionOp)):
        return None
    return member


def _in_place(nest: Operation, out: SSAValue, dying: list[SSAValue]) -> SSAValue | None:
    """A buffer that dies at ``nest`` and that ``nest`` may overwrite with ``out``
    (Inductor's in-place buffers): ``nest`` is a pointwise nest writing only
    ``out``, and every read of the candidate's storage in it is a load of the
    very address it stores to (each element is read by the program that then
    writes it; through a view too: ConvNeXt's GELU reads its [N*H*W, C] matmul
    product as [N, H, W, C]). Same dtype, device and storage size. Without it a
    residual block's ``relu(bn(conv) + shortcut)`` held its two inputs and its
    result at once.

    Also a fusion group's full-range member computed in one pass
    (:func:`_fused_member_writing`) when no other member reads the candidate: a
    squeeze-excite block's ``x = bn(conv)``, stored for the product after the
    SE and reduced by ``x.mean((2, 3))`` in the same kernel, held the
    convolution's result and ``x`` at once (SE-ResNeXt-26d: a third 49 MiB
    buffer at the plan's peak; Inductor writes ``x`` over the convolution)."""
    reader: Operation = nest
    if isinstance(nest, L.FusedOp):
        member = _fused_member_writing(nest, out)
        if member is None:
            return None
        reader = member
    elif not isinstance(nest, L.PointwiseOp) or list(nest.outs) != [out]:
        return None
    return _reads_only_where_it_writes(nest, reader, out, dying)


def _reads_only_where_it_writes(
    nest: Operation, reader: L.LoopOp, out: SSAValue, dying: list[SSAValue]
) -> SSAValue | None:
    """The first of ``dying`` that ``nest`` reads only in ``reader`` (a nest over
    ``out``'s shape) and only at the address ``reader`` stores to in ``out``."""
    t = out.type
    rank = len(reader.ranges.data)
    if [to_expr(r) for r in reader.ranges.data] != [to_expr(n) for n in t.shape]:
        return None
    identity = L.index_symbols(rank)
    # An index over a size-1 dimension is 0: GELU's [1, 128, 3072] result
    # reads its [128, 3072] matmul input at the address it writes.
    ones = {i: 0 for i, n in zip(identity, t.shape) if to_expr(n) == 1}
    stored = _address(identity, t).subs(ones)
    for dead in dying:
        d = dead.type
        if not (
            isinstance(d, B.BufferType)
            and d.element_type == t.element_type
            and d.device_attr == t.device_attr
            and sym_eq(d.storage_bytes(), t.storage_bytes())
        ):
            continue
        reads = [o for o in nest.walk() if any(dead in storage_roots(v) for v in o.operands)]
        elsewhere = [o for o in reads if o is nest or L.enclosing_loop(o) is not reader]
        if reader is not nest and elsewhere:
            continue  # read by another member of the group (or passed as its outs)
        if reads and all(
            isinstance(o, L.LoadOp)
            and not o.indirect
            and _in_units_of(o.source, dead)
            and sympy.expand(_address(o.index.data, o.source.type).subs(ones) - stored) == 0
            for o in reads
        ):
            return dead
    return None


def _in_units_of(value: SSAValue, root: SSAValue) -> bool:
    """Whether ``value``'s layout (offset and strides) counts elements of
    ``root``'s storage from its start: ``value`` is ``root`` or a chain of
    buffer views of it, or of the result of an extern that returns the operand
    it writes (``index_put_``) or waits for (``wait_tensor``), with its type.
    Through any other ATen alias (``x.view(torch.int16)``, a slice made by
    ATen) the layout is the alias's own, in its own units and from its own
    start, so an address computed from it says nothing about ``root``'s."""
    while value is not root:
        owner = value.owner
        if isinstance(owner, B.ViewOp):
            value = owner.source
            continue
        if not (isinstance(owner, B.ExternOp) and extern_results_alias(owner)):
            return False
        same = [
            a
            for k, a in enumerate(owner.args)
            if a.type == value.type
            and (k in extern_mutated_operands(owner) or owner.kernel_name == WAIT_TENSOR)
        ]
        if len(same) != 1:
            return False
        value = same[0]
    return True


def _address(index, t: B.BufferType) -> sympy.Expr:
    """The element offset in storage of ``t[index]``."""
    address = to_expr(t.offset_attr.data)
    for e, stride in zip(index, t.strides):
        address += to_expr(e) * to_expr(stride)
    return sympy.expand(address)


def _written(op: Operation) -> set[SSAValue]:
    """The storage roots a top-level op writes: a nest's ``outs``, the operands an
    extern's aten op mutates."""
    if isinstance(op, L.LoopOp):
        values = list(op.outs)
    elif isinstance(op, B.ExternOp):
        values = [op.args[k] for k in extern_mutated_operands(op)]
    else:
        return set()
    return set().union(set(), *(storage_roots(v) for v in values))


def _check_in_flight(
    ops: list[Operation], used: list[set[SSAValue]], start: int, wait: int
) -> None:
    """No op between a collective (``ops[start]``) and its wait writes a buffer the
    collective reads, or uses what it writes (its results; the operands of an
    in-place collective). ``used[k]``: the storage roots ``ops[k]`` uses."""
    coll = ops[start]
    mutated = extern_mutated_operands(coll) if isinstance(coll, B.ExternOp) else set()
    read = set().union(set(), *(storage_roots(v) for v in coll.operands))
    busy = set().union(
        *(storage_roots(r) for r in coll.results),
        *(storage_roots(coll.operands[k]) for k in mutated),
    )
    name = coll.kernel_name if isinstance(coll, B.ExternOp) else coll.name
    for j in range(start + 1, wait):
        op, what = ops[j], None
        if _written(op) & read:
            what = "writes a buffer it reads"
        elif used[j] & busy:
            is_wait = isinstance(op, B.ExternOp) and op.kernel_name == WAIT_TENSOR
            what = None if is_wait else "reads a buffer it writes"
        if what is not None:
            raise DiagnosticException(
                f"memory-plan: {op.name}{_at(op)} {what} while {name}{_at(coll)} is in "
                "flight (between the collective and its wait_tensor)"
            )


def _at(op: Operation) -> str:
    line = source_line(op.location)
    return f" ({line})" if line is not None else ""


@dataclass(frozen=True)
class MemoryPlanPass(ModulePass):
    """Deallocate dead buffers, reuse their storage, report the peak (module doc)."""

    name = "memory-plan"

    reuse: bool = True
    """Reuse dead buffers of the same size (``buffer.reuse``); false: only free them."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        require_below_aten(op, "memory-plan")
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and not fn.is_declaration:
                _plan(fn, self.reuse)


__all__ = ["MemoryPlanPass", "peak"]
