"""torch dtypes <-> MLIR builtin element types.

Signed integers are MLIR's signless ``iN`` (as arith treats them), unsigned
ones ``uiN``, bool is ``i1``, complex is ``complex<fN>``.
"""

from __future__ import annotations

import torch
from xdsl.dialects import builtin
from xdsl.ir import Attribute, TypeAttribute

_PAIRS: list[tuple[torch.dtype, TypeAttribute]] = [
    (torch.float32, builtin.f32),
    (torch.float64, builtin.f64),
    (torch.float16, builtin.f16),
    (torch.bfloat16, builtin.BFloat16Type()),
    (torch.int64, builtin.i64),
    (torch.int32, builtin.i32),
    (torch.int16, builtin.IntegerType(16)),
    (torch.int8, builtin.IntegerType(8)),
    (torch.uint8, builtin.IntegerType(8, builtin.Signedness.UNSIGNED)),
    (torch.bool, builtin.i1),
    (torch.complex64, builtin.ComplexType(builtin.f32)),
    (torch.complex128, builtin.ComplexType(builtin.f64)),
    (torch.complex32, builtin.ComplexType(builtin.f16)),
    (torch.float8_e4m3fn, builtin.Float8E4M3FNType()),
    (torch.float8_e5m2, builtin.Float8E5M2Type()),
    (torch.float8_e4m3fnuz, builtin.Float8E4M3FNUZType()),
    (torch.float8_e5m2fnuz, builtin.Float8E5M2FNUZType()),
]
for _bits, _dt in ((16, torch.uint16), (32, torch.uint32), (64, torch.uint64)):
    _PAIRS.append((_dt, builtin.IntegerType(_bits, builtin.Signedness.UNSIGNED)))

_TO_MLIR: dict[torch.dtype, TypeAttribute] = dict(_PAIRS)
_TO_TORCH: dict[Attribute, torch.dtype] = {t: d for d, t in _PAIRS}


class UnsupportedDtype(ValueError):
    pass


def to_mlir(dtype: torch.dtype) -> TypeAttribute:
    """The element type for a torch dtype."""
    try:
        return _TO_MLIR[dtype]
    except KeyError:
        raise UnsupportedDtype(f"torch dtype {dtype} has no coil element type") from None


def to_torch(element_type: Attribute) -> torch.dtype:
    """The torch dtype for an element type."""
    try:
        return _TO_TORCH[element_type]
    except KeyError:
        raise UnsupportedDtype(f"{element_type} is not a torch element type") from None


def is_element_type(attr: Attribute) -> bool:
    return attr in _TO_TORCH
