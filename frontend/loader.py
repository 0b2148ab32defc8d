"""Programs from files and Python objects: the ``coil import`` command and
:func:`import_module`.

A ``.py`` model file defines ``model`` (an ``nn.Module`` or a function) and
``example_inputs`` (a tuple), and may set ``dynamic = True``; the examples/
folder has some. A ``.pt2`` file is a ``torch.export.save`` archive.
"""

from __future__ import annotations

import runpy
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from xdsl.dialects.builtin import ModuleOp

from coil.frontend.capture import capture_graphs
from coil.frontend.export import load_exported_program
from coil.frontend.fx_importer import import_graph


class ModelFileError(ValueError):
    pass


def import_module(
    module_or_fn: torch.nn.Module | Callable, example_inputs: Sequence[Any], dynamic: bool = False
) -> ModuleOp:
    """Trace through AOTAutograd with coil's decompositions; import the forward graph."""
    graphs = capture_graphs(module_or_fn, tuple(example_inputs), dynamic=dynamic)
    if len(graphs) != 1:
        raise ModelFileError(f"expected one graph, dynamo produced {len(graphs)}")
    return import_graph(graphs[0].gm, graphs[0].example_inputs)


def located_failure(path: Path, e: BaseException) -> ModelFileError:
    """``file:line: ExcType: message`` for an exception raised running a model file
    (or a pass plugin):
    the innermost line of the model file, and where it was raised when elsewhere."""
    if isinstance(e, SyntaxError) and e.filename is not None:
        return ModelFileError(f"{e.filename}:{e.lineno}: SyntaxError: {e.msg}")
    frames = traceback.extract_tb(e.__traceback__)
    mine = [f for f in frames if Path(f.filename).resolve() == path.resolve()]
    where = f"{mine[-1].filename}:{mine[-1].lineno}" if mine else str(path)
    message = f"{where}: {type(e).__name__}: {e}"
    if frames and mine and frames[-1] is not mine[-1]:
        message += f" (raised at {frames[-1].filename}:{frames[-1].lineno})"
    return ModelFileError(message)


def load_model_file(path: str | Path) -> tuple[Any, tuple[Any, ...], bool]:
    """(model, example_inputs, dynamic) defined by a model file."""
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"{path}: {'not a file' if path.exists() else 'no such file'}")
    try:
        namespace = runpy.run_path(str(path), run_name="coil_model")
    except Exception as e:  # the user's code: say where it failed and how
        raise located_failure(path, e) from e
    missing = [n for n in ("model", "example_inputs") if n not in namespace]
    if missing:
        raise ModelFileError(f"{path} must define {' and '.join(missing)}")
    inputs = namespace["example_inputs"]
    if callable(inputs):
        try:
            inputs = inputs()
        except Exception as e:
            raise located_failure(path, e) from e
    if not isinstance(inputs, tuple | list):
        # A lone tensor would be unpacked into its rows as arguments.
        raise ModelFileError(
            f"{path}: example_inputs must be a tuple of the model's arguments, not a "
            f"{type(inputs).__name__} (one input: example_inputs = (x,))"
        )
    return namespace["model"], tuple(inputs), bool(namespace.get("dynamic", False))


def load_program(path: str | Path, *, dynamic: bool = False) -> ModuleOp:
    """aten IR of a ``.py`` model file or a ``.pt2`` archive."""
    path = Path(path)
    if not path.exists():
        raise ModelFileError(f"{path}: no such file")
    if path.suffix == ".pt2":
        return load_exported_program(str(path))
    if path.suffix == ".py":
        model, inputs, file_dynamic = load_model_file(path)
        return import_module(model, inputs, dynamic=dynamic or file_dynamic)
    raise ModelFileError(f"{path}: expected a .py model file or a .pt2 archive")
