"""aten-reorder-collectives: issue each collective as early, and wait for it as
late, as the data allows, so communication overlaps computation.

Inductor's ``raise_comms`` / ``sink_waits`` (``torch/_inductor/comms.py``), on
the aten level: a list schedule of each function's ops by priority

1. collectives first: an op needed by the k-th collective (the collective
   itself, or any op it depends on) ranks by k (``raise-collectives``);
2. then waits last: a ``wait_tensor`` runs only when no other op is ready
   (``sink-waits``);
3. then the original order.

Traced graphs wait right after each collective (as eager code does); after
this pass the compute that does not need a collective's result runs while
the collective is in flight. ``max-in-flight=N`` (0: no limit) waits for the
oldest collective before an (N+1)-th one starts, bounding the memory that
collectives hold. ``prefetch=N`` (0: none) starts the n-th collective whose
result the function reads only after the (n-N)-th one's waits: raised alone,
every parameter all-gather of a traced forward starts at the top (the whole
model gathered at once); with ``prefetch=1`` each starts while the previous
one's consumers compute (FSDP's forward prefetch).

Input: aten-level functions. Output: the same ops, reordered. Guarantees: every
op still follows the ops it uses; the collectives keep their relative order
(every rank must issue them in the same order), and so do the random ops (the
same draws); any other op with side effects (a mutation, a custom op that
writes an argument or that torch.fx keeps for its side effects) is a barrier
nothing moves across. The memory plan then keeps a collective's
inputs alive until its wait (``memory-plan``).
"""

from __future__ import annotations

import heapq
import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.traits import is_side_effect_free

from coil.dialects.aten import VIEW_OPS, AtenOp, OperatorOp
from coil.dialects.c10d import WAIT_TENSOR, C10dOp, is_collective_call
from coil.passinfo import check_options


def side_effect(op: Operation) -> str | None:
    """What ``op`` does besides computing its results, for the schedule: None
    (nothing, or a collective or wait: what this pass moves), ``"random"`` (it
    draws from torch's generator: random ops keep their order among
    themselves) or ``"barrier"`` (it writes an argument, torch.fx keeps it for
    its side effects, or its effects are unknown: nothing moves across it)."""
    if isinstance(op, C10dOp) or is_collective_call(op) or is_side_effect_free(op):
        return None
    if isinstance(op, AtenOp):  # generated: not Pure when it mutates or draws
        return "barrier" if op.schema().mutates else "random"
    overload = op.resolve() if isinstance(op, OperatorOp) else None
    if overload is None:
        return "barrier"
    import torch.fx

    schema = overload._schema
    if any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments):
        return "barrier"
    if overload in torch.fx.node._side_effectful_functions:
        return "barrier"
    return "random" if torch.Tag.nondeterministic_seeded in overload.tags else None


SCATTERS = frozenset(
    {
        "_c10d_functional.reduce_scatter_tensor.default",
        "_c10d_functional.reduce_scatter_tensor_coalesced.default",
        "_c10d_functional_autograd.reduce_scatter_tensor.default",
    }
)
"""Collectives whose result is a shard of their input: outside the prefetch chain."""


def schedule(
    ops: list[Operation],
    raise_collectives: bool,
    sink_waits: bool,
    max_in_flight: int,
    prefetch: int = 0,
) -> list[Operation]:
    """The new order of ``ops`` (a block's ops, its terminator excluded)."""
    index = {op: k for k, op in enumerate(ops)}
    preds: list[set[int]] = [set() for _ in ops]
    barrier = -1  # the last barrier so far: every later op follows it
    draw = -1  # the last random op so far: the next one follows it
    for k, op in enumerate(ops):
        for v in op.operands:
            if (j := index.get(v.owner)) is not None:  # type: ignore[arg-type]
                preds[k].add(j)
        if barrier >= 0:
            preds[k].add(barrier)
        effect = side_effect(op)
        if effect == "barrier":
            preds[k].update(range(barrier + 1, k))
            barrier = k
        elif effect == "random":
            if draw > barrier:
                preds[k].add(draw)
            draw = k
    collectives = [k for k, op in enumerate(ops) if is_collective_call(op)]
    rank = [sys.maxsize] * len(ops)
    if raise_collectives:
        for n, c in enumerate(collectives):
            stack = [c]
            while stack:
                k = stack.pop()
                if rank[k] > n:
                    rank[k] = n
                    stack.extend(preds[k])
    waits = {k for k, op in enumerate(ops) if op.name == WAIT_TENSOR}
    last = {k: int(sink_waits and k in waits) for k in range(len(ops))}

    users: list[list[int]] = [[] for _ in ops]
    missing = [len(p) for p in preds]
    for k, p in enumerate(preds):
        for j in p:
            users[j].append(k)
    waited_by = {c: {u for u in users[c] if u in waits} for c in collectives}
    # prefetch=N, among the collectives whose results the function reads (not
    # only returns: gradients' reduce-scatters are never held back): the n-th
    # starts only once the (n-N)-th one's waits have run. Reduce-scatters are
    # not in the chain even when read (a tied weight's two gradient shards are
    # added): the chain bounds gathered memory, and a reduce-scatter's result
    # is a shard; gating the next all-gather on its wait would hold the
    # gather back until the scatter ends and leave it nothing to overlap.
    gate: dict[int, set[int]] = {}
    if prefetch:
        read = [
            c
            for c in collectives
            if ops[c].name not in SCATTERS and _read(c, waited_by, users, waits, ops)
        ]
        for n in range(prefetch, len(read)):
            gate[read[n]] = waited_by[read[n - prefetch]]
    ready = [(rank[k], last[k], k) for k in range(len(ops)) if not missing[k]]
    heapq.heapify(ready)
    order: list[int] = []
    in_flight: list[int] = []  # collectives issued and not yet waited for, oldest first
    held: list[int] = []  # ready collectives whose prefetch gate is still closed

    def closed(k: int) -> bool:
        return any(missing[w] >= 0 for w in gate.get(k, ()))

    def run(k: int) -> None:
        order.append(k)
        missing[k] = -1  # done
        for u in users[k]:
            missing[u] -= 1
            if not missing[u]:
                heapq.heappush(ready, (rank[u], last[u], u))
        if k in waited_by and waited_by[k]:
            in_flight.append(k)
        in_flight[:] = [c for c in in_flight if any(missing[w] >= 0 for w in waited_by[c])]

    while ready or held:
        for h in [h for h in held if not closed(h)]:
            held.remove(h)
            heapq.heappush(ready, (rank[h], last[h], h))
        if not ready:  # only gated collectives are left: the oldest goes
            k = held.pop(0)
        else:
            k = heapq.heappop(ready)[2]
            if missing[k] < 0:
                continue  # run early, as a wait the in-flight limit called for
            if closed(k):
                held.append(k)
                continue
        if k in waited_by and max_in_flight and len(in_flight) >= max_in_flight:
            # A wait needs only its collective (and the barrier before both).
            for w in sorted(waited_by[in_flight[0]]):
                if missing[w] >= 0:
                    run(w)
        run(k)
    assert len(order) == len(ops), "aten-reorder-collectives: a cycle among the ops"
    return [ops[k] for k in order]


def _read(
    c: int, waited_by: dict[int, set[int]], users: list[list[int]], waits: set[int], ops
) -> bool:
    """Whether an op of the function reads collective ``c``'s result (past its
    waits and views)."""
    stack = list(waited_by[c])
    seen = set(stack)
    while stack:
        for u in users[stack.pop()]:
            if u in seen:
                continue
            seen.add(u)
            if u not in waits and ops[u].name not in VIEW_OPS:
                return True
            stack.append(u)
    return False


def _reorder(
    fn: func.FuncOp, raise_collectives: bool, sink_waits: bool, max_in_flight: int, prefetch: int
) -> None:
    block = fn.body.block
    ops = list(block.ops)[:-1]  # the terminator stays last
    if not any(is_collective_call(op) for op in ops):
        return
    new = schedule(ops, raise_collectives, sink_waits, max_in_flight, prefetch)
    term = block.last_op
    for op in new:
        op.detach()
        block.insert_op_before(op, term)


@dataclass(frozen=True)
class AtenReorderCollectivesPass(ModulePass):
    """Raise collectives, sink their waits (see the module doc)."""

    name = "aten-reorder-collectives"

    raise_collectives: bool = True
    """Schedule each collective, and what it needs, as early as its data allows."""

    sink_waits: bool = True
    """Schedule each wait_tensor only when nothing else is ready."""

    max_in_flight: int = 0
    """At most this many collectives in flight at once (0: no limit)."""

    prefetch: int = 0
    """Of the collectives whose results the function reads, the n-th starts
    only after the (n-prefetch)-th one's waits (0: as early as the data
    allows). With bucketed all-gathers, ``prefetch=1`` is FSDP's: the next
    bucket's all-gather overlaps this bucket's compute, and about two gathered
    buckets are alive at once."""

    def __post_init__(self) -> None:
        check_options(self)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and not fn.is_declaration:
                _reorder(
                    fn, self.raise_collectives, self.sink_waits, self.max_in_flight, self.prefetch
                )


__all__ = ["AtenReorderCollectivesPass", "schedule"]
