"""Printing and parsing coil IR as text, with every coil dialect registered."""

from __future__ import annotations

import io

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
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
