"""benchmarks/wrapper_census.py: a wrapper's per-call host work counted from its
source, on the -t python output of two lit inputs (no GPU)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import wrapper_census as WC  # noqa: E402


def _emit(name: str) -> str:
    path = ROOT / "test" / "targets" / "python" / name
    return subprocess.run(
        ["fx-opt", str(path), "-t", "python"], capture_output=True, text=True, check=True
    ).stdout


def test_counts_launches_allocations_views_and_externs():
    c = WC.census(_emit("attention-aligned.mlir"))
    assert c["launches"] == 1 and c["  checked launches"] == 1  # the odd view, the lse
    assert c["allocations, bound (alloc_*)"] == 1
    assert c["allocations, checking helper (empty_*)"] == 0
    assert c["views (reinterpret_tensor)"] == 2
    assert c["ATen calls, torch.ops"] == 1 and c["ATen calls, public bindings"] == 0
    assert c["inputs"] == 3 and c["del statements"] >= 2


def test_checked_launches_and_the_table(tmp_path, capsys):
    source = _emit("launch.mlir")
    c = WC.census(source)
    assert c["launches"] == 2 and c["  checked launches"] == 2  # the input, twice
    assert c["allocations, bound (alloc_*)"] == 2 and c["inputs"] == 2
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(source)
    assert WC.main([str(wrapper)]) == 0
    assert "checked launches" in capsys.readouterr().out
