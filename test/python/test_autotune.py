"""Autotuning: ``convert-loop-to-tt{autotune=N}`` candidates, ``host.autotune`` and
``coil.runtime.autotune``.

* every candidate kernel of real models (not only the one the runtime picks)
  computes eager's results under Triton's interpreter: the runtime is forced to
  run candidate k, for each k;
* the torch.compile backend with an autotuning pipeline matches eager;
* the runtime: untimed on the CPU, one measurement per key on CUDA, the chosen
  launch run last; on a GPU (marker gpu), softmax is tuned once and cached.
"""

from __future__ import annotations

import copy
import re

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from coil.backend import coil as coil_backend
from coil.backend import compile_graph
from coil.examples.models import build
from coil.frontend.capture import aot_backend
from coil.pipeline import PIPELINES
from coil.runtime.autotune import AUTOTUNER, Autotuner
from coil.testing import assert_close_to_eager

pytest.importorskip("triton")

N = 4
AUTOTUNE_PIPELINE = PIPELINES["default"].replace(
    "convert-loop-to-tt", f"convert-loop-to-tt{{autotune={N}}}"
)


class PointwiseChain(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x * y + 1.0) * torch.tanh(x - y) + x.abs().sqrt()


def _model(name: str):
    if name == "pointwise_chain":
        return PointwiseChain(), (torch.randn(33, 70), torch.randn(33, 70))
    return build(name)


def _backend(sources: list[str]):
    """The coil backend with the autotuning pipeline, keeping each module's source."""

    def compile_fw(gm, example_inputs):
        run = compile_graph(gm, example_inputs, pipeline=AUTOTUNE_PIPELINE)
        sources.append(run.coil_source)
        return run

    return aot_backend(compile_fw)


def _candidate_counts(source: str) -> list[int]:
    """Candidates per autotune(...) call of a generated module."""
    counts = []
    for call in re.findall(r"autotune\(\"\w+\", .*?\], device=", source, re.S):
        counts.append(call.count("lambda:"))
    return counts


CASES = [
    ("softmax", False),
    ("layernorm", False),
    # (mlp's relu runs in place over the matmul's product since memory-plan's
    # in-place reuse: a kernel that writes what it reads is not autotuned.)
    ("log_softmax", False),
    ("pointwise_chain", False),
    ("softmax", True),
]


@pytest.mark.parametrize(("name", "dynamic"), CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_every_candidate_matches_eager(name, dynamic):
    model, inputs = _model(name)
    eager = copy.deepcopy(model)
    sources: list[str] = []
    compiled = torch.compile(model, backend=_backend(sources), dynamic=dynamic, fullgraph=True)
    with torch.no_grad():
        expected = eager(*inputs)
        compiled(*inputs)  # compile
        counts = [c for s in sources for c in _candidate_counts(s)]
        assert counts and max(counts) > 1, f"{name}: nothing was autotuned"
        assert max(counts) <= N
        for k in range(max(counts)):
            with AUTOTUNER.forced(k):
                out = compiled(*inputs)
            assert_close_to_eager(out, expected)


@pytest.mark.parametrize("name", ["softmax", "layernorm", "pointwise_chain"])
def test_backend_with_autotune_pipeline_matches_eager(name):
    model, inputs = _model(name)
    eager = copy.deepcopy(model)
    compiled = torch.compile(
        model,
        backend=lambda gm, ex: coil_backend(gm, ex, options={"pipeline": AUTOTUNE_PIPELINE}),
        fullgraph=True,
    )
    with torch.no_grad():
        assert_close_to_eager(compiled(*inputs), eager(*inputs))
    # On the CPU nothing is timed.
    assert not AUTOTUNER.timings


def _recorder(log: list[int], k: int):
    return lambda: log.append(k)


def test_runtime_runs_the_first_candidate_on_the_cpu():
    tuner, log = Autotuner(), []
    tuner.run("k", (3,), [_recorder(log, 0), _recorder(log, 1)], device="cpu")
    assert log == [0] and not tuner.choices


def test_runtime_measures_once_per_key_and_runs_the_choice_last(monkeypatch):
    tuner, log, measured = Autotuner(), [], []

    def measure(key, candidates):
        measured.append(key)
        for c in candidates:  # as do_bench does: every candidate runs
            c()
        return 1

    monkeypatch.setattr(tuner, "_measure", measure)
    candidates = [_recorder(log, 0), _recorder(log, 1), _recorder(log, 2)]
    tuner.run("k", (3, 4), candidates, device="cuda:0")
    assert log[-1] == 1 and tuner.choices == {("k", (3, 4), "cuda:0"): 1}
    log.clear()
    tuner.run("k", (3, 4), candidates, device="cuda:0")
    assert log == [1] and len(measured) == 1  # cached
    tuner.run("k", (5, 4), candidates, device="cuda:0")
    assert len(measured) == 2  # new sizes, new measurement
    with tuner.forced(7):
        log.clear()
        tuner.run("k", (3, 4), candidates, device="cuda:0")
    assert log == [2] and tuner.force is None  # past the end: the last one


def _disk_tuner(monkeypatch, measured: list) -> Autotuner:
    """A tuner as a new process has it, measuring through ``measured`` and naming
    a GPU without asking CUDA."""
    tuner = Autotuner()

    def measure(key, candidates):
        measured.append(key)
        tuner.timings[key] = [2.0, 1.0, 3.0][: len(candidates)]
        return 1

    monkeypatch.setattr(tuner, "_measure", measure)
    monkeypatch.setattr(Autotuner, "_entry", staticmethod(lambda key: f"{key[1]}|H100|t"))
    return tuner


def test_choices_persist_on_disk_for_the_next_process(monkeypatch, tmp_path):
    monkeypatch.setenv("COIL_CACHE_DIR", str(tmp_path))
    log, measured = [], []
    candidates = [_recorder(log, 0), _recorder(log, 1), _recorder(log, 2)]
    _disk_tuner(monkeypatch, measured).run("k", (3,), candidates, "cuda:0", digest="d1")
    [stored] = (tmp_path / "autotune").glob("*.json")
    assert stored.name == "d1.json" and '"choice": 1' in stored.read_text()
    # A new process: the choice is read, nothing is measured.
    log.clear()
    second = _disk_tuner(monkeypatch, measured)
    second.run("k", (3,), candidates, "cuda:0", digest="d1")
    assert log == [1] and len(measured) == 1
    # Other sizes or other kernels (another digest) are measured.
    second.run("k", (4,), candidates, "cuda:0", digest="d1")
    second.run("k", (3,), candidates, "cuda:0", digest="d2")
    assert len(measured) == 3


@pytest.mark.parametrize("text", ["{not json", '{"(3,)|H100|t": {"choice": 9}}', "[1, 2]"])
def test_a_damaged_or_stale_choice_file_is_measured_again(monkeypatch, tmp_path, text):
    monkeypatch.setenv("COIL_CACHE_DIR", str(tmp_path))
    (tmp_path / "autotune").mkdir()
    (tmp_path / "autotune" / "d.json").write_text(text)
    log, measured = [], []
    candidates = [_recorder(log, 0), _recorder(log, 1)]
    _disk_tuner(monkeypatch, measured).run("k", (3,), candidates, "cuda:0", digest="d")
    assert log == [1] and len(measured) == 1
    assert '"choice": 1' in (tmp_path / "autotune" / "d.json").read_text()  # rewritten


def test_an_unwritable_cache_still_tunes(monkeypatch, tmp_path, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("COIL_CACHE_DIR", str(blocker))
    log, measured = [], []
    candidates = [_recorder(log, 0), _recorder(log, 1)]
    _disk_tuner(monkeypatch, measured).run("k", (3,), candidates, "cuda:0", digest="d")
    assert log == [1] and blocker.read_text() == ""


def test_the_python_target_passes_a_digest_of_the_candidates():
    model, (x,) = build("softmax")
    gm = torch.fx.symbolic_trace(model)
    source = compile_graph(make_fx(gm)(x), [x], pipeline=AUTOTUNE_PIPELINE, cache=False).coil_source
    digests = re.findall(r'digest="([0-9a-f]{32})"\)', source)
    assert digests and len(set(digests)) == len(digests)


@pytest.mark.gpu
def test_softmax_autotuned_on_cuda_is_cached():
    model, (x,) = build("softmax")
    x = torch.randn(4096, 1024, device="cuda")
    model = model.cuda()
    eager = copy.deepcopy(model)
    AUTOTUNER.clear()
    torch._dynamo.reset()
    compiled = torch.compile(
        model,
        backend=lambda gm, ex: coil_backend(gm, ex, options={"pipeline": AUTOTUNE_PIPELINE}),
        fullgraph=True,
    )
    with torch.no_grad():
        assert_close_to_eager(compiled(x), eager(x))
        keys = [k for k in AUTOTUNER.choices if k[0].startswith("coil_amax_sum_div")]
        assert len(keys) == 1, AUTOTUNER.choices
        (key,) = keys
        assert len(AUTOTUNER.timings[key]) > 1
        timings = dict(AUTOTUNER.timings)
        assert_close_to_eager(compiled(x), eager(x))
        assert AUTOTUNER.timings == timings  # the second call measured nothing


def test_a_kernel_over_an_in_place_extern_result_is_not_tuned_on_live_buffers(monkeypatch):
    # memory-plan runs index_put_ in place over `a`, then p * 2 in place over
    # `a` too, reading p (index_put_'s result, the same storage). Measuring
    # candidates runs each one on the live buffers: such a kernel must not be
    # tuned (on a GPU it multiplied by 2 once per candidate run).
    def f(x, idx, v):
        a = x.sin()
        p = torch.index_put(a, (idx,), v)
        return p * 2

    def measure(key, candidates):
        for c in candidates:  # as do_bench does: every candidate runs, repeatedly
            c()
            c()
        return 0

    run = Autotuner.run
    monkeypatch.setattr(AUTOTUNER, "_measure", measure)
    monkeypatch.setattr(
        Autotuner,
        "run",
        lambda self, name, sizes, cands, device="cpu", digest=None: run(
            self, name, sizes, cands, "cuda:0", None
        ),
    )
    AUTOTUNER.clear()
    pipeline = PIPELINES["default"].replace("convert-loop-to-tt", "convert-loop-to-tt{autotune=8}")
    x, idx, v = torch.randn(64), torch.tensor([0, 5]), torch.randn(2)
    torch._dynamo.reset()
    # index_put is an extern (ATen's deterministic kernel), not a loop.scatter.
    torch.use_deterministic_algorithms(True)
    try:
        compiled = torch.compile(f, backend="coil", options={"cache": False, "pipeline": pipeline})
        assert_close_to_eager(compiled(x, idx, v), f(x, idx, v))
    finally:
        torch.use_deterministic_algorithms(False)
    AUTOTUNER.clear()
