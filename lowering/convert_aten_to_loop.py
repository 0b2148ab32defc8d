"""convert-aten-to-loop: aten ops become loop nests, views become index maps.

Input: functions at the aten level (after the aten pipeline). Output:

* graph inputs become buffers with their real layout (``!buffer.buffer``);
* each aten op with a lowering (``lowering/aten_to_loop/*``, one function per
  op family, like Inductor's ``lowering.py``) becomes ``loop.pointwise`` /
  ``loop.reduction`` nests, or a ``loop.view`` (reshape, permute, expand,
  slice ... an index map on its producer, never a copy);
* every other op -- mm, convolution, custom ops, anything with no lowering or
  with operands a lowering declines (unsupported dtypes, data-dependent
  scalars) -- becomes a ``buffer.extern`` call of the same aten op. Nothing
  fails for want of a lowering; each op sent to ATen is logged once (a warning,
  except for the ops called by design: matmuls, convolutions, the c10d
  collectives and their waits);
* random ops draw from one ``loop.seed`` per function; ``copy_`` into a graph
  input becomes ``loop.copy``;
* the function's results are loop values; the layouts eager returns are kept
  in the function attribute ``coil.result_types`` for bufferize;
* every op built for an aten op (nests, their body ops, views, externs) carries
  its provenance as a location: ``loc("aten.amax"("models.py":37:0))`` -- MLIR's
  name location, the aten op (overload dropped) around the user line. Passes
  that clone keep it; kernels and wrapper lines name it (``coil.ir.source_line``).

The lowerings are functions in a registry keyed by overload (Inductor's
``lowerings`` dict) applied by one in-order walk, not one RewritePattern per
op: a lowering reads its operands' already-converted values and their aten
layouts (``Lowerer.aten_types``), and one that declines rolls back what it built
and becomes an extern call -- an ordered, all-or-nothing rewrite per op that a
greedy pattern driver would not give.

Guarantees: the module computes what the aten module computed (checked per
model by the reference executor); random ops draw from a ``loop.seed`` with
counter-based offsets, so they are equal in law, not bit for bit, to eager.
At its end the pass checks that no aten op is left outside extern regions.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import (
    ArrayAttr,
    FileLineColLoc,
    LocationAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import DiagnosticException

import coil.lowering.aten_to_loop  # noqa: F401  (its modules fill LOWERINGS as they are imported)
from coil.dialects import buffer as B
from coil.dialects import loop as L
from coil.dialects.aten import AtenOp, ConstantOp, OperatorOp, TensorConstantOp, TensorType
from coil.dialects.body_builder import CannotLower, ExternByDesign
from coil.lowering.aten_to_loop.lowerer import (
    LOWERINGS,
    Lowerer,
    extern_by_design,
    loop_type,
    register,
)
from coil.passinfo import check_options
from coil.strategy.hints import with_size_hints
from coil.transforms.input_level import aten_level_witness

log = logging.getLogger("coil")

_reported: set[str] = set()


def report_fallback(name: str, reason: str) -> None:
    """Log, once per overload, that an op runs through ATen."""
    if name in _reported:
        return
    _reported.add(name)
    if extern_by_design(name):
        log.debug("coil: %s is called through ATen (extern kernel)", name)
    else:
        why = f" ({reason})" if reason else ""
        log.warning("coil: no loop lowering for %s%s; calling ATen for it", name, why)


FALLBACKS = ("extern", "error")


def _lower_function(
    fn: func.FuncOp,
    fallback: str = "extern",
    matvec: str = "auto",
    deterministic: bool = False,
    gemm: str = "auto",
    tf32: bool = False,
) -> None:
    lowerer = Lowerer(fn, matvec, deterministic, gemm, tf32)
    block = fn.body.block
    # Graph inputs are buffers with their real layout.
    for arg in block.args:
        if isinstance(arg.type, TensorType):
            new_arg = Rewriter.replace_value_with_new_type(arg, B.buffer_type_for(arg.type))
            lowerer.aten_types[new_arg] = arg.type
    for op in list(block.ops):
        if (
            isinstance(op, func.ReturnOp | ConstantOp)
            or not op.results
            and not isinstance(op, AtenOp | OperatorOp)
        ):
            continue
        before = op.prev_op
        if isinstance(op, TensorConstantOp):
            lowerer.anchor = op
            new = lowerer.extern(op)
        elif isinstance(op, AtenOp | OperatorOp):
            lowerer.anchor = op
            new = _lower_op(lowerer, op, fallback)
        else:
            continue
        _locate_between(before, op, provenance(op))
        for old, value in zip(op.results, new):
            if value.name_hint is None:
                value.name_hint = old.name_hint
            if isinstance(old.type, TensorType):
                lowerer.aten_types.setdefault(value, old.type)
            old.replace_all_uses_with(value)
        Rewriter.erase_op(op)
    # Drop scalar constants nothing uses any more (extern regions hold clones),
    # and nests nothing reads: the unused result of a multi-result op (the
    # indices of an inference graph's max_pool2d_with_indices); a nest writes
    # only its results, and xDSL's dce keeps ops whose bodies read memory.
    for op in reversed(list(block.ops)):
        if isinstance(op, ConstantOp) and not op.result.uses:
            Rewriter.erase_op(op)
        elif isinstance(op, L.PointwiseOp | L.ReductionOp | L.ScanOp | L.ScatterOp) and not any(
            r.uses for r in op.results
        ):
            Rewriter.erase_op(op)
        elif isinstance(op, L.ViewOp) and not op.result.uses and _views_gemm(op):
            Rewriter.erase_op(op)  # aten_to_loop/gemm.py's [M, N] view of a [B, S, N] product
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    old_results = list(fn.function_type.outputs.data)
    fn.attributes["coil.result_types"] = ArrayAttr(old_results)
    fn.function_type = builtin.FunctionType.from_lists(
        [a.type for a in block.args], [v.type for v in ret.arguments]
    )
    _check_no_aten_left(fn)


def _views_gemm(view: L.ViewOp) -> bool:
    """Whether ``view`` reads (through views) a gemm template's product."""
    source = view.operands[0]
    while isinstance(source.owner, L.ViewOp):
        source = source.owner.operands[0]
    owner = source.owner
    if isinstance(owner, L.PointwiseOp):  # the product's finish (bias, cast)
        loads = [o for o in owner.body.block.ops if isinstance(o, L.LoadOp)]
        owner = loads[0].source.owner if loads else None
    return isinstance(owner, L.ReductionOp) and owner.is_gemm


def _fall_back(lowerer: Lowerer, op: Operation, name: str, reason: str, fallback: str):
    if fallback == "error" and not extern_by_design(name):
        raise DiagnosticException(
            f"convert-aten-to-loop: no loop lowering for {name}"
            f"{f' ({reason})' if reason else ''} and the "
            f"fallback policy is 'error'{_where(op)}"
        )
    report_fallback(name, reason)
    return lowerer.extern(op)


def _where(op: Operation) -> str:
    loc = getattr(op, "location", None)
    filename = getattr(loc, "filename", None)
    return f" at {filename.data}:{loc.line.data}" if filename is not None else ""


def _lower_op(lowerer: Lowerer, op: Operation, fallback: str = "extern") -> list[SSAValue]:
    name = op.name if isinstance(op, AtenOp) else op.overload_name.data
    lowering = LOWERINGS.get(name) if isinstance(op, AtenOp) else None
    if lowering is None:
        return _fall_back(lowerer, op, name, "", fallback)
    # A lowering that declines must leave no ops behind: build, then roll back.
    before = op.prev_op
    try:
        values = list(lowering(lowerer, op))
    except ExternByDesign as e:
        _erase_between(before, op)
        log.debug("coil: %s is called through ATen (%s)", name, e)
        return lowerer.extern(op)
    except CannotLower as e:
        _erase_between(before, op)
        return _fall_back(lowerer, op, name, str(e), fallback)
    if len(values) != len(op.results):
        raise AssertionError(f"lowering of {name} gave {len(values)} values for {len(op.results)}")
    return values


def provenance(op: Operation) -> LocationAttr:
    """The location of the ops lowered from ``op``: ``loc("aten.amax"("f.py":3:0))``."""
    loc = op.location
    if isinstance(loc, NameLoc):
        return loc
    name = op.overload_name.data if isinstance(op, OperatorOp) else op.name
    if name.count(".") >= 2:  # aten.amax.default -> aten.amax, as Inductor names it
        name = name.rsplit(".", 1)[0]
    return NameLoc(StringAttr(name), loc if isinstance(loc, FileLineColLoc) else NoneAttr())


def _locate_between(before: Operation | None, op: Operation, loc: LocationAttr) -> None:
    """Give the ops built for ``op`` (between ``before`` and it), and everything in
    their regions, ``loc`` where they have none (clones in externs keep theirs)."""
    block = op.parent_block()
    first = before.next_op if before is not None else block.first_op
    while first is not None and first is not op:
        if not isinstance(first, L.SeedOp):  # the function's, placed first
            for inner in first.walk():
                if isinstance(inner.location, UnknownLoc):
                    inner.location = loc
        first = first.next_op


def _erase_between(before: Operation | None, op: Operation) -> None:
    block = op.parent_block()
    first = before.next_op if before is not None else block.first_op
    doomed = []
    while first is not None and first is not op:
        doomed.append(first)
        first = first.next_op
    for dead in reversed(doomed):
        dead.detach()
        dead.erase(safe_erase=False)


def _check_no_aten_left(fn: func.FuncOp) -> None:
    for op in fn.body.block.ops:
        # Scalar constants may stay only as function results (symbolic sizes).
        if isinstance(op, AtenOp | OperatorOp | TensorConstantOp):
            raise AssertionError(f"convert-aten-to-loop left {op.name} behind")


@dataclass(frozen=True)
class ConvertAtenToLoopPass(ModulePass):
    """Lower every aten function of the module to the loop level (see module doc)."""

    name = "convert-aten-to-loop"

    fallback: str = "extern"
    """What an op with no lowering becomes: "extern" (an ATen call, logged once) or
    "error" (compilation fails naming the op; mm/conv-like ops stay externs)."""

    matvec: str = "auto"
    """Matrix-vector products (``mm``/``addmm`` with one row or column) as loop
    reductions, fusable with their consumers: "auto" (on CUDA), "on" (any
    device) or "off" (always cuBLAS). See ``aten_to_loop/matvec.py``."""

    gemm: str = "auto"
    """Matrix products (``mm``, ``addmm``, ``bmm``, ``baddbmm``) as ``tt.dot``
    templates with their consumers fused: "triton" (every one the template
    takes), "extern" (always cuBLAS) or "auto" (where ``strategy/gemm.py``
    estimates that the fused epilogue wins; never on the CPU interpreter).
    See ``aten_to_loop/gemm.py``."""

    tf32: bool = False
    """cuBLAS may run f32 products in TF32 (the backend sets it from
    ``torch.backends.cuda.matmul.allow_tf32``): f32 products count as tensor-core
    work in ``gemm=auto``'s estimate."""

    deterministic: bool = False
    """``torch.use_deterministic_algorithms`` is on (the backend sets it): ops whose
    result would depend on the order of atomic updates or racing stores
    (scatters, ``index_put``) call ATen's deterministic kernels instead."""

    def __post_init__(self) -> None:
        check_options(self)

    @with_size_hints
    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.fallback not in FALLBACKS:
            raise DiagnosticException(
                f"convert-aten-to-loop: fallback must be one of {', '.join(FALLBACKS)}, "
                f"not '{self.fallback}'"
            )
        for fn in op.ops:
            # A function already lowered is left alone.
            if (
                isinstance(fn, func.FuncOp)
                and not fn.is_declaration
                and aten_level_witness(fn) is not None
            ):
                _lower_function(
                    fn, self.fallback, self.matvec, self.deterministic, self.gemm, self.tf32
                )


__all__ = [
    "LOWERINGS",
    "CannotLower",
    "ConvertAtenToLoopPass",
    "Lowerer",
    "loop_type",
    "register",
]
