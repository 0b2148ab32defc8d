"""benchmarks/fit_strategy.py: the cost model's estimate of each config of a
shape sweep's CSV, from plans compiled on the CPU (no kernel runs)."""

from __future__ import annotations

import csv
import pickle
import sys
from dataclasses import replace
from pathlib import Path

import torch

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import fit_strategy as FS  # noqa: E402
import shape_sweep as SS  # noqa: E402


def _column_sum() -> SS.Shape:
    return SS._shape("sum_dim0", lambda x: x.sum(0), torch.float32, 4096, 128, grid="outer")


def test_records_estimate_each_config_and_rank_them(tmp_path, capsys):
    shape = _column_sum()
    split = FS.compile_records(shape, None, "h200")
    assert not split.error
    # The model splits 4096 rows of 128 columns in 16 chunks: stage 1 and its
    # finish (a window of 16 partials, unrolled) run by the last program of
    # each tile. (Of 96 columns it now takes 64 chunks in [64, ...] tiles,
    # which do not divide 96: the finish is a launch of its own, priced so.)
    kernels = FS.kernels_run(split)
    assert [(k.kind, k.role) for k in kernels] == [
        ("reduction", "stage1"),
        ("pointwise", "finish"),
    ]
    assert len({k.name for k in kernels}) == 2
    target = FS.named_target("h200")
    one = FS.config_seconds(split, target)
    # A config running one more kernel like stage 1 is estimated slower.
    extra = replace(kernels[0], name="extra")
    slower = replace(split, config="coil x", kernels=[extra, *kernels])
    assert one < FS.config_seconds(slower, target)
    # The CSV's plans (as the sweep writes them) match the records' kernels.
    plans = FS.built_plans(split)
    assert FS.plan_key(plans) == FS.plan_key(FS.built_plans(split))
    assert FS.plan_key(plans) != FS.plan_key(FS.built_plans(slower))
    csv_path = tmp_path / "sweep.csv"
    with open(csv_path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["shape", "config", "ms", "error", "plans", "device", "target", "timer"])
        w.writerow([shape.name, "coil", "0.00900", "", plans, "x", "auto", "graph"])
        w.writerow([shape.name, "coil x", "0.03000", "", "", "x", "auto", "graph"])
    cache = tmp_path / "records.pkl"
    cache.write_bytes(pickle.dumps({(shape.name, "coil"): split, (shape.name, "coil x"): slower}))
    assert FS.main(["--csv", str(csv_path), "--cache", str(cache)]) == 0
    out = capsys.readouterr().out
    assert f"{shape.name} [held out]: model picks 'coil', regret 1.00x" in out
    assert "held out: 1 shapes, model's pick of the grid within 10 % of the best on 100%" in out
