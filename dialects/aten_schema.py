"""ATen schemas as coil sees them: argument kinds, property storage, literal syntax.

Every aten-dialect op is described by its ATen schema. This module turns a
schema into a list of :class:`ArgSpec` (is it an operand or a property, which
kind of value, its default), and converts values three ways:

* Python value (what ``torch.ops`` takes: ints, sympy expressions for SymInts,
  floats, bools, ``torch.dtype`` ...) <-> xDSL attribute (how a property is
  stored);
* xDSL attribute <-> text (the literal syntax of the custom op format, e.g.
  ``dim = [1, s0]``, ``dtype = f32``, ``memory_format = channels_last``).

Integers (``int``/``SymInt``) are stored as ``#coil.expr`` and integer lists
as ``#coil.shape`` whether static or symbolic, so a pass never has to care
which one it got; :meth:`AtenOp.arg` returns plain ints when static.
"""

from __future__ import annotations

import ast
import enum
import functools
import math
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sympy
from torchgen.model import BaseTy, BaseType, FunctionSchema, ListType, OptionalType, Type
from xdsl.dialects import builtin
from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IntegerAttr,
    NoneAttr,
    StringAttr,
)
from xdsl.ir import Attribute, TypeAttribute
from xdsl.parser import AttrParser

from coil.dialects import dtypes
from coil.dialects.symbolic import (
    ExprAttr,
    ShapeAttr,
    format_expr,
    format_expr_list,
    parse_expr,
    to_expr,
    to_symint,
)

if TYPE_CHECKING:
    import torch


def _torch() -> Any:
    """torch if it is imported (None otherwise: then no torch object can exist)."""
    return sys.modules.get("torch")


class Kind(enum.Enum):
    """What an ATen argument holds, independent of optionality."""

    TENSOR = "Tensor"
    TENSOR_LIST = "Tensor[]"
    OPT_TENSOR_LIST = "Tensor?[]"
    INT = "int"
    INT_LIST = "int[]"
    FLOAT = "float"
    FLOAT_LIST = "float[]"
    BOOL = "bool"
    BOOL_LIST = "bool[]"
    STR = "str"
    SCALAR = "Scalar"
    DTYPE = "ScalarType"
    LAYOUT = "Layout"
    DEVICE = "Device"
    MEMORY_FORMAT = "MemoryFormat"
    GENERATOR = "Generator"

    @property
    def is_tensor(self) -> bool:
        return self in (Kind.TENSOR, Kind.TENSOR_LIST, Kind.OPT_TENSOR_LIST)


class UnsupportedSchema(ValueError):
    """A schema with an argument kind the aten dialect has no op form for."""


_BASE_KINDS = {
    BaseTy.Tensor: Kind.TENSOR,
    BaseTy.int: Kind.INT,
    BaseTy.SymInt: Kind.INT,
    BaseTy.float: Kind.FLOAT,
    BaseTy.bool: Kind.BOOL,
    BaseTy.SymBool: Kind.BOOL,
    BaseTy.str: Kind.STR,
    BaseTy.Scalar: Kind.SCALAR,
    BaseTy.ScalarType: Kind.DTYPE,
    BaseTy.Layout: Kind.LAYOUT,
    BaseTy.Device: Kind.DEVICE,
    BaseTy.MemoryFormat: Kind.MEMORY_FORMAT,
    BaseTy.Generator: Kind.GENERATOR,
}
_LIST_KINDS = {
    Kind.TENSOR: Kind.TENSOR_LIST,
    Kind.INT: Kind.INT_LIST,
    Kind.FLOAT: Kind.FLOAT_LIST,
    Kind.BOOL: Kind.BOOL_LIST,
}


def classify(ty: Type) -> tuple[Kind, bool]:
    """(kind, optional) of a torchgen type; raises UnsupportedSchema."""
    optional = isinstance(ty, OptionalType)
    if optional:
        ty = ty.elem
    if isinstance(ty, BaseType) and ty.name in _BASE_KINDS:
        return _BASE_KINDS[ty.name], optional
    if isinstance(ty, ListType):
        elem = ty.elem
        if isinstance(elem, OptionalType) and elem.elem == BaseType(BaseTy.Tensor):
            return Kind.OPT_TENSOR_LIST, optional
        if isinstance(elem, BaseType) and _BASE_KINDS.get(elem.name) in _LIST_KINDS:
            return _LIST_KINDS[_BASE_KINDS[elem.name]], optional
    raise UnsupportedSchema(f"argument type {ty}")


NO_DEFAULT = object()
"""Marks an argument without a default value."""

# Names a generated op class cannot use for a field: Operation's own attributes
# and methods, and Python keywords. Such arguments get a trailing underscore.
_RESERVED = frozenset(
    """name operands results regions successors attributes properties parent location
    result_types operand_types traits verify print parse clone walk erase detach
    irdl_options assembly_format custom_directives result get build create arg args op_def
    from in is if else for while import lambda global def class return and or not pass
    with as del try""".split()
)


def accessor_name(schema_name: str) -> str:
    """The Python field name for a schema argument (renamed if it collides)."""
    return schema_name + "_" if schema_name in _RESERVED else schema_name


@dataclass(frozen=True)
class ArgSpec:
    name: str  # as in the schema
    accessor: str  # python field on the op class (== property name for props)
    kind: Kind
    optional: bool
    # The default as stored (NoneAttr for None), or None when there is none;
    # attributes, not Python values, so reading a schema needs no torch.
    default_attr: Attribute | None
    kwarg_only: bool
    mutated: bool

    @property
    def is_operand(self) -> bool:
        return self.kind.is_tensor

    @property
    def default(self) -> Any:
        """The default's Python value (torch objects for enums), or NO_DEFAULT."""
        if self.default_attr is None:
            return NO_DEFAULT
        if self.kind.is_tensor:
            return None
        return from_attr(self.default_attr, self.kind)


@dataclass(frozen=True)
class ReturnSpec:
    accessor: str
    kind: str  # "tensor", "tensor_list", "int", "float", "bool", "scalar"
    aliases_arg: str | None  # the mutated argument this result is, if any


@dataclass(frozen=True)
class OpSchema:
    qualified: str  # "aten::add.Tensor"
    args: tuple[ArgSpec, ...]
    returns: tuple[ReturnSpec, ...]
    inplace_view: bool = False  # mutates the metadata (sizes/strides) of its input

    @property
    def operands(self) -> tuple[ArgSpec, ...]:
        return tuple(a for a in self.args if a.is_operand)

    @property
    def props(self) -> tuple[ArgSpec, ...]:
        return tuple(a for a in self.args if not a.is_operand)

    @property
    def mutates(self) -> bool:
        return any(a.mutated for a in self.args)


_RETURN_KINDS = {
    BaseTy.Tensor: "tensor",
    BaseTy.int: "int",
    BaseTy.SymInt: "int",
    BaseTy.float: "float",
    BaseTy.bool: "bool",
    BaseTy.SymBool: "bool",
    BaseTy.Scalar: "scalar",
}


# torch 2.13 types the process group of the c10d functional collectives ``Any``
# (a group's name, or the ProcessGroup object); traced graphs carry the name,
# which the dialect keeps as a string. torchgen's schema model has no ``Any``.
_GROUP_NAME_ANY = re.compile(r"\bAny group_name\b")


def _parse_schema(text: str) -> FunctionSchema:
    """torchgen's parse of a schema without its namespace (``add.Tensor(...) -> ...``)."""
    return FunctionSchema.parse(_GROUP_NAME_ANY.sub("str group_name", text))


@functools.cache
def op_schema(overload: torch._ops.OpOverload) -> OpSchema:
    """Describe ``overload`` (raises UnsupportedSchema when it has no op form)."""
    import torch

    return schema_info(str(overload._schema), torch.Tag.inplace_view in overload.tags)


@functools.cache
def schema_info(schema_text: str, inplace_view: bool = False) -> OpSchema:
    """Describe a schema given as text (``aten::add.Tensor(Tensor self, ...) -> Tensor``,
    as ``str(OpOverload._schema)`` prints it).

    Generated op classes keep the schema text they were generated from, so the
    dialect reads the same with any torch version installed. Parsed with
    torchgen's schema model (pure Python), so no torch import is needed."""
    ns, _, text = schema_text.partition("::")
    try:
        parsed = _parse_schema(text)
    except (RuntimeError, AssertionError, KeyError) as e:  # types torchgen does not model
        raise UnsupportedSchema(str(e)) from None
    # torchgen keeps ``out`` arguments apart from the other keyword-only ones.
    kwarg_only = {a.name for a in (*parsed.arguments.flat_kwarg_only, *parsed.arguments.out)}
    args = []
    for arg in parsed.arguments.flat_all:
        kind, optional = classify(arg.type)
        default = None if arg.default is None else default_attr(arg.default, kind, _size(arg.type))
        args.append(
            ArgSpec(
                name=arg.name,
                accessor=accessor_name(arg.name),
                kind=kind,
                optional=optional,
                default_attr=default,
                kwarg_only=arg.name in kwarg_only,
                mutated=bool(arg.annotation and arg.annotation.is_write),
            )
        )
    arg_names = {a.accessor for a in args}
    returns = []
    written = {
        a.annotation.alias_set: a.name
        for a in parsed.arguments.flat_all
        if a.annotation and a.annotation.is_write
    }
    names = [r.name for r in parsed.returns]
    use_names = (
        len(parsed.returns) > 1
        and all(names)
        and len(set(names)) == len(names)
        and not (set(names) & arg_names)
        and not (set(names) & _RESERVED)
    )
    for i, ret in enumerate(parsed.returns):
        if isinstance(ret.type, BaseType) and ret.type.name in _RETURN_KINDS:
            rkind = _RETURN_KINDS[ret.type.name]
        elif isinstance(ret.type, ListType) and ret.type.elem == BaseType(BaseTy.Tensor):
            rkind = "tensor_list"
        else:
            raise UnsupportedSchema(f"return type {ret.type}")
        if len(parsed.returns) == 1:
            accessor = "result" if "result" not in arg_names else "result0"
        else:
            accessor = names[i] if use_names else f"result{i}"
        alias = written.get(ret.annotation.alias_set) if ret.annotation else None
        returns.append(ReturnSpec(accessor, rkind, alias))
    if sum(r.kind == "tensor_list" for r in returns) > 1:
        raise UnsupportedSchema("more than one list return")
    return OpSchema(
        f"{ns}::{text.split('(')[0]}",
        tuple(args),
        tuple(returns),
        inplace_view=inplace_view,
    )


def argument_kinds(overload: torch._ops.OpOverload) -> dict[str, Kind]:
    """Kinds of the arguments of any overload (for ops outside the generated set);
    arguments of kinds coil does not model, or of unparseable schemas, are left out."""
    try:
        parsed = _parse_schema(str(overload._schema).split("::", 1)[1])
    except (RuntimeError, AssertionError, KeyError):  # types torchgen does not model
        return {}
    kinds = {}
    for arg in parsed.arguments.flat_all:
        try:
            kinds[arg.name] = classify(arg.type)[0]
        except UnsupportedSchema:
            pass
    return kinds


# --------------------------------------------------------------------------
# Python values
# --------------------------------------------------------------------------

# Enum names as torch prints them (``str(torch.strided)`` less ``torch.``).
_LAYOUTS = (
    "strided",
    "sparse_coo",
    "sparse_csr",
    "sparse_csc",
    "sparse_bsr",
    "sparse_bsc",
    "_mkldnn",
    "jagged",
)
_MEMORY_FORMATS = ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d")
# TorchScript writes these enums as ints in schema defaults (c10's numbering).
_MEMORY_FORMAT_BY_INT = dict(enumerate(_MEMORY_FORMATS))
_LAYOUT_BY_INT = {0: "strided", 1: "sparse_coo"}
_DTYPE_BY_INT = {
    0: "uint8",
    1: "int8",
    2: "int16",
    3: "int32",
    4: "int64",
    5: "float16",
    6: "float32",
    7: "float64",
    8: "complex32",
    9: "complex64",
    10: "complex128",
    11: "bool",
    15: "bfloat16",
}
# The device types torch.device accepts (c10/core/DeviceType.cpp), so device
# literals are checked without torch (test_aten_schema compares with torch).
_DEVICE_TYPES = (
    "cpu cuda ipu xpu mkldnn opengl opencl ideep hip ve fpga maia xla lazy vulkan mps meta "
    "hpu mtia privateuseone"
).split()
_DEVICE_RE = re.compile(rf"(?:{'|'.join(_DEVICE_TYPES)})(?::(?:0|[1-9][0-9]*))?")


def _size(ty: Type) -> int | None:
    """N of a fixed-size list type (``int[2]``), else None."""
    if isinstance(ty, OptionalType):
        ty = ty.elem
    return ty.size if isinstance(ty, ListType) else None


def default_attr(text: str, kind: Kind, size: int | None = None) -> Attribute:
    """A schema default (as the schema text spells it: ``-1``, ``[0, 1]``,
    ``True``, ``"none"``, ``4`` for int64 ...) in its stored attribute form;
    a bare int for an ``int[N]`` is N copies of it, as torch reads it."""
    if text == "None":
        return NoneAttr()
    if kind.is_tensor:
        raise UnsupportedSchema(f"tensor default {text}")
    if kind is Kind.BOOL:
        return IntegerAttr.from_bool(text == "True")
    if kind is Kind.INT:
        return ExprAttr(int(text))
    if kind is Kind.INT_LIST:
        values = ast.literal_eval(text)
        return ShapeAttr([values] * (size or 1) if isinstance(values, int) else list(values))
    if kind is Kind.FLOAT:
        return FloatAttr(float(text), builtin.f64)
    if kind is Kind.FLOAT_LIST:
        return ArrayAttr([FloatAttr(float(v), builtin.f64) for v in ast.literal_eval(text)])
    if kind is Kind.BOOL_LIST:
        return ArrayAttr([IntegerAttr.from_bool(bool(v)) for v in ast.literal_eval(text)])
    if kind is Kind.SCALAR:
        value = ast.literal_eval(text)
        if isinstance(value, bool):
            return IntegerAttr.from_bool(value)
        return FloatAttr(value, builtin.f64) if isinstance(value, float) else ExprAttr(value)
    if kind is Kind.STR:
        return StringAttr(ast.literal_eval(text))
    if kind is Kind.DTYPE:
        return dtypes.to_mlir(_DTYPE_BY_INT[int(text)])
    if kind is Kind.LAYOUT:
        return StringAttr(_LAYOUT_BY_INT[int(text)])
    if kind is Kind.MEMORY_FORMAT:
        return StringAttr(_MEMORY_FORMAT_BY_INT[int(text)])
    if kind is Kind.DEVICE:
        return StringAttr(ast.literal_eval(text))
    raise UnsupportedSchema(f"default {text} of a {kind.value} argument")


def _is_torch(value: Any, name: str) -> bool:
    torch = _torch()
    return torch is not None and isinstance(value, getattr(torch, name))


def _enum(name: str) -> Any:
    """torch's layout / memory format object named ``name`` (imports torch)."""
    import torch

    return getattr(torch, name)


def _as_symint(value: Any) -> int | sympy.Expr:
    if _is_torch(value, "SymInt"):
        return to_symint(to_expr(value.node.expr))
    if isinstance(value, bool):
        raise TypeError("bool given for an int")
    if isinstance(value, int | sympy.Expr):
        return to_symint(to_expr(value))
    raise TypeError(f"expected an int, got {type(value).__name__}")


def normalize(value: Any, kind: Kind) -> Any:
    """Canonical Python value of ``kind`` (SymInts become sympy, enums torch objects)."""
    if value is None:
        return None
    if kind is Kind.INT:
        return _as_symint(value)
    if kind is Kind.INT_LIST:
        if isinstance(value, int) or _is_torch(value, "SymInt"):  # int[1] takes a bare int
            value = [value]
        return tuple(_as_symint(v) for v in value)
    if kind is Kind.FLOAT:
        if _is_torch(value, "SymFloat"):
            raise TypeError("symbolic floats are not supported")
        return float(value)
    if kind is Kind.FLOAT_LIST:
        return tuple(float(v) for v in value)
    if kind is Kind.BOOL:
        return bool(value)
    if kind is Kind.BOOL_LIST:
        return tuple(bool(v) for v in value)
    if kind is Kind.STR:
        return str(value)
    if kind is Kind.SCALAR:
        if isinstance(value, bool):
            return value
        if isinstance(value, int | sympy.Expr) or _is_torch(value, "SymInt"):
            return _as_symint(value)
        if isinstance(value, float):
            return value
        raise TypeError(f"unsupported Scalar {value!r}")
    if kind is Kind.DTYPE:
        if isinstance(value, int) and value in _DTYPE_BY_INT:
            return dtypes.to_torch(dtypes.to_mlir(_DTYPE_BY_INT[value]))
        if isinstance(value, Attribute) and dtypes.is_element_type(value):
            return value  # an element type stands for its dtype (passes without torch)
        if not dtypes.is_torch_dtype(value):
            raise TypeError(f"expected a dtype, got {value!r}")
        return value
    if kind is Kind.LAYOUT:
        return _enum(_LAYOUT_BY_INT[value]) if isinstance(value, int) else value
    if kind is Kind.MEMORY_FORMAT:
        return _enum(_MEMORY_FORMAT_BY_INT[value]) if isinstance(value, int) else value
    if kind is Kind.DEVICE:
        import torch

        return torch.device(value)
    if kind is Kind.GENERATOR:
        raise TypeError("explicit generators are not supported")
    raise TypeError(f"no value form for {kind}")


# --------------------------------------------------------------------------
# Attributes
# --------------------------------------------------------------------------


def to_attr(value: Any, kind: Kind) -> Attribute:
    """Store a normalized value of ``kind`` as an attribute (None -> NoneAttr)."""
    if value is None:
        return NoneAttr()
    if kind is Kind.INT:
        return ExprAttr(value)
    if kind is Kind.INT_LIST:
        return ShapeAttr(value)
    if kind is Kind.FLOAT:
        return FloatAttr(value, builtin.f64)
    if kind is Kind.FLOAT_LIST:
        return ArrayAttr([FloatAttr(v, builtin.f64) for v in value])
    if kind is Kind.BOOL:
        return IntegerAttr.from_bool(value)
    if kind is Kind.BOOL_LIST:
        return ArrayAttr([IntegerAttr.from_bool(v) for v in value])
    if kind is Kind.SCALAR:
        if isinstance(value, bool):
            return IntegerAttr.from_bool(value)
        if isinstance(value, float):
            return FloatAttr(value, builtin.f64)
        return ExprAttr(value)
    if kind is Kind.DTYPE:
        return dtypes.element_type(value)
    if kind is Kind.LAYOUT:
        return StringAttr(str(value).removeprefix("torch."))
    if kind is Kind.MEMORY_FORMAT:
        return StringAttr(str(value).removeprefix("torch."))
    if kind in (Kind.STR,):
        return StringAttr(value)
    if kind is Kind.DEVICE:
        return StringAttr(str(value))
    raise TypeError(f"no attribute form for {kind}")


def from_attr(attr: Attribute, kind: Kind) -> Any:
    """The Python value stored in ``attr``."""
    if isinstance(attr, NoneAttr):
        return None
    if kind is Kind.INT:
        assert isinstance(attr, ExprAttr)
        return attr.symint
    if kind is Kind.INT_LIST:
        assert isinstance(attr, ShapeAttr)
        return attr.symints
    if kind is Kind.FLOAT:
        assert isinstance(attr, FloatAttr)
        return attr.value.data
    if kind in (Kind.FLOAT_LIST, Kind.BOOL_LIST):
        assert isinstance(attr, ArrayAttr)
        elem = Kind.FLOAT if kind is Kind.FLOAT_LIST else Kind.BOOL
        return tuple(from_attr(a, elem) for a in attr.data)
    if kind is Kind.BOOL:
        assert isinstance(attr, IntegerAttr)
        return bool(attr.value.data)
    if kind is Kind.SCALAR:
        if isinstance(attr, IntegerAttr):
            return bool(attr.value.data)
        if isinstance(attr, FloatAttr):
            return attr.value.data
        assert isinstance(attr, ExprAttr)
        return attr.symint
    if kind is Kind.DTYPE:
        return dtypes.to_torch(attr)
    assert isinstance(attr, StringAttr)
    if kind in (Kind.LAYOUT, Kind.MEMORY_FORMAT):
        return _enum(attr.data)
    if kind is Kind.DEVICE:
        import torch

        return torch.device(attr.data)
    return attr.data


def is_device(text: str) -> bool:
    """Whether ``torch.device(text)`` accepts ``text`` (checked without torch)."""
    return _DEVICE_RE.fullmatch(text) is not None


def check_attr(attr: Attribute, kind: Kind) -> str | None:
    """Why ``attr`` cannot hold a value of ``kind`` (None when it can)."""
    if isinstance(attr, NoneAttr):
        return None
    ok = {
        Kind.INT: lambda: isinstance(attr, ExprAttr),
        Kind.INT_LIST: lambda: isinstance(attr, ShapeAttr),
        Kind.FLOAT: lambda: isinstance(attr, FloatAttr),
        Kind.FLOAT_LIST: lambda: (
            isinstance(attr, ArrayAttr) and all(isinstance(a, FloatAttr) for a in attr.data)
        ),
        Kind.BOOL: lambda: isinstance(attr, IntegerAttr) and attr.type == builtin.i1,
        Kind.BOOL_LIST: lambda: (
            isinstance(attr, ArrayAttr)
            and all(isinstance(a, IntegerAttr) and a.type == builtin.i1 for a in attr.data)
        ),
        Kind.SCALAR: lambda: (
            isinstance(attr, ExprAttr | FloatAttr)
            or (isinstance(attr, IntegerAttr) and attr.type == builtin.i1)
        ),
        Kind.DTYPE: lambda: dtypes.is_element_type(attr),
        Kind.LAYOUT: lambda: isinstance(attr, StringAttr) and attr.data in _LAYOUTS,
        Kind.MEMORY_FORMAT: lambda: isinstance(attr, StringAttr) and attr.data in _MEMORY_FORMATS,
        Kind.STR: lambda: isinstance(attr, StringAttr),
        Kind.DEVICE: lambda: isinstance(attr, StringAttr) and is_device(attr.data),
        Kind.GENERATOR: lambda: False,
    }[kind]()
    return None if ok else f"expected {kind.value}, got {attr}"


# --------------------------------------------------------------------------
# Literal syntax (custom op format)
# --------------------------------------------------------------------------


def string_literal(text: str) -> str:
    """``text`` as an MLIR string literal (escapes as xDSL's printer writes them)."""
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:
            out.append(f"\\{byte:02X}")
    return '"' + "".join(out) + '"'


def format_float(value: float) -> str:
    """A float literal MLIR's lexer reads back exactly (always has a '.')."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = repr(value)
    if "e" in text and "." not in text.split("e")[0]:
        mant, exp = text.split("e")
        text = f"{mant}.0e{exp}"
    elif "." not in text and "e" not in text:
        text += ".0"
    return text


def format_attr(attr: Attribute, kind: Kind | None) -> str:
    """Text of a stored value; ``kind`` None for the self-describing generic form."""
    if isinstance(attr, NoneAttr):
        return "none"
    if isinstance(attr, ExprAttr):
        return format_expr(attr.data)
    if isinstance(attr, ShapeAttr):
        return format_expr_list(attr.data)
    if isinstance(attr, FloatAttr):
        return format_float(attr.value.data)
    if isinstance(attr, IntegerAttr) and attr.type == builtin.i1:
        return "true" if attr.value.data else "false"
    if isinstance(attr, ArrayAttr):
        return "[" + ", ".join(format_attr(a, None) for a in attr.data) + "]"
    if isinstance(attr, StringAttr):
        if kind in (Kind.LAYOUT, Kind.MEMORY_FORMAT):
            return attr.data
        return string_literal(attr.data)
    if isinstance(attr, TypeAttribute):
        return str(attr)
    raise TypeError(f"no literal form for {attr}")


def _parse_optional_float(parser: AttrParser) -> float | None:
    """A float literal, ``inf``/``nan``, or ``-`` followed by one of them."""
    state = parser.pos  # backtrack by position (the parser state object is mutable)
    negative = parser.parse_optional_punctuation("-") is not None
    value = parser.parse_optional_float()
    if value is None:
        word = parser.parse_optional_keyword_in(("inf", "nan"))
        value = None if word is None else float(word)
    if value is None:
        parser._resume_from(state)
        return None
    return -value if negative else value


def parse_attr(parser: AttrParser, kind: Kind | None) -> Attribute:
    """Parse a literal of ``kind`` (None: infer from the text) into its attribute."""
    if parser.parse_optional_keyword("none"):
        return NoneAttr()
    if kind in (Kind.INT,):
        return ExprAttr(parse_expr(parser))
    if kind is Kind.INT_LIST:
        from coil.dialects.symbolic import parse_expr_list

        return ShapeAttr(parse_expr_list(parser))
    if kind in (Kind.LAYOUT, Kind.MEMORY_FORMAT):
        table = _LAYOUTS if kind is Kind.LAYOUT else _MEMORY_FORMATS
        word = parser.parse_optional_identifier()
        if word not in table:
            parser.raise_error(f"expected one of {', '.join(table)}")
        return StringAttr(word)
    if kind is Kind.DTYPE:
        ty = parser.parse_optional_type()
        if ty is None or not dtypes.is_element_type(ty):
            parser.raise_error("expected a dtype (an element type such as f32, i64, i1)")
        return ty
    if kind in (Kind.FLOAT_LIST, Kind.BOOL_LIST):
        elem = Kind.FLOAT if kind is Kind.FLOAT_LIST else Kind.BOOL
        return ArrayAttr(
            parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parse_attr(parser, elem)
            )
        )
    # Self-describing literals (also the generic op's syntax).
    if (b := parser.parse_optional_boolean()) is not None:
        if kind not in (None, Kind.BOOL, Kind.SCALAR):
            parser.raise_error(f"expected {kind.value}, got a bool")
        return IntegerAttr.from_bool(b)
    if kind is Kind.BOOL:
        parser.raise_error("expected true or false")
    if (s := parser.parse_optional_str_literal()) is not None:
        if kind not in (None, Kind.STR, Kind.DEVICE):
            parser.raise_error(f"expected {kind.value}, got a string")
        return StringAttr(s)
    if kind in (Kind.STR, Kind.DEVICE):
        parser.raise_error(f"expected a string literal for {kind.value}")
    if (f := _parse_optional_float(parser)) is not None:
        return FloatAttr(f, builtin.f64)
    if kind is Kind.FLOAT:
        value = parser.parse_optional_integer(allow_boolean=False)
        if value is None:
            parser.raise_error("expected a float")
        return FloatAttr(float(value), builtin.f64)
    if kind is None:
        if parser._current_token.text == "[":
            return ArrayAttr(
                parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, lambda: parse_attr(parser, None)
                )
            )
        if (ty := parser.parse_optional_type()) is not None:
            return ty
    return ExprAttr(parse_expr(parser))


def parse_enum(text: str, kind: Kind) -> Any:
    """A Layout / MemoryFormat / Device from its name (imports torch)."""
    if kind in (Kind.LAYOUT, Kind.MEMORY_FORMAT):
        return _enum(text)
    import torch

    return torch.device(text)
