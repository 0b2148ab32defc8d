"""host-combine-launches: run independent elementwise kernels as one launch.

Horizontal fusion across kernels that share no data, as Inductor's foreach and
combo kernels (``ForeachKernelSchedulerNode``, ``codegen/triton_combo_kernel.py``):
a compiled ``optimizer.step()`` updates each parameter with its own kernel
(the same chain of pointwise ops over tensors of different shapes), one launch
per parameter; a model of a few hundred parameter tensors paid a few hundred
launches for one step. Here consecutive launches that are independent become
one launch of a *combo kernel*: its grid is the sum of theirs and each program
runs the sub-kernel whose range of program ids holds it, with its program id
shifted to start at zero:

    pid = tl.program_id(0)
    if 0 <= pid < 4:
        <kernel A, its program id = pid>
    if 4 <= pid < 260:
        <kernel B, its program id = pid - 4>

Input: functions after ``convert-loop-to-tt`` (``host.launch`` of ``tt.func``
kernels among ``buffer`` or ``host`` ops). A launch can join when

* its kernel is elementwise: no ``tt.reduce``, loop, atomic or
  ``tt.get_num_programs``, only program ids along x, a 1-D grid ``[n, 1, 1]``;
* its launch config (``num_warps``, ``num_stages``) is the group's;
* it is independent of the launches already in the group: it writes no storage
  they read or write, and reads no storage they write (storage through views,
  reused buffers and aliasing extern results, so a buffer the memory plan hands
  from one kernel to another is a dependence);
* only allocations, views, reuses, frees and seeds lie between it and the
  group (anything else, an ATen call say, ends the group);
* the group stays within ``max-args`` pointer and scalar arguments and
  ``max-kernels`` sub-kernels (0: no limit).

The combined launch takes the place of the group's last launch; frees between
the group's first and last launch move after it (a sub-kernel may read a buffer
until the combined launch ends). Sub-kernels keep their tiles; program offsets
are constants, or scalar arguments where grids are symbolic. Identical combo
kernels are emitted once. Guarantees: each sub-kernel computes what its launch
computed (it reads the same values: nothing in the group writes what another
member reads); kernels no longer launched are removed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import sympy
from xdsl.context import Context
from xdsl.dialects import arith, builtin, scf
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, StringAttr, i32, i64
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from coil.dialects import buffer as B
from coil.dialects import host, tt
from coil.dialects.buffer import BufferType
from coil.passinfo import check_options
from coil.transforms.extern_effects import aliased_operands, extern_results_alias

_ALLOCS = ("buffer.alloc", "host.empty_strided", "loop.seed", "host.seed", "host.semaphores")
"""Ops that make fresh values and touch no memory a kernel reads."""
_ALIASES = ("buffer.view", "buffer.reuse", "host.reinterpret")
"""Ops whose result is a buffer over their source's storage."""
_FREES = ("buffer.dealloc", "host.free")
_COSTS_SHOWN = 4
"""Sub-kernels whose static cost a combo kernel's ``coil.cost`` lists."""
_NOT_ELEMENTWISE = ("tt.reduce", "tt.atomic_rmw", "tt.get_num_programs", "tt.dot", "scf.for")


def _storage(value: SSAValue) -> set[SSAValue]:
    """The storage holders ``value`` may live in, through views, reused buffers
    and extern results that may alias their operands."""
    owner = value.owner
    if isinstance(owner, Operation) and owner.name in _ALIASES:
        return _storage(owner.operands[0])
    if isinstance(owner, B.ExternOp | host.ExternOp):
        roots = {value}
        if extern_results_alias(owner):
            for a in aliased_operands(owner, list(owner.results).index(value)):
                if isinstance(a.type, BufferType):
                    roots |= _storage(a)
        return roots
    return {value}


def written_arguments(kernel: tt.FuncOp) -> set[int]:
    """Positions of the pointer arguments ``kernel`` stores through (``tt.store``
    or an atomic), found by walking each store's pointer back to the arguments."""
    args = kernel.body.block.args
    written: set[int] = set()
    for op in kernel.walk():
        if not isinstance(op, tt.StoreOp) and op.name != "tt.atomic_rmw":
            continue
        pending: list[SSAValue] = [op.operands[0]]
        seen: set[SSAValue] = set()
        while pending:
            v = pending.pop()
            if v in seen:
                continue
            seen.add(v)
            if isinstance(v, BlockArgument) and v.owner is kernel.body.block:
                written.add(args.index(v))
            elif isinstance(v.owner, Operation):
                pending.extend(o for o in v.owner.operands if _is_pointer(o.type))
    return written


def _is_pointer(t) -> bool:
    if isinstance(t, tt.PointerType):
        return True
    return isinstance(t, builtin.TensorType) and isinstance(t.element_type, tt.PointerType)


def elementwise(kernel: tt.FuncOp) -> bool:
    """Whether ``kernel`` can be a sub-kernel: no reduction, loop, atomic or grid
    query, program ids along x only, one ``tt.return`` at its end."""
    block = kernel.body.block
    for op in kernel.walk():
        if op.name in _NOT_ELEMENTWISE:
            return False
        if isinstance(op, tt.GetProgramIdOp) and op.axis.value.data != 0:
            return False
        if isinstance(op, tt.ReturnOp) and op is not block.last_op:
            return False
    return isinstance(block.last_op, tt.ReturnOp) and not block.last_op.operands


@dataclass
class _Member:
    launch: host.LaunchOp
    kernel: tt.FuncOp
    reads: set[SSAValue]
    writes: set[SSAValue]


@dataclass
class _Group:
    members: list[_Member] = field(default_factory=list)
    reads: set[SSAValue] = field(default_factory=set)
    writes: set[SSAValue] = field(default_factory=set)
    args: set[SSAValue] = field(default_factory=set)
    scalars: set[sympy.Expr] = field(default_factory=set)
    frees: list[Operation] = field(default_factory=list)

    def config(self):
        return self.members[0].launch.config if self.members else None

    def add(self, m: _Member) -> None:
        self.members.append(m)
        self.reads |= m.reads
        self.writes |= m.writes
        self.args |= set(m.launch.args)
        self.scalars |= set(m.launch.scalars.data)


@dataclass(frozen=True)
class HostCombineLaunchesPass(ModulePass):
    """Combine consecutive independent elementwise launches into one (see the module doc)."""

    name = "host-combine-launches"

    max_args: int = 250
    """Kernel arguments (pointers, seeds, sizes, program offsets) a combo kernel
    may take at most (Inductor's foreach kernels stop at 250)."""
    max_kernels: int = 0
    """Sub-kernels a combo kernel may hold at most (0: no limit)."""

    def __post_init__(self) -> None:
        check_options(self)

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        kernels = {k.sym_name.data: k for k in op.ops if isinstance(k, tt.FuncOp)}
        state = _State(op, kernels, self)
        for fn in list(op.ops):
            if isinstance(fn, tt.FuncOp) or not fn.regions or not fn.regions[0].blocks:
                continue
            state.run(fn.regions[0].block)
        state.finish()


class _State:
    def __init__(self, module: builtin.ModuleOp, kernels: dict[str, tt.FuncOp], options):
        self.module = module
        self.kernels = kernels
        self.options = options
        self.eligible: dict[str, bool] = {}
        self.written: dict[str, set[int]] = {}
        self.made: dict[tuple, str] = {}  # combo key -> kernel name
        self.count = 0

    # ---- grouping ----

    def member(self, launch: host.LaunchOp) -> _Member | None:
        name = launch.kernel_name
        kernel = self.kernels.get(name)
        if kernel is None:
            return None
        if name not in self.eligible:
            self.eligible[name] = elementwise(kernel)
            self.written[name] = written_arguments(kernel)
        grid = [sympy.sympify(g) for g in launch.grid.data]
        if not self.eligible[name] or grid[1] != 1 or grid[2] != 1:
            return None
        reads: set[SSAValue] = set()
        writes: set[SSAValue] = set()
        for k, a in enumerate(launch.args):
            if not isinstance(a.type, BufferType):
                continue
            roots = _storage(a)
            (writes if k in self.written[name] else reads).update(roots)
        return _Member(launch, kernel, reads, writes)

    def fits(self, group: _Group, m: _Member) -> bool:
        if group.config() != m.launch.config:
            return False
        if m.writes & (group.reads | group.writes) or m.reads & group.writes:
            return False
        limit = self.options.max_kernels
        if limit and len(group.members) >= limit:
            return False
        args = group.args | set(m.launch.args)
        scalars = group.scalars | set(m.launch.scalars.data)
        offsets = len(group.members)  # at most one offset argument per boundary
        return len(args) + len(scalars) + offsets <= self.options.max_args

    def run(self, block: Block) -> None:
        group = _Group()
        for op in list(block.ops):
            if isinstance(op, host.LaunchOp) and (m := self.member(op)) is not None:
                if group.members and not self.fits(group, m):
                    self.flush(group)
                    group = _Group()
                group.add(m)
            elif op.name in _ALLOCS or op.name in _ALIASES:
                continue
            elif op.name in _FREES:
                if group.members:
                    group.frees.append(op)
            else:
                self.flush(group)
                group = _Group()
        self.flush(group)

    # ---- rewriting ----

    def flush(self, group: _Group) -> None:
        members = group.members
        if len(members) < 2:
            return
        last = members[-1].launch
        launch = self.combine(members)
        # The combined launch stands where the group's first launch was
        # written: its source line (each sub-kernel keeps its own inside).
        launch.location = members[0].launch.location
        Rewriter.insert_op(launch, InsertPoint.before(last))
        for m in members:
            Rewriter.erase_op(m.launch)
        # Sub-kernels may read a buffer until the combined launch ends.
        for free in reversed(group.frees):
            if launch.is_before_in_block(free):
                continue
            free.detach()
            Rewriter.insert_op(free, InsertPoint.after(launch))

    def combine(self, members: Sequence[_Member]) -> host.LaunchOp:
        args: list[SSAValue] = []
        for m in members:
            args += [a for a in m.launch.args if a not in args]
        scalars: list[sympy.Expr] = []
        for m in members:
            scalars += [s for s in m.launch.scalars.data if s not in scalars]
        grids = [sympy.sympify(m.launch.grid.data[0]) for m in members]
        starts = [sympy.Integer(0)]
        for g in grids:
            starts.append(sympy.expand(starts[-1] + g))
        static = all(s.is_Integer for s in starts)
        wide = not static or int(starts[-1]) >= 2**31
        # Symbolic offsets are kernel arguments (one per boundary between sub-kernels).
        offsets = [] if static else list(starts[1:-1])
        # Two combos are the same kernel when their sub-kernels (already deduped
        # by body), the arguments they share, their sizes and offsets are: the
        # repeated layers of a model make the same combos again, which are not
        # built a second time.
        key = (
            tuple(m.launch.kernel_name for m in members),
            tuple(tuple(args.index(a) for a in m.launch.args) for m in members),
            tuple(tuple(scalars.index(x) for x in m.launch.scalars.data) for m in members),
            tuple(starts) if static else len(offsets),
        )
        config = dict(members[0].launch.config.data) if members[0].launch.config else None
        grid = [starts[-1], sympy.Integer(1), sympy.Integer(1)]
        if key in self.made:
            return host.LaunchOp(self.made[key], grid, args, scalars + offsets, config)
        arg_types = [
            _arg_type(a, m) for a in args for m in [next(m for m in members if a in m.launch.args)]
        ]
        arg_types += [i64] * (len(scalars) + len(offsets))
        func = tt.FuncOp("coil_combo", arg_types, [], visibility="public")
        block = func.body.block
        names = self.arg_names(args, members)
        for a, n in zip(block.args, names + [_scalar_name(s) for s in scalars]):
            a.name_hint = n
        for k, a in enumerate(block.args[len(args) + len(scalars) :]):
            a.name_hint = f"pid_end{k}"
        arg_of = dict(zip(args, block.args))
        scalar_of = dict(zip(scalars, block.args[len(args) :]))
        offset_args = block.args[len(args) + len(scalars) :]
        index = i64 if wide else i32

        def emit(op: Operation) -> SSAValue:
            block.add_op(op)
            return op.results[0]

        pid = emit(tt.GetProgramIdOp(0))
        pid.name_hint = "pid"
        if wide:
            pid = emit(arith.ExtSIOp(pid, i64))

        def bound(k: int) -> SSAValue:  # the first program after sub-kernel k - 1
            if static:
                return emit(arith.ConstantOp(IntegerAttr(int(starts[k]), index)))
            return offset_args[k - 1]

        lo = None
        for k, m in enumerate(members):
            # Programs [start_k, start_k+1): the first sub-kernel needs no lower
            # bound, the last no upper one (the grid ends there).
            hi = bound(k + 1) if k + 1 < len(members) else None
            checks = []
            if lo is not None:
                checks.append(emit(arith.CmpiOp(pid, lo, "sge")))
            if hi is not None:
                checks.append(emit(arith.CmpiOp(pid, hi, "slt")))
            inside = checks[0] if len(checks) == 1 else emit(arith.AndIOp(*checks))
            local = Block()
            local_pid = pid
            if k:
                sub = arith.SubiOp(pid, lo)
                local.add_op(sub)
                local_pid = sub.result
            if wide:
                trunc = arith.TruncIOp(local_pid, i32)
                local.add_op(trunc)
                local_pid = trunc.result
            if local_pid is not pid:
                local_pid.name_hint = f"pid{k}"
            self.inline(m, local, local_pid, arg_of, scalar_of)
            local.add_op(scf.YieldOp())
            block.add_op(scf.IfOp(inside, [], Region(local)))
            lo = hi
        block.add_op(tt.ReturnOp())
        self.describe(func, members)
        return host.LaunchOp(self.name_for(func, key), grid, args, scalars + offsets, config)

    def inline(
        self,
        m: _Member,
        into: Block,
        pid: SSAValue,
        arg_of: dict[SSAValue, SSAValue],
        scalar_of: dict[sympy.Expr, SSAValue],
    ) -> None:
        """Clone ``m``'s kernel body into ``into``: its arguments become the combo
        kernel's, its program id ``pid``."""
        kernel_args = m.kernel.body.block.args
        n_args = len(m.launch.args)
        mapping: dict[SSAValue, SSAValue] = {}
        for a, v in zip(kernel_args[:n_args], m.launch.args):
            mapping[a] = arg_of[v]
        for a, s in zip(kernel_args[n_args:], m.launch.scalars.data):
            mapping[a] = scalar_of[s]
        for op in m.kernel.body.block.ops:
            if isinstance(op, tt.ReturnOp):
                continue
            if isinstance(op, tt.GetProgramIdOp):
                mapping[op.result] = pid
                continue
            into.add_op(op.clone(value_mapper=mapping))

    def arg_names(self, args: Sequence[SSAValue], members: Iterable[_Member]) -> list[str]:
        """``in_ptrK``/``out_ptrK`` (written by some sub-kernel), ``seedK``."""
        names = []
        for k, a in enumerate(args):
            if not isinstance(a.type, BufferType):
                names.append(f"seed{k}")
                continue
            written = any(
                list(m.launch.args).index(a) in self.written[m.launch.kernel_name]
                for m in members
                if a in m.launch.args
            )
            names.append(f"{'out' if written else 'in'}_ptr{k}")
        return names

    def describe(self, func: tt.FuncOp, members: Sequence[_Member]) -> None:
        first = members[0].kernel.attributes
        func.attributes["coil.kind"] = StringAttr("combo")
        if "coil.device" in first:
            func.attributes["coil.device"] = first["coil.device"]
        for key in ("coil.source_lines", "coil.aten_ops"):
            seen: list[str] = []
            for m in members:
                attr = m.kernel.attributes.get(key)
                if isinstance(attr, ArrayAttr):
                    seen += [s.data for s in attr.data if s.data not in seen]
            func.attributes[key] = ArrayAttr([StringAttr(s) for s in seen])
        costs = []
        for m in members[:_COSTS_SHOWN]:
            cost = m.kernel.attributes.get("coil.cost")
            costs.append(cost.data if isinstance(cost, StringAttr) else "?")
        more = len(members) - len(costs)
        func.attributes["coil.cost"] = StringAttr(
            f"{len(members)} sub-kernels: "
            + " | ".join(costs)
            + (f" | ... {more} more" if more else "")
        )

    def name_for(self, func: tt.FuncOp, key: tuple) -> str:
        """Insert ``func`` (a combo no other has the ``key`` of) under a fresh name."""
        while f"coil_combo_{self.count}" in self.kernels:
            self.count += 1
        name = f"coil_combo_{self.count}"
        func.sym_name = StringAttr(name)
        self.kernels[name] = func
        self.made[key] = name
        # Before the first function that is not a kernel: kernels come first.
        anchor = next(o for o in self.module.ops if not isinstance(o, tt.FuncOp))
        Rewriter.insert_op(func, InsertPoint.before(anchor))
        return name

    def finish(self) -> None:
        """Remove kernels no launch names any more."""
        used = {o.kernel_name for o in self.module.walk() if isinstance(o, host.LaunchOp)} | {
            o.callee.string_value() for o in self.module.walk() if isinstance(o, tt.CallOp)
        }
        for name, kernel in list(self.kernels.items()):
            if name not in used and kernel.parent is not None:
                Rewriter.erase_op(kernel)


def _arg_type(value: SSAValue, m: _Member):
    return m.kernel.body.block.args[list(m.launch.args).index(value)].type


def _scalar_name(s: sympy.Expr) -> str:
    return s.name if isinstance(s, sympy.Symbol) else "size"


__all__ = ["HostCombineLaunchesPass", "elementwise", "written_arguments"]
