"""coil/timing.py through ``compile_graph``: ``COIL_LOG=timing`` tables, progress
lines on long compiles (and none on fast ones), the switches. CPU only, fast."""

from __future__ import annotations

import io
import re
import time

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from coil import config
from coil.backend import compile_graph
from coil.pipeline import PIPELINES
from coil.timing import CompileTrace


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("COIL_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("COIL_DISABLE_CACHE", "COIL_LOG", "COIL_PROGRESS", "COIL_DUMP_DIR"):
        monkeypatch.delenv(name, raising=False)


def _compile(**kwargs):
    def f(x):
        return torch.softmax(x, -1) * 2

    x = torch.randn(4, 8)
    run = compile_graph(make_fx(f, tracing_mode="fake")(x), [x], **kwargs)
    torch.testing.assert_close(run(x), f(x))


def _passes() -> list[str]:
    return PIPELINES["default"].split(",")


def test_timing_table_names_every_stage_and_pass(monkeypatch, capsys):
    monkeypatch.setenv("COIL_LOG", "timing")
    _compile(label="graph x")
    err = capsys.readouterr().err
    header, *rows = err.strip().splitlines()
    assert re.fullmatch(r"coil timing: graph x: \d+\.\d\d s, cache miss \(no entry\)", header)
    stages = [re.fullmatch(r"\s+\d+\.\d{3} s  (\S+)", row).group(1) for row in rows]
    assert stages == ["import", "cache-lookup", *_passes(), "verify", "emit", "load", "cache-store"]
    # The same graph again: the table shows the hit and no pass.
    _compile(label="graph y")
    header, *rows = capsys.readouterr().err.strip().splitlines()
    assert header.endswith("cache hit")
    assert [row.split()[-1] for row in rows] == ["import", "cache-lookup", "load"]


def test_timing_with_other_topics_and_a_bypass(monkeypatch, capsys):
    monkeypatch.setenv("COIL_LOG", "other, Timing")
    _compile(cache=False)
    err = capsys.readouterr().err
    assert "cache bypass (disabled by the option cache=False)" in err
    assert "cache-lookup" not in err and "convert-loop-to-tt" in err


def test_fast_compile_is_quiet_by_default(capsys):
    _compile()
    assert capsys.readouterr().err == ""


def test_progress_names_each_stage_once(capsys):
    _compile(progress=1e-9, label="graph p")  # every compile counts as long
    lines = capsys.readouterr().err.strip().splitlines()
    stages = [
        re.fullmatch(r"coil: graph p: (\S+) \(\d+\.\d s so far\)", line).group(1) for line in lines
    ]
    assert stages == ["import", "cache-lookup", *_passes(), "verify", "emit", "load", "cache-store"]


@pytest.mark.parametrize("off", ["option", "env"])
def test_progress_can_be_turned_off(monkeypatch, capsys, off):
    if off == "env":
        monkeypatch.setenv("COIL_PROGRESS", "0")
        _compile()
    else:
        monkeypatch.setenv("COIL_PROGRESS", "1e-9")
        _compile(progress=False)
    assert capsys.readouterr().err == ""


def test_a_long_stage_is_announced_while_it_runs():
    stream = io.StringIO()
    with CompileTrace("graph w", progress_after=0.05, stream=stream) as trace:
        with trace.stage("slow-pass"):
            deadline = time.time() + 10
            while "slow-pass" not in stream.getvalue():  # the watchdog speaks mid-stage
                assert time.time() < deadline
                time.sleep(0.01)
        trace.begin("next")
    lines = stream.getvalue().splitlines()
    assert [line.split()[3] for line in lines] == ["slow-pass", "next"]


def test_progress_setting():
    assert config.progress_after(False) is None
    assert config.progress_after(0) is None
    assert config.progress_after(True) == config.DEFAULT_PROGRESS_SECONDS
    assert config.progress_after(2) == 2.0
    assert config.progress_after() == config.DEFAULT_PROGRESS_SECONDS


def test_bad_progress_env_is_a_sentence(monkeypatch):
    monkeypatch.setenv("COIL_PROGRESS", "soon")
    with pytest.raises(ValueError, match="COIL_PROGRESS must be a number"):
        config.progress_after()
