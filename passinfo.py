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

from coil.intmath import is_pow2


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


# --------------------------------------------------------------------------
# Allowed values of the options, checked when a pass is built (its
# ``__post_init__``), so a pass checks its own options without importing the
# pipeline layer above it.
# --------------------------------------------------------------------------


class PassOptionError(ValueError):
    """A pass option of the wrong type or out of range (names pass and option)."""


@dataclass(frozen=True)
class OptionRule:
    """The values an option allows: ``ok`` decides, ``allowed`` says it in words."""

    allowed: str
    ok: Callable[[Any], bool]
    choices: tuple[str, ...] = ()
    """The values of a string option that takes one of a few (``fx-opt --help``)."""


def pow2_or_zero(hi: int, zero: str = "heuristic") -> OptionRule:
    return OptionRule(
        f"0 ({zero}) or a power of two from 1 to {hi}",
        lambda v: v == 0 or (is_pow2(v) and v <= hi),
    )


def int_range(lo: int, hi: int | None = None) -> OptionRule:
    text = f"an integer from {lo} to {hi}" if hi is not None else f"an integer >= {lo}"
    return OptionRule(text, lambda v: v >= lo and (hi is None or v <= hi))


def one_of(*values: str) -> OptionRule:
    return OptionRule(
        "one of " + ", ".join(f'"{v}"' for v in values), lambda v: v in values, values
    )


def _gemm_config_ok(text: str) -> bool:
    from coil.strategy.gemm import parse_gemm_config

    if not text:
        return True
    try:
        parse_gemm_config(text)
    except ValueError:
        return False
    return True


def _known_aten_ops(names: tuple[str, ...]) -> bool:
    from coil.dialects.aten import op_class_named

    return all(op_class_named(n) is not None for n in names)


OPTION_RULES: dict[str, dict[str, OptionRule]] = {
    "convert-decode-attention-to-tt": {"splits": pow2_or_zero(64)},
    "convert-loop-to-tt": {
        "xblock": pow2_or_zero(65536),
        "rblock": pow2_or_zero(65536),
        "num_warps": pow2_or_zero(32),
        "num_stages": int_range(0, 16),
        "persistent_threshold": OptionRule(
            "-1 (rows always loop) or an integer from 0 to 65536 (the longest row kept whole)",
            lambda v: -1 <= v <= 65536,
        ),
        "autotune": OptionRule("0 (off) or an integer from 1 to 64", lambda v: 0 <= v <= 64),
        "gemm_autotune": OptionRule("0 (off) or an integer from 1 to 64", lambda v: 0 <= v <= 64),
        "tile2d": one_of("auto", "off"),
        "eviction": one_of("auto", "stream", "off"),
        "yblock": pow2_or_zero(1024),
        "gemm_config": OptionRule(
            "empty (the heuristic) or BMxBNxBK[wWARPS][sSTAGES][gGROUP_M], e.g. 64x64x32w4s3g8",
            _gemm_config_ok,
        ),
    },
    "convert-aten-to-loop": {
        "fallback": one_of("extern", "error"),
        "matvec": one_of("auto", "on", "off"),
        "gemm": one_of("auto", "triton", "extern"),
    },
    "aten-channels-last": {"mode": one_of("auto", "on", "off")},
    "aten-decompose": {
        "ops": OptionRule(
            'aten overload names, each in quotes: "aten._softmax.default","aten.mm.default"',
            _known_aten_ops,
        )
    },
    "loop-inline": {
        "max_cost": int_range(0),
        "max_reads": int_range(0),
        "max_uses": int_range(0),
        "max_body_ops": OptionRule("0 (no limit) or an integer >= 1", lambda v: v >= 0),
        "recompute_margin": OptionRule("0 (never stores for it) or a number > 0", lambda v: v >= 0),
    },
    "aten-reorder-collectives": {
        "max_in_flight": OptionRule("0 (no limit) or an integer >= 1", lambda v: v >= 0),
        "prefetch": OptionRule("0 (no limit) or an integer >= 1", lambda v: v >= 0),
    },
    "aten-bucket-collectives": {"bucket_mb": int_range(1)},
    "loop-split-reduction": {
        "split": OptionRule("0 (the strategy's), 1 (never) or an integer >= 2", lambda v: v >= 0),
        "num_sms": OptionRule("0 (the target's) or an integer >= 1", lambda v: v >= 0),
        "max_split": int_range(2),
    },
    "host-combine-launches": {
        "max_args": int_range(2),
        "max_kernels": OptionRule("0 (no limit) or an integer >= 2", lambda v: v == 0 or v >= 2),
    },
    "convert-loop-to-cpp": {"vector_bytes": OptionRule("32 or 64", lambda v: v in (32, 64))},
    "loop-fuse": {
        "max_members": int_range(2),
        "max_body_ops": OptionRule("0 (no limit) or an integer >= 1", lambda v: v >= 0),
    },
}
"""Allowed values of each coil pass's options (beyond their types), by pass
name and field name; ``check_options`` applies them."""


def check_options(p: ModulePass) -> None:
    """Raise :class:`PassOptionError` naming the pass, the option and what it
    allows when an option of ``p`` is out of range."""
    for field_name, rule in OPTION_RULES.get(p.name, {}).items():
        value = getattr(p, field_name)
        if not rule.ok(value):
            shown = spec_value(value) if isinstance(value, tuple) else value
            option = field_name.replace("_", "-")
            allowed = rule.allowed
            raise PassOptionError(f"{p.name}: option '{option}' must be {allowed}; got {shown}")
