"""torch dtypes <-> MLIR builtin element types, and torch's promotion rules on them.

Signed integers are MLIR's signless ``iN`` (as arith treats them), unsigned
ones ``uiN``, bool is ``i1``, complex is ``complex<fN>``.

The tables are keyed by torch's dtype *names* (``"float32"``), not by
``torch.dtype`` objects, so the dialects, the parser, the verifier and the
loop-level lowering run without importing torch (``fx-opt`` on a ``.mlir``
file never pays torch's import). :func:`to_torch` imports torch when asked for
a ``torch.dtype``; :func:`to_mlir` accepts a ``torch.dtype`` (which only exists
once torch is imported) or a name.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from xdsl.dialects import builtin
from xdsl.ir import Attribute, TypeAttribute

if TYPE_CHECKING:
    import torch

_PAIRS: list[tuple[str, TypeAttribute]] = [
    ("float32", builtin.f32),
    ("float64", builtin.f64),
    ("float16", builtin.f16),
    ("bfloat16", builtin.BFloat16Type()),
    ("int64", builtin.i64),
    ("int32", builtin.i32),
    ("int16", builtin.IntegerType(16)),
    ("int8", builtin.IntegerType(8)),
    ("uint8", builtin.IntegerType(8, builtin.Signedness.UNSIGNED)),
    ("bool", builtin.i1),
    ("complex64", builtin.ComplexType(builtin.f32)),
    ("complex128", builtin.ComplexType(builtin.f64)),
    ("complex32", builtin.ComplexType(builtin.f16)),
    ("float8_e4m3fn", builtin.Float8E4M3FNType()),
    ("float8_e5m2", builtin.Float8E5M2Type()),
    ("float8_e4m3fnuz", builtin.Float8E4M3FNUZType()),
    ("float8_e5m2fnuz", builtin.Float8E5M2FNUZType()),
    ("uint16", builtin.IntegerType(16, builtin.Signedness.UNSIGNED)),
    ("uint32", builtin.IntegerType(32, builtin.Signedness.UNSIGNED)),
    ("uint64", builtin.IntegerType(64, builtin.Signedness.UNSIGNED)),
]

_BY_NAME: dict[str, TypeAttribute] = dict(_PAIRS)
_NAME_OF: dict[Attribute, str] = {t: n for n, t in _PAIRS}

# The element types of torch's dtypes, for the lowering's readability.
f16, bf16, f32, f64 = (_BY_NAME[n] for n in ("float16", "bfloat16", "float32", "float64"))
i8, i16, i32, i64, i1 = (_BY_NAME[n] for n in ("int8", "int16", "int32", "int64", "bool"))


class UnsupportedDtype(ValueError):
    pass


def is_torch_dtype(value: object) -> bool:
    """Whether ``value`` is a ``torch.dtype`` (False, without importing torch,
    when torch is not loaded: then no ``torch.dtype`` can exist)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.dtype)


def to_mlir(dtype: torch.dtype | str) -> TypeAttribute:
    """The element type for a torch dtype (or a dtype name such as ``"float32"``)."""
    name = dtype if isinstance(dtype, str) else str(dtype).removeprefix("torch.")
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UnsupportedDtype(f"torch dtype {dtype} has no coil element type") from None


def name_of(element_type: Attribute) -> str:
    """torch's name of an element type's dtype (``f32`` -> ``"float32"``)."""
    try:
        return _NAME_OF[element_type]
    except KeyError:
        raise UnsupportedDtype(f"{element_type} is not a torch element type") from None


def to_torch(element_type: Attribute) -> torch.dtype:
    """The torch dtype for an element type (imports torch)."""
    import torch

    return getattr(torch, name_of(element_type))


def is_element_type(attr: Attribute) -> bool:
    return attr in _NAME_OF


def element_type(value: Attribute | Any) -> TypeAttribute:
    """An element type given as itself or as a ``torch.dtype``."""
    if isinstance(value, Attribute):
        if not is_element_type(value):
            raise UnsupportedDtype(f"{value} is not a torch element type")
        return value  # type: ignore[return-value]
    return to_mlir(value)


# --------------------------------------------------------------------------
# Categories and promotion (c10/core/ScalarType.h's promoteTypes, on element types)
# --------------------------------------------------------------------------


def is_bool(t: Attribute) -> bool:
    return t == builtin.i1


def is_float(t: Attribute) -> bool:
    """A real floating-point element type (torch's ``is_floating_point``)."""
    return isinstance(t, builtin.AnyFloat)


def is_complex(t: Attribute) -> bool:
    return isinstance(t, builtin.ComplexType)


def is_integer(t: Attribute) -> bool:
    """An integer element type other than bool (signed or unsigned)."""
    return isinstance(t, builtin.IntegerType) and not is_bool(t)


def is_unsigned(t: Attribute) -> bool:
    return isinstance(t, builtin.IntegerType) and t.signedness.data == builtin.Signedness.UNSIGNED


def itemsize(t: Attribute) -> int:
    """Bytes per element (bool: 1)."""
    if is_bool(t):
        return 1
    if is_complex(t):
        return 2 * itemsize(t.element_type)
    return t.bitwidth // 8  # type: ignore[attr-defined]


def category(t: Attribute) -> int:
    """torch's promotion category: 0 bool, 1 integer, 2 floating, 3 complex."""
    if is_bool(t):
        return 0
    if is_complex(t):
        return 3
    if is_float(t):
        return 2
    return 1


# The dtypes ``promoteTypes`` orders (c10's table covers exactly these; the
# barebones unsigned types and float8 do not promote with other dtypes).
_PROMOTABLE = ("uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
               "complex32", "complex64", "complex128", "bool", "bfloat16")  # fmt: skip


_BAREBONES = ("uint16", "uint32", "uint64")


def promote_types(a: Attribute, b: Attribute) -> TypeAttribute:
    """torch.promote_types on element types (test_dtypes checks every pair against torch)."""
    if a == b:
        return a  # type: ignore[return-value]
    na, nb = name_of(a), name_of(b)
    if na not in _PROMOTABLE or nb not in _PROMOTABLE:
        # barebones unsigned types promote only with (real, non-fp8) floats
        for x, y in ((a, b), (b, a)):
            if name_of(x) in _BAREBONES and name_of(y) in _PROMOTABLE and is_float(y):
                return y  # type: ignore[return-value]
        raise UnsupportedDtype(f"torch does not promote {na} with {nb}")
    if is_bool(a):
        return b  # type: ignore[return-value]
    if is_bool(b):
        return a  # type: ignore[return-value]
    ca, cb = category(a), category(b)
    if ca != cb:
        hi, lo = (a, b) if ca > cb else (b, a)
        if is_complex(hi) and is_float(lo):
            # complex with a wider real: the complex type of the wider width
            width = max(hi.element_type.bitwidth, _real_width(lo))  # type: ignore[attr-defined]
            return _complex_of(width)
        return hi  # type: ignore[return-value]
    if ca == 1:  # two integers
        ua, ub = is_unsigned(a), is_unsigned(b)
        if ua != ub:  # uint8 with a signed int: the smallest signed int holding both
            signed = b if ua else a
            return signed if itemsize(signed) > 1 else builtin.i16  # type: ignore[return-value]
        return a if itemsize(a) >= itemsize(b) else b  # type: ignore[return-value]
    if ca == 2:  # two floats
        if {na, nb} == {"float16", "bfloat16"}:
            return builtin.f32
        return a if a.bitwidth >= b.bitwidth else b  # type: ignore[attr-defined,return-value]
    # two complex types
    wa, wb = a.element_type.bitwidth, b.element_type.bitwidth  # type: ignore[attr-defined]
    return a if wa >= wb else b  # type: ignore[return-value]


def _real_width(t: Attribute) -> int:
    # bf16 counts as a 32-bit real when it meets complex (no complex<bf16>).
    return 32 if t == builtin.BFloat16Type() else t.bitwidth  # type: ignore[attr-defined]


def _complex_of(width: int) -> TypeAttribute:
    return {16: _BY_NAME["complex32"], 32: _BY_NAME["complex64"]}.get(width, _BY_NAME["complex128"])


DEFAULT_FLOAT: TypeAttribute = builtin.f32
"""torch's default dtype (``torch.get_default_dtype()`` unless a user changes it)."""


def scalar_type(value: bool | int | float | complex) -> TypeAttribute:
    """The dtype torch gives a Python scalar (``torch.tensor(value).dtype``)."""
    if isinstance(value, bool):
        return builtin.i1
    if isinstance(value, int):
        return builtin.i64
    if isinstance(value, complex):
        return _complex_of(DEFAULT_FLOAT.bitwidth)  # type: ignore[attr-defined]
    return DEFAULT_FLOAT


def to_complex(t: Attribute) -> TypeAttribute:
    """c10's ``toComplexType``: the complex type with real part ``t``."""
    if is_complex(t):
        return t  # type: ignore[return-value]
    if not is_float(t) or name_of(t).startswith("float8"):
        raise UnsupportedDtype(f"{name_of(t)} has no complex counterpart")
    return _complex_of(_real_width(t))


def result_type(operands: list[tuple[str, Attribute]]) -> TypeAttribute:
    """torch.result_type over operands given as (``"tensor"`` | ``"zerodim"`` |
    ``"scalar"``, element type), as ATen's ``ResultTypeState``: dimensioned
    tensors decide within a category, then 0-d tensors, then Python scalars
    (which count as the default dtype of their category)."""
    state: dict[str, TypeAttribute | None] = {"tensor": None, "zerodim": None, "scalar": None}
    for kind, t in operands:
        if kind == "scalar":
            if is_complex(t):
                t = to_complex(DEFAULT_FLOAT)
            elif is_float(t):
                t = DEFAULT_FLOAT
        prev = state[kind]
        state[kind] = t if prev is None else promote_types(prev, t)  # type: ignore[assignment]
    result = _combine_categories(
        state["tensor"], _combine_categories(state["zerodim"], state["scalar"])
    )
    if result is None:
        raise ValueError("result_type of no operands")
    return result


def _combine_categories(
    higher: TypeAttribute | None, lower: TypeAttribute | None
) -> TypeAttribute | None:
    # ATen's combine_categories (aten/src/ATen/native/TypeProperties.cpp).
    if higher is not None and is_complex(higher):
        return higher
    if lower is not None and is_complex(lower):
        if higher is not None and is_float(higher):
            return to_complex(higher)
        return lower
    if higher is not None and is_float(higher):
        return higher
    if higher is not None and lower is not None and (is_bool(higher) or is_float(lower)):
        return promote_types(higher, lower)
    if higher is not None and lower is not None:
        return higher
    return higher if higher is not None else lower
