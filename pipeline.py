"""Named pass pipelines, as data: each is a string ``fx-opt -p`` accepts.

``coil pipeline [NAME]`` prints one; the torch.compile backend runs
``PIPELINES["default"]`` unchanged, so ``fx-opt x.mlir -p "$(coil pipeline)"``
replays exactly what the backend did. Today the pipeline stops at the aten
level (the loop/buffer/tt stages are later issues); it grows by appending
passes here.
"""

from __future__ import annotations

ATEN_CLEANUP = "canonicalize,cse,dce"

PIPELINES: dict[str, str] = {
    # aten -> aten: fold no-ops and view chains, decompose composites, clean up.
    "default": f"canonicalize,aten-decompose,{ATEN_CLEANUP}",
    "aten-cleanup": ATEN_CLEANUP,
}
