"""A split reduction's finish in the kernel of its first stage: one launch, not two.

``loop-split-reduction`` cuts a reduction with few outputs into stage 1 (each of
``nsplit`` chunks reduced to a partial, ranges ``[nsplit] ++ out``) and stage 2
(the partials of each output reduced, reduction range ``[nsplit]``). Lowered
one nest per kernel, that is two launches, and on an H100 the second one's gap
was ~4 % of a 0.11 ms column sum (``x.sum(0)``, f32 32768 x 2048, where coil
and Inductor, both at two launches, were level).

Here stage 2 runs inside stage 1's kernel, as CUB's "last block" reductions
do (the threadfence-reduction pattern): stage 1's programs ``pid`` each write
their partials for a tile of ``XBLOCK`` consecutive outputs (``t = pid %
T``, ``T = N / XBLOCK`` tiles of the ``N`` outputs); then each bumps tile
``t``'s counter in a ``host.semaphores`` buffer (``atomic_add``, acq_rel at
gpu scope, after a CTA barrier so that all its threads' partial stores are
published by the release), and the program that finds ``nsplit - 1`` arrivals
before it is the last of its tile: it runs stage 2's program(s) for that tile
-- stage 2's own code, built with ``XBLOCK`` outputs a program, its
``tl.program_id(0)`` replaced -- reading the partials past L1 (``.cg``), and
resets the counter to 0, so the buffer is zero again for the next launch (or
CUDA-graph replay). The partials are still reduced in a fixed order, by one
program, so the result does not depend on which program came last. Inductor
has the same idea as an option (cooperative reductions, a grid barrier that
needs every program resident at once); "last program" waits for nobody.

When it applies (else the two launches stay; every condition is checked on
the nests, nothing is assumed of the split pass):

* stage 2 is the next nest after stage 1 (only allocations, views and
  deallocations between), a reduction over ``[nsplit]`` with static ``nsplit``
  whose outputs match stage 1's ``ranges[1:]``, ``N`` static;
* stage 2 reads stage 1's outputs only at ``[r0, i0, ...]`` (its program for
  outputs ``J`` reads partials of ``J`` only) and its outputs share no storage
  with what stage 1 reads or writes (they are written while other programs of
  stage 1 still run);
* both walk their outputs in the same order (``tiling.output_order``), stage
  1 is one tile of ``XBLOCK`` along grid x, and ``N % XBLOCK == 0`` (a tile
  holds one chunk's outputs) or ``N <= XBLOCK`` (one counter: every program
  counts, the last runs all of stage 2, at most ``strategy.plan.MAX_SERIAL``
  programs; ``strategy.plan.finish_tiles``, which the split's estimate uses);
* neither kernel has autotuning candidates.

The same last-program finish serves a *one-program consumer* (``one_program_pair``,
``merge_one``): a reduction built as a single program (a row's normalization
over a vector, ``x * rsqrt(mean(x**2))`` after a decode step's matrix-vector
product; a pointwise one is left to host-combine-launches)
right after the kernel that writes what it reads runs in that kernel's last
program to arrive (one counter), instead of its own launch: a batch-1 decode
layer's o-projection finishes with the MLP's norm, a down-projection of the
last layer with the final norm. Its loads all read past L1, its outputs are
allocated before the launch and share no storage with the first kernel's
buffers; the first kernel is 1-D along grid x.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import sympy
from xdsl.dialects import arith as xarith
from xdsl.dialects import scf
from xdsl.dialects.builtin import StringAttr, i32, i64
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from coil.dialects import buffer as B
from coil.dialects import loop as L
from coil.dialects import tt
from coil.dialects.buffer import BufferType
from coil.dialects.symbolic import index_symbols
from coil.lowering.loop_to_tt import tiling as T
from coil.lowering.loop_to_tt.builder import KernelBuilder
from coil.lowering.loop_to_tt.kernel import Kernel, Options
from coil.strategy.plan import finish_tiles
from coil.transforms.extern_effects import storage_roots

# The most programs counting on one semaphore (a one-program finish): an L2
# slice serves atomics to one address about one a cycle, so 2048 arrivals take
# ~1.2 us at 1.7 GHz if they all met at once (they spread over the kernel's
# run). An estimate from the hardware's documented atomic path, not a
# measurement: the decode products it serves have 256-2816 programs.
MAX_ARRIVALS = 2048

# Ops that may sit between the two stages (no kernel, no extern).
BETWEEN = (B.AllocOp, B.ViewOp, B.DeallocOp)


def _nontrivial_order(nest: L.LoopOp, n: int) -> list[int]:
    ranges = nest.ranges.data
    return [k for k in T.output_order(nest, n) if sympy.sympify(ranges[k]) != 1]


def stage_pair(first: Operation, second: Operation, between: Sequence[Operation]) -> bool:
    """Whether ``second`` is the finishing stage of the split reduction ``first``
    (the nest-level conditions of the module docstring)."""
    groups = (L.ReductionOp, L.FusedOp)
    if not isinstance(first, groups) or not isinstance(second, groups):
        return False
    if not first.outs or not second.outs:
        return False
    if any(not isinstance(op, BETWEEN) for op in between):
        return False
    r1 = [sympy.sympify(d) for d in first.ranges.data]
    r2 = [sympy.sympify(d) for d in second.ranges.data]
    rr2 = [sympy.sympify(d) for d in second.reduction_ranges.data]
    # The outputs match up to size-1 dimensions (loop-fuse squeezes a group's:
    # a spatial mean's partials [chunks, N, C, 1, 1] finished over [N, C]).
    kept1 = [k for k in range(1, len(r1)) if r1[k] != 1]
    kept2 = [k for k in range(len(r2)) if r2[k] != 1]
    if not r1 or len(rr2) != 1 or rr2[0] != r1[0]:
        return False  # stage 1 has no chunk dimension (a full reduction in one program)
    if [r1[k] for k in kept1] != [r2[k] for k in kept2]:
        return False
    nsplit, n_out = r1[0], sympy.Mul(*r2)
    if not (nsplit.is_Integer and int(nsplit) > 1 and n_out.is_Integer):
        return False
    outs1 = set(first.outs)
    syms = index_symbols(len(r2), 1)
    unit2 = {syms[k]: sympy.Integer(0) for k in range(len(r2)) if k not in kept2}
    at: list[sympy.Expr] = [syms[-1]] + [sympy.Integer(0)] * (len(r1) - 1)  # [r0, i0, ...]
    for k1, k2 in zip(kept1, kept2):
        at[k1] = syms[k2]
    partials = False
    for op in second.walk():
        if isinstance(op, L.LoadOp) and op.source in outs1:
            if [sympy.sympify(e).xreplace(unit2) for e in op.index.data] != at:
                return False
            partials = True
    if not partials:
        return False
    touched = [op.source for op in first.walk() if isinstance(op, L.LoadOp)] + list(first.outs)
    busy = set().union(*(storage_roots(v) for v in touched))
    if any(storage_roots(o) & busy for o in second.outs):
        return False
    # Stage 2's outputs must exist before stage 1 runs (they are written in its
    # launch): a reuse or view made between the two could take freed storage.
    made_between = {r for op in between for r in op.results}
    if any(o in made_between and not isinstance(o.owner, B.AllocOp) for o in second.outs):
        return False
    o1 = _nontrivial_order(first, len(r1))
    o2 = _nontrivial_order(second, len(r2))
    return o1 == [0, *[kept1[kept2.index(k)] for k in o2]]


def one_program_pair(first: Operation, second: Operation, between: Sequence[Operation]) -> bool:
    """Whether ``second`` may run in ``first``'s last program (nest-level
    conditions; ``merge_one`` checks that ``second`` is one program)."""
    nests = (L.PointwiseOp, L.ReductionOp, L.FusedOp)
    if not isinstance(first, nests) or not _reduces(second):
        return False  # a pointwise one joins a combo launch (host-combine-launches)
    if not first.outs or not second.outs:
        return False
    if any(not isinstance(op, (*BETWEEN, B.ReuseOp)) for op in between):
        return False
    outs1 = set().union(*(storage_roots(o) for o in first.outs))
    reads2 = [op.source for op in second.walk() if isinstance(op, L.LoadOp)]
    if not any(storage_roots(v) & outs1 for v in reads2):
        return False  # no dependence: nothing to gain over two launches
    made_between = {r for op in between for r in op.results}
    busy = busy_storage(first)
    for o in second.outs:
        if o in made_between:
            # an allocation, or a reuse that fresh_outputs makes one where it
            # takes storage ``first`` touches
            if not isinstance(o.owner, B.AllocOp | B.ReuseOp):
                return False
        elif storage_roots(o) & busy:
            return False
    # what second reads must not be a reuse made between (its storage is taken
    # while ``first``, which runs second's code, may still use the old holder)
    return not any(isinstance(op, B.ReuseOp) and op.result not in second.outs for op in between)


def busy_storage(nest: Operation) -> set[SSAValue]:
    """The storage a nest reads or writes."""
    touched = [op.source for op in nest.walk() if isinstance(op, L.LoadOp)] + list(nest.outs)
    return set().union(*(storage_roots(v) for v in touched))


def fresh_outputs(first: Operation, second: Operation) -> None:
    """Make ``second``'s outputs exist before ``first`` runs, apart from its
    storage: an allocation between them moves before ``first``; a reuse of
    storage ``first`` touches (the memory plan hands a buffer dead after
    ``first`` to ``second``) becomes an allocation there, the reused buffer
    freed where the reuse was; another reuse moves before ``first`` (what it
    takes was dead before ``first``: only allocations, views, reuses and frees
    lie between)."""
    busy = busy_storage(first)
    for o in list(second.outs):
        owner = o.owner
        if owner.parent is not first.parent or owner.is_before_in_block(first):
            continue
        if isinstance(owner, B.ReuseOp) and storage_roots(owner.source) & busy:
            alloc = B.AllocOp(o.type)
            alloc.result.name_hint = o.name_hint
            Rewriter.insert_op(alloc, InsertPoint.before(first))
            if any(isinstance(r, BlockArgument) for r in storage_roots(owner.source)):
                # a donated argument (memory-plan): the wrapper drops its name
                # after its last use; it is not freed here
                Rewriter.replace_op(owner, [], [alloc.result])
            else:
                free = B.DeallocOp(owner.source)
                Rewriter.replace_op(owner, free, [alloc.result])
        elif isinstance(owner, B.AllocOp | B.ReuseOp):
            owner.detach()
            Rewriter.insert_op(owner, InsertPoint.before(first))


def _reduces(nest: Operation) -> bool:
    if isinstance(nest, L.ReductionOp):
        return True
    return isinstance(nest, L.FusedOp) and any(isinstance(m, L.ReductionOp) for m in nest.members())


def merge_one(
    first: Kernel, second: Kernel, name: str, semaphores: Callable[[int], SSAValue]
) -> Kernel | None:
    """``first`` with ``second`` (one program) run by its last program, or None
    where ``second`` is more than one program or ``first`` not 1-D."""
    if first.grid[1:] != [1, 1] or first.yblock:
        return None
    programs = sympy.sympify(first.grid[0])
    if not programs.is_Integer or int(programs) > MAX_ARRIVALS:
        return None
    if [sympy.sympify(g) for g in second.grid] != [1, 1, 1]:
        return None
    return _fuse(first, second, 1, 1, semaphores(1), name, every_load_fresh=True)


def merge(
    first: Kernel,
    build_second: Callable[[Options], Kernel],
    options: Options,
    n_out: int,
    name: str,
    semaphores: Callable[[int], SSAValue],
) -> Kernel | None:
    """Stage 1's kernel with stage 2 run by the last program of each tile, or
    None where the tiles do not line up. ``build_second(options)`` builds stage 2;
    ``semaphores(n)`` makes the host's ``n`` counters (a buffer value)."""
    if first.yblock or first.grid[1:] != [1, 1] or not first.xblock:
        return None
    xblock = first.xblock
    if n_out % xblock == 0:
        second = _finish_kernel(first, build_second, replace(options, xblock=xblock))
        if second.xblock != xblock:
            return None
    elif n_out < xblock:
        second = _finish_kernel(first, build_second, options)
    else:
        return None
    programs = second.grid[0]
    if second.yblock or second.grid[1:] != [1, 1] or not programs.is_Integer:
        return None
    # The rule the split pass's estimate prices (strategy/plan.py).
    lined_up = finish_tiles(n_out, xblock, int(programs))
    if lined_up is None:
        return None
    tiles, per_tile = lined_up
    if per_tile * tiles != int(programs):
        return None
    sem = semaphores(tiles)
    return _fuse(first, second, tiles, per_tile, sem, name)


def _finish_kernel(first: Kernel, build: Callable[[Options], Kernel], options: Options) -> Kernel:
    """Stage 2 built with a tile of at most twice stage 1's points: the finish's
    registers count for every program of the launch (a column sum's [64, 64]
    finish tile took a stage 1 of [64, 8] from 32 to 56 registers a thread on
    sm_90 (cuobjdump), which leaves room for 9 resident programs of 128 threads
    a multiprocessor instead of 16; the H100 measured 0.0937 ms against 0.0907
    for Inductor's two kernels. [64, 16] keeps 32)."""
    second = build(options)
    budget = 2 * first.xblock * max(first.rblock, 1)
    if second.xblock * max(second.rblock, 1) <= budget or options.rblock:
        return second
    rblock = max(1, budget // second.xblock)
    threshold = min(options.persistent_threshold, rblock)
    return build(replace(options, rblock=rblock, persistent_threshold=threshold))


def _fuse(
    first: Kernel,
    second: Kernel,
    tiles: int,
    per_tile: int,
    sem: SSAValue,
    name: str,
    every_load_fresh: bool = False,
) -> Kernel:
    def split(k: Kernel) -> tuple[list[SSAValue], list[SSAValue]]:
        bufs = [a for a in k.args if isinstance(a.type, BufferType)]
        return bufs, [a for a in k.args if not isinstance(a.type, BufferType)]

    bufs1, seeds1 = split(first)
    bufs2, seeds2 = split(second)
    bufs = bufs1 + [v for v in bufs2 if v not in bufs1] + [sem]
    seeds = seeds1 + [v for v in seeds2 if v not in seeds1]
    scalars = sorted(set(first.scalars) | set(second.scalars), key=lambda s: s.name)
    old1, old2 = first.func, second.func
    types = [tt.PointerType(b.type.element_type) for b in bufs]
    types += [i64] * (len(seeds) + len(scalars))
    func = tt.FuncOp(name, types, [], visibility="public")
    for key in ("coil.kind", "coil.device", "coil.cost"):
        if key in old1.attributes:
            func.attributes[key] = old1.attributes[key]
    plans = [old.attributes.get("coil.plan") for old in (old1, old2)]
    if all(isinstance(p, StringAttr) for p in plans):
        func.attributes["coil.plan"] = StringAttr(
            f"{plans[0].data}; finished by the last program of each of {tiles} tiles: "
            f"{plans[1].data.split(':')[0]}"
        )
    for key in ("coil.source_lines", "coil.aten_ops"):
        merged = []
        for old in (old1, old2):
            for a in old.attributes.get(key, []):
                if a not in merged:
                    merged.append(a)
        func.attributes[key] = type(old1.attributes[key])(merged)
    new_args = func.body.block.args
    arg_of = {v: new_args[k] for k, v in enumerate(bufs + seeds)}
    arg_of.update({s: new_args[len(bufs) + len(seeds) + k] for k, s in enumerate(scalars)})
    sem_arg = new_args[len(bufs) - 1]
    sem_arg.name_hint = "sem_ptr"

    def mapping(k: Kernel) -> dict[SSAValue, SSAValue]:
        bufs_k, seeds_k = split(k)
        block_args = k.func.body.block.args
        out = {block_args[i]: arg_of[v] for i, v in enumerate(bufs_k + seeds_k)}
        base = len(bufs_k) + len(seeds_k)
        out.update({block_args[base + i]: arg_of[s] for i, s in enumerate(k.scalars)})
        for old, new in out.items():
            if new.name_hint is None:
                new.name_hint = _next_name(old.name_hint, {a.name_hint for a in new_args})
        return out

    block = func.body.block
    partials = {arg_of[v] for v in (bufs1 + bufs2 if every_load_fresh else bufs1)}
    _clone_body(old1, block, mapping(first))
    b = KernelBuilder(block, i32)
    pid = b.emit(tt.GetProgramIdOp(0))
    one = b.const(1, i32)
    if tiles > 1:
        n_tiles = b.const(tiles, i32)
        tile = b.binary(xarith.RemSIOp, pid, n_tiles)
        arrivals = b.binary(xarith.DivSIOp, b.emit(tt.GetNumProgramsOp(0)), n_tiles)
    else:
        tile = b.const(0, i32)
        arrivals = b.emit(tt.GetNumProgramsOp(0))
    tile.name_hint = "tile"
    # Every thread's partial stores before the one atomic that publishes them.
    b.insert(tt.DebugBarrierOp())
    slot = b.emit(tt.AddPtrOp(sem_arg, tile))
    slot.name_hint = "sem"
    before = b.emit(tt.AtomicRMWOp("add", slot, one, sem="acq_rel", scope="gpu"))
    before.name_hint = "arrived"
    last = b.cmpi(before, b.binary(xarith.SubiOp, arrivals, one), "eq")
    then = Block()
    with b.at(then):
        b.insert(tt.DebugBarrierOp())  # the acquire, for every thread of the program
        start = tile if per_tile == 1 else b.binary(xarith.MuliOp, tile, b.const(per_tile, i32))
        if per_tile == 1:
            _clone_body(old2, then, mapping(second), start, partials)
        else:
            body = Block(arg_types=[i32])
            body.args[0].name_hint = "finish"
            _clone_body(old2, body, mapping(second), body.args[0], partials)
            body.add_op(scf.YieldOp())
            stop = b.binary(xarith.AddiOp, start, b.const(per_tile, i32))
            b.insert(scf.ForOp(start, stop, one, [], Region(body)))
        b.insert(tt.StoreOp(slot, b.const(0, i32)))
        b.insert(scf.YieldOp())
    b.insert(scf.IfOp(last, [], Region(then), Region(Block([scf.YieldOp()]))))
    b.insert(tt.ReturnOp())
    # The finish runs in the last program, so there is one even where the first
    # stage has no work (a zero-size dimension: its outputs, masked off, are
    # empty, and the finish still writes the reduction of nothing).
    grid0 = sympy.sympify(first.grid[0])
    if not (grid0.is_Integer and int(grid0) >= 1):
        grid0 = sympy.Integer(1) if grid0.is_Integer else sympy.Max(grid0, 1)
    return Kernel(
        func,
        [grid0, *first.grid[1:]],
        bufs + seeds,
        scalars,
        first.num_warps,
        first.num_stages,
        first.xblock,
        first.rblock,
        first.persistent,
        first.yblock,
    )


def _next_name(hint: str | None, taken: set[str | None]) -> str | None:
    """``hint``'s prefix with the first number not ``taken`` (``out_ptr0`` of stage 2
    becomes ``out_ptr1`` next to stage 1's ``out_ptr0``)."""
    if hint is None:
        return None
    prefix, k = hint.rstrip("0123456789"), 0
    while f"{prefix}{k}" in taken:
        k += 1
    return f"{prefix}{k}"


def _clone_body(
    old: tt.FuncOp,
    into: Block,
    values: dict[SSAValue, SSAValue],
    program: SSAValue | None = None,
    fresh: set[SSAValue] | frozenset[SSAValue] = frozenset(),
) -> None:
    """Copy ``old``'s ops (not its ``tt.return``) to the end of ``into``, its
    arguments mapped by ``values``; with ``program``, its ``tl.program_id(0)`` is
    that value. Loads through the pointer arguments ``fresh`` (stage 1's buffers:
    written by other programs of this launch) read past L1 (``.cg``)."""
    values = dict(values)
    for op in old.body.block.ops:
        if isinstance(op, tt.ReturnOp):
            continue
        if program is not None and isinstance(op, tt.GetProgramIdOp) and op.axis.value.data == 0:
            values[op.result] = program
            continue
        new = op.clone(value_mapper=values)
        into.add_op(new)
        for inner in new.walk():
            if isinstance(inner, tt.LoadOp) and _pointer_root(inner.ptr) in fresh:
                # ptxas takes no L2 eviction policy with .cg
                inner.properties["cache"] = StringAttr("cg")
                inner.properties["evict"] = StringAttr("normal")


def _pointer_root(v: SSAValue) -> SSAValue:
    while isinstance(v.owner, tt.AddPtrOp | tt.SplatOp | tt.BroadcastOp | tt.ExpandDimsOp):
        v = v.owner.operands[0]
    return v
