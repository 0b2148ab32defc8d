"""cuBLAS's workspace under coil's CUDA graphs.

cuBLAS keeps one workspace per (handle, stream). The runner's warm-up made it
outside the graph's memory pool, and the capture that followed on the same
stream wrote into it: memory the graph did not own. Inductor's cudagraph trees
clear every cached workspace around each of their recordings, which freed it
under coil's graph: HF GPT-2 compiled by both backends with ``reduce-overhead``
in one process failed with ``unspecified launch failure`` at coil's first
replay after Inductor's recording (H200, scratch repro of benchmarks/dynamic.py's
CUDA-graph phase). The runner now clears the cached workspaces before and after
each capture, so the capture makes its own inside the pool the graph holds.
"""

from __future__ import annotations

import pytest
import torch
from cuda_graph_standin import CudaGraphStandIn

from coil.runtime import cudagraphs as cg


def test_workspaces_are_cleared_around_the_capture_only(monkeypatch):
    """A CPU stand-in for CUDA's stream and graph API records the order: the
    warm-up runs with the cached workspaces, the capture starts and ends with
    them cleared."""
    standin = CudaGraphStandIn(monkeypatch)
    events = standin.events
    monkeypatch.setattr(
        torch._C, "_cuda_clearCublasWorkspaces", lambda: events.append("clear"), raising=False
    )

    def run(x):
        events.append("run")
        return (x * 2,)

    runner = cg.CudaGraphRunner(run)
    x = torch.randn(4)
    torch.testing.assert_close(runner(x)[0], x * 2)
    assert events == ["run", "clear", "capture", "run", "captured", "clear"]
    runner(x)
    assert events[-1] == "replay"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_replay_survives_cleared_workspaces_and_an_emptied_cache():
    """What Inductor's recordings do between two of coil's replays: clear the
    workspaces, then memory is released and reused. Before the fix the replay
    wrote through the freed workspace of the warm-up."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 512)
    ).cuda()
    model = model.eval().to(torch.bfloat16)
    x = torch.randn(64, 512, device="cuda", dtype=torch.bfloat16)
    torch._dynamo.reset()
    step = torch.compile(model, backend="coil", mode="reduce-overhead")
    with torch.no_grad():
        expected = model(x)
        for _ in range(2):  # record, replay
            torch.testing.assert_close(step(x), expected, rtol=2e-2, atol=2e-2)
        torch._C._cuda_clearCublasWorkspaces()
        torch.cuda.empty_cache()
        junk = [torch.full((1 << 20,), float("nan"), device="cuda") for _ in range(64)]
        out = step(x).clone()
        torch.cuda.synchronize()
        del junk
    torch.testing.assert_close(out, expected, rtol=2e-2, atol=2e-2)
