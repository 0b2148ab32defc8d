"""benchmarks/plan_report.py: a model's planned CUDA peak, the buffers alive
there, the planned bytes alive at each extern call and its estimated
workspace, on the CPU."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import plan_report

from coil.testing import cuda_plan


def test_report_names_the_peak_and_the_bytes_at_each_convolution():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 48, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(48, 8, 3, padding=1, groups=2),
        nn.ReLU(),
        nn.Conv2d(8, 8, 1),
    ).eval()
    x = (torch.randn(2, 3, 16, 16),)
    text = plan_report.report_module("small", model, x, top=4)
    planned = cuda_plan(model, x)
    fn = plan_report._main_function(planned)
    peak = int(fn.attributes["coil.peak_bytes"].data)
    assert f"planned peak {peak / 2**20:.2f} MiB" in text, text
    calls = re.findall(r"op \d+: aten\.convolution\.default\(\[2, (\d+), 16, 16\]\)", text)
    assert sorted(calls) == ["3", "48", "8"], text
    # The bytes alive at a call never exceed the peak; the grouped
    # convolution (24 channels per group) gets a workspace estimate on top
    # (the others none), and the estimated peak with workspaces is the
    # largest sum, never below the planned peak.
    rows = re.findall(r"^\s+([\d.]+)(?: \+ ([\d.]+))? MiB  op \d+: (.*)$", text, re.M)
    alive = [float(a) for a, _, _ in rows]
    assert alive and max(alive) <= round(peak / 2**20, 2), text
    with_workspace = {call.split("(")[1].split(")")[0]: bool(w) for _, w, call in rows}
    assert with_workspace == {
        "[2, 3, 16, 16]": False,
        "[2, 48, 16, 16]": True,
        "[2, 8, 16, 16]": False,
    }, text
    estimate = float(re.search(r"estimated peak with workspaces ([\d.]+) MiB", text).group(1))
    sums = [float(a) + float(w or 0) for a, w, _ in rows]
    assert round(peak / 2**20, 2) <= estimate and max(sums) <= estimate + 0.01, text
