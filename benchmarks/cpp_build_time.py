"""What a cold C++ build costs: the C++ wrapper and the C++ CPU kernels, split by stage.

    python benchmarks/cpp_build_time.py                    # both models, both paths
    python benchmarks/cpp_build_time.py --models block --opt O1,O2,O3 --calls 3000

For each model (``small``: a matmul, a softmax and a pointwise op; ``block``: a
pre-norm transformer block, attention and MLP, as aten ops) and each path:

* ``wrapper``: coil's passes (import + the default pipeline), the ``-t cpp``
  and ``-t triton`` emission, ``triton.compile`` of the kernels, and the C++
  compiler three ways -- plain (every header parsed), with a cold precompiled
  header (building it, then the wrapper), with a warm one -- in a private
  ``COIL_CPP_CACHE_DIR``, so the PCH is built here. Then the wrapper's host
  time per call: on a machine without a GPU through the fake driver of
  test/python/fake_libcuda.c (CPU tensors; ATen allocations, input checks and
  argument packing run for real, launches are recorded), on a GPU for real.
  ``--opt`` repeats the compile and the per-call time for each -O level.
* ``cpu-kernels``: the passes of the CPU pipeline, the ``-t cpp-kernels``
  source, and the compiler on it (``runtime/cpp_kernels.py``'s flags).

Compiler times are the child processes' CPU seconds (user + system) and wall
seconds: on a machine shared with other work the CPU seconds are the steadier
figure.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent


class Small(nn.Module):
    def forward(self, x, w):
        return x @ w, torch.softmax(x, dim=-1) * 2.0, torch.sigmoid(x) + 1.0


class Block(nn.Module):
    """A pre-norm transformer block: LayerNorm, attention (matmuls and a softmax), MLP."""

    def __init__(self, d: int = 64, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.down(torch.nn.functional.gelu(self.up(self.ln2(x))))


def models(device: str) -> dict:
    return {
        "small": (Small(), (torch.randn(6, 40, device=device), torch.randn(40, 8, device=device))),
        "block": (Block().to(device).eval(), (torch.randn(2, 16, 64, device=device),)),
    }


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Timer:
    """Wall and child-CPU seconds of a block."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), children_cpu()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        self.cpu = children_cpu() - self.cpu

    def __str__(self) -> str:
        return f"{self.cpu:6.2f} cpu {self.wall:6.2f} wall"


def run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr[-3000:]}")


def per_call_us(wrappers: dict, inputs: list, calls: int, rounds: int = 7) -> dict:
    """Microseconds of this process's CPU per call of each wrapper: the best of
    ``rounds`` rounds, the wrappers taking turns (a shared machine's load
    shifts over seconds). On a GPU the kernels run too; the clock is then the
    wall clock, synchronized."""
    gpu = torch.cuda.is_available()
    clock = time.perf_counter if gpu else time.process_time
    best = dict.fromkeys(wrappers, float("inf"))
    for w in wrappers.values():
        for _ in range(20):
            w.call(list(inputs))
    for _ in range(rounds):
        for key, w in wrappers.items():
            start = clock()
            for _ in range(calls):
                w.call(list(inputs))
            if gpu:
                torch.cuda.synchronize()
            best[key] = min(best[key], (clock() - start) / calls * 1e6)
    return best


def wrapper_rows(
    name: str, model, inputs, opts: list[str], calls: int, work: Path, device: str
) -> None:
    from coil.backend import run_pipeline
    from coil.frontend.capture import capture_graphs
    from coil.frontend.fx_importer import import_graph
    from coil.pipeline import PIPELINES
    from coil.runtime import cpp_pch, cpp_wrapper

    start = time.perf_counter()
    (graph,) = capture_graphs(model, tuple(inputs), dynamic=False)
    module = import_graph(graph.gm, graph.example_inputs)
    # The graph's inputs, parameters too, as real tensors of the same layouts.
    flat = [
        torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=device).normal_()
        if isinstance(t, torch.Tensor)
        else t
        for t in graph.example_inputs
    ]
    run_pipeline(module, PIPELINES["default"])
    passes = time.perf_counter() - start
    start = time.perf_counter()
    cpp, kernels = cpp_wrapper._emit(module)
    emit = time.perf_counter() - start
    arch = cpp_wrapper.gpu_arch(module)
    with Timer() as triton_t:
        compiled = cpp_wrapper.compile_kernels(module, kernels, arch)
    print(
        f"{name} wrapper: passes {passes:.2f} s, emit {emit:.2f} s ({len(cpp.splitlines())} "
        f"lines of C++), triton.compile {triton_t.wall:.2f} s ({len(compiled)} kernels)"
    )
    loaded = {}
    for opt in opts:
        cpp_wrapper.WRAPPER_OPT = opt
        d = work / f"{name}-{opt}"
        (d / "kernels").mkdir(parents=True)
        (d / "wrapper.cpp").write_text(cpp)
        for k, c in compiled.items():
            (d / "kernels" / f"{k}.cubin").write_bytes(c.asm["cubin"])
            (d / "kernels" / f"{k}.meta").write_text(cpp_wrapper.meta_text(c.metadata))
        with Timer() as plain:
            run(cpp_wrapper.compile_command(d / "wrapper.cpp", d / "plain.so"))
        with Timer() as pch_build:
            pch = cpp_wrapper.wrapper_pch_dir()
        size = (pch / "coil_runtime.h.gch").stat().st_size / 2**20 if pch else 0
        with Timer() as warm:
            run(cpp_wrapper.compile_command(d / "wrapper.cpp", d / "wrapper.so", pch_dir=pch))
        print(
            f"  -{opt.lstrip('-')}: plain {plain} | PCH build {pch_build} ({size:.0f} MiB) | "
            f"with PCH {warm}"
        )
        if pch is not None:
            cpp_pch.discard(pch)  # the next -O level builds its own
        loaded[opt] = cpp_wrapper.CppWrapper(d, None, cpp)
    times = per_call_us(loaded, flat, calls)
    print("  host time per call: " + ", ".join(f"{o} {t:.1f} us" for o, t in times.items()))


def cpu_kernel_rows(name: str, model, inputs) -> None:
    import coil
    from coil.backend import run_pipeline
    from coil.pipeline import PIPELINES
    from coil.runtime import cpp_kernels
    from coil.targets.cpp_kernels import emit_cpp_kernels

    start = time.perf_counter()
    module = coil.import_module(model, inputs, dynamic=False)
    run_pipeline(module, PIPELINES["cpu"])
    passes = time.perf_counter() - start
    start = time.perf_counter()
    source = emit_cpp_kernels(module)
    emit = time.perf_counter() - start
    compiler = cpp_kernels.find_compiler()
    with Timer() as build:
        cpp_kernels.load_cpp_kernels(source)
    print(
        f"{name} cpu-kernels: passes {passes:.2f} s, emit {emit:.2f} s "
        f"({len(source.splitlines())} lines), {Path(compiler.path).name} {build}"
    )


def fake_driver(work: Path) -> None:
    """Point the wrapper's runtime at a fake libcuda.so.1 (no GPU here)."""
    from coil.runtime import cpp_wrapper

    out = work / "libcuda.so.1"
    run(
        ["cc", "-shared", "-fPIC", "-O1", f"-I{cpp_wrapper.cuda_include_dir()}",
         "-Wl,-soname,libcuda.so.1", str(ROOT / "test/python/fake_libcuda.c"), "-o", str(out)]
    )  # fmt: skip
    os.environ["COIL_LIBCUDA_PATH"] = str(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="small,block")
    parser.add_argument("--paths", default="wrapper,cpu-kernels")
    parser.add_argument("--opt", default="O2", help="-O levels for the wrapper, comma-separated")
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="coil-cpp-build-"))
    os.environ["COIL_CACHE_DIR"] = str(work / "cache")
    os.environ["COIL_CPP_CACHE_DIR"] = str(work / "cpp-cache")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    torch.set_num_threads(1)  # the host path is one thread; ATen's own work too
    try:
        if device == "cpu" and "wrapper" in args.paths:
            fake_driver(work)
        table = models(device)
        for name in args.models.split(","):
            model, inputs = table[name]
            if "wrapper" in args.paths:
                opts = [f"-{o.lstrip('-')}" for o in args.opt.split(",")]
                wrapper_rows(name, model, inputs, opts, args.calls, work, device)
            if "cpu-kernels" in args.paths:
                cpu_model, cpu_inputs = models("cpu")[name]
                cpu_kernel_rows(name, cpu_model, cpu_inputs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
