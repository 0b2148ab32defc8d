"""Imports go one way (DESIGN.md): dialects <- transforms/lowering <- targets <-
runtime <- backend/cli. Every import statement of the package counts, those
inside functions too: a lazy import hides a cycle from the interpreter, not
from the reader."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the package `coil`


def _modules() -> dict[str, Path]:
    skip = {"test", "benchmarks", "examples", ".venv", "build", "scratch"}
    found = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in skip or any(p.startswith(".") for p in rel.parts):
            continue
        name = ".".join(("coil", *rel.with_suffix("").parts))
        found[name.removesuffix(".__init__")] = path
    return found


def _imports(path: Path) -> set[str]:
    """Every coil module ``path`` imports, at any depth of the file."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("coil")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("coil"):
                out.add(node.module)
                out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


MODULES = _modules()
IMPORTS = {name: _imports(path) for name, path in MODULES.items()}


def _importers(target: str, among: str) -> list[str]:
    return sorted(
        m
        for m, imported in IMPORTS.items()
        if m.startswith(among) and any(i == target or i.startswith(target + ".") for i in imported)
    )


def test_the_executors_import_one_way():
    """aten_executor runs aten ops and hands the rest to loop_executor, which
    runs an extern's aten region through the environment it is given."""
    assert "coil.runtime.loop_executor" in IMPORTS["coil.runtime.aten_executor"]
    assert _importers("coil.runtime.aten_executor", "coil.runtime.loop_executor") == []


def test_the_walk_sees_lazy_imports():
    """The check above would pass vacuously if imports inside functions were
    missed: backend.py imports the reference executor inside a function."""
    assert "coil.runtime.aten_executor.run_module" in IMPORTS["coil.backend"]


def test_no_dialect_imports_a_pass():
    """A dialect does not know its passes: canonicalization patterns are
    registered from transforms/ (dialects/aten_base.CANONICALIZATION_PATTERNS)."""
    offenders = {
        m: sorted(i for i in IMPORTS[m] if i.startswith(("coil.transforms", "coil.lowering")))
        for m in MODULES
        if m.startswith("coil.dialects")
    }
    assert {m: i for m, i in offenders.items() if i} == {}
