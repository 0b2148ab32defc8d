"""Torch operators coil defines (namespace ``coil``), for rewrites whose result
no ATen operator computes. The aten dialect names them like any other
operator (``aten.operator "coil::packed_linear"(...)``); :meth:`OperatorOp.resolve
<coil.dialects.aten_base.OperatorOp.resolve>` imports this module for the
``coil`` namespace, so fx-opt, the wrappers and the tests find them.

``coil::packed_linear(Tensor x, Tensor weight, Tensor? bias) -> Tensor``
    ``x @ weight.T + bias`` on the CPU (a float32 ``weight`` with a bfloat16
    ``x``: ``x @ weight.to(bfloat16).T + bias``, as under ``torch.autocast``)
    with the weight repacked once into the layout its GEMM reads: MKL's packed
    sgemm for float32 (``mkl::_mkl_reorder_linear_weight`` /
    ``mkl::_mkl_linear``), oneDNN's blocked layout for bfloat16
    (``mkldnn::_reorder_linear_weight`` / ``mkldnn::_linear_pointwise``), the
    calls Inductor's CPU freezing passes make
    (``torch/_inductor/fx_passes/mkldnn_fusion.py``). An unpacked GEMM
    repacks the weight on every call; on a 2-core Xeon (AVX-512, AMX) the
    packed product took 1.1-2.5x less time at 8-256 rows in float32 and
    1.2-2.4x in bfloat16 (benchmarks/RESULTS.md, twenty-first session;
    ``transforms/aten_cpu_packed_linear.py`` says where coil uses it).

    The packed copy is cached per weight tensor (held weakly, as
    ``runtime/wrapper.py``'s ``ConstantCache`` holds parameters) and made
    again when the weight's ``_version`` or data pointer changes
    (``load_state_dict``, ``w.data = ...``). An inference tensor keeps no
    version counter, so its product is ATen's ``linear`` (nothing could tell
    an update); so is one whose dtype, device or layout the packed kernels do
    not take. The packed copy costs the weight's size again while the weight
    lives. MKL packs float32 for one row count: a weight keeps a pack per row
    count it meets (eight at most; ``mkl::_mkl_linear`` runs ATen's unpacked
    linear when the rows differ from its pack's); oneDNN's bfloat16 pack
    serves every row count.
"""

from __future__ import annotations

import functools
import weakref

import torch

_LIB = torch.library.Library("coil", "DEF")
_LIB.define("packed_linear(Tensor x, Tensor weight, Tensor? bias) -> Tensor")

PACKS_PER_WEIGHT = 8
"""Float32 packs kept per weight, one per row count (a dynamic graph's sizes)."""


class _Packs:
    """The packed copies of one weight while it stays the same: its identity
    (held weakly), ``_version`` and data pointer; one copy per row count for
    float32 (MKL packs for one), one for every count in bfloat16."""

    __slots__ = ("ref", "version", "pointer", "packs")

    def __init__(self, weight: torch.Tensor, version: int):
        key = id(weight)
        self.ref = weakref.ref(weight, lambda ref: _forget(key, ref))
        self.version = version
        self.pointer = weight.data_ptr()
        self.packs: dict[int, torch.Tensor] = {}

    def get(self, weight: torch.Tensor, rows: int, dtype: torch.dtype) -> tuple[torch.Tensor, int]:
        """The copy for ``rows`` rows of ``dtype`` (the weight's, or bfloat16
        of a float32 weight under autocast) and the row count it was packed
        for (past :data:`PACKS_PER_WEIGHT` counts, the first one's: ATen's
        mkl_linear then runs its unpacked linear)."""
        key = rows if dtype == torch.float32 else -1  # (a bfloat16 pack serves every count)
        if key not in self.packs:
            counts = [k for k in self.packs if k >= 0]
            if key >= 0 and len(counts) >= PACKS_PER_WEIGHT:
                key = counts[0]
            else:
                with torch.no_grad():
                    if dtype == torch.float32:
                        packed = torch.ops.mkl._mkl_reorder_linear_weight(weight, rows)
                    else:
                        packed = torch.ops.mkldnn._reorder_linear_weight(weight.to(dtype), rows)
                self.packs[key] = packed
        return self.packs[key], key


_PACKED: dict[int, _Packs] = {}
"""id(weight) -> its packs (a plain dict keyed by id: a lookup on every call,
~0.1 us where torch's WeakIdKeyDictionary took 2.8)."""


def _forget(key: int, ref: weakref.ref) -> None:
    entry = _PACKED.get(key)
    if entry is not None and entry.ref is ref:  # not a newer tensor at the same id
        del _PACKED[key]


@functools.cache
def packable(dtype: torch.dtype) -> bool:
    """Whether this process has a packed CPU GEMM for ``dtype``."""
    if dtype == torch.float32:
        return bool(torch._C.has_mkl)
    if dtype == torch.bfloat16:
        return torch.backends.mkldnn.is_available() and bool(
            torch.ops.mkldnn._is_mkldnn_bf16_supported()
        )
    return False


def _new_packs(weight: torch.Tensor) -> _Packs | None:
    """A fresh entry for ``weight``, or None where it cannot be packed: an
    inference tensor (no version counter: nothing could tell an update), or a
    weight the packed kernels do not take."""
    if not (
        weight.device.type == "cpu"
        and weight.dim() == 2
        and weight.is_contiguous()
        and weight.dtype in (torch.float32, torch.bfloat16)
    ):
        return None
    try:
        version = weight._version
    except RuntimeError:
        return None
    entry = _PACKED[id(weight)] = _Packs(weight, version)
    return entry


_AUTOCAST = (torch.bfloat16, torch.float32)
"""(x, weight) dtypes of a product under bfloat16 autocast: the float32
weight is packed as bfloat16."""


def packed_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None):
    # The checks that pass on every call of a compiled graph come first and
    # are cheap; a weight's own eligibility is decided when its entry is made.
    entry = _PACKED.get(id(weight))
    if (
        entry is None
        or entry.ref() is not weight
        or entry.version != weight._version
        or entry.pointer != weight.data_ptr()
    ):
        entry = _new_packs(weight)
    autocast = (x.dtype, weight.dtype) == _AUTOCAST
    if (
        entry is None
        or (x.dtype != weight.dtype and not autocast)
        or x.device.type != "cpu"
        or x.dim() < 2
        or (bias is not None and bias.dtype != x.dtype)
        or not packable(x.dtype)
    ):
        return torch.nn.functional.linear(x, weight.to(x.dtype) if autocast else weight, bias)
    rows = max(x.numel() // max(x.shape[-1], 1), 1)
    packed, packed_rows = entry.get(weight, rows, x.dtype)
    x = x.contiguous()
    if x.dtype == torch.float32:
        # MKL's packed B is made for one row count (cblas_sgemm_pack's m): at
        # another, ATen's mkl_linear runs its unpacked linear itself.
        return torch.ops.mkl._mkl_linear(x, packed, weight, bias, packed_rows)
    return torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "")


def _meta(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None):
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


_LIB.impl("packed_linear", packed_linear, "CPU")
_LIB.impl("packed_linear", _meta, "Meta")


__all__ = ["packable", "packed_linear"]
