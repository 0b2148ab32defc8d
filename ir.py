"""Printing and parsing coil IR as text, with every coil dialect registered, and
reading the source locations ops carry (provenance)."""

from __future__ import annotations

import io
import os

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, NameLoc
from xdsl.ir import Attribute
from xdsl.parser import Parser
from xdsl.printer import Printer


def coil_context() -> Context:
    """A context with builtin/func/arith/math/scf and the coil dialects (arith is
    coil's, with MLIR's elementwise tensor forms: dialects/arith.py)."""
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.dialects.math import Math
    from xdsl.dialects.scf import Scf

    from coil.dialects import get_all_dialects

    ctx = Context()
    for dialect in (Builtin, Func, Math, Scf):
        ctx.load_dialect(dialect)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx


def print_module(module: ModuleOp, *, debuginfo: bool = False, generic: bool = False) -> str:
    out = io.StringIO()
    Printer(stream=out, print_debuginfo=debuginfo, print_generic_format=generic).print_op(module)
    return out.getvalue() + "\n"


def parse_module(text: str, name: str = "<string>") -> ModuleOp:
    module = Parser(coil_context(), text, name).parse_module()
    module.verify()
    return module


# ---- provenance -------------------------------------------------------------------
# The importer gives each aten op its user line (``loc("models.py":37:0)``);
# convert-aten-to-loop wraps it in MLIR's name location with the aten op it came
# from (``loc("aten.amax"("models.py":37:0))``) on every op it builds for it.


def source_line(loc: Attribute) -> str | None:
    """``"file:line"`` of a location (through name locations), or None."""
    while isinstance(loc, NameLoc):
        loc = loc.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}"
    return None


def source_op(loc: Attribute) -> str | None:
    """The aten op a location names (``"aten.amax"``), or None."""
    return loc.desc.data if isinstance(loc, NameLoc) else None


def short_lines(lines: list[str]) -> str:
    """``"models.py:31, models.py:37"``: "file:line" strings with the file's basename,
    for comments in generated code (the IR keeps the full path)."""
    return ", ".join(os.path.basename(t) for t in lines)
