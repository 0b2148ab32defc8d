"""Compile time of the traced-sharding mode by depth, on the CPU (no GPU, one process).

``benchmarks/distributed.py``'s ``coil-traced`` compiles the whole forward
and loss of a sharded Llama (``shard_parameters``: every parameter gathered
at each use, gathered again in the backward) as one forward and one backward
graph, so its compile grows with the layers. This script measures how:
it starts torch's fake process group (``world`` ranks in one process: the
collectives trace as on NCCL and return without communicating), builds the
Llama 3.2 1B structure (grouped-query attention, SwiGLU, tied embeddings) at
the widths given, captures one training step's forward and backward graphs
under bf16 autocast as the backend receives them, and compiles each as the
GPU backend does -- import, every pass of the ``sharded`` pipeline, the final
verify, ``-t python`` -- without running a kernel or compiling one with
Triton. Times are CPU seconds of this process (``time.process_time``) per
stage, per graph, for each depth; the last column is the growth from the
first depth to the last divided by the growth of the layers (1.0: linear).

Run: ``python benchmarks/traced_compile.py --layers 2,4,8 [--width 256]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))


def llama(layers: int, width: int, seq: int) -> torch.nn.Module:
    from transformers import LlamaConfig

    from coil.examples.distributed import Llama

    config = LlamaConfig(
        vocab_size=8 * width,
        hidden_size=width,
        intermediate_size=4 * width,
        num_hidden_layers=layers,
        num_attention_heads=max(width // 64, 4),
        num_key_value_heads=max(width // 256, 1),
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        max_position_embeddings=seq,
    )
    torch.manual_seed(0)
    return Llama(config, seq)


def traced_graphs(layers: int, width: int, seq: int, recompute: bool) -> list[Any]:
    """The forward and backward graphs of one coil-traced step (fake process group)."""
    from torch.distributed.device_mesh import init_device_mesh

    from coil.examples.distributed import lm_loss, shard_parameters
    from coil.frontend.capture import capture_training

    model = llama(layers, width, seq)
    mesh = init_device_mesh("cpu", (torch.distributed.get_world_size(),))
    shard_parameters(model, mesh, torch.bfloat16, torch.float32, recompute=recompute)
    ids = torch.randint(0, 8 * width, (2, seq + 1))
    [graphs] = capture_training(
        lambda i: lm_loss(model, i), [ids], loss=lambda x: x, autocast=torch.bfloat16
    )
    return [("forward", graphs.forward), ("backward", graphs.backward)]


def stage_times(gm: torch.fx.GraphModule, pipeline: str) -> dict[str, float]:
    """CPU seconds of each stage of one graph's compile (a pass run twice is summed)."""
    from pass_times import time_stages

    inputs = [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]
    times: dict[str, float] = {}

    def add(stage: str, seconds: float) -> None:
        times[stage] = times.get(stage, 0.0) + seconds

    time_stages(gm, inputs, pipeline, add)
    times["total"] = sum(times.values())
    return times


def main(argv: list[str] | None = None) -> int:
    from torch.testing._internal.distributed.fake_pg import FakeStore

    from coil.pipeline import PIPELINES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default="2,4,8", help="depths, comma-separated")
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--world", type=int, default=4)
    parser.add_argument("--keep", action="store_true", help="coil-traced-keep (no re-gather)")
    parser.add_argument("--pipeline", default=PIPELINES["sharded"])
    parser.add_argument("--top", type=int, default=12, help="stages shown (slowest last depth)")
    opts = parser.parse_args(argv)
    torch.distributed.init_process_group("fake", rank=0, world_size=opts.world, store=FakeStore())
    depths = [int(x) for x in opts.layers.split(",")]
    results: dict[tuple[str, int], dict[str, float]] = {}
    for n in depths:
        start = time.process_time()
        graphs = traced_graphs(n, opts.width, opts.seq, not opts.keep)
        print(f"{n} layers: Dynamo and AOTAutograd {time.process_time() - start:.2f} s", flush=True)
        for kind, gm in graphs:
            nodes = len(gm.graph.nodes)
            results[kind, n] = stage_times(gm, opts.pipeline)
            t = results[kind, n]["total"]
            print(f"{n} layers {kind}: {nodes} FX nodes, {t:.2f} s", flush=True)
    growth = depths[-1] / depths[0]
    for kind in ("forward", "backward"):
        last = results[kind, depths[-1]]
        stages = sorted(last, key=last.get, reverse=True)[: opts.top + 1]
        print(f"\n{kind}:\n")
        print("| stage | " + " | ".join(f"{n} layers s" for n in depths) + " | growth/layers |")
        print("|---|" + "---|" * (len(depths) + 1))
        for stage in stages:
            cells = [results[kind, n].get(stage, 0.0) for n in depths]
            ratio = cells[-1] / cells[0] / growth if cells[0] > 0.005 else float("nan")
            print(f"| {stage} | " + " | ".join(f"{c:.3f}" for c in cells) + f" | {ratio:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
