"""The decomposition table coil traces with.

torch's own core-ATen table (``torch._decomp.core_aten_decompositions``), as
Inductor starts from: what reaches coil is the core ATen opset plus the few
composite ops that table keeps (views, ``_to_copy``, norms, ``_softmax`` ...).
Later stages that want an op kept whole remove it here, in one place.
"""

from __future__ import annotations

import functools

import torch
from torch._decomp import core_aten_decompositions

KEEP: tuple[torch._ops.OpOverload, ...] = (
    # The core table decomposes the CPU flash-attention forward into the math
    # form (for export), but its autograd formula is the fused backward, which
    # reads the forward's logsumexp: decomposed, the two disagree and training
    # gradients are wrong (HF GPT-2 on the CPU: rel. error ~5 in ln_1's grads).
    # Inductor excludes it for the same reason (decomps_to_exclude).
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
)
"""Ops the core table decomposes that coil keeps whole (lowered or called as ATen)."""


@functools.cache
def decomposition_table() -> dict[torch._ops.OpOverload, object]:
    table = dict(core_aten_decompositions())
    for op in KEEP:
        table.pop(op, None)
    return table
