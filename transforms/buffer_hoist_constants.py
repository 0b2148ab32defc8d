"""buffer-hoist-constants: compute what depends on parameters alone once per
parameter version, not on every call (Inductor's freezing and constant
folding, ``torch/_inductor/freezing.py`` / ``constant_folding.py``, and its
``split_const_gm``: a constants graph run when the weights change).

An inference graph transforms some parameters on every call: a convolution
weight copied to channels-last for cuDNN, a matrix product's weight padded to an
aligned width for cuBLAS (``gemm_alignment.py``), a weight cast to another
dtype. Those computations read parameters and buffers only (graph inputs the
importer marks ``coil.static``: AOTAutograd's static inputs, and large
``coil.constant`` tensors), so their results change only when a parameter
does. This pass moves them into a second function the wrapper runs once per
version of the parameters it reads, and passes its results to the main
function as arguments.

Input: buffer-level functions (after ``bufferize``, before ``memory-plan``).
With ``inference=true`` (the torch.compile backend sets it for inference
graphs; a training graph's parameters change every step), per function
``@f``:

1. a value is *constant* when it is a ``coil.static``/``coil.constant``
   argument that no op of ``@f`` writes, or is made by an op whose every input
   is constant (see :class:`ConstantValues`): a ``buffer.view`` of one; a
   bufferized nest with static ranges whose loads read only constant buffers
   and whose outs are allocations it alone writes (no random numbers: those
   read ``loop.seed``); a ``buffer.extern`` of side-effect-free aten ops with
   static result types that writes no operand;
2. the nests and externs among them that read a static argument (directly or
   through other constant ops; a constructor alone, such as an ``arange``, is
   left where it is, as Inductor's ``skip_constructors`` leaves it) move, with
   the allocations they write and the views and constant ops they read, into
   ``@f_constants``, whose arguments are the static arguments they read
   (``{coil.input = k}``: position ``k`` among ``@f``'s arguments) and whose
   results are the buffers ``@f`` still reads;
3. ``@f`` gets one trailing argument per result (``{coil.folded = r}``: result
   ``r`` of ``@f_constants``; ``coil.aligned``, as fresh allocations are), the
   attribute ``coil.constants = @f_constants``, and ``coil.folded_bytes``: the
   storage the cached results hold between calls (``memory-plan``'s
   ``coil.peak_bytes`` counts what a call allocates, not its inputs). A result of ``@f`` that
   would be such an argument, or a view of one, is copied first: the caller
   owns what ``@f`` returns, and the cached buffer must not change under it.

Guarantees: ``@f_constants`` followed by ``@f`` computes what ``@f`` computed;
``@f_constants`` reads only the arguments it names and writes only its own
allocations; nothing moves without ``inference=true``. The wrapper
(``-t python``) caches the results per identity, ``_version`` and data pointer
of the inputs it names (``runtime/wrapper.py``: ``ConstantCache``), so an
in-place update of a weight (``load_state_dict``, an optimizer step) computes
them again at the next call.

Memory: the cached results live as long as the parameters they come from;
the main function's plan (``memory-plan``) no longer holds the per-call copies.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, ModuleOp, SymbolRefAttr
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import Pure

from coil.dialects import buffer as B
from coil.dialects import loop as L
from coil.dialects.aten import ConstantOp, TensorConstantOp
from coil.dialects.symbolic import ExprAttr, to_expr
from coil.transforms.extern_effects import extern_mutated_operands, extern_results_alias
from coil.transforms.loop_utils import copy_nest

log = logging.getLogger("coil")

STATIC_ATTRS = ("coil.static", "coil.constant")
"""Argument attributes of inputs passed unchanged call after call."""


def _static_type(t: Attribute) -> bool:
    if not isinstance(t, B.BufferType):
        return False
    exprs = [*t.shape_attr.data, *t.strides_attr.data, t.offset_attr.data]
    return all(to_expr(e).is_Integer for e in exprs)


def _top(op: Operation, block: Block) -> Operation:
    """The op of ``block`` that holds ``op`` (``op`` itself when it is one)."""
    while op.parent_block() is not block:
        parent = op.parent_op()
        assert parent is not None
        op = parent
    return op


def captured(op: Operation) -> Iterator[SSAValue]:
    """The values ``op`` and the ops in its regions read from outside ``op``."""
    inside = {op, *op.walk()}
    for inner in op.walk():
        for v in inner.operands:
            owner = v.owner
            if isinstance(owner, Operation):
                if owner in inside:
                    continue
            elif isinstance(owner, Block) and owner.parent_op() in inside:
                continue
            yield v


def _pure_region(ext: B.ExternOp) -> bool:
    for inner in ext.body.block.ops:
        if isinstance(inner, B.YieldOp | ConstantOp | TensorConstantOp):
            continue
        if not inner.has_trait(Pure):
            return False
    return True


class ConstantValues:
    """Which values of a buffer-level function depend on its static arguments
    alone (rule 1 of the module doc), asked value by value (``bufferize`` asks
    while it still rewrites the ops after the one it is at)."""

    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        self.block = fn.body.block
        attrs = fn.arg_attrs.data if fn.arg_attrs is not None else [None] * len(fn.args)
        written = self._written_args()
        self.static: set[SSAValue] = {
            a
            for a, d in zip(self.block.args, attrs)
            if d is not None
            and any(k in d.data for k in STATIC_ATTRS)
            and _static_type(a.type)
            and a not in written
        }
        self._memo: dict[Operation, bool] = {}
        self._reads_static: dict[Operation, bool] = {}

    def _written_args(self) -> set[SSAValue]:
        """Arguments some op writes (through views): their values change during
        the call. (Nests write their ``outs``; externs the operands their
        schema marks written.)"""
        out: set[SSAValue] = set()

        def root(v: SSAValue) -> SSAValue:
            while isinstance(v.owner, B.ViewOp):
                v = v.owner.source
            return v

        for op in self.block.ops:
            if isinstance(op, L.LoopOp):
                out |= {root(v) for v in op.outs}
            elif isinstance(op, B.ExternOp):
                out |= {root(op.args[k]) for k in extern_mutated_operands(op)}
            elif isinstance(op, L.CopyOp):
                out.add(root(op.dest))
        return {v for v in out if isinstance(v, BlockArgument)}

    # ---- queries ----------------------------------------------------------------

    def is_constant(self, value: SSAValue) -> bool:
        if isinstance(value, BlockArgument):
            return value in self.static
        owner = value.owner
        return isinstance(owner, Operation) and self.op_is_constant(owner)

    def reads_static(self, value: SSAValue) -> bool:
        """A constant value computed (through any number of ops) from a static
        argument, not from constructors alone."""
        if isinstance(value, BlockArgument):
            return value in self.static
        owner = value.owner
        if not isinstance(owner, Operation) or not self.op_is_constant(owner):
            return False
        if owner not in self._reads_static:
            self._reads_static[owner] = False  # (cycles cannot occur; a guard anyway)
            self._reads_static[owner] = any(self.reads_static(v) for v in self.inputs(owner))
        return self._reads_static[owner]

    def inputs(self, op: Operation) -> list[SSAValue]:
        """What ``op`` reads: a nest's captured buffers, an extern's operands, a
        view's source; an allocation reads what its writers read."""
        if isinstance(op, B.AllocOp):
            return [v for w in self.writers(op.result) for v in self.inputs(w)]
        if isinstance(op, L.LoopOp):
            outs = set(op.outs)
            return [v for v in captured(op) if v not in outs]
        return list(op.operands)

    def writers(self, buf: SSAValue) -> list[Operation]:
        """Top-level ops that write ``buf`` or a view of it."""
        out: list[Operation] = []
        for use in buf.uses:
            user = use.operation
            if isinstance(user, B.ViewOp):
                out += self.writers(user.result)
            elif isinstance(user, L.LoopOp) and use.index < len(user.outs):
                out.append(user)
            elif isinstance(user, B.ExternOp) and use.index in extern_mutated_operands(user):
                out.append(user)
            elif isinstance(user, L.CopyOp) and user.dest is buf:
                out.append(user)
        return out

    def op_is_constant(self, op: Operation) -> bool:
        if op.parent_block() is not self.block:
            return False
        if op not in self._memo:
            self._memo[op] = False  # what a cycle would see
            self._memo[op] = self._decide(op)
        return self._memo[op]

    def _decide(self, op: Operation) -> bool:
        if isinstance(op, B.ViewOp):
            return self.is_constant(op.source)
        if isinstance(op, B.AllocOp):
            writers = self.writers(op.result)
            return (
                len(writers) == 1
                and isinstance(writers[0], L.LoopOp)
                and _static_type(op.result.type)
                and self.op_is_constant(writers[0])
            )
        if isinstance(op, L.LoopOp):
            if not op.outs or op.res:
                return False
            if not all(to_expr(e).is_Integer for e in op.ranges.data):
                return False
            for out in op.outs:
                alloc = out.owner
                if not isinstance(alloc, B.AllocOp) or self.writers(out) != [op]:
                    return False
            reads = [v for v in captured(op) if v not in set(op.outs)]
            return all(isinstance(v.type, B.BufferType) and self.is_constant(v) for v in reads)
        if isinstance(op, B.ExternOp):
            return (
                bool(op.res)
                and not extern_mutated_operands(op)
                and all(_static_type(r.type) for r in op.res)
                and all(self.is_constant(a) for a in op.args)
                and _pure_region(op)
            )
        return False

    def is_work(self, op: Operation) -> bool:
        """A constant nest or extern that makes new data from a static argument
        (what is worth computing once)."""
        if isinstance(op, L.LoopOp):
            ok = self.op_is_constant(op)
        elif isinstance(op, B.ExternOp):
            ok = self.op_is_constant(op) and not extern_results_alias(op)
        else:
            return False
        return ok and any(self.reads_static(v) for v in self.inputs(op))


# --------------------------------------------------------------------------
# The split
# --------------------------------------------------------------------------


def _hoisted_ops(values: ConstantValues) -> list[Operation]:
    """The ops that move or are copied into the constants function, in order:
    the work ops, the allocations they write, and the constant ops they read."""
    block = values.block
    chosen: set[Operation] = set()
    stack = [op for op in block.ops if values.is_work(op)]
    while stack:
        op = stack.pop()
        if op in chosen:
            continue
        chosen.add(op)
        needed = list(values.inputs(op))
        if isinstance(op, L.LoopOp):
            needed += list(op.outs)
        if isinstance(op, B.AllocOp):
            stack += values.writers(op.result)
        for v in needed:
            owner = v.owner
            if isinstance(owner, Operation) and owner not in chosen:
                stack.append(owner)
    return [op for op in block.ops if op in chosen]


def _staying_views(hoisted: list[Operation], block: Block) -> set[Operation]:
    """The hoisted views the main function still reads (they are copied into the
    constants function, and stay; a view costs nothing)."""
    inside = set(hoisted)
    stay: set[Operation] = set()
    for op in reversed(hoisted):
        if isinstance(op, B.ViewOp) and any(
            (top := _top(u.operation, block)) not in inside or top in stay for u in op.result.uses
        ):
            stay.add(op)
    return stay


def _copy_result(ret: func.ReturnOp, k: int) -> None:
    """Return a copy of the ``k``-th result (it reads the constants' storage)."""
    value = ret.arguments[k]
    t = value.type
    alloc = B.AllocOp(B.BufferType(t.shape, t.element_type, t.strides, 0, t.device_attr.data))
    alloc.result.name_hint = f"{value.name_hint or 'folded'}_copy"
    Rewriter.insert_op(alloc, InsertPoint.before(ret))
    Rewriter.insert_op(
        copy_nest(value, alloc.result, location=ret.location), InsertPoint.before(ret)
    )
    ret.operands[k] = alloc.result


def _reads_folded(value: SSAValue, folded: set[SSAValue]) -> bool:
    while isinstance(value.owner, B.ViewOp):
        value = value.owner.source
    return value in folded


def hoist(fn: func.FuncOp, module: ModuleOp) -> func.FuncOp | None:
    """Split ``fn`` (see the module doc); returns the constants function, or None
    when nothing in ``fn`` is worth computing once."""
    values = ConstantValues(fn)
    hoisted = _hoisted_ops(values)
    if not hoisted:
        return None
    block = fn.body.block
    stay = _staying_views(hoisted, block)
    # What leaves fn: the hoisted ops but the views it still reads.
    moved = {op for op in hoisted if op not in stay}
    # The results: buffers the moved ops make that ops staying in fn read.
    results: list[SSAValue] = []
    for op in hoisted:
        if op in moved and not isinstance(op, B.ViewOp):
            results += [
                r for r in op.results if any(_top(u.operation, block) not in moved for u in r.uses)
            ]
    if not results:
        return None
    # The constants function: static arguments in, the results out.
    arg_attrs = fn.arg_attrs.data if fn.arg_attrs is not None else [None] * len(fn.args)
    reads = {v for op in hoisted for v in values.inputs(op) if isinstance(v, BlockArgument)}
    params = [a for a in block.args if a in reads]
    new_block = Block(arg_types=[a.type for a in params])
    mapping: dict[SSAValue, SSAValue] = {}
    new_attrs = []
    for old, new in zip(params, new_block.args):
        new.name_hint = old.name_hint
        mapping[old] = new
        attrs: dict[str, Attribute] = {"coil.input": IntegerAttr(old.index, 64)}
        given = arg_attrs[old.index]
        if given is not None and "coil.aligned" in given.data:
            attrs["coil.aligned"] = builtin.UnitAttr()
        new_attrs.append(DictionaryAttr(attrs))
    for op in hoisted:
        new_block.add_op(op.clone(value_mapper=mapping))
    new_block.add_op(func.ReturnOp(*[mapping[r] for r in results]))
    name = _fresh_symbol(module, f"{fn.sym_name.data}_constants")
    constants = func.FuncOp(
        name,
        ([a.type for a in params], [r.type for r in results]),
        Region(new_block),
        arg_attrs=ArrayAttr(new_attrs),
    )
    # The main function reads the results as trailing arguments.
    attrs_out = list(arg_attrs)
    folded: set[SSAValue] = set()
    for k, r in enumerate(results):
        arg = block.insert_arg(r.type, len(block.args))
        arg.name_hint = r.name_hint
        folded.add(arg)
        attrs_out.append(
            DictionaryAttr({"coil.folded": IntegerAttr(k, 64), "coil.aligned": builtin.UnitAttr()})
        )
        r.replace_uses_with_if(arg, lambda use: _top(use.operation, block) not in moved)
    for op in reversed(hoisted):
        if op in moved:
            Rewriter.erase_op(op)
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    for k, v in enumerate(list(ret.arguments)):
        if isinstance(v.type, B.BufferType) and _reads_folded(v, folded):
            _copy_result(ret, k)
    fn.arg_attrs = ArrayAttr([a if a is not None else DictionaryAttr({}) for a in attrs_out])
    fn.function_type = builtin.FunctionType.from_lists(
        [a.type for a in block.args], list(fn.function_type.outputs.data)
    )
    fn.attributes["coil.constants"] = SymbolRefAttr(name)
    # What the cache holds between calls for this function (memory-plan's
    # coil.peak_bytes counts what a call allocates, not its inputs).
    held = sum((r.type.storage_bytes() for r in results), sympy.Integer(0))
    fn.attributes["coil.folded_bytes"] = ExprAttr(held)
    return constants


def _fresh_symbol(module: ModuleOp, base: str) -> str:
    taken = {op.sym_name.data for op in module.ops if hasattr(op, "sym_name")}
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name


@dataclass(frozen=True)
class BufferHoistConstantsPass(ModulePass):
    """Compute parameter-only work once per parameter version (see the module doc)."""

    name = "buffer-hoist-constants"

    inference: bool = False
    """The functions are inference graphs (only those are split)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.inference:
            return
        for fn in list(op.ops):
            if not isinstance(fn, func.FuncOp) or fn.is_declaration:
                continue
            if "coil.constants" in fn.attributes or _is_constants_function(op, fn):
                continue
            constants = hoist(fn, op)
            if constants is None:
                continue
            Rewriter.insert_op(constants, InsertPoint.after(fn))
            log.debug(
                "coil: buffer-hoist-constants: %d buffer(s) of @%s computed once per "
                "parameter version in @%s",
                len(constants.function_type.outputs.data),
                fn.sym_name.data,
                constants.sym_name.data,
            )


def _is_constants_function(module: ModuleOp, fn: func.FuncOp) -> bool:
    name = fn.sym_name.data
    for other in module.ops:
        ref = other.attributes.get("coil.constants")
        if isinstance(ref, SymbolRefAttr) and ref.root_reference.data == name:
            return True
    return False


__all__ = ["BufferHoistConstantsPass", "ConstantValues", "captured", "hoist"]
