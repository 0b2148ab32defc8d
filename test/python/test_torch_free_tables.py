"""The tables that let the dialects and the loop-level lowering run without
importing torch agree with torch: dtype promotion, schema defaults, device names."""

from __future__ import annotations

import itertools

import pytest
import torch

from coil.dialects import dtypes
from coil.dialects.aten_ops import ATEN_OPS, PRIMS_OPS
from coil.dialects.aten_schema import Kind, is_device, normalize, to_attr

NAMES = [name for name, _ in dtypes._PAIRS]


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def test_element_types_round_trip_torch_dtypes():
    for name in NAMES:
        dtype = getattr(torch, name)
        assert dtypes.to_torch(dtypes.to_mlir(dtype)) is dtype
        assert dtypes.itemsize(dtypes.to_mlir(dtype)) == dtype.itemsize
        assert dtypes.is_float(dtypes.to_mlir(dtype)) == dtype.is_floating_point
        assert dtypes.is_complex(dtypes.to_mlir(dtype)) == dtype.is_complex


def test_promote_types_matches_torch_for_every_pair():
    for a, b in itertools.product(NAMES, NAMES):
        try:
            want = _name(torch.promote_types(getattr(torch, a), getattr(torch, b)))
        except RuntimeError:
            want = None
        try:
            got = dtypes.name_of(dtypes.promote_types(dtypes.to_mlir(a), dtypes.to_mlir(b)))
        except dtypes.UnsupportedDtype:
            got = None
        assert got == want, (a, b)


_SCALARS = {"bool": True, "int64": 3, "float32": 2.5, "complex64": 1j}


def _operand(kind: str, name: str):
    if kind == "scalar":
        return _SCALARS[name]
    return torch.empty((1,) if kind == "tensor" else (), dtype=getattr(torch, name))


def test_result_type_matches_torch_across_categories():
    operands = [(k, n) for n in NAMES for k in ("tensor", "zerodim")]
    operands += [("scalar", n) for n in _SCALARS]
    for x, y in itertools.product(operands, operands):
        try:
            want = _name(torch.result_type(_operand(*x), _operand(*y)))
        except RuntimeError:
            want = None
        try:
            entries = [(k, dtypes.to_mlir(n)) for k, n in (x, y)]
            got = dtypes.name_of(dtypes.result_type(entries))
        except dtypes.UnsupportedDtype:
            got = None
        assert got == want, (x, y)


@pytest.mark.parametrize("op", [*ATEN_OPS, *PRIMS_OPS], ids=lambda op: op.OVERLOAD)
def test_schema_defaults_match_torch(op):
    """Defaults read from the schema text (torchgen) equal torch's parsed defaults."""
    parsed = torch._C.parse_schema(op.SCHEMA)
    torch_defaults = {a.name: a.default_value for a in parsed.arguments if a.has_default_value()}
    for spec in op.schema().args:
        if spec.name not in torch_defaults:
            assert spec.default_attr is None, spec.name
            continue
        if spec.kind.is_tensor:
            continue
        want = to_attr(normalize(torch_defaults[spec.name], spec.kind), spec.kind)
        assert spec.default_attr == want, spec.name
        if spec.kind in (Kind.DTYPE, Kind.LAYOUT, Kind.MEMORY_FORMAT, Kind.DEVICE):
            assert spec.default == normalize(torch_defaults[spec.name], spec.kind)


@pytest.mark.parametrize(
    "text",
    ["cpu", "cuda", "cuda:0", "cuda:12", "meta", "mps", "xpu:1", "cuda:", "gpu", "cuda:-1",
     "cuda:01", "CPU", "cpu:0", "lazy", ""],
)  # fmt: skip
def test_device_names_match_torch(text):
    try:
        torch.device(text)
        want = True
    except RuntimeError:
        want = False
    assert is_device(text) == want
