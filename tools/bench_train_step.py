"""Peak memory and time of a training step through torch.compile(backend="coil"),
on the CPU (kernels under Triton's interpreter): ``python -m coil.tools.bench_train_step [D]``.

Peak memory is measured with torch's profiler: allocations are attributed to
the op that made them (self memory) and frees are "[memory]" events; summed
in time order they give the live bytes of the step above its start.
"""

import statistics
import sys
import time
import warnings

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile


class Block(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, x):
        h = self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))
        return x + torch.tanh(h) * torch.sigmoid(h)


def main(d: int = 256, batch: int = 256, layers: int = 4) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(*[Block(d) for _ in range(layers)])
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = torch.compile(model, backend="coil")

        def step():
            x = torch.randn(batch, d)
            compiled(x).square().mean().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        step()  # compile
    boxed_warning = any("boxed" in str(w.message) for w in caught)

    def peak_bytes() -> int:
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            step()
        events = sorted(prof.events(), key=lambda e: e.time_range.start)
        live = peak = 0
        for e in events:
            live += e.cpu_memory_usage if e.name == "[memory]" else e.self_cpu_memory_usage
            peak = max(peak, live)
        return peak

    peak = min(peak_bytes() for _ in range(3))
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    print(
        f"D={d} B={batch} layers={layers}: peak {peak / 2**20:.2f} MiB above start, "
        f"step {statistics.median(times) * 1000:.0f} ms (median of 5), "
        f"boxed warning: {boxed_warning}"
    )


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
