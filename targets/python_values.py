"""Python text for values the host printers share (``-t python``): size
expressions, literals, tuples, the size symbols a type or attribute mentions,
and the target's error."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import sympy
import torch
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr
from xdsl.ir import Attribute
from xdsl.utils.exceptions import DiagnosticException

from coil.dialects import host as H
from coil.dialects.symbolic import ExprAttr, ShapeAttr, SymbolicSyntaxError, format_expr, to_expr


class PythonTargetError(DiagnosticException):
    """The module cannot be printed as a host program (the message says why)."""


def python_expr(expr: Any) -> str:
    """A size expression as Python over the bound symbol names (``floordiv`` -> ``//``,
    ``mod`` -> ``%``, ``max``/``min`` builtins)."""
    e = to_expr(expr)
    if e.is_Integer:
        return str(int(e))
    try:
        text = format_expr(e)
    except SymbolicSyntaxError:
        from torch.utils._sympy.printers import PythonPrinter

        return PythonPrinter().doprint(e)
    return text.replace(" floordiv ", " // ").replace(" mod ", " % ")


def python_tuple(items: Sequence[str]) -> str:
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def python_float(value: float) -> str:
    if math.isnan(value):
        return 'float("nan")'
    if math.isinf(value):
        return 'float("inf")' if value > 0 else '-float("inf")'
    return repr(float(value))


def python_literal(value: Any) -> str:
    """A Python value as ``torch.ops`` takes it (see aten_executor ``_evaluated``)."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, sympy.Expr):
        return python_expr(value)
    if isinstance(value, float):
        return python_float(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, torch.dtype | torch.layout | torch.memory_format):
        return str(value)
    if isinstance(value, torch.device):
        return f'torch.device("{value}")'
    if isinstance(value, tuple | list):
        return "[" + ", ".join(python_literal(v) for v in value) + "]"
    raise PythonTargetError(f"-t python: cannot print argument value {value!r}")


def type_symbols(t: Attribute) -> set[sympy.Symbol]:
    out: set[sympy.Symbol] = set()
    if hasattr(t, "shape_attr"):
        for e in t.shape_attr.data:
            out |= to_expr(e).free_symbols
    for field in ("strides_attr", "offset_attr"):
        attr = getattr(t, field, None)
        if isinstance(attr, ShapeAttr):
            for e in attr.data:
                out |= to_expr(e).free_symbols
        elif isinstance(attr, ExprAttr):
            out |= to_expr(attr.data).free_symbols
    return out


def attr_symbols(attr: Attribute) -> set[sympy.Symbol]:
    if isinstance(attr, ExprAttr):
        return set(to_expr(attr.data).free_symbols)
    if isinstance(attr, ShapeAttr):
        return {s for e in attr.data for s in to_expr(e).free_symbols}
    if isinstance(attr, ArrayAttr):
        return {s for a in attr.data for s in attr_symbols(a)}
    if isinstance(attr, DictionaryAttr):
        return {s for a in attr.data.values() for s in attr_symbols(a)}
    return set()


def symbols_of(fn: H.FuncOp) -> set[sympy.Symbol]:
    """Every size symbol the function's types and properties mention."""
    out: set[sympy.Symbol] = set()
    for arg in fn.args:
        out |= type_symbols(arg.type)
    for op in fn.walk():
        for r in op.results:
            out |= type_symbols(r.type)
        for attr in [*op.properties.values(), *op.attributes.values()]:
            out |= attr_symbols(attr)
    return out
