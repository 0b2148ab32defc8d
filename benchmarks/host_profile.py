"""Where a compiled model's host time goes: cProfile over calls (GPU machine).

``python benchmarks/host_profile.py NAME [VARIANT]``: NAME is a model of
``models.py`` (built as ``profile_model.py`` does: bf16 inference on the GPU)
a workload of ``overhead.py`` (``mlp20_b1``, ``gpt2_b1``, ...) or one of
``roofline.py`` (``rl_sum_dim1_bf16`` for "sum_dim1 bf16 ..."); VARIANT is
``coil`` (default), ``coil-cudagraphs``, ``eager``, ``inductor`` or
``inductor-reduce-overhead``. Compiles, warms up, then profiles 20 calls and
prints the functions with the most own time per call (µs).

``--after V1,V2``: first the host time of VARIANT alone, then V1, V2 (the same
names) compiled and run in this process, then VARIANT compiled again and
profiled: what earlier backends leave in a process (overhead.py's table runs
the variants one after another) and what of it slows the next one's calls.
A name of ``--after`` that is an ``overhead.py`` workload (``gpt2_8x512``) runs
that workload under VARIANT instead: what one backend's earlier models leave.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from overhead import VARIANTS, WORKLOADS, build_cuda
from profile_model import cuda_bf16

CALLS = 20


def compiled(module, backend: str, name: str):
    """``backend`` (overhead.py's variant name, spaces as dashes:
    ``coil-cudagraphs``) compiled for ``module``."""
    by_name = {v.replace(" ", "-"): make for v, make in VARIANTS.items()}
    if backend not in by_name:
        raise SystemExit(f"host_profile: unknown variant {backend}; known: {', '.join(by_name)}")
    return by_name[backend](module, name)


def host_ms(f, args) -> float:
    """Host ms per call of a launch loop (no sync inside), after a warm-up."""
    for _ in range(5):
        f(*args)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(CALLS):
        f(*args)
    host = (time.perf_counter() - t) / CALLS * 1e3
    torch.cuda.synchronize()
    return host


def main() -> int:
    argv = sys.argv[1:]
    after: list[str] = []
    for at, arg in enumerate(argv):
        if arg == "--after" or arg.startswith("--after="):
            value = arg.partition("=")[2] if "=" in arg else None
            if value is None and at + 1 >= len(argv):
                print("host_profile: --after needs variants (--after inductor,eager)")
                return 2
            after = [v for v in (value if value is not None else argv[at + 1]).split(",") if v]
            del argv[at : at + (1 if value is not None else 2)]
            break
    name = argv[0] if argv else "gpt2"
    backend = argv[1] if len(argv) > 1 else "coil"
    if name.startswith("rl_"):  # a roofline workload: rl_sum_dim1_bf16 is "sum_dim1 bf16 ..."
        from roofline import workloads

        prefix = name[3:].replace("_bf16", " bf16").replace("_f32", " f32")
        w = next(w for w in workloads("cuda", smoke=False) if w.name.startswith(prefix))
        module, args = w.fn, w.make()
    else:
        module, args = build_cuda(name) if name in WORKLOADS else cuda_bf16(name)
    with torch.no_grad():
        if after:
            alone = host_ms(compiled(module, backend, name), args)
            print(f"== {name} / {backend}: host {alone:.3f} ms per call alone")
            for other in after:
                torch._dynamo.reset()
                if other in WORKLOADS:  # another workload, under this backend
                    o_module, o_args = build_cuda(other)
                    ms = host_ms(compiled(o_module, backend, other), o_args)
                    print(f"== {other} / {backend}: host {ms:.3f} ms per call (run before)")
                    continue
                ms = host_ms(compiled(module, other, name), args)
                print(f"== {name} / {other}: host {ms:.3f} ms per call (run before)")
            torch._dynamo.reset()
        f = compiled(module, backend, name)
        host = host_ms(f, args)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(CALLS):
            f(*args)
        prof.disable()
        torch.cuda.synchronize()
        # The ATen side (what cProfile lumps as one builtin): CPU time per op and
        # input shapes, and the CUDA runtime calls (a sync, a pageable copy).
        with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True
        ) as tprof:
            for _ in range(CALLS):
                f(*args)
            torch.cuda.synchronize()
    print(
        f"== {name} / {backend}: host {host:.3f} ms per call (launch loop, no sync)"
        + (f", after {', '.join(after)}" if after else "")
    )
    table = tprof.key_averages(group_by_input_shape=True).table(
        sort_by="self_cpu_time_total",
        row_limit=15,
        max_name_column_width=40,
        max_shapes_column_width=60,
    )
    print(f"-- torch.profiler CPU ops over {CALLS} calls:\n{table}")
    stats = pstats.Stats(prof)
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:30]
    for (file, line, func), (_, nc, tt, ct, _) in rows:
        print(
            f"{tt / CALLS * 1e6:9.1f} us own {ct / CALLS * 1e6:9.1f} us cum {nc / CALLS:6.0f}x  "
            f"{os.path.basename(file)}:{line} {func}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
