"""Passes that go from one dialect to the next (MLIR's conversions).
``get_all_passes`` maps each registered pass name to a lazy factory."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    def convert_aten_to_loop() -> type[ModulePass]:
        from coil.lowering.convert_aten_to_loop import ConvertAtenToLoopPass

        return ConvertAtenToLoopPass

    def bufferize() -> type[ModulePass]:
        from coil.lowering.bufferize import BufferizePass

        return BufferizePass

    return {"convert-aten-to-loop": convert_aten_to_loop, "bufferize": bufferize}
