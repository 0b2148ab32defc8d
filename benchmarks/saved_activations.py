"""What the forward saves for the backward: bytes by kind, per block and setting.

For typical training blocks (HF GPT-2 and Llama decoder layers with dropout as
configured, a Linear-GELU-Linear MLP, a conv-BN-ReLU block), in f32 and under
bf16 autocast, this traces one step (forward, ``sum()``, backward) through
coil's AOTAutograd setup (``coil.frontend.capture.capture_training``) for each
partitioner setting of ``coil.frontend.partition`` and prints the saved
activations -- the backward's inputs other than incoming gradients and the
forward's own inputs (parameters, the batch) -- grouped by what made them:
matmul/conv/attention outputs, casts, dropout masks (bool), reduction
statistics, other pointwise results, views. No kernel runs (the captured
graphs run eagerly), so it runs anywhere:

    python benchmarks/saved_activations.py [--blocks gpt2 conv] [--settings min-cut budget=0.5]

The setting ``inductor`` is Inductor's partition of the same step (its
joint-graph passes and min-cut partitioner; its graphs recorded, not
compiled), for comparison.

The table goes to stdout and, with OUT set, ``$OUT/saved_activations.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from collections.abc import Callable

import torch

from coil.frontend.capture import TrainingGraphs, capture_training
from coil.frontend.partition import PARTITIONS, check, partition_function

aten = torch.ops.aten

_MATMUL = {
    "mm",
    "addmm",
    "bmm",
    "baddbmm",
    "convolution",
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_cudnn_attention",
}
_CASTS = {"_to_copy", "convert_element_type", "clone"}


def kind(node: torch.fx.Node | None, saved: torch.fx.Node) -> str:
    """What made a saved value, in the words of the table's columns."""
    val = saved.meta.get("val")
    if isinstance(val, torch.Tensor) and val.dtype == torch.bool:
        return "mask"
    if node is None or node.op != "call_function":
        return "other"
    target = node.target
    while getattr(target, "__name__", "") == "getitem" and node.args:
        node = node.args[0]
        target = node.target
    name = getattr(getattr(target, "_overloadpacket", target), "__name__", str(target))
    name = name.split(".")[-1]
    if name in _MATMUL:
        return "matmul"
    if name in _CASTS:
        return "cast"
    if isinstance(val, torch.Tensor) and node.args:
        inputs = [a for a in node.args if isinstance(a, torch.fx.Node)]
        biggest = max(
            (a.meta["val"].numel() for a in inputs if isinstance(a.meta.get("val"), torch.Tensor)),
            default=0,
        )
        if biggest >= 4 * max(val.numel(), 1):
            return "reduction"
    if name in (
        "view",
        "_unsafe_view",
        "permute",
        "transpose",
        "expand",
        "slice",
        "select",
        "t",
        "unsqueeze",
        "squeeze",
    ):
        return "view"
    return "pointwise"


KINDS = ("matmul", "cast", "mask", "reduction", "pointwise", "view", "other")


def _gpt2_block():
    """One HF GPT-2 layer (width 256, dropout 0.1 as configured) in GPT2Model."""
    import transformers

    cfg = transformers.GPT2Config(n_embd=256, n_head=4, n_layer=1, vocab_size=1000)
    model = transformers.GPT2Model(cfg)
    ids = torch.randint(0, 1000, (4, 128))

    class Stack(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids):
            return self.model(input_ids=ids).last_hidden_state

    return Stack(), (ids,)


def _llama_block():
    import transformers

    cfg = transformers.LlamaConfig(
        hidden_size=256, intermediate_size=704, num_attention_heads=4, num_key_value_heads=2,
        num_hidden_layers=1, vocab_size=1000,
    )  # fmt: skip
    model = transformers.LlamaModel(cfg)
    ids = torch.randint(0, 1000, (4, 128))

    class Stack(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids):
            return self.model(input_ids=ids).last_hidden_state

    return Stack(), (ids,)


def _mlp():
    m = torch.nn.Sequential(
        torch.nn.Linear(256, 1024), torch.nn.GELU(approximate="tanh"), torch.nn.Linear(1024, 256)
    )
    return m, (torch.randn(512, 256, requires_grad=True),)


def _conv_bn_relu():
    m = torch.nn.Sequential(
        torch.nn.Conv2d(64, 64, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(64),
        torch.nn.ReLU(),
        torch.nn.Conv2d(64, 64, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(64),
        torch.nn.ReLU(),
    )
    return m, (torch.randn(8, 64, 32, 32, requires_grad=True),)


BLOCKS: dict[str, Callable[[], tuple[torch.nn.Module, tuple]]] = {
    "gpt2": _gpt2_block,
    "llama": _llama_block,
    "mlp": _mlp,
    "conv": _conv_bn_relu,
}


def inductor_partition(module, inputs, autocast=None) -> list[TrainingGraphs]:
    """Inductor's forward and backward graphs of one step (``out.sum()``): its
    joint-graph passes and partitioner run, its compiler only records them."""
    import functools

    from torch._functorch.aot_autograd import make_boxed_func
    from torch._inductor.compile_fx import compile_fx

    graphs: dict[bool, list] = {False: [], True: []}

    def inner(gm, example_inputs, **kwargs):
        graphs[bool(kwargs.get("is_backward"))].append(gm)
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    backend = functools.partial(compile_fx, inner_compile=inner)
    compiled = torch.compile(module, backend=backend, fullgraph=True)
    device = next((x.device.type for x in inputs if isinstance(x, torch.Tensor)), "cpu")
    with torch.autocast(device, dtype=autocast or torch.bfloat16, enabled=autocast is not None):
        out = compiled(*inputs).sum()
    out.backward()
    torch._dynamo.reset()
    return [TrainingGraphs(f, b) for f, b in zip(graphs[False], graphs[True])]


def saved_by_kind(module, inputs, autocast, setting: str) -> tuple[dict[str, int], list[str]]:
    torch.manual_seed(0)
    if setting == "inductor":
        (graphs,) = inductor_partition(module.train(), inputs, autocast)
    else:
        (graphs,) = capture_training(
            module.train(), inputs, autocast=autocast, partition_fn=partition_function(setting)
        )
    totals: dict[str, int] = defaultdict(int)
    lines = []
    for node in graphs.saved_activations():
        val = node.meta.get("val")
        size = val.numel() * val.element_size() if isinstance(val, torch.Tensor) else 0
        k = kind(graphs.producer(node), node)
        totals[k] += size
        shape = tuple(val.shape) if isinstance(val, torch.Tensor) else ()
        dtype = str(val.dtype).removeprefix("torch.") if isinstance(val, torch.Tensor) else "sym"
        producer = graphs.producer(node)
        made = producer.target if producer is not None and producer.op == "call_function" else "-"
        lines.append(f"  {node.name:30s} {k:9s} {dtype:8s} {shape!s:22s} {size:>10d} B  {made}")
    return dict(totals), lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", nargs="*", default=list(BLOCKS), choices=list(BLOCKS))
    parser.add_argument(
        "--settings",
        nargs="*",
        default=["save-all", "min-cut", "aggressive", "budget=0.5", "inductor"],
        help=f"partition settings (coil.frontend.partition): {', '.join(PARTITIONS)}; "
        "inductor: Inductor's partition",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="list every saved value")
    args = parser.parse_args()
    for setting in args.settings:
        if setting == "inductor":
            continue
        try:
            check(setting)
        except ValueError as e:
            parser.error(str(e))
    header = "| block | dtype | setting | saved KB | " + " | ".join(KINDS) + " |"
    rows = [header, "|" + "---|" * (4 + len(KINDS))]
    for name in args.blocks:
        for autocast in (None, torch.bfloat16):
            for setting in args.settings:
                module, inputs = BLOCKS[name]()
                totals, lines = saved_by_kind(module, inputs, autocast, setting)
                dtype = "bf16 amp" if autocast else "f32"
                cells = " | ".join(f"{totals.get(k, 0) / 1024:.0f}" for k in KINDS)
                total = sum(totals.values()) / 1024
                rows.append(f"| {name} | {dtype} | {setting} | {total:.0f} | {cells} |")
                if args.verbose:
                    print(f"{name} {dtype} {setting}:")
                    print("\n".join(lines))
    table = "\n".join(rows)
    print(table)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "saved_activations.md"), "w") as f:
            f.write(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
