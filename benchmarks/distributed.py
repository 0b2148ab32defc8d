"""FSDP2 training of a GPT-2-small-sized model on 2 GPUs: eager, Inductor and coil.

One run starts one process per GPU (``coil.examples.distributed.launch``, an
``mp.spawn``; ``NCCL_NVLS_ENABLE=0`` and ``TORCH_SYMM_MEM_DISABLE_MULTICAST=1``
in every process). Each rank builds ``GPT(50257, 768, 12, 12, 1024)`` (GPT-2
small, 124M parameters) from one seed and shards every block and the root with
``fully_shard`` (bf16 parameters, fp32 gradient reduction); AdamW trains it on
``--batch`` sequences of ``--seq`` tokens per rank. Then, in the same processes
and on the same batches, for each mode:

* ``eager``: uncompiled;
* ``inductor``: each block ``torch.compile``d, then sharded (as torchtitan does);
* ``coil``: the same with ``backend="coil"``;

it reports the first step's seconds (compilation included), the median step
time over ``--steps`` timed steps after ``--warmup``, tokens per second over
all ranks, the peak memory of rank 0 and the last loss (the modes start from
the same weights and see the same batches, so the losses agree to bf16
tolerance). FSDP2's all-gathers and reduce-scatters run in its hooks, eagerly,
in every mode (torch 2.13 cannot trace them; see the README).

    python benchmarks/distributed.py             # 2 GPUs
    python benchmarks/distributed.py --smoke     # a tiny model on 2 CPU processes (gloo)

The table is printed last (rank 0) and written to ``$OUT/distributed.md``
when OUT is set, with a profile of each mode's steps (the 25 longest kernels)
in ``$OUT/distributed-profile-<mode>.txt``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

from coil.examples.distributed import GPT, batch, launch, lm_loss

MODES = ("eager", "inductor", "coil")


def build(mode: str, device: str, smoke: bool) -> torch.nn.Module:
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    torch.manual_seed(0)
    model = GPT(64, 32, 4, 2, 16) if smoke else GPT(50257, 768, 12, 12, 1024)
    model = model.to(device)
    policy = None
    if device == "cuda":
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    shard = {"mp_policy": policy} if policy is not None else {}
    for i, block in enumerate(model.blocks):
        if mode != "eager":
            block = torch.compile(block, backend=mode)
            model.blocks[i] = block
        fully_shard(block, **shard)
    return fully_shard(model, **shard)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def run_mode(mode: str, rank: int, device: str, args: dict[str, Any]) -> dict[str, Any]:
    model = build(mode, device, args["smoke"])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    vocab, seq = model.wte.num_embeddings, model.wpe.num_embeddings

    def step(k: int) -> torch.Tensor:
        loss = lm_loss(model, batch(k, rank, vocab, seq - 1, device, args["batch"]))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    step(0)
    sync(device)
    first = time.perf_counter() - start
    for k in range(1, args["warmup"]):
        step(k)
    times, loss = [], None
    for k in range(args["warmup"], args["warmup"] + args["steps"]):
        sync(device)
        start = time.perf_counter()
        loss = step(k)
        sync(device)
        times.append(time.perf_counter() - start)
    # Every rank runs the profiled steps (FSDP's collectives need them all).
    profile = profile_steps(step, device, args) if args["out"] else None
    peak = torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else float("nan")
    ms = statistics.median(times) * 1e3
    return {
        "first_s": first,
        "step_ms": ms,
        "peak_gib": peak,
        "loss": float(loss),
        "profile": profile,
    }


def profile_steps(step, device: str, args: dict[str, Any]) -> str:
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        for k in range(3):
            step(10_000 + k)
        sync(device)
    key = "cuda_time_total" if device == "cuda" else "cpu_time_total"
    return prof.key_averages().table(sort_by=key, row_limit=25)


def bench(rank: int, world: int, device: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for mode in args["modes"]:
        try:
            row = run_mode(mode, rank, device, args)
        except Exception as e:  # a failing mode is a row, not a lost run
            row = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"}
        gc.collect()  # the mode's model and optimizer are gone: free their memory
        torch._dynamo.reset()
        if device == "cuda":
            torch.cuda.empty_cache()
        row["mode"] = mode
        rows.append(row)
        if rank == 0:
            print(f"{mode}: {row}", flush=True)
    return rows


def table(rows: list[dict[str, Any]], tokens: int) -> str:
    lines = [
        "| mode | first step (s) | step (ms) | tokens/s | vs Inductor | peak (GiB) | last loss |",
        "|---|---|---|---|---|---|---|",
    ]
    inductor = next(
        (r["step_ms"] for r in rows if r["mode"] == "inductor" and "step_ms" in r), None
    )
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['mode']} | failed: {r['error']} | | | | | |")
            continue
        ratio = f"{inductor / r['step_ms']:.2f}x" if inductor else "-"
        lines.append(
            f"| {r['mode']} | {r['first_s']:.1f} | {r['step_ms']:.1f} | "
            f"{tokens / (r['step_ms'] / 1e3):,.0f} | {ratio} | {r['peak_gib']:.2f} | "
            f"{r['loss']:.4f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8, help="sequences per rank and step")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--smoke", action="store_true", help="a tiny model on CPU processes")
    opts = parser.parse_args(argv)
    device = "cpu" if opts.smoke else "cuda"
    if device == "cuda" and torch.cuda.device_count() < opts.nproc:
        print(f"needs {opts.nproc} GPUs, found {torch.cuda.device_count()}", file=sys.stderr)
        return 1
    args = {
        "smoke": opts.smoke,
        "batch": opts.batch,
        "warmup": opts.warmup,
        "steps": opts.steps,
        "modes": opts.modes.split(","),
        "out": os.environ.get("OUT"),
    }
    rows = launch(bench, opts.nproc, args, device=device)[0]
    seq = 15 if opts.smoke else 1023
    text = table(rows, opts.nproc * opts.batch * seq)
    model = "GPT(64, 32, 4, 2, 16)" if opts.smoke else "GPT-2 small (124M)"
    gpus = torch.cuda.get_device_name(0) if device == "cuda" else "CPU (gloo)"
    header = (
        f"FSDP2 ({opts.nproc} x {gpus}), {model}, batch {opts.batch} x {seq} tokens per rank, "
        f"median of {opts.steps} steps after {opts.warmup}; torch {torch.__version__}"
    )
    print(f"\n{header}\n\n{text}")
    if args["out"]:
        out = Path(args["out"])
        out.mkdir(parents=True, exist_ok=True)
        (out / "distributed.md").write_text(f"{header}\n\n{text}\n")
        for r in rows:
            if r.get("profile"):
                (out / f"distributed-profile-{r['mode']}.txt").write_text(r["profile"])
    return int(any("error" in r for r in rows))


if __name__ == "__main__":
    sys.exit(main())
