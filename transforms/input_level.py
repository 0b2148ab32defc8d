"""The check the passes below the aten level make on their input.

``convert-aten-to-loop`` is the one pass that takes aten functions; every pass
after it in the pipeline (bufferize, memory-plan, convert-loop-to-tt,
convert-loop-to-cpp, convert-decode-attention-to-tt, convert-buffer-to-host)
finds nothing it knows in an aten function and, without this check, left it
as it was (or, for convert-buffer-to-host, renamed it a ``host.func`` full of
aten ops) and exited 0: ``fx-opt model.mlir -p convert-loop-to-tt`` printed its
input back. Here such a pass stops with a sentence naming the function, the
op and the pass to run first. Ops inside a ``buffer.extern``'s region are the
ATen call it makes, not the aten level, so only a function's own ops and its
signature count.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import DiagnosticException

from coil.dialects.aten import AtenOp, OperatorOp, TensorConstantOp, TensorType
from coil.ir import source_line


def aten_level_witness(fn: func.FuncOp) -> Operation | Attribute | None:
    """What shows that ``fn`` is still at the aten level: its first own aten op
    (outside extern regions), else an ``!aten.tensor`` in its signature, else
    None. convert-aten-to-loop lowers exactly these functions."""
    for op in fn.body.block.ops:
        if isinstance(op, AtenOp | OperatorOp | TensorConstantOp):
            return op
    types = [*fn.function_type.inputs.data, *fn.function_type.outputs.data]
    return next((t for t in types if isinstance(t, TensorType)), None)


def require_below_aten(module: ModuleOp, pass_name: str) -> None:
    """Raise, naming the function and what is left of the aten level, when a
    function of ``module`` has not been through convert-aten-to-loop."""
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp) or fn.is_declaration:
            continue
        witness = aten_level_witness(fn)
        if witness is None:
            continue
        if isinstance(witness, Operation):
            line = source_line(witness.location)
            what = f"it holds {witness.name}{f' from {line}' if line else ''}"
        else:
            what = "its signature has !aten.tensor types"
        raise DiagnosticException(
            f"{pass_name}: @{fn.sym_name.data} is still at the aten level ({what}); "
            'run convert-aten-to-loop first (-p "$(coil pipeline)" runs every stage)'
        )


__all__ = ["aten_level_witness", "require_below_aten"]
