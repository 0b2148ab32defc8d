"""torch.export archives (.pt2) -> aten IR.

``torch.export.load`` gives an ExportedProgram; it is decomposed with coil's
table (``run_decompositions``) and its graph imported. Parameters, buffers and
lifted constants are ordinary function arguments, as the exported graph has
them, named after the program's input specs (``p_fc1_weight``, ``x`` ...).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import IO, Any

import torch
from xdsl.dialects.builtin import ModuleOp

from coil.frontend.decompositions import decomposition_table
from coil.frontend.fx_importer import import_graph


class ExportLoadError(RuntimeError):
    pass


def import_exported_program(ep: torch.export.ExportedProgram) -> ModuleOp:
    """Decompose an ExportedProgram with coil's table and import its graph."""
    ep = ep.run_decompositions(decomposition_table())
    return import_graph(ep.graph_module)


def exported_inputs(ep: torch.export.ExportedProgram, user_args: Sequence[Any]) -> list[Any]:
    """The imported function's arguments, in order: the program's parameters,
    buffers and lifted constants where its signature places them, and
    ``user_args`` for its user inputs."""
    from torch.export.graph_signature import InputKind

    user = iter(user_args)
    args = []
    for spec in ep.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            args.append(next(user))
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            args.append(
                ep.state_dict[spec.target]
                if spec.target in ep.state_dict
                else ep.constants[spec.target]
            )  # non-persistent buffers
        elif spec.kind in (InputKind.CONSTANT_TENSOR, InputKind.CUSTOM_OBJ):
            args.append(ep.constants[spec.target])
        else:
            raise ExportLoadError(f"unsupported input kind {spec.kind} ({spec.arg.name})")
    return args


def load_exported_program(stream: IO[bytes] | str) -> ModuleOp:
    """Load a ``torch.export.save``d archive (path or binary stream) and import it."""
    try:
        if not isinstance(stream, str):
            stream = io.BytesIO(stream.read())
        ep = torch.export.load(stream)
    except Exception as e:  # report any unreadable archive as one error
        raise ExportLoadError(f"cannot load the torch.export archive: {e}") from e
    return import_exported_program(ep)
