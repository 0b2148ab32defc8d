"""A CUDA-graphed call runs the graph once, the recording call included.

The runner's first call for an input layout warms the graph up, captures it
and (before the fix) replayed it: a graph that updates an input in place by
what it reads -- transformers' ``StaticCache`` advancing its fill counter,
``n.add_(1)`` -- counted twice on that call. Decoding, the first token's keys
went to two cache slots and its query attended to both (logits 7e-2 from
eager's on the 150M Llama decode step, the same argmax), and every later token
wrote one slot past the one it attended to. CUDA's stream and graph API is
replaced here by a CPU stand-in with the same contract (cuda_graph_standin.py):
capturing executes nothing and keeps the work, a replay executes it.
"""

from __future__ import annotations

import pytest
import torch
from cuda_graph_standin import CudaGraphStandIn

from coil.runtime import cudagraphs as cg


@pytest.fixture
def cpu_cuda_graphs(monkeypatch):
    return CudaGraphStandIn(monkeypatch)


def _counting_graph(standin: CudaGraphStandIn, events: list[str]):
    """``n += 1; return x * n`` with ``n`` a static input updated in place: what a
    KV cache's position counter does. Under capture it keeps its work for the
    replays instead of running it."""

    def run(n, x):
        out = torch.empty_like(x)

        def work():
            events.append("replay")
            n.add_(1)
            torch.mul(x, n, out=out)

        if standin.keep(work):
            return (out,)
        events.append("run")
        n.add_(1)
        return (x * n,)

    return run


def test_the_recording_call_runs_the_graph_once(cpu_cuda_graphs):
    events: list[str] = []
    runner = cg.CudaGraphRunner(
        _counting_graph(cpu_cuda_graphs, events), static_inputs=[0], name="count"
    )
    n = torch.zeros((), dtype=torch.int64)
    for call in range(1, 5):
        x = torch.randn(6)
        (y,) = runner(n, x)
        assert n.item() == call  # one increment per call
        torch.testing.assert_close(y, x * call)
        del y
    # the warm-up's results answer the recording call; replays from the next one
    assert events == ["run", "replay", "replay", "replay"]


def test_a_result_in_the_graphs_own_input_buffer_is_copied(cpu_cuda_graphs):
    """The recording call returns the warm-up's results; one that is the graph's
    copy of a plain input (rewritten by the next call's input copy) is copied."""

    def run(x):
        out = torch.empty_like(x)
        if cpu_cuda_graphs.keep(lambda: torch.mul(x, 2, out=out)):
            return (x, out)
        return (x, x * 2)

    runner = cg.CudaGraphRunner(run, name="alias")
    a, b = torch.randn(4), torch.randn(4)
    same, doubled = runner(a)
    runner(b)
    torch.testing.assert_close(same, a)
    torch.testing.assert_close(doubled, a * 2)


class _Counted(torch.nn.Module):
    """A cache written at a position it counts itself (StaticCache's way)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("n", torch.zeros((), dtype=torch.int64))
        self.register_buffer("cache", torch.zeros(8, 4))

    def forward(self, x):
        self.cache.index_copy_(0, self.n.view(1), x.view(1, 4))
        self.n.add_(1)
        return self.cache.sum(0) * x


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_self_counting_cache_under_reduce_overhead_matches_eager():
    eager, graphed = _Counted().cuda(), _Counted().cuda()
    torch._dynamo.reset()
    step = torch.compile(graphed, backend="coil", mode="reduce-overhead", fullgraph=True)
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(4, device="cuda")
            torch.testing.assert_close(step(x), eager(x))
    assert graphed.n.item() == eager.n.item() == 4
    torch.testing.assert_close(graphed.cache, eager.cache)
