"""What both product lowerings (``gemm.py``'s templates, ``matvec.py``'s
reductions) ask of a matrix product before choosing: whether its one reader is
a pointwise epilogue that would fuse, and what ``mode="max-autotune"`` measured
for it. Kept apart from both so that neither imports the other for it."""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr

from coil.dialects import dtypes
from coil.dialects.aten import AtenOp
from coil.lowering.aten_to_loop.lowerer import LOWERINGS

VIEWS = ("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default")
CASTS = ("aten._to_copy.default", "prims.convert_element_type.default")


def product_epilogue(op: AtenOp) -> tuple[bool, int]:
    """Whether the product's one reader (through views) is pointwise, and the
    bytes per output element that reader reads besides the product."""
    value = op.results[0]
    while True:
        uses = list(value.uses)
        if len(uses) != 1:
            return False, 0
        user = uses[0].operation
        if user.name in VIEWS:
            value = user.results[0]
            continue
        break
    lowering = LOWERINGS.get(user.name)
    if user.name not in CASTS and (
        lowering is None or not lowering.__module__.endswith("aten_to_loop.pointwise")
    ):
        return False, 0
    extra = 0
    for operand in user.operands:
        if operand is not value and hasattr(operand.type, "element_type"):
            shape = getattr(operand.type, "shape", ())
            if len(shape) >= 2:  # a residual, not a broadcast vector
                extra += dtypes.itemsize(operand.type.element_type)
    return True, extra


TUNED = "coil.gemm"
"""The attribute ``mode="max-autotune"`` sets on a product it measured
(``runtime/gemm_autotune.py``): ``"extern"`` or ``"triton CONFIG"``."""


def tuned_choice(op: AtenOp) -> tuple[str, str | None] | None:
    """(``extern`` or ``triton``, the config) where the product was measured."""
    attr = op.attributes.get(TUNED)
    if not isinstance(attr, StringAttr):
        return None
    kind, _, cfg = attr.data.partition(" ")
    return kind, cfg or None
