"""Sharded data-parallel training on 2 and 4 GPUs: eager FSDP2, Inductor and coil.

One launch per world size starts one process per GPU itself (no torchrun:
``coil.examples.distributed.launch``, an ``mp.spawn`` with NCCL;
``NCCL_NVLS_ENABLE=0`` and ``TORCH_SYMM_MEM_DISABLE_MULTICAST=1`` in every
process). In those processes, for each model and mode in turn, every rank
builds the model from one seed, shards it, and trains it with AdamW under
``torch.autocast`` (bf16; FSDP2's ``MixedPrecisionPolicy`` all-gathers bf16
parameters and reduce-scatters fp32 gradients, and the traced modes do the
same) on batches that differ by data-parallel rank. Models
(``--models``):

* ``llama1b``: a Llama 3.2 1B-shaped model from a ``transformers.LlamaConfig``
  (vocab 128256, width 2048, MLP 8192, 32 heads, 8 key/value heads, tied
  embeddings; ``coil.examples.distributed.Llama``), ``--layers`` of its 16
  layers (default all), ``--seq`` tokens;
* ``gpt2-medium``: GPT-2 medium (``GPT(50257, 1024, 16, 24, 1024)``, 355M).

Modes (``--modes``):

* ``eager``: FSDP2 (``fully_shard`` on every block, then the root);
* ``inductor``: every block ``torch.compile``d, then FSDP2 (as torchtitan does);
* ``coil``: the same with ``backend="coil"`` (FSDP2's collectives run eagerly
  in its hooks in both);
* ``coil-traced``: ``shard_parameters`` (SimpleFSDP: parameters as DTensor
  shards gathered at each use, gathered again in the backward as FSDP2
  does), the whole forward and loss compiled by coil, so the all-gathers and
  reduce-scatters are ops of coil's graphs (bucketed and prefetched one
  bucket ahead: ``--traced-pipeline``, default ``coil pipeline sharded``'s);
* ``coil-traced-keep``: the same, the forward's gathered parameters kept for
  the backward (no second all-gather; ZeRO-2's memory: the bf16 model stays
  gathered from the forward to the backward);
* ``inductor-traced``: the same under Inductor (not in the default list);
* ``fsdp-tp`` / ``fsdp-tp-coil``: 4 GPUs as 2 x 2, tensor parallel (q/k/v and
  the MLP's input projections by columns, the output projections by rows)
  inside pairs, FSDP2 across them; eager, and with the blocks compiled by coil.
  Each data-parallel rank takes the batches of two ranks of the other modes,
  so every mode sees the same global batches.

Correctness first: the first ``CHECK_STEPS`` steps' losses (averaged over the
ranks) and the first step's gradient norm are compared with eager FSDP2's
before any timing (``check`` column). Then ``--steps`` steps are timed
together after ``--warmup`` (no host synchronization between them), and two
more run under torch.profiler on rank 0, whose trace gives: NCCL kernel time
per step, the fraction of it overlapped with compute kernels (the union of
NCCL kernel intervals intersected with the union of the other kernels'
intervals), whether the NCCL kernels ran on streams of their own, and the host
synchronizations (``cuda*Synchronize``, blocking memcpys) inside the steps.

``--budget SECONDS`` bounds the whole run: a mode is skipped (a row says so)
when fewer seconds are left than it is expected to take (30 s uncompiled, 90
s with compiled blocks, 90 s compiled whole (the 16-layer 1B model took 50-55
s on four H200s), or what the last mode of its
kind took), and a world size when fewer than a minute is left.
Rows are written as they finish, so a run that is stopped still leaves its
table: ``$OUT/distributed.md`` (markdown) and ``$OUT/distributed.csv``, the
profiles' traces as ``$OUT/distributed-trace-*.json.gz``.

    python benchmarks/distributed.py                 # 4 then 2 GPUs, both models
    python benchmarks/distributed.py --worlds 4 --models llama1b --layers 8 --budget 420
    python benchmarks/distributed.py --smoke         # tiny models, CPU processes (gloo)
"""

from __future__ import annotations

import argparse
import csv
import gc
import gzip
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from coil.examples.distributed import GPT, Llama, launch, shard_parameters
from coil.pipeline import SHARDED_COLLECTIVES

MODES = ("eager", "inductor", "coil-traced-keep", "coil-traced", "coil", "fsdp-tp", "fsdp-tp-coil")
"""The default modes, in the order they run (the most wanted first: the budget
may cut the list)."""
ALL_MODES = (*MODES, "inductor-traced")
TRACED_MODES = ("coil-traced", "coil-traced-keep", "inductor-traced")
TP_MODES = ("fsdp-tp", "fsdp-tp-coil")
CHECK_STEPS = 3
"""Steps whose losses (and the first one's gradient norm) are compared with eager's."""
LOSS_RTOL = 5e-3
"""bf16 autocast: the compiled modes' losses stay within this of eager's."""
GRAD_RTOL = 3e-2
TRACED_PIPELINE = SHARDED_COLLECTIVES
"""What replaces ``aten-reorder-collectives`` in coil's pipeline for the traced mode."""

COLUMNS = (
    "model",
    "world",
    "mode",
    "status",
    "check",
    "first_s",
    "step_ms",
    "tokens_s",
    "vs_eager",
    "vs_inductor",
    "peak_gib",
    "comm_ms",
    "overlap",
    "exposed_ms",
    "comm_streams_apart",
    "host_syncs",
    "loss0",
    "loss_err",
    "grad_err",
    "note",
)


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------


def llama_config(layers: int | None, smoke: bool) -> Any:
    from transformers import LlamaConfig

    if smoke:
        shape = dict(
            vocab_size=128,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=layers or 2,
            num_attention_heads=4,
            num_key_value_heads=2,
        )
    else:  # Llama 3.2 1B
        shape = dict(
            vocab_size=128256,
            hidden_size=2048,
            intermediate_size=8192,
            num_hidden_layers=layers or 16,
            num_attention_heads=32,
            num_key_value_heads=8,
        )
    return LlamaConfig(
        **shape, rms_norm_eps=1e-5, tie_word_embeddings=True, max_position_embeddings=8192
    )


def model_spec(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """What the table says of a model: its vocabulary, sequence length, layers."""
    smoke = args["smoke"]
    if name == "llama1b":
        config = llama_config(args["layers"], smoke)
        seq = args["seq"] or (16 if smoke else 2048)
        return {"vocab": config.vocab_size, "seq": seq, "layers": config.num_hidden_layers}
    if name == "gpt2-medium":
        layers = args["layers"] or (2 if smoke else 24)
        seq = min(args["seq"] or 1024, 1024) if not smoke else 16
        return {"vocab": 64 if smoke else 50257, "seq": seq, "layers": layers}
    raise SystemExit(f"distributed.py: unknown model '{name}' (llama1b, gpt2-medium)")


def build_model(name: str, args: dict[str, Any], device: str) -> torch.nn.Module:
    spec = model_spec(name, args)
    torch.manual_seed(0)
    with torch.device(device):
        if name == "llama1b":
            return Llama(llama_config(args["layers"], args["smoke"]), spec["seq"])
        if args["smoke"]:
            return GPT(64, 32, 4, spec["layers"], spec["seq"])
        return GPT(50257, 1024, 16, spec["layers"], 1024)


def tp_plan(model: torch.nn.Module) -> dict[str, Any]:
    """Megatron-style: input projections by columns, output projections by rows."""
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    if isinstance(model, Llama):
        cols, rows = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"), ("o_proj", "down_proj")
    else:
        cols, rows = ("wq", "wk", "wv", "fc"), ("wo", "proj")
    return {
        **{name: ColwiseParallel() for name in cols},
        **{name: RowwiseParallel() for name in rows},
    }


# --------------------------------------------------------------------------
# One mode
# --------------------------------------------------------------------------


def coil_options(mode: str, args: dict[str, Any]) -> dict[str, Any]:
    if not mode.startswith("coil-traced") or not args["traced_pipeline"]:
        return {}
    from coil.pipeline import PIPELINES

    default = PIPELINES["default"]
    return {"pipeline": default.replace("aten-reorder-collectives", args["traced_pipeline"], 1)}


def setup(mode: str, name: str, rank: int, world: int, device: str, args: dict[str, Any]):
    """The model of ``mode``, sharded (and compiled), and the function that
    computes the loss of one batch. Returns (model, loss_fn, dp_rank, dp_size)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    from coil.examples.distributed import lm_loss

    amp = device == "cuda"
    model = build_model(name, args, device)
    shard: dict[str, Any] = {}
    if amp:
        shard["mp_policy"] = MixedPrecisionPolicy(
            param_dtype=torch.bfloat16, reduce_dtype=torch.float32
        )
    dp_rank, dp_size = rank, world
    if mode in TP_MODES:
        from torch.distributed.tensor.parallel import parallelize_module

        mesh = init_device_mesh(device, (world // 2, 2), mesh_dim_names=("dp", "tp"))
        dp_rank, dp_size = mesh.get_local_rank("dp"), world // 2
        plan = tp_plan(model)
        for i, block in enumerate(model.blocks):
            parallelize_module(block, mesh["tp"], plan)
            if mode == "fsdp-tp-coil":
                block = torch.compile(block, backend="coil")
                model.blocks[i] = block
            fully_shard(block, mesh=mesh["dp"], **shard)
        fully_shard(model, mesh=mesh["dp"], **shard)
    elif mode in ("eager", "inductor", "coil"):
        for i, block in enumerate(model.blocks):
            if mode != "eager":
                block = torch.compile(block, backend=mode)
                model.blocks[i] = block
            fully_shard(block, **shard)
        fully_shard(model, **shard)
    elif mode in TRACED_MODES:
        mesh = init_device_mesh(device, (world,))
        dtypes = (torch.bfloat16, torch.float32) if amp else (None, None)
        shard_parameters(model, mesh, *dtypes, recompute=mode != "coil-traced-keep")
    else:
        raise SystemExit(f"distributed.py: unknown mode '{mode}' ({', '.join(ALL_MODES)})")

    def loss_fn(ids: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device, torch.bfloat16, enabled=amp):
            return lm_loss(model, ids)

    if mode in TRACED_MODES:
        backend = mode.split("-")[0]
        options = coil_options(mode, args)
        loss_fn = torch.compile(
            loss_fn, backend=backend, **({"options": options} if options else {})
        )
    return model, loss_fn, dp_rank, dp_size


def batches(
    name: str, args: dict[str, Any], dp_rank: int, dp_size: int, world: int, n: int, device: str
) -> list[torch.Tensor]:
    """The token ids of ``n`` steps on this rank, made on the device before the
    steps run. The global batch of a step is the same for every mode: under
    tensor parallelism a data-parallel rank takes the batches of ``world //
    dp_size`` ranks of the other modes."""
    from coil.examples.distributed import batch

    spec = model_spec(name, args)
    per = world // dp_size
    return [
        torch.cat(
            [
                batch(k, dp_rank * per + j, spec["vocab"], spec["seq"], "cpu", args["batch"])
                for j in range(per)
            ]
        ).to(device)
        for k in range(n)
    ]


def grad_norm(model: torch.nn.Module) -> float:
    """The global gradient norm (DTensor gradients reduced over their meshes)."""
    total = 0.0
    for p in model.parameters():
        if p.grad is None:
            continue
        s = p.grad.float().pow(2).sum()
        if hasattr(s, "full_tensor"):
            s = s.full_tensor()
        total += float(s)
    return math.sqrt(total)


def global_mean(x: torch.Tensor) -> float:
    import torch.distributed as dist

    t = x.detach().float().clone()
    dist.all_reduce(t)
    return float(t) / dist.get_world_size()


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def run_mode(
    mode: str, name: str, rank: int, world: int, device: str, args: dict[str, Any], ref
) -> dict[str, Any]:
    model, loss_fn, dp_rank, dp_size = setup(mode, name, rank, world, device, args)
    # foreach: one multi-tensor kernel per op over the (DTensor) shards, one
    # parameter group per device mesh (under FSDP2 + TP the tensor-parallel
    # weights live on the 2-D mesh, the rest on the data-parallel one, and a
    # multi-tensor op over DTensors takes one mesh).
    groups: dict[Any, list[torch.nn.Parameter]] = {}
    for p in model.parameters():
        groups.setdefault(getattr(p, "device_mesh", None), []).append(p)
    opt = torch.optim.AdamW(
        [{"params": ps} for ps in groups.values()], lr=3e-4, weight_decay=0.1, foreach=True
    )
    warmup, steps, profiled = max(args["warmup"], CHECK_STEPS), args["steps"], 2
    data = batches(name, args, dp_rank, dp_size, world, warmup + steps + profiled, device)

    def step(k: int, check: bool = False):
        loss = loss_fn(data[k])
        loss.backward()
        norm = grad_norm(model) if check else None
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss, norm

    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    loss, norm = step(0, check=True)
    sync(device)
    first = time.perf_counter() - start
    losses = [global_mean(loss)]
    for k in range(1, CHECK_STEPS):
        losses.append(global_mean(step(k)[0]))
    row: dict[str, Any] = {"first_s": first, "loss0": losses[0], "losses": losses, "norm": norm}
    if ref is not None:
        row["loss_err"] = max(abs(a - b) / abs(b) for a, b in zip(losses, ref["losses"]))
        row["grad_err"] = abs(norm - ref["norm"]) / ref["norm"]
        ok = row["loss_err"] <= LOSS_RTOL and row["grad_err"] <= GRAD_RTOL
        row["check"] = "ok" if ok and all(map(math.isfinite, losses)) else "MISMATCH"
    elif mode == "eager":
        row["check"] = "reference"
    for k in range(CHECK_STEPS, warmup):
        step(k)
    sync(device)
    start = time.perf_counter()
    for k in range(warmup, warmup + steps):
        step(k)
    sync(device)
    row["step_ms"] = (time.perf_counter() - start) / steps * 1e3
    peak = torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else float("nan")
    row["peak_gib"] = max_over_ranks(peak, device)
    first_profiled = warmup + steps
    row.update(
        profile_steps(
            step,
            range(first_profiled, first_profiled + profiled),
            rank,
            device,
            args,
            f"{name}-{world}-{mode}",
        )
    )
    return row


def max_over_ranks(value: float, device: str) -> float:
    import torch.distributed as dist

    if math.isnan(value):
        return value
    t = torch.tensor([value], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t)


# --------------------------------------------------------------------------
# The profile
# --------------------------------------------------------------------------


def profile_steps(
    step, ks, rank: int, device: str, args: dict[str, Any], tag: str
) -> dict[str, Any]:
    """Run steps ``ks`` (every rank: the collectives need them all), rank 0
    under torch.profiler; what its trace says (see :func:`trace_stats`)."""
    from torch.profiler import ProfilerActivity, profile, record_function

    if rank != 0:
        for k in ks:
            step(k)
        sync(device)
        return {}
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        for k in ks:
            with record_function("coil_step"):
                step(k)
        sync(device)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "trace.json")
        prof.export_chrome_trace(str(path))
        trace = json.loads(path.read_text())
        if args["out"] and device == "cuda":
            target = Path(args["out"], f"distributed-trace-{tag}.json.gz")
            with path.open("rb") as src, gzip.open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
    return trace_stats(trace, len(ks))


def union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def measure(intervals: list[tuple[float, float]]) -> float:
    return sum(b - a for a, b in intervals)


def intersect(xs: list[tuple[float, float]], ys: list[tuple[float, float]]) -> float:
    """The length of the intersection of two unions of disjoint sorted intervals."""
    total, i, j = 0.0, 0, 0
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        total += max(0.0, b - a)
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return total


SYNC_CALLS = (
    "cudaStreamSynchronize",
    "cudaDeviceSynchronize",
    "cudaEventSynchronize",
    "cudaMemcpy",
)


def trace_stats(trace: dict[str, Any], steps: int) -> dict[str, Any]:
    """From a chrome trace of ``steps`` steps: NCCL kernel ms per step, the
    fraction of that time some compute kernel runs too, the NCCL time no
    compute hides (ms per step), whether NCCL kernels and compute kernels ran
    on disjoint streams, and the host synchronizations inside the steps
    (``cuda*Synchronize`` and blocking ``cudaMemcpy`` calls within the
    ``coil_step`` ranges)."""
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    comm = [e for e in kernels if "nccl" in e["name"].lower()]
    compute = [e for e in kernels if "nccl" not in e["name"].lower()]
    spans = [
        (e["ts"], e["ts"] + e["dur"])
        for e in events
        if e.get("cat") == "user_annotation" and e["name"] == "coil_step"
    ]
    syncs = sum(
        1
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
        and e["name"] in SYNC_CALLS
        and any(a <= e["ts"] <= b for a, b in spans)
    )
    stats: dict[str, Any] = {"host_syncs": syncs / steps}
    if not comm:
        return stats
    c = union([(e["ts"], e["ts"] + e["dur"]) for e in comm])
    k = union([(e["ts"], e["ts"] + e["dur"]) for e in compute])
    total = measure(c)
    hidden = intersect(c, k)
    comm_streams = {e.get("args", {}).get("stream") for e in comm}
    compute_streams = {e.get("args", {}).get("stream") for e in compute}
    stats.update(
        comm_ms=total / 1e3 / steps,
        overlap=hidden / total if total else float("nan"),
        exposed_ms=(total - hidden) / 1e3 / steps,
        comm_streams_apart="yes" if not comm_streams & compute_streams else "no",
    )
    return stats


# --------------------------------------------------------------------------
# One launch: every model and mode of one world size
# --------------------------------------------------------------------------


def bench(rank: int, world: int, device: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    import torch.distributed as dist

    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    rows: list[dict[str, Any]] = []
    # Seconds a mode is expected to take, by kind (uncompiled, blocks compiled,
    # the whole model compiled), refined as modes of the kind finish.
    expected = {"eager": 30.0, "blocks": 90.0, "traced": 90.0}
    for name in args["models"]:
        ref = None
        for mode in args["modes"]:
            row: dict[str, Any] = {"model": name, "world": world, "mode": mode}
            if mode in TP_MODES and world != 4:
                continue
            left = args["deadline"] - time.time()
            kind = kind_of(mode)
            need = expected[kind]
            go = torch.tensor([1.0 if left > need else 0.0], device=device)
            dist.broadcast(go, 0)  # every rank skips the same modes
            if not go.item():
                row.update(
                    status="skipped", note=f"budget: {left:.0f} s left, ~{need:.0f} s needed"
                )
            else:
                start = time.time()
                try:
                    row.update(run_mode(mode, name, rank, world, device, args, ref))
                    row["status"] = "ok"
                except Exception as e:  # a failing mode is a row, not a lost run
                    message = " ".join(str(e).split())[:160]
                    row.update(status="failed", note=f"{type(e).__name__}: {message}")
                took = time.time() - start
                expected[kind] = max(took, expected[kind] if row["status"] != "ok" else 0.0)
                if mode == "eager" and row["status"] == "ok":
                    ref = {"losses": row["losses"], "norm": row["norm"]}
            gc.collect()  # the mode's model and optimizer are gone: free their memory
            torch._dynamo.reset()
            if device == "cuda":
                torch.cuda.empty_cache()
            rows.append(row)
            if rank == 0:
                print(f"[{world} ranks] {name} {mode}: {brief(row)}", flush=True)
                record(row, args)
    return rows


def kind_of(mode: str) -> str:
    if mode in TRACED_MODES:
        return "traced"
    return "eager" if mode in ("eager", "fsdp-tp") else "blocks"


def brief(row: dict[str, Any]) -> str:
    keep = ("status", "check", "first_s", "step_ms", "peak_gib", "overlap", "note")
    return ", ".join(f"{k}={fmt(row[k])}" for k in keep if k in row)


def fmt(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------


def record(row: dict[str, Any], args: dict[str, Any]) -> None:
    """Append ``row`` to the run's rows and rewrite the table (rank 0)."""
    if not args["out"]:
        return
    out = Path(args["out"])
    with (out / "distributed.jsonl").open("a") as f:
        f.write(json.dumps({k: v for k, v in row.items() if k in COLUMNS}) + "\n")
    write_tables(args)


def load_rows(args: dict[str, Any]) -> list[dict[str, Any]]:
    path = Path(args["out"], "distributed.jsonl")
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def with_ratios(rows: list[dict[str, Any]], args: dict[str, Any]) -> list[dict[str, Any]]:
    for r in rows:
        spec = model_spec(r["model"], args)
        if r.get("status") != "ok":
            continue
        r["tokens_s"] = r["world"] * args["batch"] * spec["seq"] / (r["step_ms"] / 1e3)
        for base in ("eager", "inductor"):
            other = next(
                (
                    o
                    for o in rows
                    if o["model"] == r["model"]
                    and o["world"] == r["world"]
                    and o["mode"] == base
                    and o.get("status") == "ok"
                ),
                None,
            )
            if other:
                r[f"vs_{base}"] = other["step_ms"] / r["step_ms"]
    return rows


def cell(r: dict[str, Any], key: str) -> str:
    v = r.get(key)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    formats = {
        "first_s": "{:.1f}",
        "step_ms": "{:.1f}",
        "tokens_s": "{:,.0f}",
        "vs_eager": "{:.2f}x",
        "vs_inductor": "{:.2f}x",
        "peak_gib": "{:.2f}",
        "comm_ms": "{:.1f}",
        "overlap": "{:.0%}",
        "exposed_ms": "{:.1f}",
        "host_syncs": "{:.0f}",
        "loss0": "{:.4f}",
        "loss_err": "{:.1e}",
        "grad_err": "{:.1e}",
    }
    return formats[key].format(v) if key in formats else str(v)


def header(args: dict[str, Any]) -> str:
    gpus = args["device_name"]
    precision = "fp32" if args["smoke"] else "bf16 autocast (FSDP2 MixedPrecisionPolicy bf16/fp32)"
    lines = [
        f"Sharded data-parallel training, {gpus}; torch {torch.__version__}; "
        f"AdamW, {precision}; "
        f"batch {args['batch']} sequences per rank; {args['warmup']} warm-up steps "
        f"({CHECK_STEPS} checked against eager FSDP2: losses within {LOSS_RTOL:g}, first "
        f"gradient norm within {GRAD_RTOL:g}), then {args['steps']} timed together; "
        "overlap and host syncs from a profile of 2 more steps on rank 0.",
        "",
    ]
    for name in args["models"]:
        spec = model_spec(name, args)
        full = {"llama1b": 16, "gpt2-medium": 24}[name]
        cut = "" if spec["layers"] == full or args["smoke"] else f" (of {full}, to fit the budget)"
        lines.append(f"* {name}: {spec['layers']} layers{cut}, {spec['seq']} tokens a sequence")
    if args["traced_pipeline"]:
        lines.append(
            f"* coil-traced: `{args['traced_pipeline']}` in place of `aten-reorder-collectives`"
        )
    return "\n".join(lines)


def write_tables(args: dict[str, Any]) -> str:
    rows = with_ratios(load_rows(args), args)
    shown = [c for c in COLUMNS if c not in ("note",)] + ["note"]
    lines = ["| " + " | ".join(shown) + " |", "|" + "---|" * len(shown)]
    for r in rows:
        lines.append("| " + " | ".join(cell(r, c) for c in shown) + " |")
    text = f"{header(args)}\n\n" + "\n".join(lines) + "\n"
    if args["out"]:
        out = Path(args["out"])
        (out / "distributed.md").write_text(text)
        with (out / "distributed.csv").open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", default="4,2", help="world sizes, in the order they run")
    parser.add_argument("--models", default="llama1b,gpt2-medium")
    parser.add_argument("--modes", default=",".join(MODES), help=f"of {', '.join(ALL_MODES)}")
    parser.add_argument("--layers", type=int, default=0, help="layers of every model (0: all)")
    parser.add_argument("--seq", type=int, default=0, help="tokens a sequence (0: the model's)")
    parser.add_argument("--batch", type=int, default=2, help="sequences per rank and step")
    parser.add_argument("--warmup", type=int, default=CHECK_STEPS)
    parser.add_argument("--steps", type=int, default=0, help="timed steps (0: 5, smoke: 1)")
    parser.add_argument(
        "--budget", type=float, default=0, help="seconds for the whole run (0: none)"
    )
    parser.add_argument("--timeout", type=float, default=180, help="seconds a collective may wait")
    parser.add_argument(
        "--traced-pipeline",
        default=TRACED_PIPELINE,
        help="passes replacing aten-reorder-collectives for coil-traced ('' keeps it)",
    )
    parser.add_argument("--out", default=os.environ.get("OUT"), help="where the table goes ($OUT)")
    parser.add_argument("--smoke", action="store_true", help="tiny models on CPU processes (gloo)")
    opts = parser.parse_args(argv)
    start = time.time()
    opts.out = opts.out or tempfile.mkdtemp(prefix="distributed-")
    device = "cpu" if opts.smoke else "cuda"
    worlds = [int(w) for w in opts.worlds.split(",") if w]
    modes = [m for m in opts.modes.split(",") if m]
    for m in modes:
        if m not in ALL_MODES:
            parser.error(f"unknown mode '{m}' (of {', '.join(ALL_MODES)})")
    if device == "cuda":
        have = torch.cuda.device_count()
        if have < max(worlds):
            print(f"distributed.py: needs {max(worlds)} GPUs, found {have}", file=sys.stderr)
            worlds = [w for w in worlds if w <= have]
            if not worlds:
                return 1
    args = {
        "smoke": opts.smoke,
        "models": [m for m in opts.models.split(",") if m],
        "modes": modes,
        "layers": opts.layers,
        "seq": opts.seq,
        "batch": opts.batch,
        "warmup": max(opts.warmup, CHECK_STEPS),
        "steps": opts.steps or (1 if opts.smoke else 5),
        "traced_pipeline": opts.traced_pipeline,
        "out": opts.out,
        "deadline": start + opts.budget if opts.budget else float("inf"),
        "device_name": (
            f"{torch.cuda.get_device_name(0)} (NCCL)" if device == "cuda" else "CPU (gloo)"
        ),
    }
    for name in args["models"]:
        model_spec(name, args)  # unknown names fail here, not in the processes
    if args["out"]:
        Path(args["out"]).mkdir(parents=True, exist_ok=True)
        Path(args["out"], "distributed.jsonl").unlink(missing_ok=True)
    failed = False
    for world in worlds:
        left = args["deadline"] - time.time()
        if left < 60:
            print(
                f"distributed.py: budget: {left:.0f} s left, world size {world} skipped", flush=True
            )
            continue
        try:
            launch(bench, world, args, device=device, timeout_s=opts.timeout)
        except Exception as e:  # a rank died: the rows written so far stay
            print(f"distributed.py: world size {world} failed: {e}", file=sys.stderr, flush=True)
            failed = True
    if args["out"]:
        text = write_tables(args)
        print("\n" + text)
        failed |= any(
            r.get("status") == "failed" or r.get("check") == "MISMATCH" for r in load_rows(args)
        )
    return int(failed)


if __name__ == "__main__":
    sys.exit(main())
