"""The GPU side of Chrome traces (``overhead.py``'s ``OVERHEAD_TRACE=1``), as text.

For each trace: GPU time of kernels, memcpys and memsets, split into Triton
kernels (``coil_*``, ``triton_*``) and the rest (cuBLAS, cuDNN, ATen), then
the kernels that take the most time (name, launches, total and mean us). Two
backends' traces of one model then say where their GPU time differs, where
the whole traces (megabytes each) do not come back from the lent machine:

    python3 benchmarks/trace_summary.py $OUT/trace-resnet50_b1-*.json
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

GPU = ("kernel", "gpu_memcpy", "gpu_memset")
TOP = 25


def _events(path: str) -> list[dict]:
    with open(path) as fh:
        data = json.load(fh)
    events = data["traceEvents"] if isinstance(data, dict) else data
    return [e for e in events if e.get("cat") in GPU and "dur" in e]


def _triton(name: str) -> bool:
    return name.startswith(("coil_", "triton_"))


def summary(path: str, top: int = TOP) -> str:
    events = _events(path)
    by_name: dict[str, list[float]] = defaultdict(list)
    split = {"triton": 0.0, "other kernels": 0.0, "memcpy": 0.0, "memset": 0.0}
    for e in events:
        by_name[e["name"]].append(float(e["dur"]))
        if e["cat"] == "gpu_memcpy":
            split["memcpy"] += e["dur"]
        elif e["cat"] == "gpu_memset":
            split["memset"] += e["dur"]
        else:
            split["triton" if _triton(e["name"]) else "other kernels"] += e["dur"]
    total = sum(split.values())
    lines = [
        f"== {path}: {len(events)} GPU events, {total:.1f} us "
        + ", ".join(f"{k} {v:.1f}" for k, v in split.items()),
        "| us total | launches | us mean | name |",
        "|---|---|---|---|",
    ]
    ranked = sorted(by_name.items(), key=lambda kv: -sum(kv[1]))
    for name, durs in ranked[:top]:
        mean = sum(durs) / len(durs)
        lines.append(f"| {sum(durs):.1f} | {len(durs)} | {mean:.2f} | {name[:90]} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    for path in argv:
        print(summary(path), "\n", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
