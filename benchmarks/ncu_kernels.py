"""Hardware counters of coil's and Inductor's kernels for roofline workloads.

``python benchmarks/ncu_kernels.py "mean_all bf16" ...`` compiles each named
workload of ``roofline.py`` with Inductor and coil, warms both up, then runs
each once between ``cudaProfilerStart``/``Stop``; run it under
``ncu --profile-from-start off`` (``benchmarks/gpu.sh`` NCU=...) to read, per
kernel: duration, DRAM throughput, load instructions and sectors per request
(the vector width of the loads), registers, grid and block, occupancy.
"""

from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from roofline import selected

METRICS = ",".join(
    [
        "gpu__time_duration.sum",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__bytes_read.sum",
        "smsp__inst_executed_op_global_ld.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
        "launch__registers_per_thread",
        "launch__grid_size",
        "launch__block_size",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
    ]
)


def main() -> int:
    names = sys.argv[1:]
    runs = []
    for w in selected(names):
        args = w.make()
        for backend in ("inductor", "coil"):
            torch._dynamo.reset()
            f = torch.compile(w.fn, backend=backend)
            for _ in range(3):
                f(*args)
            runs.append((f, args))  # ncu's rows name the kernels
    torch.cuda.synchronize()
    for f, args in runs:
        torch.cuda.profiler.start()
        f(*args)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
