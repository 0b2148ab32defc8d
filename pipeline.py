"""Named pass pipelines, as data: each is a string ``fx-opt -p`` accepts.

``coil pipeline [NAME]`` prints one; the torch.compile backend runs
``PIPELINES["default"]`` unchanged, so ``fx-opt x.mlir -p "$(coil pipeline)"``
replays exactly what the backend did. It grows by appending passes here.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass

ATEN_CLEANUP = "canonicalize,cse,dce"
ATEN = f"canonicalize,aten-decompose,{ATEN_CLEANUP}"
LOOP = "convert-aten-to-loop,loop-inline,loop-fuse,loop-simplify-indexing,cse,dce"
BUFFER = "bufferize,memory-plan"

PIPELINES: dict[str, str] = {
    # aten: fold no-ops and view chains, decompose composites, clean up;
    # loop: lower to loop nests, fuse, simplify index math, clean up bodies;
    # buffer: give what must exist in memory a buffer, plan reuse.
    "default": f"{ATEN},{LOOP},{BUFFER}",
    "aten": ATEN,
    "aten-cleanup": ATEN_CLEANUP,
    "loop": f"{ATEN},{LOOP}",
}


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every pass a pipeline may name: xDSL's, coil's transforms and lowerings."""
    from xdsl.transforms import get_all_passes as xdsl_passes

    from coil.lowering import get_all_passes as lowering_passes
    from coil.transforms import get_all_passes as transform_passes

    return {**xdsl_passes(), **transform_passes(), **lowering_passes()}
