"""Emitters: IR -> text (MLIR's translations). ``get_all_targets`` maps each ``-t``
name to a lazy factory returning the ``Target`` class, as xDSL's registry does."""

from collections.abc import Callable

from xdsl.utils.target import Target

SUMMARIES: dict[str, str] = {
    "triton": "the module's tt.func kernels as one Triton (@triton.jit) source file",
    "python": "one importable Python module: call(args) launching the kernels",
    "cpp": "a C++ wrapper launching the compiled kernels through the CUDA driver",
    "cpp-kernels": "the module's cpu.func kernels as one C++ (OpenMP) source file",
}
"""One line per target, for ``fx-opt --help``."""


def get_all_targets() -> dict[str, Callable[[], type[Target]]]:
    def triton() -> type[Target]:
        from coil.targets.triton import TritonTarget

        return TritonTarget

    def python() -> type[Target]:
        from coil.targets.python import PythonTarget

        return PythonTarget

    def cpp() -> type[Target]:
        from coil.targets.cpp import CppTarget

        return CppTarget

    def cpp_kernels() -> type[Target]:
        from coil.targets.cpp_kernels import CppKernelsTarget

        return CppKernelsTarget

    return {"triton": triton, "python": python, "cpp": cpp, "cpp-kernels": cpp_kernels}
