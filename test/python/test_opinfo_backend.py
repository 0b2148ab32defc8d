"""The OpInfo conformance sweep through ``torch.compile(backend="coil")``
(``coil/tools/opinfo_sweep.py``), against the checked-in expectations.

Each case is one OpInfo and one dtype (float32, float16, bfloat16, int64,
bool where the OpInfo supports it); its outcome is pass, mismatch (a silent
wrong answer) or error. ``opinfo_expectations.txt`` lists the known failures
with a reason each: a case not listed that fails, or a listed case whose
outcome changes (passing included: the list must shrink), fails its test. CI
runs a fixed representative subset; ``-m slow`` runs every case here, and
``python -m coil.tools.opinfo_sweep`` runs them all in worker processes and
prints the table per dtype.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from coil.tools import opinfo_sweep as sweep

CASES = sweep.all_cases()
CI = set(sweep.ci_subset(CASES))
# Next to this file: also where coil is installed without its tests (the GPU run).
EXPECTED = sweep.read_expectations(Path(__file__).with_name("opinfo_expectations.txt"))


def _params():
    for case in CASES:
        marks = () if case in CI else (pytest.mark.slow,)
        yield pytest.param(case, id=f"{case.op}-{case.dtype}", marks=marks)


@pytest.fixture(scope="module")
def ops():
    return sweep.opinfos()


@pytest.mark.parametrize("case", list(_params()))
def test_opinfo_case(case, ops):
    result = sweep.run_case(case, ops)
    problems = sweep.differences([result], EXPECTED)
    assert not problems, problems[0]


def test_expectations_name_real_cases():
    """Every line of the expectations file names a case of the sweep, and no
    float32 or int64 case is an expected mismatch: an op coil cannot compute
    correctly must call ATen instead."""
    keys = {c.key for c in CASES}
    stale = [k for k in EXPECTED if k not in keys]
    assert not stale, f"not cases of the sweep: {stale}"
    silent = [
        k
        for k, e in EXPECTED.items()
        if e.outcome == "mismatch" and k.split()[1] in ("float32", "int64")
    ]
    assert not silent, f"silent mismatches for float32/int64: {silent}"
    assert all(e.reason for e in EXPECTED.values())


def test_the_subset_covers_every_dtype():
    assert {c.dtype for c in CI} == set(sweep.DTYPES)
    assert 40 <= len(CI) <= 150
