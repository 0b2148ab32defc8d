"""benchmarks/sweep.py's table: rows re-timed quietly (``--retime``) replace the
ones timed under load, and only the rows that lost are picked for it."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import sweep  # noqa: E402


def _row(commit: str, name: str, vs_inductor: float, vs_eager: float = 1.5) -> dict:
    row = dict.fromkeys(sweep.COLUMNS, "")
    row.update(
        commit=commit,
        name=name,
        family="f",
        kind="infer-bf16",
        status="ok",
        eager_ms="3",
        inductor_ms="2",
        coil_ms=str(round(2 / vs_inductor, 3)),
        vs_inductor=str(vs_inductor),
        vs_eager=str(vs_eager),
        eager_peak_mb="10",
        inductor_peak_mb="10",
        coil_peak_mb="10",
    )
    return row


def test_quiet_rows_replace_loaded_ones():
    rows = [
        _row("c1", "a", 0.7),
        _row("c1", "b", 1.2),
        _row("c1", "c", 1.1, vs_eager=0.9),
        _row("c1-quiet", "a", 1.3),
        _row("c0", "a", 0.5),
    ]
    assert [r["name"] for r in rows if r["commit"] == "c1" and sweep._slow(r)] == ["a", "c"]
    text = sweep.table(rows, "c1")
    assert "| a | f | infer-bf16 | 3 | 2 | 1.538 | 1.30x |" in text
    assert "ok (quiet) |" in text
    assert "3 rows (3 inference timed, 0 errors, 0 wrong, 0 with graphs run eagerly; " in text
    assert "1 re-timed quietly)" in text
    assert "below 0.9x" in text and "0 below 0.9x" in text


def test_call_warnings_counted_and_listed():
    """A compiled call that raises a warning every call is listed under the
    table (host time on every call); an eager-only warning is not."""
    import warnings

    def noisy():
        warnings.warn("from ATen, every call", UserWarning, stacklevel=2)

    def quiet():
        return None

    runs = {"eager": noisy, "inductor": quiet, "coil": noisy}
    text = sweep._call_warnings(runs, lambda f: f())
    assert text.startswith("eager:1;inductor:0;coil:1 | ")
    assert "coil: UserWarning: from ATen, every call" in text
    rows = [_row("c1", "a", 1.2), _row("c1", "b", 1.2)]
    rows[0]["call_warnings"] = text
    rows[1]["call_warnings"] = "eager:2;inductor:0;coil:0"
    table = sweep.table(rows, "c1")
    assert "coil calls raising warnings every call: a (eager:1;inductor:0;coil:1" in table
    assert "; b (" not in table


def test_losses_split_by_their_profiles():
    """A row below Inductor whose GPU kernels are no slower lost on the host; one
    whose kernels are slower names them; rows swept before the profile columns
    say nothing."""
    rows = [_row("c1", "host", 0.96), _row("c1", "kernel", 0.79), _row("c1", "old", 0.9)]
    rows[0].update(coil_gpu_ms="2.43", inductor_gpu_ms="2.543", coil_launches="196")
    rows[0].update(inductor_launches="223")
    rows[1].update(coil_gpu_ms="13.22", inductor_gpu_ms="10.36", coil_launches="556")
    rows[1].update(inductor_launches="673")
    text = sweep.table(rows, "c1")
    assert "kernels no slower (host time) host (2.430 / 2.543 ms, 196 / 223 launches)" in text
    assert "kernels slower kernel (13.220 / 10.360 ms, 556 / 673 launches)" in text
    assert "old (" not in text
