"""``-t cpp-kernels``: the module's ``cpu.func`` kernels as one C++ translation unit.

The printer lives with the lowering (``lowering/loop_to_cpp/source.py``, which
says how nests become loops); this is the ``-t`` target over it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from coil.dialects import cpu
from coil.lowering.loop_to_cpp.source import (
    PRELUDE,
    CppUnsupported,
    emit_cpp_kernels,
    emit_kernel,
    kernel_checks_bounds,
)

__all__ = ["PRELUDE", "CppUnsupported", "emit_cpp_kernels", "emit_kernel", "kernel_checks_bounds"]


class CppKernelsTargetError(DiagnosticException):
    """The module holds no C++ kernels to print."""


@dataclass(frozen=True)
class CppKernelsTarget(Target):
    """``-t cpp-kernels``: the ``cpu.func`` kernels as one C++ source file."""

    name = "cpp-kernels"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if not any(isinstance(op, cpu.FuncOp) for op in module.ops):
            raise CppKernelsTargetError(
                "-t cpp-kernels expects cpu.func kernels; found none -- run "
                "convert-loop-to-cpp first"
            )
        output.write(emit_cpp_kernels(module))
