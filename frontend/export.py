"""torch.export archives (.pt2) -> aten IR.

``torch.export.load`` gives an ExportedProgram; it is decomposed with coil's
table (``run_decompositions``) and its graph imported. Parameters, buffers and
lifted constants are ordinary function arguments, as the exported graph has
them, named after the program's input specs (``p_fc1_weight``, ``x`` ...).
"""

from __future__ import annotations

import io
import logging
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException

from coil.frontend.decompositions import decomposition_table
from coil.frontend.fx_importer import import_graph


class ExportLoadError(DiagnosticException):
    """An archive ``torch.export.load`` cannot read; the message names the file."""


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


@contextmanager
def _quiet_torch_export(causes: list[BaseException]) -> Iterator[None]:
    """Keep ``torch.export.load``'s own reports off the user's terminal: it logs
    a failed read as a warning with the whole traceback before trying an older
    format (``causes`` gets each logged exception instead), and unpickling an
    archive warns about torch's own deprecated pytree classes (a FutureWarning
    nobody but torch can act on)."""

    def keep(record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            causes.append(record.exc_info[1])
        return False

    logger = logging.getLogger("torch.export")
    logger.addFilter(keep)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        logger.removeFilter(keep)


def load_exported_program(stream: IO[bytes] | str, name: str | None = None) -> ModuleOp:
    """Load a ``torch.export.save``d archive (path or binary stream) and import it.
    An archive that does not load is one :class:`ExportLoadError` naming the file
    (``name``, or the path) and the reason."""
    name = name or (stream if isinstance(stream, str) else "<stream>")
    causes: list[BaseException] = []
    try:
        with _quiet_torch_export(causes):
            if not isinstance(stream, str):
                stream = io.BytesIO(stream.read())
            ep = torch.export.load(stream)
    except Exception as e:  # report any unreadable archive as one error
        reason = str(e).strip()
        if "check the warnings above" in reason and causes:  # torch's pointer to its log
            reason = str(causes[0]).strip()
        reason = reason.splitlines()[0] if reason else type(e).__name__
        raise ExportLoadError(f"{name}: cannot load the torch.export archive: {reason}") from e
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return import_exported_program(ep)
