"""The ``cpu`` dialect: C++ kernels for the CPU, one per bufferized loop nest.

``cpu.func @coil_cpp_<hint>_<n>(%buf: !buffer.buffer<...>, ..., %s0: index
{coil.symbol = #coil.expr<s0>}, ...)`` holds the nest it runs, unchanged (a
``loop.pointwise``/``loop.reduction``/``loop.fused`` writing its ``outs``, which
are among the function's buffer arguments), then ``cpu.return``. The buffers are
the kernel's pointer arguments (each pointing at the buffer's first element, as
a ``tt.func``'s), the ``index`` arguments the size symbols its ranges, index
expressions and layouts name. ``convert-loop-to-cpp`` makes these; ``-t
cpp-kernels`` prints them as one C++ translation unit (OpenMP over the outer
loops, ``#pragma omp simd`` on the innermost). The launch is the same
``host.launch`` a Triton kernel gets (its grid is unused: ``[1, 1, 1]``).
"""

from __future__ import annotations

from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation, irdl_op_definition, traits_def
from xdsl.traits import HasParent, IsTerminator

from coil.dialects.func_like import FuncLikeOp


@irdl_op_definition
class FuncOp(FuncLikeOp):
    """``cpu.func``: one C++ kernel (its body is the loop nest it runs)."""

    name = "cpu.func"


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """``cpu.return``: the end of a C++ kernel."""

    name = "cpu.return"
    traits = traits_def(IsTerminator(), HasParent(FuncOp))
    assembly_format = "attr-dict"


Cpu = Dialect("cpu", [FuncOp, ReturnOp], [])
