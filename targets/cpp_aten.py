"""ATen calls in the C++ wrapper (``-t cpp``): one boxed call through the
dispatcher per aten op of a ``host.extern`` region, every schema argument in
order as a ``c10::IValue`` (defaults filled from the schema). A mixin of
``targets/cpp.CppPrinter``, whose naming state it uses."""

from __future__ import annotations

import re
from typing import Any

import sympy
import torch
from xdsl.dialects import builtin
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, NoneAttr, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue

from coil.dialects import dtypes
from coil.dialects.aten import (
    AtenOp,
    ConstantOp,
    OperandRefAttr,
    OperatorOp,
    TensorConstantOp,
    TensorType,
)
from coil.dialects.aten_schema import Kind, argument_kinds, parse_enum
from coil.dialects.buffer import BufferType
from coil.dialects.symbolic import ExprAttr, ShapeAttr
from coil.targets.cpp_values import (
    CppTargetError,
    cpp_device,
    cpp_double,
    cpp_scalar_type,
    cpp_string,
)

_LAYOUTS = {torch.strided: "Strided", torch.sparse_coo: "Sparse", torch._mkldnn: "Mkldnn"}
_MEMORY_FORMATS = {
    torch.contiguous_format: "Contiguous",
    torch.preserve_format: "Preserve",
    torch.channels_last: "ChannelsLast",
    torch.channels_last_3d: "ChannelsLast3d",
}


class AtenCallPrinter:
    """How the aten ops inside a ``host.extern`` region print (see ``CppPrinter``)."""

    def print_aten(self, op: Operation) -> None:
        if isinstance(op, ConstantOp):
            self.names[op.result] = self.ivalue(op.python_value, None)
            self.scalars.add(op.result)
            return
        if isinstance(op, TensorConstantOp):
            self.print_tensor_constant(op)
            return
        if isinstance(op, AtenOp):
            overload = op.overload()
            stack = self.aten_stack(op, overload)
        elif isinstance(op, OperatorOp):
            overload = op.resolve()
            if overload is None:
                raise CppTargetError(
                    f"-t cpp: operator {op.overload_name.data} is not registered in this process"
                )
            stack = self.operator_stack(op, overload)
        else:
            raise CppTargetError(f"-t cpp: {op.name} cannot be called in a host.extern")
        handle = self.op_handle(overload)
        call = f"coil::call_op({handle}(), {{{', '.join(stack)}}})"
        results = list(op.results)
        returns = overload._schema.returns
        if not results or (
            len(results) == 1 and not results[0].uses and _returns_written_argument(returns)
        ):
            # (an ``out=`` call of memory-plan's: its readers read the buffer it writes)
            self.emit(call + ";")
            return
        names = []
        for r in results:
            names.append(self.fresh_name(self.hints.get(r, r.name_hint), "buf"))
            self.names[r] = names[-1]
        # As the Python wrapper: an IR value never holds a list; a list return's
        # elements are the op's results.
        one_list = len(returns) == 1 and isinstance(returns[0].type, torch.ListType)
        if len(results) == 1 and not one_list:
            result = results[0]
            self.emit(f"{self.declare(result, names[0])} = {call}[0]{self.convert(result)};")
            return
        out = self.fresh_name(f"{names[0]}_out", "out")
        self.emit(f"auto {out} = {call};")
        if one_list:
            items = self.fresh_name(f"{names[0]}_list", "list")
            self.emit(f"auto {items} = {out}[0].toTensorVector();")
            for k, name in enumerate(names):
                self.emit(f"at::Tensor {name} = {items}[{k}];")
            return
        for k, (r, name) in enumerate(zip(results, names)):
            self.emit(f"{self.declare(r, name)} = {out}[{k}]{self.convert(r)};")

    def declare(self, value: SSAValue, name: str) -> str:
        if _is_tensor(value):
            return f"at::Tensor {name}"
        self.scalars.add(value)
        return f"c10::IValue {name}"

    def convert(self, value: SSAValue) -> str:
        return ".toTensor()" if _is_tensor(value) else ""

    def print_tensor_constant(self, op: TensorConstantOp) -> None:
        t = op.result.type
        values = list(op.value.get_values())
        if t.dtype.is_floating_point:
            kind, items = "double", [cpp_double(float(v)) for v in values]
        else:
            kind, items = "int64_t", [str(int(v)) for v in values]
        name = self.fresh_name(self.hints.get(op.result, op.result.name_hint), "const")
        self.names[op.result] = name
        self.emit(
            f"at::Tensor {name} = coil::constant_tensor<{kind}>({{{', '.join(items)}}}, "
            f"{self.exprs(t.shape)}, {cpp_scalar_type(t.dtype)}, {cpp_device(t.device)});"
        )

    def op_handle(self, overload: torch._ops.OpOverload) -> str:
        schema = overload._schema
        key = (schema.name, schema.overload_name)
        for handle, value in self.ops.items():
            if value == key:
                return handle
        qualified = schema.name.replace("::", "_") + "_" + (schema.overload_name or "default")
        base = "op_" + re.sub(r"\W", "_", qualified)
        handle = self.fresh_name(base, "op")
        self.ops[handle] = key
        return handle

    def aten_stack(self, op: AtenOp, overload: torch._ops.OpOverload) -> list[str]:
        """Every schema argument of a generated aten op, in order, as IValues."""
        specs = {s.name: s for s in op.schema().args}
        groups = op.operand_groups()
        stack = []
        for arg in overload._schema.arguments:
            spec = specs.get(arg.name)
            if spec is None:
                raise CppTargetError(
                    f"-t cpp: {op.name} has no argument '{arg.name}' of its ATen schema"
                )
            if spec.is_operand:
                values = groups[spec.name]
                stack.append(self.tensor_ivalue(values, spec.kind))
            else:
                stack.append(self.ivalue(op.arg(spec.name), spec.kind))
        return stack

    def operator_stack(self, op: OperatorOp, overload: torch._ops.OpOverload) -> list[str]:
        """Every schema argument of an ``aten.operator`` call, in order, as IValues:
        positionals, keywords by name, the rest from the schema's defaults."""
        kinds = argument_kinds(overload)
        schema_args = overload._schema.arguments
        given: dict[str, Attribute] = {}
        positional = [a.name for a in schema_args if not a.kwarg_only]
        for name, attr in zip(positional, op.args.data):
            given[name] = attr
        given.update(op.kwargs.data)
        stack = []
        for arg in schema_args:
            kind = kinds.get(arg.name)
            if arg.name in given:
                stack.append(self.attr_ivalue(op, given[arg.name], kind))
            elif arg.has_default_value():
                stack.append(self.ivalue(arg.default_value, kind))
            else:
                raise CppTargetError(
                    f"-t cpp: {op.overload_name.data} is called without argument '{arg.name}'"
                )
        return stack

    def attr_ivalue(self, op: OperatorOp, attr: Attribute, kind: Kind | None) -> str:
        if isinstance(attr, OperandRefAttr):
            return self.name(op.inputs[attr.data])
        if isinstance(attr, ArrayAttr) and any(isinstance(a, OperandRefAttr) for a in attr.data):
            names = [self.name(op.inputs[a.data]) for a in attr.data]  # a tensor list
            return f"coil::tensor_list({{{', '.join(names)}}})"
        return self.ivalue(_attr_value(attr, kind), kind)

    def tensor_ivalue(self, values: list[SSAValue | None], kind: Kind) -> str:
        names = ["std::nullopt" if v is None else self.name(v) for v in values]
        if kind is Kind.TENSOR:
            if values and values[0] in self.scalars:
                # A scalar where the schema has a Tensor (a folded 0-d constant):
                # a wrapped number, as torch.ops makes of a Python number.
                return f"coil::wrapped_number({names[0]})"
            return names[0] if names else "c10::IValue()"
        if kind is Kind.OPT_TENSOR_LIST:
            return f"coil::optional_tensor_list({{{', '.join(names)}}})"
        return f"coil::tensor_list({{{', '.join(names)}}})"

    def ivalue(self, value: Any, kind: Kind | None) -> str:
        """A non-tensor argument as a ``c10::IValue`` expression of the schema's kind."""
        if value is None:
            return "c10::IValue()"
        if isinstance(value, SSAValue):
            return self.name(value)
        if kind in (Kind.INT_LIST, Kind.FLOAT_LIST, Kind.BOOL_LIST) or isinstance(
            value, list | tuple
        ):
            return self.list_ivalue(list(value), kind)
        if kind is Kind.FLOAT or (kind is None and isinstance(value, float)):
            if isinstance(value, sympy.Expr) and not value.is_number:
                return f"c10::IValue(double({self.expr(value)}))"
            return f"c10::IValue({cpp_double(float(value))})"
        if isinstance(value, bool):
            return f"c10::IValue({'true' if value else 'false'})"
        if isinstance(value, int | sympy.Expr):
            if isinstance(value, sympy.Expr) and not value.is_Integer and value.is_number:
                return f"c10::IValue({cpp_double(float(value))})"
            return f"c10::IValue(int64_t({self.expr(value)}))"
        if isinstance(value, float):
            return f"c10::IValue({cpp_double(value)})"
        if isinstance(value, str):
            return f"c10::IValue(std::string({cpp_string(value)}))"
        if isinstance(value, torch.dtype):
            return f"c10::IValue({cpp_scalar_type(value)})"
        if isinstance(value, torch.layout):
            if value not in _LAYOUTS:
                raise CppTargetError(f"-t cpp: layout {value} has no C++ name here")
            return f"c10::IValue(c10::Layout::{_LAYOUTS[value]})"
        if isinstance(value, torch.memory_format):
            return f"c10::IValue(c10::MemoryFormat::{_MEMORY_FORMATS[value]})"
        if isinstance(value, torch.device):
            return f"c10::IValue({cpp_device(value)})"
        raise CppTargetError(f"-t cpp: cannot pass argument value {value!r} to an ATen op")

    def list_ivalue(self, items: list[Any], kind: Kind | None) -> str:
        if kind is Kind.FLOAT_LIST or (kind is None and any(isinstance(v, float) for v in items)):
            return f"c10::IValue(std::vector<double>{{{', '.join(cpp_double(v) for v in items)}}})"
        if kind is Kind.BOOL_LIST or (kind is None and items and isinstance(items[0], bool)):
            values = ", ".join("true" if v else "false" for v in items)
            return f"c10::IValue(c10::List<bool>({{{values}}}))"
        return f"c10::IValue(std::vector<int64_t>{{{', '.join(self.expr(v) for v in items)}}})"


def _is_tensor(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType | BufferType)


def _attr_value(attr: Attribute, kind: Kind | None) -> Any:
    """An ``aten.operator`` argument attribute as the Python value it stands for."""
    if isinstance(attr, NoneAttr):
        return None
    if isinstance(attr, ExprAttr):
        return attr.data
    if isinstance(attr, ShapeAttr):
        return list(attr.data)
    if isinstance(attr, builtin.FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, IntegerAttr):
        if attr.type == builtin.i1:
            return bool(attr.value.data)
        return int(attr.value.data)
    if isinstance(attr, StringAttr):
        if kind in (Kind.LAYOUT, Kind.MEMORY_FORMAT, Kind.DEVICE):
            return parse_enum(attr.data, kind)
        return attr.data
    if dtypes.is_element_type(attr):
        return dtypes.to_torch(attr)
    if isinstance(attr, ArrayAttr):
        elem = {Kind.INT_LIST: Kind.INT, Kind.FLOAT_LIST: Kind.FLOAT}.get(kind)
        return [_attr_value(a, elem) for a in attr.data]
    raise CppTargetError(f"-t cpp: cannot pass argument {attr} to an ATen op")


def _returns_written_argument(returns: Any) -> bool:
    """Whether an op's one return is an argument it writes (``out=``, in place)."""
    return (
        len(returns) == 1 and returns[0].alias_info is not None and returns[0].alias_info.is_write
    )
