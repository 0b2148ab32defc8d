"""Emitters: IR -> text (MLIR's translations). ``get_all_targets`` maps each ``-t``
name to a lazy factory returning the ``Target`` class, as xDSL's registry does."""

from collections.abc import Callable

from xdsl.utils.target import Target


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

    return {"triton": triton, "python": python, "cpp": cpp}
