"""Passes that go from one dialect to the next (MLIR's conversions).
``get_all_passes`` maps each registered pass name to a lazy factory."""

from collections.abc import Callable

from xdsl.passes import ModulePass

from coil.passinfo import lazy_factories

SUMMARIES: dict[str, str] = {
    "convert-aten-to-loop": "aten ops -> loop nests and index-map views; the rest ATen externs",
    "bufferize": "give what must exist in memory a buffer; nests write outs(...)",
    "convert-decode-attention-to-tt": "one-query attention ATen calls -> flash-decoding tt kernels",
    "convert-loop-to-tt": "each bufferized nest -> one Triton kernel (tt.func) and its launch",
    "convert-loop-to-cpp": "each bufferized CPU nest -> one C++ kernel (cpu.func) and its launch",
    "convert-buffer-to-host": "the rest of each function -> the host wrapper (host.func)",
}
"""One line per pass, for ``fx-opt --help`` (which must not import the passes)."""


PASSES: dict[str, str] = {
    "convert-aten-to-loop": "coil.lowering.convert_aten_to_loop:ConvertAtenToLoopPass",
    "bufferize": "coil.lowering.bufferize:BufferizePass",
    "convert-decode-attention-to-tt": (
        "coil.lowering.convert_decode_attention_to_tt:ConvertDecodeAttentionToTtPass"
    ),
    "convert-loop-to-tt": "coil.lowering.convert_loop_to_tt:ConvertLoopToTtPass",
    "convert-loop-to-cpp": "coil.lowering.convert_loop_to_cpp:ConvertLoopToCppPass",
    "convert-buffer-to-host": "coil.lowering.convert_buffer_to_host:ConvertBufferToHostPass",
}
"""Each registered pass's class as ``"module:Class"`` (imported only when used;
``coil.passinfo`` reads its options from the source for ``fx-opt --help``)."""


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    return lazy_factories(PASSES)
