"""Programs from files and Python objects: the ``coil import`` command and
:func:`import_module`.

A ``.py`` model file defines ``model`` (an ``nn.Module`` or a function) and
``example_inputs`` (a tuple), and may set ``dynamic = True``; the examples/
folder has some. A ``.pt2`` file is a ``torch.export.save`` archive.
"""

from __future__ import annotations

import runpy
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


def load_model_file(path: str | Path) -> tuple[Any, tuple[Any, ...], bool]:
    """(model, example_inputs, dynamic) defined by a model file."""
    namespace = runpy.run_path(str(path), run_name="coil_model")
    missing = [n for n in ("model", "example_inputs") if n not in namespace]
    if missing:
        raise ModelFileError(f"{path} must define {' and '.join(missing)}")
    inputs = namespace["example_inputs"]
    if callable(inputs):
        inputs = inputs()
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
