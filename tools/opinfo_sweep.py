"""The OpInfo conformance sweep: every OpInfo of PyTorch's database through
``torch.compile(backend="coil")``, per dtype, against eager.

``python -m coil.tools.opinfo_sweep`` runs the whole sweep (worker processes,
each case with a time limit, a crash costs one case) and prints a table: per
dtype, how many cases pass, give a silent wrong answer (mismatch) or raise
(error). ``--check`` compares the outcomes with the expectations file
(``test/python/opinfo_expectations.txt``) and exits 1 on any difference;
``--write`` rewrites that file from the run (keeping the reasons of entries
that stay). ``test/python/test_opinfo_backend.py`` runs a fixed subset in CI.

A case is one (OpInfo, dtype) pair with dtype among float32, float16,
bfloat16, int64 and bool where the OpInfo supports it on the CPU. Its first
:data:`SAMPLES` sample inputs are each compiled (a fresh dynamo cache per
sample; graph breaks allowed, as for a user) with the ``'extern'`` fallback
policy -- an op with no lowering calls ATen (a correct answer), a graph coil
fails to compile raises (an error, not hidden by the eager fallback). Outcome
of a sample:

* ``skip`` -- eager raises on it, it has sparse tensors, or dynamo gives coil
  no graph (nothing of coil's runs);
* ``error`` -- the compiled call raises where eager did not;
* ``mismatch`` -- outputs differ from eager's (structure, shape, dtype or
  values beyond the dtype's tolerance) and, for floating outputs, also from a
  float64 computation of the same op (coil more accurate than eager is not a
  mismatch);
* ``pass`` -- otherwise.

A case's outcome is its worst sample's: mismatch, then error, then pass; skip
when every sample skipped. Random ops (and ops drawing random numbers inside)
are left out: their results are equal to eager's in law, not bit for bit.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

SAMPLES = 2
"""Sample inputs compiled per case (the first ones OpInfo yields)."""

DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "bool": torch.bool,
}

RANDOM_WORDS = (
    "rand",
    "bernoulli",
    "normal",
    "dropout",
    "multinomial",
    "uniform",
    "exponential",
    "geometric",
    "cauchy",
    "log_normal",
    "poisson",
    "empty",
    "nonzero_static",
    "rrelu",
    "fractional_max_pool",
    "multi_head_attention_forward",
)
"""OpInfo names with random (or uninitialized) results: left out of the sweep."""

OUTCOMES = ("pass", "mismatch", "error", "skip")
_WORST_FIRST = ("mismatch", "error", "pass", "skip")

EXPECTATIONS = Path(__file__).resolve().parents[1] / "test/python/opinfo_expectations.txt"


@dataclass(frozen=True)
class Case:
    op: str  # "name.variant" (the variant omitted when empty), as pytest ids
    dtype: str

    @property
    def key(self) -> str:
        return f"{self.op} {self.dtype}"


@dataclass(frozen=True)
class Result:
    case: Case
    outcome: str
    detail: str = ""


def op_key(opinfo: Any) -> str:
    return f"{opinfo.name}.{opinfo.variant_test_name}".rstrip(".")


def _is_random(opinfo: Any) -> bool:
    return any(word in opinfo.name for word in RANDOM_WORDS)


def opinfos() -> dict[str, Any]:
    """The OpInfos of the sweep by key (random ops left out)."""
    from torch.testing._internal.common_methods_invocations import op_db

    return {op_key(op): op for op in op_db if not _is_random(op)}


def all_cases(ops: dict[str, Any] | None = None) -> list[Case]:
    """Every (OpInfo, dtype) pair of the sweep, in op_db order."""
    ops = opinfos() if ops is None else ops
    cases = []
    for key, op in ops.items():
        supported = op.supported_dtypes("cpu")
        cases.extend(Case(key, name) for name, dt in DTYPES.items() if dt in supported)
    return cases


def ci_subset(cases: Sequence[Case], every: int = 45) -> list[Case]:
    """A fixed representative subset: every ``every``-th case of each dtype (the
    order is op_db's, so ops of every family and each dtype are in it). 45: 58
    of 2,459 cases (every 30th, 86 cases, was 79 s of a loaded 2-core suite
    run's test time, the most of any file; issue 37's 8-minute test command)."""
    by_dtype: dict[str, list[Case]] = {}
    for c in cases:
        by_dtype.setdefault(c.dtype, []).append(c)
    return [c for group in by_dtype.values() for c in group[::every]]


# ---- running one case --------------------------------------------------------------------


class _Counting:
    """coil's backend with the 'extern' policy, counting the graphs it compiles."""

    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        from coil.backend import coil

        self.graphs += 1
        return coil(gm, example_inputs, options={"fallback": "extern"})


def _float64(x: Any) -> Any:
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.double()
    return x


def run_sample(op: Any, sample: Any) -> tuple[str, str]:
    """(outcome, detail) of one sample input (see the module docstring)."""
    import torch.utils._pytree as pytree

    from coil.testing import difference, sample_as_function
    from coil.tools.fuzz import error_line

    call, tensors = sample_as_function(op.op, sample)
    if any(t.layout != torch.strided for t in tensors):
        return "skip", "sparse inputs"
    try:
        torch.manual_seed(0)
        expected = call(*[t.clone() for t in tensors])
    except Exception as e:
        return "skip", f"eager raises ({error_line(e)})"
    if any(
        isinstance(x, torch.Tensor) and x.layout != torch.strided
        for x in pytree.tree_leaves(expected)
    ):
        return "skip", "sparse results"
    reference = None
    if any(t.is_floating_point() for t in tensors) and torch.float64 in op.supported_dtypes("cpu"):
        try:
            reference = call(*[_float64(t.clone()) for t in tensors])
        except Exception:
            reference = None
    backend = _Counting()
    torch._dynamo.reset()
    compiled = torch.compile(call, backend=backend)
    try:
        torch.manual_seed(0)
        actual = compiled(*[t.clone() for t in tensors])
    except Exception as e:
        return "error", error_line(e)
    finally:
        torch._dynamo.reset()
    if backend.graphs == 0:
        return "skip", "dynamo gave coil no graph"
    problem = difference(actual, expected, reference)
    return ("mismatch", problem) if problem else ("pass", "")


def run_case(case: Case, ops: dict[str, Any] | None = None) -> Result:
    """Compile the case's first :data:`SAMPLES` samples; the worst outcome wins."""
    ops = opinfos() if ops is None else ops
    op = ops[case.op]
    dtype = DTYPES[case.dtype]
    outcomes: list[tuple[str, str]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            samples = op.sample_inputs("cpu", dtype, requires_grad=False)
            for k, sample in enumerate(samples):
                if k >= SAMPLES:
                    break
                outcomes.append(run_sample(op, sample))
        except Exception as e:  # OpInfo's own sample generation failed
            from coil.tools.fuzz import error_line

            outcomes.append(("skip", f"no samples ({error_line(e)})"))
    if not outcomes:
        return Result(case, "skip", "no samples")
    outcome, detail = min(outcomes, key=lambda o: _WORST_FIRST.index(o[0]))
    return Result(case, outcome, detail)


# ---- expectations ------------------------------------------------------------------------


@dataclass(frozen=True)
class Expectation:
    outcome: str
    reason: str


def read_expectations(path: Path = EXPECTATIONS) -> dict[str, Expectation]:
    """``"<op> <dtype>" -> Expectation`` from the file: one known failure a line,
    ``<op> <dtype> <mismatch|error> <reason>``; ``#`` starts a comment line."""
    out: dict[str, Expectation] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split(None, 3)
        if len(parts) < 4 or parts[2] not in ("mismatch", "error") or parts[1] not in DTYPES:
            raise ValueError(f"{path}:{n}: expected '<op> <dtype> <mismatch|error> <reason>'")
        key = f"{parts[0]} {parts[1]}"
        if key in out:
            raise ValueError(f"{path}:{n}: {key} is listed twice")
        out[key] = Expectation(parts[2], parts[3].strip())
    return out


def write_expectations(
    results: Iterable[Result], old: dict[str, Expectation], path: Path = EXPECTATIONS
) -> None:
    """Rewrite the file: every mismatch or error of ``results`` (reasons kept from
    ``old`` where the outcome is the same, else the error message), plus the
    entries of ``old`` for cases not run."""
    ran = {}
    for r in results:
        ran[r.case.key] = r
    entries: dict[str, Expectation] = {k: e for k, e in old.items() if k not in ran}
    for key, r in ran.items():
        if r.outcome in ("mismatch", "error"):
            kept = old.get(key)
            reason = kept.reason if kept and kept.outcome == r.outcome else r.detail
            entries[key] = Expectation(r.outcome, reason or "(no message)")
    header = [
        "# Known failures of the OpInfo sweep through torch.compile(backend='coil')",
        "# (coil/tools/opinfo_sweep.py; test/python/test_opinfo_backend.py runs a subset).",
        "# One a line: <op> <dtype> <mismatch|error> <reason>. A case not listed must pass",
        "# (or skip); a listed case that passes fails the test until its line is removed.",
        "# float32 and int64 have no mismatch: an op coil cannot compute correctly calls ATen.",
        "",
    ]
    width = max((len(k.split()[0]) for k in entries), default=0)
    lines = []
    for key in sorted(entries, key=lambda k: (k.split()[0], list(DTYPES).index(k.split()[1]))):
        op, dtype = key.split()
        e = entries[key]
        lines.append(f"{op.ljust(width)}  {dtype:<8}  {e.outcome:<8}  {e.reason}")
    path.write_text("\n".join(header + lines) + "\n")


def differences(results: Iterable[Result], expected: dict[str, Expectation]) -> list[str]:
    """One sentence per case whose outcome is not the expected one."""
    problems = []
    for r in results:
        want = expected.get(r.case.key)
        if want is None:
            if r.outcome in ("mismatch", "error"):
                problems.append(f"{r.case.key}: newly {r.outcome}: {r.detail}")
        elif r.outcome in ("pass", "skip"):
            problems.append(
                f"{r.case.key}: now {r.outcome}es; remove its line from {EXPECTATIONS.name}"
                if r.outcome == "pass"
                else f"{r.case.key}: now skips; remove its line from {EXPECTATIONS.name}"
            )
        elif r.outcome != want.outcome:
            problems.append(
                f"{r.case.key}: {r.outcome} (expected {want.outcome}: {want.reason}): {r.detail}"
            )
    return problems


# ---- the whole sweep ---------------------------------------------------------------------

_RESULT = "@@coil-opinfo "


def _worker() -> int:
    """Read case keys from stdin; answer each with one result line on stdout."""
    ops = opinfos()
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    # Everything else the case prints goes to stderr, not into the protocol.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    for line in sys.stdin:
        op, dtype = line.split()
        result = run_case(Case(op, dtype), ops)
        payload = {"outcome": result.outcome, "detail": result.detail}
        out.write(_RESULT + json.dumps(payload) + "\n")
        out.flush()
    return 0


class _Slot:
    """One worker process; restarted after a crash or a timeout."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "coil.tools.opinfo_sweep", "--worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        return self.proc

    def run(self, case: Case, timeout: float) -> Result:
        proc = self.start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write((case.key + "\n").encode())
            proc.stdin.flush()
        except BrokenPipeError:
            self.proc = None
            return Result(case, "error", "the worker process died")
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([proc.stdout], [], [], max(left, 0))
            if not ready:
                self.stop()
                return Result(case, "error", f"timed out after {timeout:.0f} s")
            line = proc.stdout.readline().decode()
            if not line:
                code = proc.wait()
                self.proc = None
                return Result(case, "error", f"crashed (exit status {code})")
            if line.startswith(_RESULT):
                payload = json.loads(line[len(_RESULT) :])
                return Result(case, payload["outcome"], payload["detail"])

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def run_sweep(
    cases: Sequence[Case], jobs: int = 1, timeout: float = 600, progress: bool = True
) -> list[Result]:
    """Run ``cases`` in ``jobs`` worker processes; results in the order of ``cases``."""
    results: dict[int, Result] = {}
    todo = list(enumerate(cases))
    lock = threading.Lock()
    start = time.monotonic()

    def work() -> None:
        slot = _Slot()
        try:
            while True:
                with lock:
                    if not todo:
                        return
                    index, case = todo.pop(0)
                result = slot.run(case, timeout)
                with lock:
                    results[index] = result
                    if progress:
                        done = len(results)
                        elapsed = time.monotonic() - start
                        print(
                            f"[{done}/{len(cases)} {elapsed:.0f}s] {case.key}: {result.outcome}"
                            + (f" ({result.detail})" if result.outcome != "pass" else ""),
                            file=sys.stderr,
                            flush=True,
                        )
        finally:
            slot.stop()

    threads = [threading.Thread(target=work) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [results[i] for i in range(len(cases))]


def table(results: Sequence[Result]) -> str:
    """Per dtype: cases, pass, mismatch, error, skip, and the pass rate of the
    cases that ran (pass / (pass + mismatch + error))."""
    counts = {d: Counter(r.outcome for r in results if r.case.dtype == d) for d in DTYPES}
    counts["all"] = Counter(r.outcome for r in results)
    head = (
        f"{'dtype':<9} {'cases':>6} {'pass':>6} {'mismatch':>9} {'error':>6} {'skip':>6} "
        f"{'pass rate':>10}"
    )
    rows = [head, "-" * len(head)]
    for d, c in counts.items():
        total = sum(c.values())
        if not total:
            continue
        ran = c["pass"] + c["mismatch"] + c["error"]
        rate = f"{100 * c['pass'] / ran:.1f}%" if ran else "-"
        rows.append(
            f"{d:<9} {total:>6} {c['pass']:>6} {c['mismatch']:>9} {c['error']:>6} "
            f"{c['skip']:>6} {rate:>10}"
        )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m coil.tools.opinfo_sweep",
        description="OpInfo sweep through torch.compile(backend='coil'): a table per dtype",
    )
    parser.add_argument("--ops", help="only OpInfos whose key matches this regular expression")
    parser.add_argument(
        "--dtypes", default=",".join(DTYPES), help="comma-separated (default: all five)"
    )
    parser.add_argument("--ci", action="store_true", help="only the subset CI runs")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per case")
    parser.add_argument("--json", help="write every result here (one JSON object a line)")
    parser.add_argument("--check", action="store_true", help="exit 1 unless as expected")
    parser.add_argument("--write", action="store_true", help="rewrite the expectations file")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("-q", "--quiet", action="store_true", help="no per-case progress")
    args = parser.parse_args(argv)
    if args.worker:
        return _worker()
    dtypes = args.dtypes.split(",")
    unknown = [d for d in dtypes if d not in DTYPES]
    if unknown:
        parser.error(f"unknown dtype(s) {', '.join(unknown)} (known: {', '.join(DTYPES)})")
    cases = [c for c in all_cases() if c.dtype in dtypes]
    if args.ops:
        cases = [c for c in cases if re.search(args.ops, c.op)]
    if args.ci:
        cases = [c for c in ci_subset(all_cases()) if c in set(cases)]
    results = run_sweep(cases, args.jobs, args.timeout, progress=not args.quiet)
    if args.json:
        with open(args.json, "w") as f:
            for r in results:
                payload = {"op": r.case.op, "dtype": r.case.dtype}
                payload |= {"outcome": r.outcome, "detail": r.detail}
                f.write(json.dumps(payload) + "\n")
    print(table(results))
    expected = read_expectations() if EXPECTATIONS.exists() else {}
    if args.write:
        write_expectations(results, expected)
        print(f"wrote {EXPECTATIONS}")
    problems = differences(results, expected)
    if problems:
        print(f"\n{len(problems)} case(s) differ from {EXPECTATIONS.name}:")
        print("\n".join("  " + p for p in problems))
    return 1 if args.check and problems else 0


if __name__ == "__main__":
    sys.exit(main())
