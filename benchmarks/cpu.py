"""Eager, Inductor and coil on the CPU, in one process (issue 40).

    python -m coil.benchmarks.cpu [--threads N] [--dtypes float32,bfloat16]
                                  [--rows mlp,layernorm,...] [--iters N]

Rows: the MLP of issue 40 (``Linear(512, 2048), GELU, Linear(2048, 512),
LayerNorm(512)``, batch 64), a LayerNorm, an RMSNorm and a softmax over
``[256, 1024]``,
an attention block written by hand (B 4, 8 heads, L 128, E 64), a small
pre-norm transformer encoder (2 layers, d 256, 4 heads, ff 1024, batch 8 x 64
tokens)
and ResNet-18 (torchvision's layers, written out here) at batch 1 and 16
(224x224), each in float32 and
bfloat16, inference (``torch.no_grad``). Each backend's output is checked
against eager first; then each is timed in turns (warm-up, then the median of
``--rounds`` rounds of ``--iters`` calls, the backends interleaved so a load
change on a shared machine hits all three; ``--clock cpu`` times the
process's CPU time instead of wall time, for a machine shared with other
work). The thread count (torch's
intra-op threads and OpenMP's) is printed with the table; coil's C++ kernels
and ATen share torch's OpenMP pool.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, e: int = 512, heads: int = 8):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(e, 3 * e)
        self.out = nn.Linear(e, e)

    def forward(self, x):
        b, n, e = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, e // self.heads).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(e // self.heads), -1)
        return self.out((w @ v).transpose(1, 2).reshape(b, n, e))


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    """torchvision's resnet18 (same layers and shapes), written here: the
    installed torchvision wheel does not load against this torch build."""

    def __init__(self, classes: int = 1000):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, 2, 3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class EncoderLayer(nn.Module):
    """A pre-norm transformer encoder layer (SDPA attention, GELU MLP): what
    nn.TransformerEncoderLayer computes, without its fused inference fast path
    (one opaque ATen op, the same call in every backend)."""

    def __init__(self, d: int = 256, heads: int = 4, ff: int = 1024):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, self.heads, d // self.heads).unbind(2)
        a = nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        )
        x = x + self.proj(a.transpose(1, 2).reshape(b, n, d))
        return x + self.ff(self.norm2(x))


def rows() -> dict[str, Callable[[torch.dtype], tuple[nn.Module, list[torch.Tensor]]]]:
    def mlp(dtype):
        m = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512), nn.LayerNorm(512))
        return m.to(dtype), [torch.randn(64, 512, dtype=dtype)]

    def layernorm(dtype):
        return nn.LayerNorm(1024).to(dtype), [torch.randn(256, 1024, dtype=dtype)]

    def rmsnorm(dtype):
        return nn.RMSNorm(1024).to(dtype), [torch.randn(256, 1024, dtype=dtype)]

    def softmax(dtype):
        return nn.Softmax(-1), [torch.randn(256, 1024, dtype=dtype)]

    def attention(dtype):
        return Attention().to(dtype), [torch.randn(4, 128, 512, dtype=dtype)]

    def encoder(dtype):
        m = nn.Sequential(EncoderLayer(), EncoderLayer())
        return m.to(dtype), [torch.randn(8, 64, 256, dtype=dtype)]

    def resnet(batch):
        def make(dtype):
            return ResNet18().to(dtype), [torch.randn(batch, 3, 224, 224, dtype=dtype)]

        return make

    return {
        "mlp": mlp,
        "layernorm": layernorm,
        "rmsnorm": rmsnorm,
        "softmax": softmax,
        "attention": attention,
        "encoder": encoder,
        "resnet18-b1": resnet(1),
        "resnet18-b16": resnet(16),
    }


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
"""``wall``: elapsed time. ``cpu``: the process's CPU time (user + system, all
its threads): on a machine shared with other work, time spent waiting for a
core is not counted, so rows compare under load; with one thread it is the
work of one call."""


def _median_ms(fn: Callable[[], Any], iters: int, clock: Callable[[], float]) -> float:
    t = clock()
    for _ in range(iters):
        fn()
    return (clock() - t) / iters * 1e3


def run_row(
    name: str, make, dtype: torch.dtype, iters: int, rounds: int, clock: str = "wall"
) -> dict[str, Any]:
    from coil.testing import difference

    torch._dynamo.reset()
    torch.manual_seed(0)
    model, inputs = make(dtype)
    model.eval()
    fns = {
        "eager": model,
        "inductor": torch.compile(model, backend="inductor"),
        # The C++ kernels (the default for CPU graphs, named here for clarity).
        "coil": torch.compile(model, backend="coil", options={"cpu_kernels": "cpp"}),
    }
    out: dict[str, Any] = {"row": name, "dtype": str(dtype).removeprefix("torch.")}
    with torch.no_grad():
        expected = model(*inputs)
        for key in ("inductor", "coil"):
            t = time.perf_counter()
            got = fns[key](*inputs)
            out[f"{key}_compile_s"] = time.perf_counter() - t
            bad = difference(got, expected)
            # Reduced precision: a whole network in bf16 drifts; report, don't fail.
            out[f"{key}_check"] = "ok" if bad is None else bad
        for fn in fns.values():
            for _ in range(2):
                fn(*inputs)
        times: dict[str, list[float]] = {k: [] for k in fns}
        for r in range(rounds):
            order = list(fns) if r % 2 == 0 else list(reversed(fns))
            for key in order:
                fn = fns[key]
                times[key].append(_median_ms(lambda fn=fn: fn(*inputs), iters, CLOCKS[clock]))
    for key, ts in times.items():
        out[key] = statistics.median(ts)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=0, help="0: torch's default")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--rows", default=",".join(rows()))
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--clock", choices=list(CLOCKS), default="wall", help="wall or cpu (process CPU time)"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    threads = torch.get_num_threads()
    print(
        f"threads: {threads} (torch intra-op = OpenMP); cores: {os.cpu_count()}; "
        f"torch {torch.__version__}; clock: {args.clock}"
    )
    table = rows()
    results = []
    for dtype_name in args.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        for name in args.rows.split(","):
            iters = max(1, args.iters // 5) if name.startswith("resnet18-b16") else args.iters
            r = run_row(name, table[name], dtype, iters, args.rounds, args.clock)
            results.append(r)
            print(
                f"| {r['row']} | {r['dtype']} | {r['eager']:.3f} | {r['inductor']:.3f} | "
                f"{r['coil']:.3f} | {r['eager'] / r['coil']:.2f}x | "
                f"{r['inductor'] / r['coil']:.2f}x | {r['coil_check']} |",
                flush=True,
            )
    if results:
        ge = math.exp(statistics.mean(math.log(r["eager"] / r["coil"]) for r in results))
        gi = math.exp(statistics.mean(math.log(r["inductor"] / r["coil"]) for r in results))
        print(f"geomean: coil {ge:.2f}x eager, {gi:.2f}x Inductor ({len(results)} rows)")


if __name__ == "__main__":
    main()
