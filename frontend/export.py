"""torch.export archives (.pt2) -> aten IR.

``torch.export.load`` gives an ExportedProgram; it is decomposed with coil's
table (``run_decompositions``) and its graph imported. Parameters, buffers and
lifted constants are ordinary function arguments, as the exported graph has
them, named after the program's input specs (``p_fc1_weight``, ``x`` ...).
"""

from __future__ import annotations

import io
from typing import IO

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


def load_exported_program(stream: IO[bytes] | str) -> ModuleOp:
    """Load a ``torch.export.save``d archive (path or binary stream) and import it."""
    try:
        if not isinstance(stream, str):
            stream = io.BytesIO(stream.read())
        ep = torch.export.load(stream)
    except Exception as e:  # report any unreadable archive as one error
        raise ExportLoadError(f"cannot load the torch.export archive: {e}") from e
    return import_exported_program(ep)
