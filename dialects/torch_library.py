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
    lives. MKL packs float32 for one row count (the first call's): calls with
    another run ATen's unpacked linear (``mkl::_mkl_linear`` checks); oneDNN's
    bfloat16 packing serves every row count.
"""

from __future__ import annotations

import functools

import torch
from torch.utils.weak import WeakIdKeyDictionary

_LIB = torch.library.Library("coil", "DEF")
_LIB.define("packed_linear(Tensor x, Tensor weight, Tensor? bias) -> Tensor")

_PACKED: WeakIdKeyDictionary = WeakIdKeyDictionary()
"""weight -> (version, data pointer, packed weight, the row count it was packed for)."""


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
    """The packed copy of ``weight`` and the row count it was packed for (made
    now for ``rows`` when there is none or the weight changed)."""
    try:
        version = weight._version
    except RuntimeError:  # an inference tensor: no version counter
        return None
    entry = _PACKED.get(weight)
    pointer = weight.data_ptr()
    if entry is not None and entry[0] == version and entry[1] == pointer:
        return entry[2], entry[3]
    with torch.no_grad():
        if weight.dtype == torch.float32:
            packed = torch.ops.mkl._mkl_reorder_linear_weight(weight, rows)
        else:
            packed = torch.ops.mkldnn._reorder_linear_weight(weight, rows)
    _PACKED[weight] = (version, pointer, packed, rows)
    return packed, rows


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
