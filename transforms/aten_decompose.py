"""aten-decompose: rewrite composite aten ops into simpler aten ops.

The decompositions are torch's own (``torch._decomp.decomposition_table``),
not rewritten here: for each op to decompose, the pass builds FakeTensors with
the op's operand types (symbolic sizes included, through a ShapeEnv whose
symbols map back to the IR's), traces torch's decomposition with ``make_fx``
and coil's decomposition table, imports the traced graph and inlines it in
place of the op.

Options: ``aten-decompose{ops="aten._softmax.default","aten.gelu.default"}`` picks
the ops (default: :data:`DEFAULT_OPS`, the composites the loop-level lowering
does not take whole: softmaxes, norms, dropout, activations, addmm ...).

Guarantees: each rewrite computes what the op computed (each decomposition in
the default set is checked numerically against the reference executor in the
tests). An op whose decomposition would specialize a symbolic size (the trace
adds a guard) is left as it is, never decomposed for one size only.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from coil.dialects.aten import AtenOp, ConstantOp, TensorType, op_class_named
from coil.dialects.aten_schema import Kind
from coil.passinfo import check_options

if TYPE_CHECKING:
    import torch

log = logging.getLogger("coil")

DEFAULT_OPS: tuple[str, ...] = (
    "aten._softmax.default",
    "aten._log_softmax.default",
    "aten.native_layer_norm.default",
    "aten.native_group_norm.default",
    "aten.native_batch_norm.default",
    "aten._native_batch_norm_legit.default",
    "aten._native_batch_norm_legit.no_stats",
    "aten._native_batch_norm_legit_no_training.default",
    "aten._native_batch_norm_legit_functional.default",
    "aten.native_dropout.default",
    "aten.gelu.default",
    "aten.silu.default",
    "aten.hardtanh.default",
    "aten.leaky_relu.default",
    "aten.elu.default",
    "aten.logsumexp.default",
    "aten.mse_loss.default",
    "aten.nll_loss_forward.default",
    "aten.embedding.default",
)


class DecompositionFailed(Exception):
    """torch's decomposition could not be traced for this op (it stays as it is)."""


def decompose_op(
    op: AtenOp, templates: dict[Hashable, Any] | None = None
) -> tuple[list[Operation], list[SSAValue]]:
    """Trace torch's decomposition of ``op``; return the new ops and the values
    replacing ``op``'s results (the new ops are not inserted). Any failure is a
    :class:`DecompositionFailed`, and leaves the IR untouched.

    ``templates`` memoizes traces by the op's signature (name, operand types,
    constant operands, properties): a decomposition depends on nothing else, so
    the twelfth identical layer norm of a model is a copy of the first, not a
    twelfth trace through make_fx."""
    try:
        key, operands = _signature(op)
        template = templates.get(key) if templates is not None else None
        if template is None:
            try:
                template = _trace(op)
            except DecompositionFailed as e:
                template = e
            if templates is not None:
                templates[key] = template
        if isinstance(template, DecompositionFailed):
            raise template
        return template.instantiate(op, operands)
    except DecompositionFailed:
        raise
    except Exception as e:  # fake tensors, tracing, import: the op stays
        raise DecompositionFailed(f"{op.name}: {type(e).__name__}: {e}") from e


def _signature(op: AtenOp) -> tuple[Hashable, list[SSAValue]]:
    """What a decomposition of ``op`` depends on, and ``op``'s tensor operands in
    the order the trace takes them."""
    groups = op.operand_groups()
    key: list[Hashable] = [op.name]
    operands: list[SSAValue] = []
    for spec in op.schema().args:
        if not spec.is_operand:
            key.append(repr(op.arg(spec.name)))
            continue
        items: list[Hashable] = []
        for v in groups[spec.name]:
            if v is None:
                items.append(None)
            elif isinstance(v.type, TensorType):
                operands.append(v)
                items.append(v.type)
            elif isinstance(v.owner, ConstantOp):
                items.append(("constant", repr(v.owner.python_value)))
            else:
                raise DecompositionFailed("a runtime scalar operand")
        key.append(tuple(items))
    return tuple(key), operands


@dataclass
class _Template:
    """A traced and imported decomposition: its function's arguments (one per
    tensor operand), body ops and returned values, kept unmodified to be copied."""

    module: builtin.ModuleOp
    args: list[SSAValue]
    ops: list[Operation]
    results: list[SSAValue]

    def instantiate(
        self, op: AtenOp, operands: list[SSAValue]
    ) -> tuple[list[Operation], list[SSAValue]]:
        for old, new in zip(op.results, self.results, strict=True):
            # A result no op reads may change its type: eval-mode batch norm's
            # saved mean and invstd are [0] on the CPU and [C] in the
            # decomposition, and keeping the op kept its kernels unfused.
            if old.type != new.type and old.uses:
                raise DecompositionFailed(
                    f"decomposition of {op.name} changes a result type: {old.type} -> {new.type}"
                )
        # A decomposition may return one of its inputs (dropout in eval mode).
        mapper: dict[SSAValue, SSAValue] = dict(zip(self.args, operands, strict=True))
        new_ops = [o.clone(value_mapper=mapper) for o in self.ops]
        for o in new_ops:
            o.location = op.location
        return new_ops, [mapper.get(r, r) for r in self.results]


def _trace(op: AtenOp) -> _Template:
    # torch is imported here, when an op of the set is present, not with the
    # pass: fx-opt on IR with nothing to decompose never loads torch.
    import torch
    from torch._decomp import decomposition_table as torch_decompositions
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    from torch.fx.experimental.proxy_tensor import make_fx

    from coil.frontend.decompositions import decomposition_table
    from coil.frontend.fake import FakeEnv
    from coil.frontend.fx_importer import import_graph

    overload = op.overload()
    decomp = torch_decompositions.get(overload)
    if decomp is None:
        raise DecompositionFailed(f"torch has no decomposition of {op.name}")
    schema = op.schema()
    env = FakeEnv()
    fakes: list[torch.Tensor] = []
    # Template of the call: each tensor argument is a _Slot indexing `fakes`.
    call_args: list[Any] = []
    call_kwargs: dict[str, Any] = {}
    groups = op.operand_groups()
    for spec in schema.args:
        if spec.is_operand:
            values = groups[spec.name]
            converted = []
            for v in values:
                if v is None:
                    converted.append(None)
                elif isinstance(v.type, TensorType):
                    fakes.append(env.fake_tensor(v.type))
                    converted.append(_Slot(len(fakes) - 1))
                elif isinstance(v.owner, ConstantOp):
                    converted.append(env.python_value(v.owner.python_value))
                else:
                    raise DecompositionFailed("a runtime scalar operand")
            value = (
                converted if spec.kind is not Kind.TENSOR else (converted[0] if converted else None)
            )
        else:
            value = op.arg(spec.name)
            if value is None and spec.default_attr is None and not spec.optional:
                raise DecompositionFailed(f"missing argument {spec.name}")
            value = env.python_value(value)
        if spec.kwarg_only:
            call_kwargs[spec.name] = value
        else:
            call_args.append(value)

    def traced(*tensors: torch.Tensor) -> Any:
        def fill(v: Any) -> Any:
            if isinstance(v, _Slot):
                return tensors[v.index]
            if isinstance(v, list):
                return [fill(x) for x in v]
            return v

        return decomp(*[fill(a) for a in call_args], **{k: fill(v) for k, v in call_kwargs.items()})

    guards_before = len(env.shape_env.guards)
    try:
        # Outside dynamo's tracing context and fake mode: under a live
        # torch.compile, make_fx would take that mode and re-fakify the inputs
        # with fresh symbols.
        with torch._guards.tracing(None), unset_fake_temporarily():
            gm = make_fx(
                traced, decomposition_table=decomposition_table(), tracing_mode="symbolic"
            )(*fakes)
    except Exception as e:
        raise DecompositionFailed(f"tracing {op.name} failed: {e}") from e
    if len(env.shape_env.guards) != guards_before:
        raise DecompositionFailed(f"decomposing {op.name} would specialize a symbolic size")
    module = import_graph(gm, rename_symbols=env.back_to_ir)
    fn = next(o for o in module.ops if isinstance(o, func.FuncOp))
    block = fn.body.block
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    results = list(ret.arguments)
    new_ops = [o for o in block.ops if o is not ret]
    if any(o.name == op.name for o in new_ops):
        raise DecompositionFailed(f"the decomposition of {op.name} calls {op.name} again")
    if len(results) != len(op.results):
        raise DecompositionFailed(
            f"decomposition of {op.name} returned {len(results)} values for {len(op.results)}"
        )
    if len(block.args) != len(fakes):
        raise DecompositionFailed(f"the trace of {op.name} has other inputs than the op")
    return _Template(module, list(block.args), new_ops, results)


@dataclass(frozen=True)
class _Slot:
    index: int


class DecomposeOp(RewritePattern):
    def __init__(self, ops: frozenset[str], failures: list[str]):
        self.ops = ops
        self.failures = failures
        # Traces by op signature, for this application of the pass only.
        self.templates: dict[Hashable, Any] = {}

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, AtenOp) or op.name not in self.ops:
            return
        try:
            new_ops, results = decompose_op(op, self.templates)
        except DecompositionFailed as e:
            self.failures.append(str(e))
            return
        rewriter.replace(op, new_ops, results)


@dataclass(frozen=True)
class AtenDecomposePass(ModulePass):
    """Rewrite the chosen composite aten ops with torch's decompositions.

    Input: aten-dialect IR. Output: the same, with every op named in ``ops``
    that torch can decompose replaced by the ops of its decomposition (which
    may themselves be any aten ops of the core set). Ops that cannot be
    decomposed without specializing a symbolic size stay as they are.
    """

    name = "aten-decompose"

    ops: tuple[str, ...] = field(default=DEFAULT_OPS)
    """The aten overloads to decompose (default: ``DEFAULT_OPS``, the composites the
    loop-level lowering does not take whole)."""

    def __post_init__(self) -> None:
        check_options(self)

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        unknown = [n for n in self.ops if op_class_named(n) is None]
        if unknown:
            raise ValueError(f"aten-decompose: unknown op(s) {', '.join(unknown)}")
        failures: list[str] = []
        # Recursive: a decomposition may produce another op of the set
        # (_native_batch_norm_legit_no_training -> _native_batch_norm_legit).
        PatternRewriteWalker(DecomposeOp(frozenset(self.ops), failures)).rewrite_module(op)
        for message in dict.fromkeys(failures):  # each distinct reason once
            log.info("aten-decompose: kept an op: %s", message)
