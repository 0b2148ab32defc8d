"""Host overhead per call: what the GPU waits for while the wrapper works.

For each workload, in one process and on the same inputs (bf16 inference):
eager, coil, coil with CUDA graphs (``options={"cudagraphs": True}``),
Inductor and Inductor ``mode="reduce-overhead"``:

* wall ms per call (host clock over many calls, synchronized at the end; the
  best of ``ROUNDS`` such runs, since one run can be slowed by the machine);
* GPU ms per call (sum of kernel, memcpy and memset durations under
  torch.profiler);
* host overhead = wall - GPU, and launches per call (kernels and copies in the
  profile; a CUDA graph replay still runs its kernels, so the count is what
  the GPU runs);
* overhead per launch (µs) = host overhead / launches;
* issue ms: the host's own time for one call, measured directly (the median
  over calls, each started on an idle GPU and timed until it returns, without
  waiting for its kernels), and issue µs per launch. Where the GPU is the
  bottleneck (large batches) wall - GPU says little about the host (the host
  works while the GPU runs, and the difference is noise around 0); this
  column is the host's cost at any batch size;
* queued ms: GPU ms per call with the host out of the way (the calls
  enqueued behind a sleep kernel, timed by CUDA events): the kernels plus the
  GPU's own gaps between them. wall - queued is what the host adds (about 0
  where the GPU is the bottleneck); GPU gap per launch = (queued - GPU) /
  launches, the part of wall - GPU no host can remove;
* cudaMalloc and cudaFree calls of the caching allocator per timed call
  (``torch.cuda.memory_stats``): a steady state that still makes them stalls;
* syncs: the calls of one run that wait for the GPU (``torch.cuda``'s sync
  debug mode: ``.item()``, a copy to or from pageable host memory, ...), each
  printed with the line that made it.

Also the cost of one launch of a tiny Triton kernel through ``kernel[grid]``
(Triton's own launch path) against coil's bound launcher (runtime/launch.py).
Run on the GPU machine: ``python benchmarks/overhead.py [names...]``; the table
is printed last and written to ``$OUT/overhead.md``. ``--variants
coil,inductor`` runs only those (gpu.sh's ``OVERHEAD_ISOLATE=1`` runs each in
its own process: in one process the later variants run after what the earlier
ones left). ``OVERHEAD_TRACE=1`` (with OUT) writes a Chrome trace of 5 calls
of each variant to ``$OUT/trace-NAME-VARIANT-PID.json`` (the GPU timeline: gaps
between kernels, a replay's input copies), after the variant's measurements;
``OVERHEAD_TRACE=gpu`` traces the GPU side alone, of calls queued as for
``queued ms``, so that every gap in it is the GPU's own.
Use either with gpu.sh's ``OVERHEAD_ISOLATE=1``, since the profiler can stay
attached and slow the variants measured after it in one process.
``OVERHEAD_DUMP=1`` also
writes coil's IR and wrapper of each workload under ``$OUT/dump/NAME``.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import traceback

import torch

sys.path.insert(0, os.path.dirname(__file__))

CALLS = 50
ROUNDS = 3


def mlp20():
    layers = []
    for _ in range(20):
        layers += [torch.nn.Linear(256, 256), torch.nn.GELU()]
    return torch.nn.Sequential(*layers), (torch.randn(1, 256),)


def mlp1024(rows: int):
    """dynamic.py's MLP (1024 -> 4096 -> 1024, GELU) at ``rows`` rows: its
    dynamic compile's host time against the static one's (issue 35)."""

    def build():
        return torch.nn.Sequential(
            torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)
        ), (torch.randn(rows, 1024),)

    return build


def gpt2(batch: int, seq: int):
    def build():
        import transformers

        cfg = transformers.GPT2Config(resid_pdrop=0, embd_pdrop=0, attn_pdrop=0)
        from models import _Main

        ids = torch.randint(0, cfg.vocab_size, (batch, seq))
        return _Main(transformers.GPT2LMHeadModel(cfg), "logits"), (ids,)

    return build


def resnet50(batch: int):
    def build():
        import timm

        return timm.create_model("resnet50"), (torch.randn(batch, 3, 224, 224),)

    return build


def hf_swin(batch: int):
    """transformers' SwinModel (SwinConfig defaults, 224x224) as benchmarks/sweep.py
    builds it: the windowed-attention graph that calls fused attention (SDPA
    with an additive mask) twelve times, a constants function (relative-position
    bias gathers, shift masks) and views of the attention outputs."""

    def build():
        from models import _Main
        from sweep import _hf_image

        model, inputs = _hf_image("SwinModel", "SwinConfig")(batch, False)
        return _Main(model, "last_hidden_state"), inputs

    return build


def timm_model(name: str, batch: int):
    """A timm model from its config (random weights), sweep.py's inputs: the
    pre-logits features, so a zero-initialized head cannot hide a wrong result."""

    def build():
        import timm

        model = timm.create_model(name, pretrained=False, num_classes=0)
        size = model.pretrained_cfg.get("input_size", (3, 224, 224))
        return model, (torch.randn(batch, *size),)

    return build


WORKLOADS = {
    "mlp20_b1": mlp20,
    "mlp1024_b64": mlp1024(64),
    "gpt2_b1": gpt2(1, 128),
    "gpt2_8x128": gpt2(8, 128),
    "gpt2_8x512": gpt2(8, 512),
    "resnet50_b1": resnet50(1),
    "resnet50_b8": resnet50(8),
    "resnet50_b32": resnet50(32),
    # Host-bound rows of the model sweep (issue 33): coil's kernels take less GPU
    # time than Inductor's, its calls more wall time. timm's Swin-T is the same
    # network as hf_swin without fused attention (timm runs it as bmm/softmax),
    # where coil is ahead: the pair isolates what the attention calls cost.
    "hf_swin_b32": hf_swin(32),
    "swin_tiny_b32": timm_model("swin_tiny_patch4_window7_224", 32),
    "inception_next_b32": timm_model("inception_next_tiny", 32),
}
DEFAULT = [
    n
    for n in WORKLOADS
    if (not n.endswith("_b32") or n.startswith("resnet50")) and not n.startswith("mlp1024")
]
"""The workloads run when none is named (the sweep's models only when named)."""


def build_cuda(name: str) -> tuple[torch.nn.Module, tuple]:
    """Workload ``name`` on the GPU, bf16 inference."""
    module, inputs = WORKLOADS[name]()
    module = module.cuda().eval().to(torch.bfloat16)
    args = tuple((x.to(torch.bfloat16) if x.is_floating_point() else x).cuda() for x in inputs)
    return module, args


def measure(fn, args) -> tuple[float, float, float, float, float]:
    """(wall ms, GPU ms, launches, cudaMalloc+cudaFree calls of the caching
    allocator, issue ms) per call."""
    for _ in range(5):
        fn(*args)
    torch.cuda.synchronize()
    issue = []
    for _ in range(CALLS):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn(*args)
        issue.append(time.perf_counter() - t)
    torch.cuda.synchronize()
    issue_ms = statistics.median(issue) * 1e3
    before = _device_allocs()
    wall = float("inf")
    for _ in range(ROUNDS):
        t = time.perf_counter()
        for _ in range(CALLS):
            fn(*args)
        torch.cuda.synchronize()
        wall = min(wall, (time.perf_counter() - t) / CALLS * 1e3)
    mallocs = (_device_allocs() - before) / (CALLS * ROUNDS)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            fn(*args)
        torch.cuda.synchronize()
    # Copies on the device are GPU work too: counted as host overhead, the
    # copy of a padded GEMM operand (56 us of GPT-2's LM head at 8x512) made
    # the host look slower by that much.
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    gpu = sum(e.device_time_total for e in kernels) / 10 / 1e3
    return wall, gpu, len(kernels) / 10, mallocs, issue_ms


QUEUED_CALLS = 4


def queued(fn, args, issue_ms: float) -> float:
    """GPU ms per call with the host out of the way: a sleep kernel holds the
    GPU while the host enqueues QUEUED_CALLS calls, and CUDA events time them
    from the sleep's end. What remains above the kernels' own time is the
    GPU's gap between one kernel and the next, which no host can shorten;
    wall minus this is what the host adds. (The calls' launches must fit the
    driver's queue, some thousand, or the host waits in it and the GPU can
    catch up: fine for these workloads, at most ~200 launches a call.)"""
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    # Twice the host's time for the calls, at up to 2 GHz (cycles per ms: 2e6).
    torch.cuda._sleep(int(2 * QUEUED_CALLS * issue_ms * 2e6) + 2_000_000)
    start.record()
    for _ in range(QUEUED_CALLS):
        fn(*args)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / QUEUED_CALLS


def syncs(fn, args) -> int:
    """The operations of one call of ``fn`` that synchronize with the GPU, each
    printed once with where it was made: a wrapper that waits for its kernels
    makes its issue time its kernels' time."""
    import warnings

    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn(*args)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    found = [
        w
        for w in caught
        if "synchroniz" in str(w.message) and "debug mode is a prototype" not in str(w.message)
    ]
    for w in {(w.filename, w.lineno, str(w.message).splitlines()[0]) for w in found}:
        print(f"  sync: {w[0]}:{w[1]}: {w[2]}", flush=True)
    return len(found)


def trace(fn, args, name: str, variant: str, issue_ms: float) -> None:
    """With OVERHEAD_TRACE=1 (and OUT): torch.profiler's Chrome trace of 5 calls.

    OVERHEAD_TRACE=gpu records the GPU alone, QUEUED_CALLS calls enqueued
    behind a sleep kernel as ``queued`` does: the host's side of the profiler
    costs microseconds per launch, which makes the host the bottleneck of
    some gaps between kernels; queued, every gap is the GPU's own."""
    mode = os.environ.get("OVERHEAD_TRACE")
    if mode not in ("1", "gpu") or not os.environ.get("OUT"):
        return
    activities = [torch.profiler.ProfilerActivity.CUDA]
    if mode == "1":
        activities.append(torch.profiler.ProfilerActivity.CPU)
    with torch.profiler.profile(activities=activities) as prof:
        if mode == "gpu":
            queued(fn, args, issue_ms)
        else:
            for _ in range(5):
                fn(*args)
        torch.cuda.synchronize()
    # One file per process and variant: gpu.sh may run a variant in several.
    file = f"trace-{name}-{variant.replace(' ', '-')}-{os.getpid()}.json"
    prof.export_chrome_trace(os.path.join(os.environ["OUT"], file))


def _device_allocs() -> int:
    """cudaMalloc and cudaFree calls of torch's caching allocator so far: each
    one synchronizes or stalls, so a backend whose steady state makes them
    pays time that is neither its kernels' nor its wrapper's."""
    stats = torch.cuda.memory_stats()
    return stats.get("num_device_alloc", 0) + stats.get("num_device_free", 0)


def launch_cost() -> str:
    """µs per launch of a 1-block kernel: Triton's kernel[grid] vs coil's Launcher."""
    import triton
    import triton.language as tl

    from coil.runtime.launch import Launcher, raw_stream

    @triton.jit
    def tiny(x_ptr, y_ptr, n):
        i = tl.arange(0, 128)
        tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n), mask=i < n)

    x = torch.randn(128, device="cuda")
    y = torch.empty_like(x)
    launcher = Launcher({"tiny": tiny}, "tiny", ("*float32", "*float32", "i64"), "cuda:0", 4, 1)
    n = 2000

    def triton_launch():
        tiny[(1,)](x, y, 128)

    def coil_launch():
        launcher.run(1, 1, 1, raw_stream("cuda:0"), x, y, 128)

    out = []
    for name, f in (("triton kernel[grid]", triton_launch), ("coil Launcher", coil_launch)):
        for _ in range(50):
            f()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            f()
        torch.cuda.synchronize()
        out.append(f"{name}: {(time.perf_counter() - t) / n * 1e6:.1f} us per launch")
    return "; ".join(out)


def _dump(name: str) -> dict:
    """With OVERHEAD_DUMP=1 (and OUT), coil's default variant writes its IR and
    wrapper under $OUT/dump/NAME (COIL_DUMP_DIR's files), to read the GPU
    wrapper off the device."""
    if os.environ.get("OVERHEAD_DUMP") == "1" and os.environ.get("OUT"):
        return {"dump_dir": os.path.join(os.environ["OUT"], "dump", name)}
    return {}


VARIANTS = {
    "eager": lambda m, name: m,
    "inductor": lambda m, name: torch.compile(m),
    "inductor reduce-overhead": lambda m, name: torch.compile(m, mode="reduce-overhead"),
    "coil": lambda m, name: torch.compile(m, backend="coil", options=_dump(name)),
    "coil cudagraphs": lambda m, name: torch.compile(
        m, backend="coil", options={"cudagraphs": True}
    ),
    # Symbolic sizes from the first call (issue 35: the host side of a dynamic
    # compile, against the static one of the same workload).
    "inductor dynamic": lambda m, name: torch.compile(m, dynamic=True),
    "coil dynamic": lambda m, name: torch.compile(
        m, backend="coil", dynamic=True, options=_dump(name + "-dynamic")
    ),
}
"""Each backend variant: (module, workload name) -> the callable to time."""


def main() -> int:
    import argparse

    import triton

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "names",
        nargs="*",
        help=f"workloads (default: {', '.join(DEFAULT)}): {', '.join(WORKLOADS)}",
    )
    parser.add_argument(
        "--variants",
        default=",".join(v for v in VARIANTS if "dynamic" not in v),
        help="comma-separated, of: " + ", ".join(VARIANTS) + " (one per process: "
        "`for v in coil inductor; do overhead.py --variants $v ...; done` tells "
        "a backend's cost from what earlier variants left in the process)",
    )
    opts = parser.parse_args()
    names = opts.names or DEFAULT
    chosen = [v.strip() for v in opts.variants.split(",") if v.strip()]
    unknown = sorted(set(chosen) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")

    torch._dynamo.config.cache_size_limit = 64
    lines = [
        f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
        f"triton {triton.__version__}",
        "",
        launch_cost(),
        "",
        "| workload | backend | wall ms | GPU ms | host overhead ms | launches | "
        "overhead per launch us | issue ms | issue per launch us | queued ms | wall - queued ms | "
        "GPU gap per launch us | cudaMalloc/Free per call | syncs per call |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        torch.manual_seed(0)
        module, args = build_cuda(name)
        with torch.no_grad():
            want = module(*args).float()
            for variant in chosen:
                make = VARIANTS[variant]
                torch._dynamo.reset()
                try:
                    f = make(module, name)
                    got = f(*args).float()
                    err = float((got - want).norm() / want.norm())
                    wall, gpu, launches, mallocs, issue = measure(f, args)
                    queue = min(queued(f, args, issue) for _ in range(3))
                    try:
                        trace(f, args, name, variant, issue)
                    except Exception as e:  # a trace is a diagnosis, not the row
                        print(f"overhead: no trace of {name} / {variant}: {e}", flush=True)
                    try:
                        synced = str(syncs(f, args))
                    except Exception as e:  # the check is a diagnosis, not the row
                        synced = f"? ({type(e).__name__})"
                    per = (wall - gpu) * 1e3 / launches if launches else float("nan")
                    issue_per = issue * 1e3 / launches if launches else float("nan")
                    gap = (queue - gpu) * 1e3 / launches if launches else float("nan")
                    row = (
                        f"| {name} | {variant} | {wall:.3f} | {gpu:.3f} | {wall - gpu:.3f} | "
                        f"{launches:.0f} | {per:.1f} | {issue:.3f} | {issue_per:.1f} | "
                        f"{queue:.3f} | {wall - queue:.3f} | {gap:.2f} | "
                        f"{mallocs:.1f} | {synced} |"
                    )
                    if err > 3e-2:
                        row += f" WRONG (rel. error {err:.1e})"
                except Exception as e:
                    traceback.print_exc()
                    row = f"| {name} | {variant} | ERROR {type(e).__name__}: {str(e)[:120]} |"
                print(row, flush=True)
                lines.append(row)
    table = "\n".join(lines)
    print(table)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "overhead.md"), "a") as fh:
            fh.write(table + "\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
