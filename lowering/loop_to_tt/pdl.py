"""Programmatic dependent launch (PDL): a kernel that starts under the previous one.

On Hopper (sm90) and later, a kernel launched with the attribute
``CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`` (Triton's compile
option ``launch_pdl``) may start while the kernel before it in the stream still
runs: as soon as every program of that kernel has executed
``griddepcontrol.launch_dependents`` or exited. Its programs must then run
``griddepcontrol.wait`` (``tt.grid_dependency_wait``, ``tl.extra.cuda.gdc_wait()``)
before they touch anything an earlier kernel writes (read after write) or reads
(write after read: the memory plan hands a buffer read by one kernel to a later
one). Until the wait they may do what depends on no earlier kernel: index
math, and loads of values that no kernel of the graph writes -- its static
inputs, a ``Linear``'s weight. A batch-1 matrix-vector product is all weight
stream: issued before the wait, its first bytes overlap the previous kernel's
tail and the launch latency (CUTLASS example 63, a Hopper GEMM with weight
prefetch, does the same). On an H200 the products of 8-23 MB ran at 24-45 % of
copy bandwidth whatever their tiles (benchmarks/RESULTS.md, the nineteenth
session's shape sweep: launch, ramp-up, the first DRAM round trip and the tail),
against 85 % for the 131 MB LM head: the fixed latency is what PDL hides.

:func:`prefetch_under_wait` rewrites one built kernel:

* the wait goes right before the first top-level op that touches memory other
  than a static load (a load of another buffer, a store, an atomic, a barrier,
  an assert), so every such access, stores and atomics included, comes after it;
* ``tt.grid_dependency_launch_dependents`` right after the wait, never before:
  the next kernel can start only once every program of this one has passed its
  own wait, that is once the kernel before this one has completed, so a kernel
  two launches later never overtakes an unfinished one (dependences stay
  transitive);
* static loads after the wait move before it, with the pure index math they
  need, where nothing they need comes after the wait (a gather whose index is
  loaded stays);
* the first top-level loop whose body loads a static buffer (a looped
  reduction's row walk) has its first iteration peeled when its trip count is
  static and at least one, so that iteration's tile of the weight is loaded
  before the wait; a persistent row is one load, wholly before it.

Which launches carry the attribute is the pass's to decide
(``convert_loop_to_tt``): every launch of a kernel rewritten here, except
until a launch without the attribute of a kernel with a static, non-empty grid
has run in the same function -- that launch waits for everything before the
call (a weight written by the caller just before it, ``load_state_dict``), so
the loads before the wait of the launches after it read weights no kernel
running then writes. A launch after an extern call (cuBLAS, cuDNN, an ATen
kernel) is correct too: the programmatic edge from the extern's last kernel
fires when all its programs have triggered or exited (kernels that never
trigger: when they have exited; CUDA's ``CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC``),
and the wait still waits for that kernel's completion and memory flush before
anything reads what it wrote; the attribute relaxes the order only against the
kernel right before, and only as far as that kernel allows.
"""

from __future__ import annotations

from collections.abc import Iterator

import sympy
from xdsl.dialects import arith as xarith
from xdsl.dialects import builtin, func, scf
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import Pure

from coil.dialects import buffer as B
from coil.dialects import host, tt
from coil.dialects import loop as L
from coil.dialects.buffer import BufferType
from coil.dialects.tt import element_of
from coil.lowering.loop_to_tt.builder import const_value
from coil.transforms.extern_effects import extern_mutated_operands, extern_results_alias

STATIC_ARGUMENTS = ("coil.static", "coil.constant", "coil.folded")
"""Argument attributes of a function's inputs that are the same tensors call after
call and that only the caller changes, between calls: parameters and buffers
(AOTAutograd's static inputs), large constants, results of the constants
function (``buffer-hoist-constants``)."""

PURE_CALL_PREFIXES = ("tl.", "libdevice.")
"""``tt.call`` callees without memory effects (Triton's random numbers, libdevice)."""


def static_arguments(fn: func.FuncOp) -> set[SSAValue]:
    """The arguments of buffer-level ``fn`` (before ``convert-loop-to-tt``) that no
    op of ``fn`` writes: marked static (:data:`STATIC_ARGUMENTS`), and read only,
    through views, by loop nests' loads, extern calls that do not write them
    (nor return an alias of them that something writes), copies' sources and
    the return. Any other use (a nest's ``outs``, a ``buffer.reuse``, a launch
    of a kernel built elsewhere, an op not known here) makes it not static."""
    attrs = fn.arg_attrs.data if fn.arg_attrs is not None else [None] * len(fn.args)
    out: set[SSAValue] = set()
    for arg, d in zip(fn.body.block.args, attrs):
        if isinstance(d, DictionaryAttr) and any(k in d.data for k in STATIC_ARGUMENTS):
            if _only_read(arg):
                out.add(arg)
    return out


def _only_read(value: SSAValue) -> bool:
    for use in value.uses:
        user = use.operation
        if isinstance(user, B.ViewOp | L.ViewOp):
            if not _only_read(user.results[0]):
                return False
        elif isinstance(user, L.LoadOp | func.ReturnOp):
            continue
        elif isinstance(user, L.CopyOp):
            if user.dest is value:
                return False
        elif isinstance(user, L.LoopOp):
            if value in user.outs:
                return False
        elif isinstance(user, B.ExternOp):
            k = list(user.args).index(value) if value in user.args else -1
            if k < 0 or k in extern_mutated_operands(user):
                return False
            if extern_results_alias(user) and not all(_only_read(r) for r in user.res):
                return False
        else:
            return False
    return True


def _is_pointer(v: SSAValue) -> bool:
    return isinstance(element_of(v.type), tt.PointerType)


def pointer_roots(v: SSAValue, entry: Block) -> set[int] | None:
    """The positions of the kernel arguments the pointer (or block of pointers)
    ``v`` is computed from (through ``tt.splat``, ``tt.broadcast``, ``tt.addptr``,
    selects...); None where it comes from anything else (a pointer carried by a
    loop, one an op makes from integers)."""
    roots: set[int] = set()
    seen: set[SSAValue] = set()
    todo = [v]
    while todo:
        value = todo.pop()
        if value in seen:
            continue
        seen.add(value)
        if isinstance(value, BlockArgument):
            if value.block is not entry:
                return None
            roots.add(value.index)
            continue
        owner = value.owner
        pointers = [o for o in owner.operands if _is_pointer(o)]
        if not pointers:
            return None
        todo += pointers
    return roots


class KernelAccesses:
    """Which ops of a kernel may run before its grid dependency wait."""

    def __init__(self, func: tt.FuncOp, static: frozenset[int]):
        self.func = func
        self.entry = func.body.block
        self.static = static

    def static_load(self, op: Operation) -> bool:
        """A ``tt.load`` whose pointers all come from static arguments."""
        if not isinstance(op, tt.LoadOp) or op.is_volatile.value.data:
            return False
        roots = pointer_roots(op.ptr, self.entry)
        return bool(roots) and roots <= self.static

    def free(self, op: Operation) -> bool:
        """``op`` (with the ops it holds) may run before the wait: it touches no
        memory, or only loads static arguments."""
        if isinstance(op, tt.LoadOp):
            return self.static_load(op)
        if isinstance(op, scf.ForOp | scf.IfOp | tt.ReduceOp | tt.ScanOp):
            return all(self.free(inner) for r in op.regions for b in r.blocks for inner in b.ops)
        if isinstance(op, scf.YieldOp | tt.ReduceReturnOp | tt.ScanReturnOp):
            return True
        if isinstance(op, tt.CallOp):
            return op.callee.string_value().startswith(PURE_CALL_PREFIXES)
        if isinstance(op, tt.ExternElementwiseOp):
            return True  # libdevice math, pure
        return bool(op.has_trait(Pure)) and not op.regions

    def holds_static_load(self, op: Operation) -> bool:
        return any(self.static_load(inner) for inner in op.walk())

    def first_bound(self) -> Operation:
        """The first top-level op that must come after the wait (the return at worst)."""
        for op in self.entry.ops:
            if isinstance(op, tt.ReturnOp) or not self.free(op):
                return op
        raise AssertionError("a tt.func ends with tt.return")


def _captured(op: Operation) -> Iterator[SSAValue]:
    """The values ``op`` and the ops inside it read from outside ``op``."""
    inside = set(op.walk())
    for inner in op.walk():
        for v in inner.operands:
            owner = v.owner
            if isinstance(owner, Operation) and owner in inside:
                continue
            if isinstance(owner, Block) and owner.parent_op() in inside:
                continue
            yield v


def _static_trips(loop: scf.ForOp) -> int | None:
    lb, ub, step = (const_value(v) for v in (loop.lb, loop.ub, loop.step))
    if not all(isinstance(x, int) for x in (lb, ub, step)) or step <= 0:
        return None
    return max(0, -(-(ub - lb) // step))


def peel_first_iteration(loop: scf.ForOp) -> bool:
    """Run ``loop``'s first iteration before it, as straight-line ops (its body
    cloned with the induction variable at the lower bound and the carried
    values at their inits); the loop then starts one step later, or is removed
    where it ran once. False (nothing changed) where its trip count is not a
    static number of at least one."""
    trips = _static_trips(loop)
    if not trips:
        return False
    body = loop.body.block
    mapper: dict[SSAValue, SSAValue] = {body.args[0]: loop.lb}
    mapper.update(zip(body.args[1:], loop.iter_args))
    yielded: list[SSAValue] = []
    for op in body.ops:
        if isinstance(op, scf.YieldOp):
            yielded = [mapper.get(v, v) for v in op.operands]
            break
        Rewriter.insert_op(op.clone(value_mapper=mapper), InsertPoint.before(loop))
    if trips == 1:
        for old, new in zip(loop.res, yielded):
            old.replace_all_uses_with(new)
        loop.detach()
        loop.erase()
        return True
    lb = const_value(loop.lb)
    step = const_value(loop.step)
    start = xarith.ConstantOp(IntegerAttr(lb + step, loop.lb.type))
    Rewriter.insert_op(start, InsertPoint.before(loop))
    loop.operands = [start.result, loop.ub, loop.step, *yielded]
    return True


def prefetch_under_wait(func: tt.FuncOp, static: frozenset[int]) -> None:
    """Rewrite kernel ``func`` for programmatic dependent launch (module doc):
    static loads, a looped row's first tile of them included, before a
    ``tt.grid_dependency_wait``, then ``tt.grid_dependency_launch_dependents``,
    then everything else. ``static`` are the positions of the pointer arguments
    that no kernel of the graph writes."""
    k = KernelAccesses(func, static)
    bound = k.first_bound()
    if static:
        after = _ops_from(bound)
        loop = next(
            (
                op
                for op in after
                if isinstance(op, scf.ForOp) and not k.free(op) and k.holds_static_load(op)
            ),
            None,
        )
        if loop is not None and peel_first_iteration(loop):
            bound = k.first_bound()
        _hoist_static_loads(k, bound)
    Rewriter.insert_op(tt.GridDependencyWaitOp(), InsertPoint.before(bound))
    Rewriter.insert_op(tt.GridDependencyLaunchDependentsOp(), InsertPoint.before(bound))


def _ops_from(op: Operation) -> list[Operation]:
    out = []
    at: Operation | None = op
    while at is not None:
        out.append(at)
        at = at.next_op
    return out


def _hoist_static_loads(k: KernelAccesses, bound: Operation) -> None:
    """Move the top-level static loads after ``bound``, with the ops after it
    that they need, before it, where all of those are free (module doc)."""
    block = k.entry
    for load in [op for op in _ops_from(bound) if k.static_load(op)]:
        after = set(_ops_from(bound))
        needed: set[Operation] = set()
        todo = [load]
        ok = True
        while todo and ok:
            op = todo.pop()
            if op in needed:
                continue
            needed.add(op)
            for v in _captured(op):
                owner = v.owner
                if isinstance(owner, Operation) and owner.parent_block() is block:
                    if owner in after:
                        if not k.free(owner):
                            ok = False
                            break
                        todo.append(owner)
        if not ok:
            continue
        for op in [o for o in _ops_from(bound) if o in needed]:
            op.detach()
            Rewriter.insert_op(op, InsertPoint.before(bound))


LAUNCH_PDL = "launch_pdl"
"""The ``host.launch`` config key (Triton's compile option of the same name) that
launches the kernel with programmatic dependent launch."""


def _root(v: SSAValue) -> SSAValue:
    while isinstance(v.owner, B.ViewOp):
        v = v.owner.source
    return v


def _on_cuda(kernel: tt.FuncOp) -> bool:
    """A kernel over CUDA buffers (not one Triton's interpreter runs on the CPU,
    which has no grid dependency control: there the option changes nothing)."""
    device = kernel.attributes.get("coil.device")
    return isinstance(device, builtin.StringAttr) and device.data.startswith("cuda")


def _static_grid(launch: host.LaunchOp) -> bool:
    """The launch's grid is a number of programs known now, and not zero."""
    extents = [sympy.sympify(e) for e in launch.grid.data]
    return all(e.is_Integer and int(e) > 0 for e in extents)


def launch_dependent(fn: func.FuncOp, kernels: list[tt.FuncOp], static: set[SSAValue]) -> None:
    """Rewrite ``kernels`` (just built for ``fn``'s nests) with
    :func:`prefetch_under_wait`, the static pointer arguments being those every
    launch of the kernel passes a view of a ``static`` argument at, and give the
    launches of them the config ``launch_pdl = 1``, except those before the
    first launch in ``fn`` (of any kernel) that runs without it and whose grid
    is static and not empty: that launch waits for all the stream's earlier
    work, which the loads before the waits of the launches after it rely on
    (module doc). Kernels over CPU buffers (Triton's interpreter) are left as
    they are."""
    by_name = {k.sym_name.data: k for k in kernels if _on_cuda(k)}
    positions: dict[str, frozenset[int]] = {}
    for launch in fn.walk():
        if not isinstance(launch, host.LaunchOp) or launch.kernel_name not in by_name:
            continue
        here = frozenset(
            k
            for k, a in enumerate(launch.args)
            if isinstance(a.type, BufferType) and _root(a) in static
        )
        name = launch.kernel_name
        positions[name] = positions[name] & here if name in positions else here
    for name, kernel in by_name.items():
        if name in positions:
            prefetch_under_wait(kernel, positions[name])
    barrier = False
    for op in fn.body.block.ops:
        if isinstance(op, host.LaunchOp):
            launches = [op]
        elif isinstance(op, host.AutotuneOp | host.VariantsOp):
            launches = list(op.launches)
        else:
            continue
        if not barrier:
            barrier = all(_static_grid(launch) for launch in launches)
            continue
        for launch in launches:
            if launch.kernel_name in positions:
                config = dict(launch.config.data) if launch.config is not None else {}
                config[LAUNCH_PDL] = IntegerAttr(1, 64)
                launch.properties["config"] = DictionaryAttr(config)


__all__ = [
    "LAUNCH_PDL",
    "KernelAccesses",
    "launch_dependent",
    "peel_first_iteration",
    "pointer_roots",
    "prefetch_under_wait",
    "static_arguments",
]
