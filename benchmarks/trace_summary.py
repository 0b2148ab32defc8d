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
    # torch.cuda._sleep's spin kernel holds the GPU before queued calls
    # (overhead.py's OVERHEAD_TRACE=gpu): not the workload's.
    return [
        e
        for e in events
        if e.get("cat") in GPU and "dur" in e and "spin_kernel" not in e.get("name", "")
    ]


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
    return "\n".join(lines + gaps(events, top))


def gaps(events: list[dict], top: int = TOP) -> list[str]:
    """Where the GPU sits idle between one event and the next (per stream,
    merged over the trace): the sum of the gaps under 100 us (longer ones
    are between the traced calls, where the host waits), their count and
    mean, and the kernel pairs (before -> after) with the most idle time. On a
    GPU-bound workload these gaps are what wall time minus kernel time
    measures."""
    by_stream: dict[object, list[dict]] = defaultdict(list)
    for e in events:
        by_stream[(e.get("pid"), e.get("tid"))].append(e)
    pairs: dict[tuple[str, str], list[float]] = defaultdict(list)
    kinds: dict[tuple[str, str], list[float]] = defaultdict(list)
    for stream in by_stream.values():
        stream.sort(key=lambda e: float(e["ts"]))
        for a, b in zip(stream, stream[1:]):
            idle = float(b["ts"]) - (float(a["ts"]) + float(a["dur"]))
            if 0 <= idle < 100:
                pairs[(_short(a["name"]), _short(b["name"]))].append(idle)
                kinds[(_kind(a), _kind(b))].append(idle)
    every = [g for v in pairs.values() for g in v]
    if not every:
        return []
    lines = [
        "",
        f"idle between events (< 100 us): {sum(every):.1f} us over {len(every)} gaps, "
        f"mean {sum(every) / len(every):.2f} us",
        "| idle us total | gaps | us mean | kind before -> after |",
        "|---|---|---|---|",
    ]
    # By kind first: a backend whose gaps are longer only around its cuBLAS
    # calls, or its copies, shows it here before the names do.
    for (a, b), v in sorted(kinds.items(), key=lambda kv: -sum(kv[1])):
        lines.append(f"| {sum(v):.1f} | {len(v)} | {sum(v) / len(v):.2f} | {a} -> {b} |")
    lines += [
        "",
        "| idle us total | gaps | us mean | before -> after |",
        "|---|---|---|---|",
    ]
    for (a, b), v in sorted(pairs.items(), key=lambda kv: -sum(kv[1]))[:top]:
        lines.append(f"| {sum(v):.1f} | {len(v)} | {sum(v) / len(v):.2f} | {a} -> {b} |")
    return lines


def _kind(event: dict) -> str:
    if event["cat"] != "kernel":
        return event["cat"].removeprefix("gpu_")
    return "triton" if _triton(event["name"]) else "other"


def _short(name: str) -> str:
    return name if len(name) <= 60 else name[:57] + "..."


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    for path in argv:
        print(summary(path), "\n", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
