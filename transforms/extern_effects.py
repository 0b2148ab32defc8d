"""Extern effects: what an ATen call sent to ``buffer.extern`` does to storage.

An analysis, not a pass. It answers, from the aten schema of the called op
(torch's ``FunctionSchema``: alias sets and ``!`` writes):

* :func:`extern_results_alias`: may the extern's results share storage with
  its operands (a view op), or are they fresh storage ATen allocated?
* :func:`aliased_operands`: which operands a given result may alias;
* :func:`extern_mutated_operands`: which operands the call writes in place;
* :func:`storage_roots`: which storage holders (``buffer.alloc``/``buffer.reuse``
  results, function arguments, fresh extern results) a value may live in,
  through ``buffer.view`` and aliasing extern results.

Where torch does not know the schema, the answers are the safe ones: results
alias every operand, nothing is written in place that the schema does not say.
Used by the loop- and buffer-level passes (fusion, inlining, layout, constant
hoisting, launch combining, the memory plan), bufferization, the Triton
lowering and the loop executor.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ArrayAttr
from xdsl.ir import BlockArgument, SSAValue

from coil.dialects import buffer as B
from coil.dialects.aten import AtenOp, ConstantOp, OperandRefAttr, OperatorOp, TensorType
from coil.dialects.c10d import WAIT_TENSOR

if TYPE_CHECKING:
    import torch


@cache
def _schema(name: str) -> torch.FunctionSchema | None:
    """The schema of an overload named "ns.op.overload" ("ns.op": its default
    overload, as ``aten.operator`` externs name it), if torch knows it (imports
    torch: only IR with extern calls asks). Without it an extern's results
    count as aliases of its operands: never freed by the plan, nor counted in
    its peak (ViT's twelve attention outputs stayed alive to the end)."""
    import torch

    parts = name.split(".")
    if len(parts) == 2:  # an ``aten.operator`` of a default overload
        parts.append("default")
    if len(parts) != 3:
        return None
    try:
        return getattr(getattr(getattr(torch.ops, parts[0]), parts[1]), parts[2])._schema
    except (AttributeError, RuntimeError):
        return None


def _inner_schema(inner: object) -> torch.FunctionSchema | None:
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


def _operator_groups(op: OperatorOp, schema: torch.FunctionSchema) -> dict[str, list[SSAValue]]:
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


__all__ = [
    "aliased_operands",
    "extern_mutated_operands",
    "extern_results_alias",
    "storage_roots",
]
