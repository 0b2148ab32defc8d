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


def _offenders(among: tuple[str, ...], forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    """Modules under ``among`` (name prefixes) that import anything under
    ``forbidden``, with what they import."""
    found = {
        m: sorted(i for i in IMPORTS[m] if i.startswith(forbidden))
        for m in MODULES
        if m.startswith(among)
    }
    return {m: i for m, i in found.items() if i}


# The layers above the dialects, by package: a module name or a dotted prefix.
ABOVE_DIALECTS = (
    "coil.transforms",
    "coil.lowering",
    "coil.targets",
    "coil.runtime",
    "coil.backend",
    "coil.frontend",
    "coil.cli",
)


def test_no_dialect_imports_a_pass():
    """A dialect does not know its passes, nor anything above them:
    canonicalization patterns are registered from transforms/
    (dialects/aten_base.CANONICALIZATION_PATTERNS), and the body builder that
    lowerings and loop passes share lives with the dialects."""
    assert _offenders(("coil.dialects",), ABOVE_DIALECTS) == {}


def test_no_transform_imports_a_lowering_or_later():
    """A transform keeps its dialect: what a lowering and a transform share
    (the body builder, copy nests, the extern-effect analysis) lives in
    dialects/ or transforms/, so transforms/ imports nothing from lowering/,
    targets/, runtime/ or the backend."""
    forbidden = ("coil.lowering", "coil.targets", "coil.runtime", "coil.backend")
    assert _offenders(("coil.transforms",), forbidden) == {}


BUFFER_LEVEL_PASSES = (
    "coil.transforms.memory_plan",
    "coil.transforms.buffer_",
    "coil.transforms.host_",
)


def test_no_loop_level_pass_imports_a_buffer_level_one():
    """Passes run in order aten -> loop -> buffer: a loop- or aten-level pass
    (transforms/loop_*.py, aten_*.py) asks transforms/extern_effects.py what an
    extern call does, never the buffer-level memory plan."""
    early = ("coil.transforms.loop_", "coil.transforms.aten_")
    assert _offenders(early, BUFFER_LEVEL_PASSES) == {}
    assert any(m.startswith(early) for m in MODULES)  # not vacuous


def test_the_memory_plan_shares_no_analysis():
    """What other passes need from the memory plan's neighbourhood lives in
    transforms/extern_effects.py; nothing but the pass registry names
    memory_plan (by string, loaded on demand)."""
    assert _importers("coil.transforms.memory_plan", "coil") == []


def test_runtime_imports_no_driver():
    """runtime/ runs what was compiled: a cache hit rebuilds its callable through
    runtime/compiled.py, and the standalone C++ export (a driver) lives in
    backend.py, so nothing under runtime/ imports the backend, the CLI or the
    torch.compile glue (frontend/capture.py)."""
    forbidden = ("coil.backend", "coil.cli", "coil.frontend.capture")
    assert _offenders(("coil.runtime",), forbidden) == {}
