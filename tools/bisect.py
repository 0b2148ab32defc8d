"""``coil bisect``: the first pass whose output differs from eager.

Given a model (a ``.py`` model file: ``model`` and ``example_inputs``, as
``coil import`` takes), every graph torch.compile hands the backend is
imported and run through the pipeline pass by pass. After the import and
after every pass the IR is run on the graph's real inputs -- by the reference
executors (``runtime/aten_executor.py`` and ``loop_executor.py``) at the aten,
loop and buffer levels, and at the host level as the ``-t python`` module
with its Triton kernels (under the interpreter on the CPU) -- and compared
with the graph run eagerly on the same inputs. The report names the first
stage whose output differs (or that fails: a pass that raises, IR that does
not verify or cannot run), and writes the IR before and after it, with the
``fx-opt`` line that replays the pass, to ``--out`` (for ``coil reduce`` or a
bug report).

Between ``convert-loop-to-tt`` and ``convert-buffer-to-host`` the IR (kernels
plus a buffer-level function that launches them) runs on no executor: a
difference first seen after ``convert-buffer-to-host`` is blamed on the pair.

Passes under development can be loaded with ``--pass-plugin FILE.py`` (every
``ModulePass`` subclass defined there is registered under its ``name``) and
named in ``-p``, like ``mlir-opt --load-pass-plugin``.
"""

from __future__ import annotations

import runpy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

UNRUNNABLE = "does not run on the reference executors"


@dataclass
class Stage:
    """One stage of one graph: the import or a pass, and what came of it."""

    name: str
    status: str  # "ok", "differs", "failed", "skipped" (no executor runs this IR)
    detail: str = ""


@dataclass
class GraphReport:
    """The stages of one graph and the first that went wrong (None: all matched)."""

    index: int
    stages: list[Stage] = field(default_factory=list)
    culprit: str | None = None
    before: str | None = None  # the IR the culprit was given
    after: str | None = None  # what it made of it (when it made something)
    culprit_spec: str | None = None  # the pass spec to replay it with fx-opt

    def render(self) -> str:
        width = max((len(s.name) for s in self.stages), default=0) + 2
        lines = [f"graph {self.index}:"]
        for s in self.stages:
            lines.append(f"  {s.name.ljust(width)}{s.status}{': ' + s.detail if s.detail else ''}")
        if self.culprit is None:
            lines.append("  every stage matches eager")
        else:
            lines.append(f"  first stage whose output differs from eager: {self.culprit}")
        return "\n".join(lines)


def load_pass_plugin(path: str | Path) -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name -> factory for every ModulePass subclass a Python file defines."""
    try:
        namespace = runpy.run_path(str(path), run_name="coil_pass_plugin")
    except Exception as e:  # the plugin's code: say where it failed
        from coil.frontend.loader import located_failure

        raise located_failure(Path(path), e) from e
    found: dict[str, Callable[[], type[ModulePass]]] = {}
    for value in namespace.values():
        if (
            isinstance(value, type)
            and issubclass(value, ModulePass)
            and value is not ModulePass
            and value.__module__ == "coil_pass_plugin"
            and isinstance(getattr(value, "name", None), str)
        ):
            found[value.name] = lambda cls=value: cls
    if not found:
        raise ValueError(f"{path}: defines no ModulePass subclass with a name")
    return found


def _clone_args(args: Sequence[Any]) -> list[Any]:
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def _run_ir(module: ModuleOp, inputs: Sequence[Any]) -> Any:
    """Run ``module`` on ``inputs``: the reference executors, or at the host level
    the ``-t python`` module (its kernels compiled, or interpreted on the CPU)."""
    from coil.compile_driver import _at_host_level, _on_gpu, emit_python
    from coil.runtime.aten_executor import run_module
    from coil.runtime.codecache import load_module

    torch.manual_seed(1234)
    if _at_host_level(module):
        loaded = load_module(emit_python(module), interpret=not _on_gpu(module))
        return loaded.call(_clone_args(inputs))
    if any(op.name == "tt.func" for op in module.ops):
        raise _Unrunnable()
    return run_module(module, _clone_args(inputs))


class _Unrunnable(Exception):
    pass


def _flat(outputs: Any) -> Any:
    # The executors return lists where the graph returns tuples.
    return tuple(outputs) if isinstance(outputs, list | tuple) else (outputs,)


def bisect_module(
    module: ModuleOp,
    pipeline: str,
    inputs: Sequence[Any],
    expected: Any,
    passes: dict[str, Callable[[], type[ModulePass]]] | None = None,
    index: int = 0,
) -> GraphReport:
    """Run ``module`` (left unchanged) through ``pipeline`` pass by pass, comparing
    the output of each stage with ``expected`` (eager's output of the graph)."""
    from coil.ir import coil_context, print_module
    from coil.pipeline import available_passes, parse_pipeline
    from coil.testing import difference

    report = GraphReport(index)
    current = module.clone()
    last_run = "import"  # the last stage that ran, for blame across unrunnable IR
    previous_text = print_module(current)
    before_unrunnable = previous_text

    def check(name: str) -> bool:
        """Run the current IR; record the stage; True when it went wrong."""
        nonlocal last_run, before_unrunnable
        try:
            actual = _run_ir(current, inputs)
        except _Unrunnable:
            report.stages.append(Stage(name, "skipped", UNRUNNABLE))
            return False
        except Exception as e:
            report.stages.append(Stage(name, "failed", f"running it: {type(e).__name__}: {e}"))
            return True
        problem = difference(_flat(actual), _flat(expected))
        report.stages.append(Stage(name, "differs" if problem else "ok", problem or ""))
        if problem is None:
            last_run = name
        return problem is not None

    if check("import"):
        report.culprit = "import"
        report.after = previous_text
        return report
    specs = parse_pipeline(pipeline, {**available_passes(), **(passes or {})}).passes
    skipped: list[str] = []
    for p in specs:
        spec = str(p.pipeline_pass_spec())
        text_before = print_module(current)
        if not skipped:
            before_unrunnable = text_before
        try:
            p.apply(coil_context(), current)
            current.verify()
        except Exception as e:
            report.stages.append(Stage(spec, "failed", f"{type(e).__name__}: {e}"))
            report.culprit, report.culprit_spec = spec, spec
            report.before = text_before
            return report
        went_wrong = check(spec)
        if report.stages[-1].status == "skipped":
            skipped.append(spec)
            continue
        if went_wrong:
            blamed = [*skipped, spec]
            report.culprit = " or ".join(blamed) if len(blamed) > 1 else spec
            report.culprit_spec = ",".join(blamed)
            report.before = before_unrunnable if skipped else text_before
            report.after = print_module(current)
            return report
        skipped = []
    return report


def bisect(
    model: Any,
    example_inputs: Sequence[Any],
    pipeline: str | None = None,
    *,
    dynamic: bool = False,
    passes: dict[str, Callable[[], type[ModulePass]]] | None = None,
) -> list[GraphReport]:
    """Bisect every graph torch.compile makes of ``model(*example_inputs)``
    (forward graphs, inference mode)."""
    from coil.frontend.capture import aot_backend
    from coil.frontend.fx_importer import constant_inputs, import_graph
    from coil.pipeline import PIPELINES

    pipeline = pipeline or PIPELINES["default"]
    reports: list[GraphReport] = []

    def compile_graph(gm: torch.fx.GraphModule, graph_inputs: list[Any]) -> Callable:
        module = import_graph(gm, graph_inputs)
        constants = constant_inputs(module, gm)

        def run(*args: Any) -> Any:
            torch.manual_seed(1234)
            expected = gm(*_clone_args(args))
            reports.append(
                bisect_module(module, pipeline, [*args, *constants], expected, passes, len(reports))
            )
            return gm(*args)

        return run

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=aot_backend(compile_graph), dynamic=dynamic)
    with torch.no_grad():
        compiled(*example_inputs)
    torch._dynamo.reset()
    return reports


def write_culprit(report: GraphReport, out: Path, plugins: Sequence[str | Path] = ()) -> list[str]:
    """Write the culprit's input and output IR under ``out``; the lines to print
    about them, with the ``fx-opt`` line that replays the culprit."""
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    stem = f"graph{report.index}"
    if report.before is not None:
        before = out / f"{stem}-before.mlir"
        before.write_text(report.before)
        lines.append(f"  the IR it was given: {before}")
        if report.culprit_spec:
            loads = "".join(f" --pass-plugin {p}" for p in plugins)
            lines.append(f"  replay: fx-opt {before} -p '{report.culprit_spec}'{loads}")
    if report.after is not None:
        after = out / f"{stem}-after.mlir"
        after.write_text(report.after)
        lines.append(f"  what it made of it: {after}")
    return lines
