"""Host overhead per call: the C++ wrapper against the Python wrapper (issue 13).

A model of many small kernels -- a 20-layer MLP (Linear + ReLU) at batch 1,
width 64 -- is compiled with coil twice, ``wrapper="python"`` and
``wrapper="cpp"``; each graph's compiled ``run`` (what torch.compile calls
after its guards) is timed on the same inputs: ``iters`` calls, then one
synchronization, after warm-up. At batch 1 the GPU work per kernel is a few
microseconds, so the time per call is the host's: argument handling,
allocations, ATen calls, kernel launches. The end-to-end time through
torch.compile (guards included) is reported too. Prints a markdown table;
run on a GPU machine (benchmarks/gpu.sh, or directly).
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn

from coil.backend import compile_graph
from coil.frontend.capture import aot_backend


class DeepMLP(nn.Module):
    def __init__(self, depth: int = 20, width: int = 64):
        super().__init__()
        self.layers = nn.Sequential(
            *[m for _ in range(depth) for m in (nn.Linear(width, width), nn.ReLU())]
        )

    def forward(self, x):
        return self.layers(x)


def compiled(model, x, wrapper):
    runs = []

    def compile_fw(gm, inputs):
        run = compile_graph(gm, inputs, wrapper=wrapper)

        def recording(*args):
            runs.append((run, args))
            return run(*args)

        return recording

    torch._dynamo.reset()
    fn = torch.compile(model, backend=aot_backend(compile_fw), fullgraph=True)
    with torch.no_grad():
        fn(x)
    assert len(runs) == 1, f"{len(runs)} graphs"
    run, args = runs[0]
    if wrapper == "cpp":
        assert hasattr(run, "coil_cpp"), "the C++ wrapper was not used"
    return fn, run, args


def per_call_us(f, iters: int) -> float:
    for _ in range(20):
        f()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(iters):
            f()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / iters * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--iters", type=int, default=500)
    a = parser.parse_args()
    torch.manual_seed(0)
    model = DeepMLP(a.depth, a.width).cuda().eval()
    x = torch.randn(1, a.width, device="cuda")
    with torch.no_grad():
        expected = model(x)
    rows = []
    for wrapper in ("python", "cpp"):
        fn, run, args = compiled(model, x, wrapper)
        with torch.no_grad():
            out = fn(x)
            torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
            wrapper_us = per_call_us(lambda: run(*args), a.iters)
            e2e_us = per_call_us(lambda: fn(x), a.iters)
        rows.append((wrapper, wrapper_us, e2e_us))
    with torch.no_grad():
        eager_us = per_call_us(lambda: model(x), a.iters)
    print(
        f"{torch.cuda.get_device_name()}, torch {torch.__version__}; {a.depth}-layer MLP, "
        f"batch 1, width {a.width}; best of 5 x {a.iters} calls"
    )
    print("| wrapper | compiled graph call (us) | torch.compile call (us) |")
    print("| --- | --- | --- |")
    for wrapper, w, e in rows:
        print(f"| {wrapper} | {w:.1f} | {e:.1f} |")
    print(f"| eager PyTorch | - | {eager_us:.1f} |")
    print(f"C++/Python, graph call: {rows[1][1] / rows[0][1]:.2f}x")


if __name__ == "__main__":
    main()
