"""aten-bucket-collectives: many small all-gathers (reduce-scatters) of one
group become one over a flat buffer, so each pays NCCL's latency once.

Traced sharding (``shard_parameters``, SimpleFSDP) all-gathers every
parameter on its own in the forward and reduce-scatters every gradient on its
own in the backward: a Llama block is 9 all-gathers and 9 reduce-scatters,
most of them too small to reach the network's bandwidth. Inductor buckets them
(``torch/_inductor/fx_passes/bucketing.py``: ``bucket_all_gather_by_mb``,
``bucket_reduce_scatter_by_mb``, with FSDP's copy-in/copy-out layout); this
is the same on the aten level:

* all-gathers ``g_i = all_gather(x_i)`` (each ``x_i`` of ``m_i`` elements):
  ``flat = cat([view(x_i, [m_i]) ...])`` (the copy-in: one kernel, the casts
  to the parameter dtype that produce ``x_i`` fuse into it), one
  ``all_gather(flat)`` of ``[W * M]``, its wait, then each ``g_i`` is
  ``view(slice(view(w, [W, M]), 1, off_i, off_i + m_i), shape_i)`` -- rank
  ``r``'s shard of member ``i`` is ``w[r, off_i:off_i + m_i]``, so row-major
  these are ``g_i``'s elements (the copy-out is an index map: it fuses into
  the consumers);
* reduce-scatters ``s_i = reduce_scatter(y_i)`` (``y_i`` of ``W * m_i``
  elements): ``flat = view(cat([view(y_i, [W, m_i]) ...], dim 1), [W * M])``
  (rank ``r``'s chunk of every member side by side, so the scatter hands rank
  ``r`` exactly its chunks), one ``reduce_scatter(flat)`` of ``[M]``, its
  wait, and ``s_i = view(slice(w, 0, off_i, off_i + m_i), shape_i)``.

Members of a bucket share the kind, group, group size, dtype (and reduce
operation); they are taken greedily in program order until the bucket's
result would pass ``bucket-mb`` megabytes (a collective larger than that
stays alone). A member joins only if its input needs no result of the
bucket's collectives, directly or through another bucket (else the bucket
would wait for itself; see ``_plan``), and an op with side effects closes
every open bucket. Only static shapes are bucketed.

Input: aten-level functions (run before ``aten-reorder-collectives``, which
then schedules the buckets: early, waited late, ``prefetch`` ahead). Output:
the same values, fewer collectives; the function's ops in a topological order
that keeps the original one where it can. Guarantees: each member's result
has the type it had; every rank buckets the same way (the graph is the same
on every rank).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from coil.dialects.aten import TensorType
from coil.dialects.aten_ops import (
    AtenCatOp,
    AtenSliceTensorOp,
    AtenViewOp,
    _C10dFunctionalAllGatherIntoTensorOp,
    _C10dFunctionalReduceScatterTensorOp,
    _C10dFunctionalWaitTensorOp,
)
from coil.dialects.c10d import is_collective_call
from coil.dialects.dtypes import itemsize
from coil.intmath import numel
from coil.passinfo import check_options
from coil.transforms.aten_reorder_collectives import schedule, side_effect

GATHER = _C10dFunctionalAllGatherIntoTensorOp
SCATTER = _C10dFunctionalReduceScatterTensorOp
WAIT = _C10dFunctionalWaitTensorOp


@dataclass
class Bucket:
    key: tuple
    node: int  # its node in the graph of collectives (see _plan)
    members: list[Operation] = field(default_factory=list)
    nbytes: int = 0


def _member(op: Operation) -> tuple[tuple, int] | None:
    """The bucket key and result bytes of a collective this pass can bucket
    (None: any other op, or a collective it leaves alone)."""
    if not isinstance(op, GATHER | SCATTER):
        return None
    waits = [u.operation for u in op.result.uses]
    if len(waits) != 1 or not isinstance(waits[0], WAIT):
        return None
    x, y = op.input.type, op.result.type
    if not (isinstance(x, TensorType) and isinstance(y, TensorType)):
        return None
    if not (x.is_static and y.is_static) or x.rank == 0:
        return None
    size = op.arg("group_size")
    if not isinstance(size, int):
        return None
    reduce = op.arg("reduce_op") if isinstance(op, SCATTER) else None
    key = (op.name, op.arg("group_name"), size, reduce, x.element_type, x.device_attr)
    return key, int(numel(y.shape)) * itemsize(y.element_type)


def _plan(ops: list[Operation], cap: int) -> list[Bucket]:
    """The buckets of two or more members, greedily in program order.

    Every collective (a bucket, or one left alone) is a node of a graph whose
    edges say which collectives' results a node's inputs need. A collective
    may join a bucket unless the bucket's node is reachable from what its
    input needs: it would then wait for itself, directly or through another
    bucket (whose merged inputs need this one). Needing an unrelated
    collective that came later is no reason to close a bucket: a backward's
    reduce-scatters of one block all need the all-gathers its recompute
    issues in between, and still make one bucket."""
    after: list[set[int]] = []  # node -> the nodes whose results its inputs need
    needs: dict[SSAValue, frozenset[int]] = {}  # value -> nodes it needs directly
    open_: dict[tuple, Bucket] = {}
    done: list[Bucket] = []
    empty: frozenset[int] = frozenset()

    def node(inputs: frozenset[int]) -> int:
        after.append(set(inputs))
        return len(after) - 1

    def reaches(start: frozenset[int], target: int) -> bool:
        seen, stack = set(start), list(start)
        while stack:
            n = stack.pop()
            if n == target:
                return True
            for m in after[n] - seen:
                seen.add(m)
                stack.append(m)
        return False

    def close(key: tuple) -> None:
        bucket = open_.pop(key)
        if len(bucket.members) > 1:
            done.append(bucket)

    for op in ops:
        need = empty.union(*(needs.get(v, empty) for v in op.operands))
        if side_effect(op) == "barrier":
            for key in list(open_):
                close(key)
        found = _member(op)
        if found is not None:
            key, nbytes = found
            bucket = open_.get(key)
            if bucket is not None and (bucket.nbytes + nbytes > cap or reaches(need, bucket.node)):
                close(key)
                bucket = None
            if bucket is None:
                bucket = open_[key] = Bucket(key, node(empty))
            bucket.members.append(op)
            bucket.nbytes += nbytes
            after[bucket.node] |= need
            need = frozenset((bucket.node,))
        elif is_collective_call(op) and not isinstance(op, WAIT):
            need = frozenset((node(need),))
        for r in op.results:
            needs[r] = need
    for key in list(open_):
        close(key)
    return done


def _view(x: SSAValue, shape: list[int]) -> AtenViewOp:
    t = x.type
    assert isinstance(t, TensorType)
    return AtenViewOp.build_from(
        {"self": x}, {"size": shape}, [TensorType(shape, t.element_type, None, t.device_attr.data)]
    )


def _rewrite(bucket: Bucket) -> list[Operation]:
    """The ops of one bucket (to insert before its first member); the members'
    waits' uses are redirected to the pieces, the members erased."""
    members = bucket.members
    first = members[0]
    world = first.arg("group_size")
    x0 = first.input.type
    assert isinstance(x0, TensorType)
    elem, device = x0.element_type, x0.device_attr.data
    gather = isinstance(first, GATHER)
    new: list[Operation] = []
    sizes = []
    pieces: list[SSAValue] = []
    for op in members:
        t = op.input.type
        assert isinstance(t, TensorType)
        n = int(numel(t.shape))
        if gather:
            sizes.append(n)
            flat = _view(op.input, [n])
        else:
            sizes.append(n // world)
            flat = _view(op.input, [world, n // world])
        new.append(flat)
        pieces.append(flat.result)
    total = sum(sizes)
    if gather:
        cat = AtenCatOp.build_from(
            {"tensors": pieces}, {}, [TensorType([total], elem, None, device)]
        )
        new.append(cat)
        send = cat.result
        out_type = TensorType([world * total], elem, None, device)
        coll = GATHER.build_from_attrs(
            {"input": send},
            {
                "group_size": first.arg_attr("group_size"),
                "group_name": first.arg_attr("group_name"),
            },
            [out_type],
        )
    else:
        cat = AtenCatOp.build_from(
            {"tensors": pieces}, {"dim": 1}, [TensorType([world, total], elem, None, device)]
        )
        flat = _view(cat.result, [world * total])
        new += [cat, flat]
        send = flat.result
        out_type = TensorType([total], elem, None, device)
        coll = SCATTER.build_from_attrs(
            {"input": send},
            {
                "reduce_op": first.arg_attr("reduce_op"),
                "group_size": first.arg_attr("group_size"),
                "group_name": first.arg_attr("group_name"),
            },
            [out_type],
        )
    coll.set_group_ranks(first.group_ranks)  # type: ignore[attr-defined]
    wait = WAIT.build_from({"tensor": coll.result}, {}, [out_type])
    new += [coll, wait]
    kind = "gather" if gather else "scatter"
    coll.result.name_hint = f"bucket_{kind}"
    wait.result.name_hint = f"bucket_{kind}_wait"
    rows = wait.result
    if gather:
        grid = _view(wait.result, [world, total])
        new.append(grid)
        rows = grid.result
    offset = 0
    for op, n in zip(members, sizes, strict=True):
        out = op.result.type
        assert isinstance(out, TensorType)
        if gather:
            shape, strides = [world, n], [total, 1]
        else:
            shape, strides = [n], [1]
        piece = AtenSliceTensorOp.build_from(
            {"self": rows},
            {"dim": 1 if gather else 0, "start": offset, "end": offset + n},
            [TensorType(shape, elem, strides, device)],
        )
        back = _view(piece.result, list(out.shape))
        new += [piece, back]
        (member_wait,) = [u.operation for u in op.result.uses]
        back.result.name_hint = member_wait.results[0].name_hint
        member_wait.results[0].replace_all_uses_with(back.result)
        offset += n
    return new


def _bucket(fn: func.FuncOp, cap: int) -> None:
    block = fn.body.block
    ops = list(block.ops)[:-1]
    if not any(isinstance(op, GATHER | SCATTER) for op in ops):
        return
    buckets = _plan(ops, cap)
    if not buckets:
        return
    for bucket in buckets:
        new = _rewrite(bucket)
        first = bucket.members[0]
        for op in new:
            block.insert_op_before(op, first)
        for op in bucket.members:
            (wait,) = [u.operation for u in op.result.uses]
            wait.detach()
            wait.erase()
            op.detach()
            op.erase()
    # The copy-ins read inputs computed after the first member: a stable
    # topological order (the original one wherever the data allows).
    ops = list(block.ops)[:-1]
    order = schedule(ops, raise_collectives=False, sink_waits=False, max_in_flight=0)
    term = block.last_op
    for op in order:
        op.detach()
        block.insert_op_before(op, term)


@dataclass(frozen=True)
class AtenBucketCollectivesPass(ModulePass):
    """Bucket all-gathers and reduce-scatters (see the module doc)."""

    name = "aten-bucket-collectives"

    bucket_mb: int = 64
    """A bucket's result stops short of this many megabytes (2**20 bytes)."""

    def __post_init__(self) -> None:
        check_options(self)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        cap = self.bucket_mb << 20
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and not fn.is_declaration:
                _bucket(fn, cap)


__all__ = ["AtenBucketCollectivesPass"]
