"""The aten -> loop lowerings, one module per op family (Inductor's lowering.py,
split). Importing this package registers them all in
``lowerer.LOWERINGS``, which ``convert-aten-to-loop`` reads."""

from coil.lowering.aten_to_loop import (  # noqa: F401
    data_movement,
    gemm,
    matvec,
    norms,
    pointwise,
    pooling,
    reductions,
    scans,
    scatters,
    views,
)
