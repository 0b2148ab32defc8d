"""Torch operators coil defines (namespace ``coil``), for rewrites whose result
no ATen operator computes. The aten dialect names them like any other
operator (``aten.operator "coil::packed_linear"(...)``); :meth:`OperatorOp.resolve
<coil.dialects.aten_base.OperatorOp.resolve>` imports this module for the
``coil`` namespace, so fx-opt, the wrappers and the tests find them.

``coil::packed_linear(Tensor x, Tensor weight, Tensor? bias) -> Tensor``
    ``x @ weight.T + bias`` on the CPU with the weight repacked once into the
    layout its GEMM reads: MKL's packed sgemm for float32
    (``mkl::_mkl_reorder_linear_weight`` / ``mkl::_mkl_linear``), oneDNN's
    blocked layout for bfloat16 (``mkldnn::_reorder_linear_weight`` /
    ``mkldnn::_linear_pointwise``), the calls Inductor's CPU freezing passes
    make (``torch/_inductor/fx_passes/mkldnn_fusion.py``). An unpacked GEMM
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

import torch
from torch.utils.weak import WeakIdKeyDictionary

_LIB = torch.library.Library("coil", "DEF")
_LIB.define("packed_linear(Tensor x, Tensor weight, Tensor? bias) -> Tensor")

_PACKED: WeakIdKeyDictionary = WeakIdKeyDictionary()
"""weight -> (version, data pointer, {row count: packed weight})."""
PACKS_PER_WEIGHT = 8
"""Float32 packs kept per weight, one per row count (a dynamic graph's sizes)."""


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


def _packed(weight: torch.Tensor, rows: int) -> tuple[torch.Tensor, int] | None:
    """The packed copy of ``weight`` for ``rows`` rows and the row count it was
    packed for: MKL packs float32 for one row count, so a weight keeps one pack
    per row count seen (up to :data:`PACKS_PER_WEIGHT`; past that the first
    one's, and ATen's unpacked linear at the others); oneDNN's bfloat16 pack
    serves every row count."""
    try:
        version = weight._version
    except RuntimeError:  # an inference tensor: no version counter
        return None
    pointer = weight.data_ptr()
    entry = _PACKED.get(weight)
    if entry is None or entry[0] != version or entry[1] != pointer:
        entry = _PACKED[weight] = (version, pointer, {})
    packs: dict[int, torch.Tensor] = entry[2]
    key = rows if weight.dtype == torch.float32 else 0
    if key not in packs:
        if len(packs) >= PACKS_PER_WEIGHT:
            key = next(iter(packs))
        else:
            with torch.no_grad():
                if weight.dtype == torch.float32:
                    packs[key] = torch.ops.mkl._mkl_reorder_linear_weight(weight, rows)
                else:
                    packs[key] = torch.ops.mkldnn._reorder_linear_weight(weight, rows)
    return packs[key], key


def packed_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None):
    ok = (
        x.device.type == "cpu"
        and weight.device.type == "cpu"
        and x.dtype == weight.dtype
        and (bias is None or bias.dtype == x.dtype)
        and weight.dim() == 2
        and weight.is_contiguous()
        and x.dim() >= 2
        and packable(x.dtype)
    )
    rows = max(x.numel() // max(x.shape[-1], 1), 1)
    found = _packed(weight, rows) if ok else None
    if found is None:
        return torch.nn.functional.linear(x, weight, bias)
    packed, packed_rows = found
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
