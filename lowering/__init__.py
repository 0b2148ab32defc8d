"""Passes that go from one dialect to the next (MLIR's conversions).
``get_all_passes`` maps each registered pass name to a lazy factory."""

from collections.abc import Callable

from xdsl.passes import ModulePass

SUMMARIES: dict[str, str] = {
    "convert-aten-to-loop": "aten ops -> loop nests and index-map views; the rest ATen externs",
    "bufferize": "give what must exist in memory a buffer; nests write outs(...)",
    "convert-loop-to-tt": "each bufferized nest -> one Triton kernel (tt.func) and its launch",
    "convert-buffer-to-host": "the rest of each function -> the host wrapper (host.func)",
}
"""One line per pass, for ``fx-opt --help`` (which must not import the passes)."""


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    def convert_aten_to_loop() -> type[ModulePass]:
        from coil.lowering.convert_aten_to_loop import ConvertAtenToLoopPass

        return ConvertAtenToLoopPass

    def bufferize() -> type[ModulePass]:
        from coil.lowering.bufferize import BufferizePass

        return BufferizePass

    def convert_loop_to_tt() -> type[ModulePass]:
        from coil.lowering.convert_loop_to_tt import ConvertLoopToTtPass

        return ConvertLoopToTtPass

    def convert_buffer_to_host() -> type[ModulePass]:
        from coil.lowering.convert_buffer_to_host import ConvertBufferToHostPass

        return ConvertBufferToHostPass

    return {
        "convert-aten-to-loop": convert_aten_to_loop,
        "bufferize": bufferize,
        "convert-loop-to-tt": convert_loop_to_tt,
        "convert-buffer-to-host": convert_buffer_to_host,
    }
