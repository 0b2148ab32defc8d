"""Named pass pipelines, as data: each is a string ``fx-opt -p`` accepts.

``coil pipeline [NAME]`` prints one; the torch.compile backend runs
``PIPELINES["default"]`` unchanged, so ``fx-opt x.mlir -p "$(coil pipeline)"``
replays exactly what the backend did (``-t python`` then emits the module the
backend loads). The named prefixes (aten, loop, buffer) stop at a level.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass

ATEN_CLEANUP = "canonicalize,cse,dce"
ATEN = f"canonicalize,aten-decompose,{ATEN_CLEANUP}"
LOOP = "convert-aten-to-loop,loop-inline,loop-fuse,loop-simplify-indexing,cse,dce"
BUFFER = "bufferize,memory-plan"
BACKEND = "convert-loop-to-tt,convert-buffer-to-host"

PIPELINES: dict[str, str] = {
    # aten: fold no-ops and view chains, decompose composites, clean up;
    # loop: lower to loop nests, fuse, simplify index math, clean up bodies;
    # buffer: give what must exist in memory a buffer, plan reuse;
    # backend: each nest becomes a Triton kernel (tt), the rest the wrapper (host).
    # `-t python` then emits the module the torch.compile backend loads.
    "default": f"{ATEN},{LOOP},{BUFFER},{BACKEND}",
    "aten": ATEN,
    "aten-cleanup": ATEN_CLEANUP,
    "loop": f"{ATEN},{LOOP}",
    # The middle end alone: what the reference executor runs pass by pass.
    "buffer": f"{ATEN},{LOOP},{BUFFER}",
}


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every pass a pipeline may name: xDSL's, coil's transforms and lowerings."""
    from xdsl.transforms import get_all_passes as xdsl_passes

    from coil.lowering import get_all_passes as lowering_passes
    from coil.transforms import get_all_passes as transform_passes

    return {**xdsl_passes(), **transform_passes(), **lowering_passes()}
