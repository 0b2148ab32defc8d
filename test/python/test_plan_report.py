"""benchmarks/plan_report.py: a model's planned CUDA peak, the buffers alive
there and the planned bytes alive at each extern call, on the CPU."""

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
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 8, 1), nn.ReLU()
    ).eval()
    x = (torch.randn(2, 3, 16, 16),)
    text = plan_report.report_module("small", model, x, top=4)
    planned = cuda_plan(model, x)
    fn = plan_report._main_function(planned)
    peak = int(fn.attributes["coil.peak_bytes"].data)
    assert f"planned peak {peak / 2**20:.2f} MiB" in text, text
    calls = re.findall(r"op \d+: aten\.convolution\.default\(\[2, (\d+), 16, 16\]\)", text)
    assert sorted(calls) == ["16", "3"], text
    # The bytes alive at a call never exceed the peak.
    alive = [float(v) for v in re.findall(r"^\s+([\d.]+) MiB  op \d+:", text, re.M)]
    assert alive and max(alive) <= round(peak / 2**20, 2), text
