"""ATen calls in the Python wrapper (``-t python``): one ``torch.ops`` call (or
a public binding) per aten op of a ``host.extern`` region, with the arguments
``aten_executor`` passes. A mixin of ``targets/python.HostPrinter``, whose
naming state it uses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sympy
import torch
from xdsl.dialects import builtin
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    NoneAttr,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue

from coil.dialects import dtypes
from coil.dialects.aten import AtenOp, ConstantOp, OperandRefAttr, OperatorOp, TensorConstantOp
from coil.dialects.aten_schema import Kind, argument_kinds, parse_enum
from coil.dialects.symbolic import ExprAttr, ShapeAttr
from coil.targets.python_values import PythonTargetError, python_float, python_literal, type_symbols

PUBLIC_BINDINGS = {
    "aten.convolution.default": "torch.convolution",
    "aten.mm.default": "torch.mm",
    "aten.bmm.default": "torch.bmm",
    "aten.addmm.default": "torch.addmm",
    "aten.baddbmm.default": "torch.baddbmm",
    "aten.mm.out": "torch.mm",
    "aten.bmm.out": "torch.bmm",
    "aten.addmm.out": "torch.addmm",
    "aten.baddbmm.out": "torch.baddbmm",
}
"""Extern calls made through torch's generated Python bindings, as Inductor's
``extern_kernels`` does: the same ATen op with the same arguments, parsed by
the C++ argument parser instead of ``torch.ops``' schema-driven one (on a CPU
here a convolution call costs 3.0 us that way, 6.8 us through
``torch.ops.aten.convolution.default``; a ResNet-50 call makes 53)."""

FRESH_FIRST_RESULT = {
    "aten._scaled_dot_product_flash_attention.default",
    "aten._scaled_dot_product_efficient_attention.default",
    "aten._scaled_dot_product_cudnn_attention.default",
    "aten._scaled_dot_product_flash_attention_for_cpu.default",
}
"""ATen calls whose first result is a tensor ATen allocates (storage offset 0,
so 16-byte aligned), as the matmuls' and convolutions' of ``PUBLIC_BINDINGS``:
the fused attention kernels' outputs (``at::empty``, ``empty_like`` of the
query, or cuDNN's allocation in the query's layout; a padded head dimension is
sliced from 0). Kernels reading them, or views of them at aligned offsets, need
no alignment check at launch: HF's Swin launched 32 kernels a call through the
checking path, each reading an attention output or its storage reused."""


OPS_IMPORT = "import coil.dialects.torch_library as coil_ops"


class AtenCallPrinter:
    """How the aten ops inside a ``host.extern`` region print (see ``HostPrinter``)."""

    def literal(self, value: Any) -> str:
        if isinstance(value, sympy.Expr) and not value.is_Integer:
            return self.expr(value)
        return python_literal(value)

    def print_aten(self, op: Operation) -> None:
        if isinstance(op, ConstantOp):
            # A scalar: printed where it is used.
            self.names[op.result] = self.literal(op.python_value)
            return
        if isinstance(op, TensorConstantOp):
            t = op.result.type
            values = [python_literal(v) for v in op.value.get_values()]
            name = self.define(op.result, "const")
            made = (
                f"torch.tensor([{', '.join(values)}], dtype={t.dtype}, "
                f'device="{t.device}").reshape({self.exprs(t.shape)})'
            )
            if _only_read(op.result) and not type_symbols(t):
                # Made once, when the module loads: a copy to the GPU per call
                # costs a host-to-device transfer (and ~10 us of host time).
                self.hoisted.add(op.result)
                self.module_lines.append(f"{name} = {made}  # read only: made once")
            else:
                self.emit(f"{name} = {made}")
            return
        if isinstance(op, AtenOp):
            call = self.aten_call(op)
            returns = op.overload()._schema.returns
        elif isinstance(op, OperatorOp):
            call = self.operator_call(op)
            returns = op.resolve()._schema.returns
        else:
            raise PythonTargetError(f"-t python: {op.name} cannot be called in a host.extern")
        results = list(op.results)
        if not results:
            self.emit(call)
            return
        written = _returned_argument(op, returns)
        if written is not None and not results[0].uses:
            # ``torch.addmm(..., out=buf)`` (memory-plan's destination-passing
            # form): called for its effect, as readers read ``buf``.
            self.emit(call)
            return
        if written is not None:
            # The result is that argument itself (under its own name, as the
            # argument's may be dropped before the result's).
            self.written[results[0]] = written
        names = []
        for r in results:
            name = self.fresh_name(self.hints.get(r, r.name_hint), "buf")
            self.names[r] = name
            names.append(name)
        # As aten_executor: an IR value never holds a list; a one-tensor list is the tensor.
        one_list = len(returns) == 1 and isinstance(returns[0].type, torch.ListType)
        if len(results) == 1 and not one_list:
            self.emit(f"{names[0]} = {call}")
        else:
            self.emit(
                f"{', '.join(names)}, = {call}"
                if len(names) == 1
                else f"{', '.join(names)} = {call}"
            )

    def aten_call(self, op: AtenOp) -> str:
        schema = op.schema()
        groups = op.operand_groups()
        args, kwargs = [], []
        for spec in schema.args:
            if spec.is_operand:
                values = ["None" if v is None else self.name(v) for v in groups[spec.name]]
                if spec.kind is Kind.TENSOR:
                    text = values[0] if values else "None"
                else:
                    text = "[" + ", ".join(values) + "]"
            elif spec.kwarg_only and _is_default(op, spec):
                continue  # the callee's default (addmm's beta=1, alpha=1): no parsing
            else:
                text = self.literal(_listed(op.arg(spec.name)))
            if spec.kwarg_only:
                kwargs.append(f"{spec.name}={text}")
            else:
                args.append(text)
        target = PUBLIC_BINDINGS.get(op.OVERLOAD, f"torch.ops.{op.OVERLOAD}")
        return f"{target}({', '.join(args + kwargs)})"

    def operator_call(self, op: OperatorOp) -> str:
        overload = op.resolve()
        if overload is None:
            raise PythonTargetError(
                f"-t python: operator {op.overload_name.data} is not registered in this process"
            )
        kinds = argument_kinds(overload)

        def convert(attr: Attribute, kind: Kind | None) -> str:
            if isinstance(attr, OperandRefAttr):
                return self.name(op.inputs[attr.data])
            if isinstance(attr, ArrayAttr):
                elem = {Kind.INT_LIST: Kind.INT, Kind.FLOAT_LIST: Kind.FLOAT}.get(kind)
                return "[" + ", ".join(convert(a, elem) for a in attr.data) + "]"
            if isinstance(attr, StringAttr) and kind in (
                Kind.LAYOUT,
                Kind.MEMORY_FORMAT,
                Kind.DEVICE,
            ):
                return python_literal(parse_enum(attr.data, kind))
            return self.generic_value(attr)

        names = [a.name for a in overload._schema.arguments if not a.kwarg_only]
        args = [convert(a, kinds.get(n)) for a, n in zip(op.args.data, names)]
        kwargs = [f"{k}={convert(v, kinds.get(k))}" for k, v in op.kwargs.data.items()]
        ns, packet = overload._schema.name.split("::")
        target = f"torch.ops.{ns}.{packet}.{overload._overloadname}"
        if ns == "coil":
            # coil's own operators are Python functions (dialects/torch_library.py):
            # called directly, not through the dispatcher (~5 us a call).
            if OPS_IMPORT not in self.module_lines:
                self.module_lines.append(OPS_IMPORT)
            target = f"coil_ops.{packet}"
        return f"{target}({', '.join(args + kwargs)})"

    def generic_value(self, attr: Attribute) -> str:
        if isinstance(attr, NoneAttr):
            return "None"
        if isinstance(attr, ExprAttr):
            return self.expr(attr.data)
        if isinstance(attr, ShapeAttr):
            return "[" + ", ".join(self.expr(v) for v in attr.data) + "]"
        if isinstance(attr, builtin.FloatAttr):
            return python_float(attr.value.data)
        if isinstance(attr, IntegerAttr):
            if attr.type == builtin.i1:
                return repr(bool(attr.value.data))
            return str(attr.value.data)
        if isinstance(attr, StringAttr):
            return repr(attr.data)
        if dtypes.is_element_type(attr):
            return str(dtypes.to_torch(attr))
        if isinstance(attr, DenseIntOrFPElementsAttr):
            raise PythonTargetError("-t python: dense attributes are not operator arguments")
        raise PythonTargetError(f"-t python: cannot print argument {attr}")


def _only_read(value: SSAValue) -> bool:
    """Whether every use of ``value`` is an aten op argument its schema neither
    writes nor returns a view of (so one tensor can serve every call)."""
    for use in value.uses:
        op = use.operation
        if not isinstance(op, AtenOp):
            return False
        names = [name for name, vs in op.operand_groups().items() if value in vs]
        args = {a.name: a for a in op.overload()._schema.arguments}
        if not names or any(args[n].alias_info is not None for n in names):
            return False
    return True


def _returned_argument(op: Operation, returns: Sequence[Any]) -> SSAValue | None:
    """The operand an aten op returns as its one result because it writes it
    (``out=``, an in-place op's ``self``), per its schema; else None."""
    if (
        not isinstance(op, AtenOp)
        or len(returns) != 1
        or returns[0].alias_info is None
        or not returns[0].alias_info.is_write
    ):
        return None
    alias = set(returns[0].alias_info.before_set)
    groups = op.operand_groups()
    for a in op.overload()._schema.arguments:
        info = a.alias_info
        if info is not None and info.is_write and alias & set(info.before_set):
            values = groups.get(a.name, [])
            if len(values) == 1 and values[0] is not None:
                return values[0]
    return None


def _listed(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _is_default(op: AtenOp, spec: Any) -> bool:
    """Whether the non-tensor argument ``spec`` of ``op`` is its schema default."""
    if spec.default_attr is None:
        return False
    if op.properties.get(spec.accessor) is None:
        return True
    value, default = op.arg(spec.name), spec.default
    return type(value) is type(default) and value == default
