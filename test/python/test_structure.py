"""Imports go one way (DESIGN.md): dialects <- transforms/lowering <- targets <-
runtime <- compile_driver <- backend/cli. Every import statement of the package counts, those
inside functions too: a lazy import hides a cycle from the interpreter, not
from the reader."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

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
# Every module's imports, read by the fixture below before this file's first
# test: reading them at import (ast over every source) cost every pytest-xdist
# worker 1.3 s of CPU at collection (--collect-only of this file: 5.3 s before,
# 4.0 after), not only the one running this file.
IMPORTS: dict[str, set[str]] = {}


@pytest.fixture(autouse=True, scope="module")
def _read_imports() -> None:
    if not IMPORTS:
        IMPORTS.update({name: _imports(path) for name, path in MODULES.items()})


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
    missed: compile_driver.py imports the reference executor inside a function."""
    assert "coil.runtime.aten_executor.run_module" in IMPORTS["coil.compile_driver"]


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
    "coil.compile_driver",
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
    forbidden = (
        "coil.lowering",
        "coil.targets",
        "coil.runtime",
        "coil.compile_driver",
        "coil.backend",
    )
    assert _offenders(("coil.transforms",), forbidden) == {}


def test_lowerings_and_targets_import_down_only():
    """The rest of the chain: a lowering knows no emitter and nothing that runs
    code, a target (IR -> text) nothing that runs it. (Nothing below the
    drivers imports them: test_no_layer_below_the_drivers_imports_them.)"""
    assert _offenders(("coil.lowering",), ("coil.targets", "coil.runtime")) == {}
    assert _offenders(("coil.targets",), ("coil.runtime",)) == {}
    assert _offenders(("coil.strategy",), ("coil.transforms", "coil.lowering")) == {}


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
    backend.py, so nothing under runtime/ imports the compile driver, the
    backend, the CLI or the torch.compile glue (frontend/capture.py)."""
    forbidden = ("coil.compile_driver", "coil.backend", "coil.cli", "coil.frontend.capture")
    assert _offenders(("coil.runtime",), forbidden) == {}


TORCH_COMPILE_GLUE = (
    "coil.backend",
    "coil.cli",
    "coil.frontend.capture",
    "coil.frontend.partition",
    "coil.frontend.attention",
)
"""What belongs to torch.compile (options, AOTAutograd, partition, the
attention rewrite before autograd) or to the command line: above the compile
driver."""


def test_the_compile_driver_sits_below_the_backend():
    """compile_driver.py turns one aten FX graph into a loaded module; the
    torch.compile glue (backend.py: options, fallback to eager, AOTAutograd,
    partition, CUDA graphs, export_cpp) calls it, never the other way, and
    backend.py re-exports the driver's public names unchanged."""
    assert _offenders(("coil.compile_driver",), TORCH_COMPILE_GLUE) == {}
    assert "coil.compile_driver.compile_graph" in IMPORTS["coil.backend"]
    import coil.backend
    import coil.compile_driver

    for name in ("compile_graph", "run_pipeline", "lower_product", "emit_python"):
        assert getattr(coil.backend, name) is getattr(coil.compile_driver, name)


def _module_of(name: str) -> str | None:
    """The module an imported name lives in (the longest prefix that is one)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _module_graph(imports: dict[str, set[str]]) -> dict[str, set[str]]:
    """Module -> the modules it imports, at any depth of its file. A package's
    ``__init__`` run on the way to a submodule (``from coil.dialects import
    dtypes``) is not counted, only what is taken from the package itself: a
    package that imports its modules (to fill a registry) is no cycle with
    each of them."""
    graph = {}
    for m, names in imports.items():
        targets = {n: _module_of(n) for n in names}
        on_the_way = {
            t
            for n, t in targets.items()
            for n2, t2 in targets.items()
            if n2.startswith(n + ".") and t2 not in (None, t) and t == n
        }
        graph[m] = {t for t in targets.values() if t not in (None, "coil", m, *on_the_way)}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_at_any_depth():
    """Imports inside functions count: moving an import into a function hides a
    cycle from the interpreter, not from the reader. No group of modules
    imports each other, within a layer either: the aten -> loop lowerings
    register into lowering/aten_to_loop/lowerer.py, and convert-aten-to-loop
    imports them at module level."""
    assert _cycles(_module_graph(IMPORTS)) == []


def test_a_planted_lazy_cycle_is_found(monkeypatch):
    """A function-level import back up from the dialects closes a cycle."""
    monkeypatch.setitem(
        IMPORTS,
        "coil.dialects.aten_infer",
        IMPORTS["coil.dialects.aten_infer"] | {"coil.dialects.aten.op_class_named"},
    )
    with pytest.raises(AssertionError):
        test_no_import_cycle_at_any_depth()


SIZE_HELPERS = {"prod", "numel", "cdiv", "pow2", "next_pow2", "is_pow2"}
"""The integer helpers of coil/intmath.py, by name (with or without a leading
underscore)."""

OTHER_HELPERS_OF_THOSE_NAMES = {
    # Ceiling division of a *symbolic* size (torch's FloorDiv), not of ints.
    ("coil.lowering.loop_to_tt.kernel_index", "cdiv"),
}


def _size_helper_definitions(path: Path) -> set[str]:
    return {
        node.name
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.lstrip("_") in SIZE_HELPERS
    }


def test_the_size_helpers_have_one_home():
    """The product of sizes, ceiling division and powers of two live in
    coil/intmath.py, which imports nothing of coil (every layer may use it);
    no other module defines its own, at any depth."""
    assert _importers("coil", "coil.intmath") == []
    found = {(m, name) for m, path in MODULES.items() for name in _size_helper_definitions(path)}
    found -= {("coil.intmath", name) for name in SIZE_HELPERS}
    assert found - OTHER_HELPERS_OF_THOSE_NAMES == set()


def test_a_planted_size_helper_is_found(tmp_path):
    """The walk above sees a helper defined inside a function."""
    planted = tmp_path / "planted.py"
    planted.write_text("def f(xs):\n    def _prod(v):\n        return v\n    return _prod(xs)\n")
    assert _size_helper_definitions(planted) == {"_prod"}


DRIVERS = (
    "coil.pipeline",
    "coil.cli",
    "coil.compile_driver",
    "coil.backend",
    "coil.demo",
    "coil.tools",
)
"""What builds and runs pipelines for a user, above every layer of passes."""

FRONTEND_IMPORTER = (
    "coil.frontend.fx_importer",
    "coil.frontend.fake",
    "coil.frontend.meta",
    "coil.frontend.decompositions",
    "coil.frontend.foreach",
)
"""The frontend's importer: FX graph -> aten dialect, FakeTensors for aten
types, the decomposition table. It builds aten IR and needs only the dialects,
so the aten passes (aten-decompose, aten-fuse-attention import torch's traces
with it) and bufferize (meta results of an extern) may use it; the rest of
frontend/ (capture, export, loader, partition, attention: the torch.compile
and .pt2 drivers) sits above the runtime."""

BELOW_DRIVERS = (
    "coil.dialects",
    "coil.strategy",
    "coil.transforms",
    "coil.lowering",
    "coil.targets",
    "coil.runtime",
    "coil.passinfo",
    "coil.intmath",
)


def test_no_layer_below_the_drivers_imports_them():
    """A pass checks its own options (coil/passinfo.py: OPTION_RULES,
    check_options), so no pass, target or runtime module imports the
    pipeline, the CLI or the backend."""
    assert _offenders(BELOW_DRIVERS, DRIVERS) == {}


def test_the_frontend_importer_needs_only_the_dialects():
    allowed = ("coil.dialects", "coil.intmath", *FRONTEND_IMPORTER)
    found = {
        m: sorted(i for i in IMPORTS[m] if not i.startswith(allowed)) for m in FRONTEND_IMPORTER
    }
    assert {m: i for m, i in found.items() if i} == {}
    assert all(m in MODULES for m in FRONTEND_IMPORTER)  # the names are current


def test_passes_use_only_the_frontend_importer():
    """Passes and targets import no frontend driver, and the runtime (which runs
    what was compiled, reading coil.output_tree and coil.aligned through
    dialects/signature.py) imports nothing of the frontend."""
    frontend = tuple(m for m in MODULES if m.startswith("coil.frontend."))
    drivers = tuple(m for m in frontend if m not in FRONTEND_IMPORTER)
    passes = ("coil.dialects", "coil.strategy", "coil.transforms", "coil.lowering", "coil.targets")
    assert _offenders(passes, drivers) == {}
    assert _offenders(("coil.runtime",), ("coil.frontend",)) == {}


def test_a_planted_upward_import_fails(monkeypatch):
    """Each rule above fails on a planted import, a lazy one included."""
    planted = {
        "coil.transforms.aten_decompose": "coil.pipeline.check_options",
        "coil.runtime.aotcache": "coil.frontend.fx_importer.aligned_by_offset",
        "coil.lowering.bufferize": "coil.frontend.capture.capture_graphs",
        "coil.frontend.fake": "coil.transforms.attention_pattern",
    }
    for module, target in planted.items():
        monkeypatch.setitem(IMPORTS, module, IMPORTS[module] | {target})
    with pytest.raises(AssertionError):
        test_no_layer_below_the_drivers_imports_them()
    with pytest.raises(AssertionError):
        test_the_frontend_importer_needs_only_the_dialects()
    with pytest.raises(AssertionError):
        test_passes_use_only_the_frontend_importer()
    monkeypatch.setitem(
        IMPORTS,
        "coil.targets.triton",
        IMPORTS["coil.targets.triton"] | {"coil.runtime.codecache.load_module"},
    )
    with pytest.raises(AssertionError):
        test_lowerings_and_targets_import_down_only()
    lazy = "def f():\n    from coil.pipeline import check_options\n"
    source = ROOT / "transforms" / "aten_decompose.py"
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: lazy)
    assert "coil.pipeline.check_options" in _imports(source)
