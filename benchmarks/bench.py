"""GPU benchmarks: coil against eager PyTorch and TorchInductor, in one process.

Each case runs eager, ``torch.compile(backend="inductor")`` and
``torch.compile(backend="coil")`` on the same inputs; outputs are checked
against eager first, then each is timed with ``triton.testing.do_bench``
(median of its repetitions, milliseconds). The table printed last (and written
to ``$OUT/bench.md`` when OUT is set) gives the times and coil's ratio to
Inductor and eager. Run on a GPU machine: ``python benchmarks/bench.py``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch


def pointwise_chain(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    a = torch.relu(x * 1.5 + y)
    b = torch.sigmoid(x) * y - 0.5
    return torch.tanh(a - b) * a + b / 2


def row_softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b)


@dataclass
class Case:
    name: str
    fn: Callable
    make: Callable[[], tuple]


def cases(device: str) -> list[Case]:
    n = 4096

    def rand(*shape):
        return torch.randn(*shape, device=device)

    return [
        Case("pointwise chain 4096x4096", pointwise_chain, lambda: (rand(n, n), rand(n, n))),
        Case("row softmax 4096x4096", row_softmax, lambda: (rand(n, n),)),
        Case(
            "layer norm 16384x1024",
            layer_norm,
            lambda: (rand(4 * n, 1024), rand(1024), rand(1024)),
        ),
    ]


def main() -> int:
    import triton.testing

    if not torch.cuda.is_available():
        print("bench: no GPU; the benchmarks measure Triton kernels on a GPU", file=sys.stderr)
        return 1
    torch.manual_seed(0)
    rows = []
    failed = False
    for case in cases("cuda"):
        args = case.make()
        torch._dynamo.reset()
        inductor = torch.compile(case.fn, backend="inductor")
        coil = torch.compile(case.fn, backend="coil")
        with torch.no_grad():
            want = case.fn(*args)
            for name, f in (("inductor", inductor), ("coil", coil)):
                got = f(*args)
                if not torch.allclose(got, want, rtol=1e-4, atol=1e-4):
                    err = (got - want).abs().max().item()
                    print(f"bench: {case.name}: {name} differs from eager (max {err:.3e})")
                    failed = True
            times = {
                name: triton.testing.do_bench(lambda f=f: f(*args), return_mode="median")
                for name, f in (("eager", case.fn), ("inductor", inductor), ("coil", coil))
            }
        rows.append((case.name, times))
    lines = [
        f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
        f"triton {triton.__version__}",
        "",
        "| case | eager ms | inductor ms | coil ms | coil / inductor | coil / eager |",
        "|---|---|---|---|---|---|",
    ]
    for name, t in rows:
        lines.append(
            f"| {name} | {t['eager']:.4f} | {t['inductor']:.4f} | {t['coil']:.4f} | "
            f"{t['coil'] / t['inductor']:.2f} | {t['coil'] / t['eager']:.2f} |"
        )
    table = "\n".join(lines)
    print(table)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "bench.md"), "w") as f:
            f.write(table + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
