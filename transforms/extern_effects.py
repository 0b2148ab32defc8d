"""Extern effects: what an ATen call sent to ``buffer.extern`` does to storage.

An analysis, not a pass. It answers, from the aten schema of the called op
(torch's ``FunctionSchema``: alias sets and ``!`` writes):

* :func:`extern_results_alias`: may the extern's results share storage with
  its operands (a view op), or are they fresh storage ATen allocated?
* :func:`aliased_operands`: which operands a given result may alias;
* :func:`extern_mutated_operands`: which operands the call writes in place;
* :func:`storage_roots`: which storage holders (``buffer.alloc``/``buffer.reuse``
  results, function arguments, fresh extern results) a value may live in,
  through ``buffer.view`` and aliasing extern results; :func:`storage_holders`
  also through ``buffer.reuse``, :func:`may_share_storage` compares two such sets;
* :func:`extern_workspace_bytes`: an estimate of the scratch memory the library
  allocates inside the call and frees before it returns (cuDNN's workspace).

Where torch does not know the schema, the answers are the safe ones: results
alias every operand, nothing is written in place that the schema does not say.
Used by the loop- and buffer-level passes (fusion, inlining, layout, constant
hoisting, launch combining, the memory plan), bufferization, the Triton
lowering and the loop executor.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from torchgen.model import ListType
from xdsl.dialects.builtin import ArrayAttr
from xdsl.ir import BlockArgument, SSAValue

from coil.dialects import buffer as B
from coil.dialects import dtypes
from coil.dialects.aten import (
    AtenOp,
    ConstantOp,
    OperandRefAttr,
    OperatorOp,
    TensorType,
    op_class_named,
)
from coil.dialects.aten_schema import _parse_schema
from coil.dialects.c10d import WAIT_TENSOR
from coil.dialects.symbolic import to_expr

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class _AliasInfo:
    """What torch's ``AliasInfo`` says that this analysis reads."""

    before_set: frozenset[str]
    is_write: bool


@dataclass(frozen=True)
class _Argument:
    name: str
    kwarg_only: bool
    alias_info: _AliasInfo | None


@dataclass(frozen=True)
class _Return:
    alias_info: _AliasInfo | None


@dataclass(frozen=True)
class _Schema:
    """The alias sets and writes of an op's schema (the part of torch's
    ``FunctionSchema`` this analysis reads)."""

    arguments: tuple[_Argument, ...]
    returns: tuple[_Return, ...]


def _from_torchgen(text: str) -> _Schema:
    """A generated op's schema text (``aten::add_.Tensor(Tensor(a!) self, ...)``)
    read with torchgen's model, which needs no torch."""
    parsed = _parse_schema(text.partition("::")[2])

    def alias(annotation: object) -> _AliasInfo | None:
        if annotation is None:
            return None
        return _AliasInfo(frozenset(annotation.alias_set), annotation.is_write)

    args = parsed.arguments
    kwarg_only = {a.name for a in (*args.flat_kwarg_only, *args.out)}
    return _Schema(
        tuple(_Argument(a.name, a.name in kwarg_only, alias(a.annotation)) for a in args.flat_all),
        tuple(_Return(_list_alias(r, alias(r.annotation))) for r in parsed.returns),
    )


def _list_alias(ret: object, info: _AliasInfo | None) -> _AliasInfo | None:
    """torch keeps a list return's alias set (``Tensor(a -> *)[]``: split,
    chunk, unbind) on its elements, so the list's own set is empty."""
    if info is None or not isinstance(ret.type, ListType):
        return info
    return _AliasInfo(frozenset(), info.is_write)


def _from_torch(schema: torch.FunctionSchema) -> _Schema:
    def alias(info: object) -> _AliasInfo | None:
        if info is None:
            return None
        return _AliasInfo(frozenset(info.before_set), info.is_write)

    return _Schema(
        tuple(_Argument(a.name, a.kwarg_only, alias(a.alias_info)) for a in schema.arguments),
        tuple(_Return(alias(r.alias_info)) for r in schema.returns),
    )


@cache
def _schema(name: str) -> _Schema | None:
    """The schema of an overload named "ns.op.overload" ("ns.op": its default
    overload, as ``aten.operator`` externs name it): the generated op class's
    schema text where there is one (no torch import: fx-opt on buffer-level IR
    with extern calls starts without torch), else torch's, if torch knows the
    op. Without it an extern's results count as aliases of its operands: never
    freed by the plan, nor counted in its peak (ViT's twelve attention outputs
    stayed alive to the end)."""
    parts = name.split(".")
    if len(parts) == 2:  # an ``aten.operator`` of a default overload
        parts.append("default")
    if len(parts) != 3:
        return None
    cls = op_class_named(".".join(parts))
    if cls is not None:
        try:
            return _from_torchgen(cls.SCHEMA)
        except (RuntimeError, AssertionError, KeyError):  # a type torchgen does not model
            pass
    import torch

    try:
        overload = getattr(getattr(getattr(torch.ops, parts[0]), parts[1]), parts[2])
    except (AttributeError, RuntimeError):
        return None
    return _from_torch(overload._schema)


def _inner_schema(inner: object) -> _Schema | None:
    if isinstance(inner, OperatorOp):
        return _schema(inner.overload_name.data.replace("::", "."))
    name = getattr(inner, "name", "")
    return _schema(name) if name.startswith(("aten.", "prims.")) else None


def _fresh_in_region(value: SSAValue, block: object) -> bool:
    """Whether a value of an extern's region lives in storage the region's calls
    allocated (not an operand's): made by an op whose schema returns no alias,
    or a view of such a value."""
    if isinstance(value, BlockArgument):
        return False
    inner = value.owner
    schema = _inner_schema(inner)
    if schema is None or value.index >= len(schema.returns):
        return False
    if schema.returns[value.index].alias_info is None:
        return True
    # A view (transpose, view ...): fresh when every tensor it reads is.
    tensors = [v for v in inner.operands if isinstance(getattr(v, "type", None), TensorType)]
    return bool(tensors) and all(_fresh_in_region(v, block) for v in tensors)


def _several_calls(op: B.ExternOp) -> bool:
    return len([o for o in op.body.block.ops if not isinstance(o, B.YieldOp | ConstantOp)]) > 1


def extern_results_alias(op: B.ExternOp) -> bool:
    """Whether the extern's results may share storage with its operands (a view
    op sent to ATen); True when unknown. ``wait_tensor`` returns the very tensor
    it waits for, though its schema does not say so. A region of several calls
    (``gemm_alignment``'s pad: transpose, new_zeros, cat, transpose) is traced
    from what it yields: its results are fresh when each is a fresh call's
    result or a view of one (the pad of a transposed weight was taken for an
    alias of the weight, so the plan neither freed nor counted it)."""
    if op.kernel_name == WAIT_TENSOR:
        return True
    if _several_calls(op):
        block = op.body.block
        return not all(_fresh_in_region(v, block) for v in block.last_op.operands)
    schema = _schema(op.kernel_name)
    if schema is None:
        return True
    return any(r.alias_info is not None for r in schema.returns)


def extern_mutated_operands(op: B.ExternOp) -> set[int]:
    """Positions of the extern's operands that the called op writes in place."""
    schema = _schema(op.kernel_name)
    if schema is None or not any(
        a.alias_info is not None and a.alias_info.is_write for a in schema.arguments
    ):
        return set()
    # Map the written schema arguments to block arguments through the aten op.
    block = op.body.block
    written: set[int] = set()
    for inner in block.ops:
        if isinstance(inner, B.YieldOp):
            continue
        if isinstance(inner, AtenOp):
            groups = inner.operand_groups()
        elif isinstance(inner, OperatorOp):
            groups = _operator_groups(inner, schema)
        else:
            groups = None
        for a in schema.arguments:
            if a.alias_info is None or not a.alias_info.is_write:
                continue
            values = groups.get(a.name, []) if groups is not None else list(inner.operands)
            for v in values:
                if isinstance(v, BlockArgument) and v.owner is block:
                    written.add(v.index)
    return written


def _operator_groups(op: OperatorOp, schema: _Schema) -> dict[str, list[SSAValue]]:
    """The operands an ``aten.operator`` passes for each schema argument name."""
    positional = [a.name for a in schema.arguments if not a.kwarg_only]
    groups: dict[str, list[SSAValue]] = {}
    items = list(zip(positional, op.args.data)) + list(op.kwargs.data.items())
    for name, attr in items:
        refs = attr.data if isinstance(attr, ArrayAttr) else [attr]
        groups[name] = [op.inputs[r.data] for r in refs if isinstance(r, OperandRefAttr)]
    return groups


def aliased_operands(op: B.ExternOp, result: int) -> list[SSAValue]:
    """The operands of ``op`` that its result number ``result`` may share storage
    with: those the schema gives the result's alias set (``mm.out``'s result is
    its ``out``, ``view``'s its ``self``); every operand where that is unknown
    (no schema, several calls in the region, ``wait_tensor``)."""
    everything = list(op.args)
    if _several_calls(op) and not extern_results_alias(op):
        return []
    schema = _schema(op.kernel_name)
    inner = [o for o in op.body.block.ops if not isinstance(o, B.YieldOp)]
    if op.kernel_name == WAIT_TENSOR or schema is None or len(inner) != 1:
        return everything
    call = inner[0]
    if result >= len(schema.returns) or op.body.block.last_op.operands[result] not in call.results:
        return everything
    info = schema.returns[result].alias_info
    if info is None:
        return []
    if isinstance(call, AtenOp):
        groups = call.operand_groups()
    elif isinstance(call, OperatorOp):
        groups = _operator_groups(call, schema)
    else:
        return everything
    block, found = op.body.block, []
    for a in schema.arguments:
        if a.alias_info is None or not (set(a.alias_info.before_set) & set(info.before_set)):
            continue
        for v in groups.get(a.name, []):
            if not (isinstance(v, BlockArgument) and v.owner is block):
                return everything  # aliases a value made inside the region
            found.append(op.args[v.index])
    return found


def storage_roots(value: SSAValue) -> set[SSAValue]:
    """The storage holders ``value`` may live in: ``buffer.alloc``/``buffer.reuse``
    results and function arguments, through views and aliasing extern results."""
    owner = value.owner
    if isinstance(owner, B.ViewOp):
        return storage_roots(owner.source)
    if isinstance(owner, B.ExternOp):
        roots = {value}
        if extern_results_alias(owner):
            for a in aliased_operands(owner, owner.res.index(value)):
                if isinstance(a.type, B.BufferType):
                    roots |= storage_roots(a)
        return roots
    if isinstance(value.type, B.BufferType) or isinstance(value, BlockArgument):
        return {value}
    return set()


def storage_holders(value: SSAValue) -> set[SSAValue]:
    """:func:`storage_roots`, also through ``buffer.reuse`` (a buffer the memory
    plan placed in a dead one's storage): every holder whose storage ``value``
    may share."""
    v = value
    while isinstance(v.owner, B.ViewOp | B.ReuseOp):
        v = v.owner.source
    out = {v}
    for r in storage_roots(v):
        if r is not v:
            out |= storage_holders(r)
    return out


def may_share_storage(a: set[SSAValue], b: set[SSAValue]) -> bool:
    """Whether values held in ``a`` and in ``b`` (:func:`storage_holders`) may
    overlap: a common holder, or two function arguments (the caller may pass
    views of one tensor)."""
    if a & b:
        return True
    return any(isinstance(v, BlockArgument) for v in a) and any(
        isinstance(v, BlockArgument) for v in b
    )


CONVOLUTIONS = {
    "aten.convolution.default",
    "aten._convolution.default",
    "aten.convolution_backward.default",
    "aten.cudnn_convolution.default",
    "aten.cudnn_convolution_transpose.default",
}
"""Externs whose library call allocates a workspace of its own (cuDNN's
``run_conv_plan`` allocates ``plan.getWorkspaceSize()`` bytes on every call,
``aten/src/ATen/native/cudnn/Conv_v8.cpp``)."""


def _tensor_bytes(t: object) -> int | None:
    if not isinstance(t, B.BufferType):
        return None
    n = 1
    for d in t.shape:
        d = to_expr(d)
        if not d.is_Integer:
            return None
        n *= int(d)
    return n * dtypes.itemsize(t.element_type)


def extern_workspace_bytes(op: B.ExternOp) -> int:
    """Bytes the library allocates inside ``op``'s call and frees before it
    returns (0 where unknown or symbolic): an estimate for ordering decisions
    (``buffer-reorder``), not a bound, and no part of ``coil.peak_bytes``.

    A grouped convolution (:data:`CONVOLUTIONS`; more than one group, more than
    one input channel per group) whose channels per group are not a power of
    two: its input's bytes plus its output's (a transform of both into a
    layout cuDNN has a kernel for); every other call 0. cuDNN picks the engine,
    and its workspace, by heuristics at run time; this rule fits every
    convolution whose workspace the sweep's peaks pin down (H200, bf16,
    channels-last, batch 32; the measured peak against the planned bytes
    alive at the call; issue 33):

    * regnety_016's grouped 3x3 stride-2 convolution, 2 groups of 24
      channels: 45.9 MiB allocated inside ``run_conv_plan``
      (``memory_probe.py``), its 36.75 MiB input plus its 9.19 MiB output;
    * regnetx_002's grouped 3x3 stride-2 convolution, 3 groups of 8: none
      (its plan peaks there, 47.47 MiB, and measured 47.47);
    * seresnext26d_32x4d's (32 groups of 4 and of 8) and dpn68's (32 of 4):
      at most 13.75 MiB for a 49 MiB input, about 15 for a 24.5 MiB one (the
      measured peaks, 124.5 and 98.0, against the bytes alive there; dpn68's
      measured at 2ecdc7a, planned at 4d41f23);
    * 1x1 convolutions: at most 1.5 MiB for a 24.5 MiB input
      (seresnext26d_32x4d's plan peaks at one); depthwise ones: none
      (ghostnet_100 measured its planned 85.75 MiB, at a depthwise
      convolution of 18.4 MiB in and out).

    Fitted to one convolution that has a workspace and several that have
    none: the rule to revise when a measurement disagrees (``plan_report.py``
    lists each call's estimate, ``memory_probe.py`` marks what is allocated
    inside a library call). A dense convolution of 3 input channels
    (resnet18's stem) measured about its input padded to 8 channels, which
    no order changes (the network input is alive there in every order).

    cuBLAS's workspace is allocated once per handle and stream and then kept
    (``CublasHandlePool.cpp``'s ``cublas_handle_stream_to_workspace``): the same
    bytes in every order, so a matmul counts 0."""
    if op.kernel_name not in CONVOLUTIONS:
        return 0
    inner = [o for o in op.body.block.ops if not isinstance(o, B.YieldOp)]
    if len(inner) != 1 or not isinstance(inner[0], AtenOp) or not op.res:
        return 0
    call = inner[0]
    groups = call.operand_groups()
    x = groups.get("input")
    if not x or not isinstance(x[0], BlockArgument):
        return 0
    x_type = op.args[x[0].index].type
    if not isinstance(x_type, B.BufferType) or len(x_type.shape) < 3:
        return 0
    channels = to_expr(x_type.shape[1])
    n_groups = int(call.arg("groups") or 1)
    if not channels.is_Integer or n_groups <= 1 or int(channels) % n_groups:
        return 0
    per_group = int(channels) // n_groups
    if per_group <= 1 or per_group & (per_group - 1) == 0:
        return 0
    if op.kernel_name == "aten.convolution_backward.default":
        grad = groups.get("grad_output")
        if not grad or not isinstance(grad[0], BlockArgument):
            return 0
        out = op.args[grad[0].index].type
    else:
        out = op.res[0].type
    sizes = [_tensor_bytes(x_type), _tensor_bytes(out)]
    if None in sizes:
        return 0
    return sum(sizes)


__all__ = [
    "CONVOLUTIONS",
    "aliased_operands",
    "extern_mutated_operands",
    "extern_results_alias",
    "extern_workspace_bytes",
    "storage_roots",
]
