"""coil: a torch.compile backend and MLIR-style compiler built on xDSL.

FX graphs are imported into the ``aten`` dialect and lowered through ``loop``
and ``buffer`` to Triton kernels plus a host wrapper; every stage prints as
text that ``fx-opt`` can parse and replay.

Public API (imports are lazy so ``fx-opt --help`` stays fast):

* :func:`import_graph` / :func:`import_module` -- FX / PyTorch program -> aten IR
* :func:`run_module` -- the reference executor (aten, loop and buffer levels)
* :func:`compile_graph` -- compile one aten FX graph; ``coil.backend.coil`` is the
  ``torch.compile`` backend, registered under the name "coil"
"""

__version__ = "0.1.0"

__all__ = ["__version__", "compile_graph", "import_graph", "import_module", "run_module"]


def __getattr__(name: str):
    if name in ("import_graph",):
        from coil.frontend.fx_importer import import_graph

        return import_graph
    if name == "import_module":
        from coil.frontend.loader import import_module

        return import_module
    if name == "run_module":
        from coil.runtime.aten_executor import run_module

        return run_module
    if name == "compile_graph":
        from coil.compile_driver import compile_graph

        return compile_graph
    raise AttributeError(f"module 'coil' has no attribute {name!r}")
