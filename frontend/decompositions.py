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

KEEP: tuple[torch._ops.OpOverload, ...] = ()
"""Ops the core table decomposes that coil lowers itself (none yet)."""


@functools.cache
def decomposition_table() -> dict[torch._ops.OpOverload, object]:
    table = dict(core_aten_decompositions())
    for op in KEEP:
        table.pop(op, None)
    return table
