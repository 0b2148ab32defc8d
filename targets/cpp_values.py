"""C++ text for values the host printer shares (``-t cpp``): size expressions
over ``int64_t`` symbols, string and double literals, scalar types, devices,
and the target's error."""

from __future__ import annotations

import math
from typing import Any

import sympy
import torch
from torch.utils._sympy.functions import FloorDiv, ModularIndexing, PythonMod
from torch.utils._sympy.functions import Max as TorchMax
from torch.utils._sympy.functions import Min as TorchMin
from torch.utils._sympy.functions import Mod as TorchMod
from xdsl.utils.exceptions import DiagnosticException

from coil.dialects.symbolic import to_expr

# torch dtype -> c10::ScalarType enumerator.
SCALAR_TYPES = {
    torch.float32: "Float",
    torch.float64: "Double",
    torch.float16: "Half",
    torch.bfloat16: "BFloat16",
    torch.int64: "Long",
    torch.int32: "Int",
    torch.int16: "Short",
    torch.int8: "Char",
    torch.uint8: "Byte",
    torch.bool: "Bool",
    torch.complex64: "ComplexFloat",
    torch.complex128: "ComplexDouble",
    torch.complex32: "ComplexHalf",
    torch.uint16: "UInt16",
    torch.uint32: "UInt32",
    torch.uint64: "UInt64",
    torch.float8_e4m3fn: "Float8_e4m3fn",
    torch.float8_e5m2: "Float8_e5m2",
    torch.float8_e4m3fnuz: "Float8_e4m3fnuz",
    torch.float8_e5m2fnuz: "Float8_e5m2fnuz",
}


class CppTargetError(DiagnosticException):
    """The module cannot be printed as a C++ host program (the message says why)."""


# ---- expressions ----------------------------------------------------------------------

_ATOM, _MUL, _ADD = 3, 2, 1


def cpp_expr(expr: Any, names: dict[sympy.Symbol, str] | None = None) -> str:
    """A size expression as C++ over int64_t symbols (``floordiv``/``mod`` with Python's
    rounding through ``coil::floordiv``/``coil::mod``)."""
    return _cpp(to_expr(expr), names or {})[0]


def _cpp(e: sympy.Expr, names: dict[sympy.Symbol, str]) -> tuple[str, int]:
    if e.is_Integer:
        value = int(e)
        text = str(value) if -(2**31) <= value < 2**31 else f"int64_t{{{value}LL}}"
        return text, _ATOM if value >= 0 else _ADD
    if e.is_Symbol:
        return names.get(e, e.name), _ATOM
    if isinstance(e, sympy.Add):
        terms = e.as_ordered_terms()
        text = _wrap(_cpp(terms[0], names), _ADD)
        for term in terms[1:]:
            if term.as_coeff_Mul()[0] < 0:
                text += " - " + _wrap(_cpp(-term, names), _MUL + 1)
            else:
                text += " + " + _wrap(_cpp(term, names), _ADD)
        return text, _ADD
    if isinstance(e, sympy.Mul):
        coeff, rest = e.as_coeff_Mul()
        if not coeff.is_Integer:
            raise CppTargetError(f"-t cpp: non-integer coefficient in size expression {e}")
        if coeff < 0:
            return "-" + _wrap(_cpp(-e, names), _ATOM), _ADD
        factors = [_wrap(_cpp(f, names), _MUL) for f in e.as_ordered_factors()]
        return "*".join(factors), _MUL
    if isinstance(e, sympy.Pow):
        base, exp = e.args
        if not (exp.is_Integer and int(exp) > 0):
            raise CppTargetError(f"-t cpp: cannot print power {e}")
        return "*".join([_wrap(_cpp(base, names), _ATOM)] * int(exp)), _MUL
    if isinstance(e, FloorDiv):
        a, b = e.args
        return f"coil::floordiv({_cpp(a, names)[0]}, {_cpp(b, names)[0]})", _ATOM
    if isinstance(e, PythonMod | TorchMod | sympy.Mod):
        a, b = e.args
        return f"coil::mod({_cpp(a, names)[0]}, {_cpp(b, names)[0]})", _ATOM
    if isinstance(e, ModularIndexing):
        base, div, mod = e.args
        return _cpp(PythonMod(FloorDiv(base, div), mod), names)
    if isinstance(e, sympy.Max | sympy.Min | TorchMax | TorchMin):
        fname = "max" if isinstance(e, sympy.Max | TorchMax) else "min"
        args = ", ".join(f"int64_t({_cpp(a, names)[0]})" for a in e.args)
        return f"std::{fname}({{{args}}})", _ATOM
    raise CppTargetError(f"-t cpp: cannot print size expression {e} ({type(e).__name__})")


def _wrap(part: tuple[str, int], min_prec: int) -> str:
    text, prec = part
    return f"({text})" if prec < min_prec else text


def cpp_string(text: str) -> str:
    """A C++ string literal (non-printable and non-ASCII bytes as octal escapes)."""
    out = []
    for byte in text.encode():
        ch = chr(byte)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= byte < 127 and ch != "?":  # "?" would start a trigraph in old modes
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def cpp_double(value: float) -> str:
    if math.isnan(value):
        return "std::numeric_limits<double>::quiet_NaN()"
    if math.isinf(value):
        inf = "std::numeric_limits<double>::infinity()"
        return inf if value > 0 else "-" + inf
    text = repr(float(value))
    return text if any(c in text for c in ".en") else text + ".0"


def cpp_scalar_type(dtype: torch.dtype) -> str:
    if dtype not in SCALAR_TYPES:
        raise CppTargetError(f"-t cpp: dtype {dtype} has no C++ ScalarType here")
    return f"at::ScalarType::{SCALAR_TYPES[dtype]}"


def cpp_device(device: torch.device | str) -> str:
    d = torch.device(device)
    if d.type == "cuda":
        return f"at::Device(at::kCUDA, {d.index or 0})"
    if d.type == "cpu":
        return "at::Device(at::kCPU)"
    raise CppTargetError(f"-t cpp: device {d} is neither cpu nor cuda")
