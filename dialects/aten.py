"""The aten-level dialects: value-semantic tensor ops, one per ATen overload.

``aten`` and ``prims``, and the c10d functional collectives
(``_c10d_functional``, ``_c10d_functional_autograd``; see ``c10d.py``). The op
classes are generated from torch's schemas (``aten_ops.py``, by
``python -m coil.tools.gen_aten``); the tensor type, the shared syntax and the
non-ATen ops (``aten.constant``, ``aten.tensor_constant``, ``aten.operator``)
are in ``aten_base.py``. :func:`op_class_for` maps an OpOverload to its class.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import NoneAttr
from xdsl.ir import Attribute, Dialect

from coil.dialects.aten_base import (
    AtenOp,
    ConstantOp,
    OpaqueType,
    OperandRefAttr,
    OperatorOp,
    TensorConstantOp,
    TensorType,
)
from coil.dialects.aten_infer import RULES, Call, Inferred, infer
from coil.dialects.aten_ops import (
    ATEN_OPS,
    C10D_FUNCTIONAL_AUTOGRAD_OPS,
    C10D_FUNCTIONAL_OPS,
    PRIMS_OPS,
)

if TYPE_CHECKING:
    import torch

Aten = Dialect(
    "aten",
    [*ATEN_OPS, ConstantOp, TensorConstantOp, OperatorOp],
    [TensorType, OpaqueType, OperandRefAttr],
)
Prims = Dialect("prims", list(PRIMS_OPS), [])
C10dFunctional = Dialect("_c10d_functional", list(C10D_FUNCTIONAL_OPS), [])
C10dFunctionalAutograd = Dialect(
    "_c10d_functional_autograd", list(C10D_FUNCTIONAL_AUTOGRAD_OPS), []
)

_BY_NAME: dict[str, type[AtenOp]] = {
    cls.OVERLOAD: cls
    for cls in [*ATEN_OPS, *PRIMS_OPS, *C10D_FUNCTIONAL_OPS, *C10D_FUNCTIONAL_AUTOGRAD_OPS]
}


def overload_name(overload: torch._ops.OpOverload) -> str:
    """``aten.add.Tensor`` for ``torch.ops.aten.add.Tensor``."""
    packet = overload._schema.name.split("::")[1]
    return f"{overload.namespace}.{packet}.{overload._overloadname}"


def op_class_named(name: str) -> type[AtenOp] | None:
    """The generated op class named ``name`` (``aten.add.Tensor``), or None."""
    return _BY_NAME.get(name)


def op_class_for(overload: torch._ops.OpOverload) -> type[AtenOp] | None:
    """The generated op class of ``overload``, or None (-> ``aten.operator``)."""
    return op_class_named(overload_name(overload))


def infer_result_types(
    name: str,
    operands: dict[str, Attribute | Sequence[Attribute | None] | None],
    attrs: dict[str, Attribute] | None = None,
) -> list[Inferred] | None:
    """For passes that build ops: the result types of overload ``name`` (e.g.
    ``"aten.add.Tensor"``) for operand types and argument attributes given by
    schema name (defaults filled from the schema). None when no rule applies."""
    cls = op_class_named(name)
    if cls is None or name not in RULES:
        return None
    given = dict(attrs or {})
    full = {
        spec.name: given.get(spec.name, spec.default_attr or NoneAttr())
        for spec in cls.schema().props
    }
    groups: dict[str, list[Attribute | None]] = {}
    for spec in cls.schema().operands:
        value = operands.get(spec.name)
        if value is None:
            groups[spec.name] = []
        elif isinstance(value, Attribute):
            groups[spec.name] = [value]
        else:
            groups[spec.name] = list(value)
    return infer(Call(name, groups, full))


__all__ = [
    "VIEW_OPS",
    "Aten",
    "AtenOp",
    "C10dFunctional",
    "C10dFunctionalAutograd",
    "ConstantOp",
    "OpaqueType",
    "OperandRefAttr",
    "OperatorOp",
    "Prims",
    "TensorConstantOp",
    "TensorType",
    "infer_result_types",
    "op_class_for",
    "op_class_named",
    "overload_name",
]

VIEW_OPS = frozenset(
    {
        "aten.view.default",
        "aten._unsafe_view.default",
        "aten.reshape.default",
        "aten.slice.Tensor",
        "aten.select.int",
        "aten.permute.default",
        "aten.t.default",
        "aten.transpose.int",
        "aten.expand.default",
        "aten.unsqueeze.default",
        "aten.squeeze.dim",
        "aten.squeeze.dims",
        "aten.squeeze.default",
        "aten.alias.default",
    }
)
"""Overloads whose result views their first operand's storage (reshapes,
slices, transposes, broadcasts): what reads through a view reads the operand."""
