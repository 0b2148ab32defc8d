"""What coil's pass registries know without importing the passes.

The registries (``transforms.PASSES``, ``lowering.PASSES``) name each pass's
class as ``"module:Class"``; :func:`lazy_factories` turns them into the lazy
factories xDSL's registries hold (``xdsl.transforms.get_all_passes``), and
:func:`pass_options` reads a pass's options -- the dataclass fields, their
types, defaults and docstrings -- from its source with :mod:`ast`, so
``fx-opt --help`` can list them without importing torch (the passes do).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xdsl.passes import ModulePass


def lazy_factories(paths: dict[str, str]) -> dict[str, Callable[[], type[ModulePass]]]:
    """``{name: "module:Class"}`` -> ``{name: factory}``; a factory imports its
    module when called."""

    def factory(path: str) -> Callable[[], type[ModulePass]]:
        def load() -> type[ModulePass]:
            module, _, cls = path.partition(":")
            return getattr(importlib.import_module(module), cls)

        return load

    return {name: factory(path) for name, path in paths.items()}


@dataclass(frozen=True)
class PassOption:
    """One option of a pass, as ``name{option=value}`` spells it."""

    name: str
    """The option as written in a pipeline (``num-warps``)."""
    type: str
    """The annotation's text (``int``, ``bool``, ``tuple[str, ...]``)."""
    default: Any
    """The default value, or the text of an expression it could not evaluate."""
    doc: str
    """The field's docstring (empty when it has none)."""


def pass_options(path: str) -> list[PassOption]:
    """The options of the pass class at ``"module:Class"``, in field order, read
    from its source file (fields of base classes in the same file first)."""
    module, _, cls_name = path.partition(":")
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return []
    with open(spec.origin, encoding="utf-8") as f:
        tree = ast.parse(f.read(), spec.origin)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    constants = _module_constants(tree)
    options: dict[str, PassOption] = {}

    def visit(cls: ast.ClassDef) -> None:
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in classes:
                visit(classes[base.id])
        body = cls.body
        for k, stmt in enumerate(body):
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            annotation = ast.unparse(stmt.annotation)
            if stmt.target.id == "name" or annotation.startswith("ClassVar"):
                continue
            nxt = body[k + 1] if k + 1 < len(body) else None
            doc = ""
            if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant):
                doc = str(nxt.value.value)
            name = stmt.target.id.replace("_", "-")
            default = _default(stmt.value, constants)
            options[name] = PassOption(name, annotation, default, " ".join(doc.split()))

    if cls_name in classes:
        visit(classes[cls_name])
    return list(options.values())


class _NoValue:
    def __repr__(self) -> str:
        return "(required)"


NO_DEFAULT = _NoValue()


def _module_constants(tree: ast.Module) -> dict[str, Any]:
    """Top-level ``NAME = <literal>`` (and ``NAME: T = <literal>``) of a module."""
    out: dict[str, Any] = {}
    for stmt in tree.body:
        targets, value = [], None
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        for t in targets:
            if isinstance(t, ast.Name):
                try:
                    out[t.id] = ast.literal_eval(value)
                except ValueError:
                    pass
    return out


def _default(node: ast.expr | None, constants: dict[str, Any]) -> Any:
    if node is None:
        return NO_DEFAULT
    if isinstance(node, ast.Call) and ast.unparse(node.func) in ("field", "dataclasses.field"):
        for kw in node.keywords:
            if kw.arg == "default":
                return _default(kw.value, constants)
            if kw.arg == "default_factory":
                return ast.unparse(kw.value) + "()"
        return NO_DEFAULT
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)


def spec_value(value: Any) -> str:
    """A value as a pipeline spells it: ``true``, ``4096``, ``auto``, ``a,b``."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(spec_value(v) for v in value)
    return str(value)
