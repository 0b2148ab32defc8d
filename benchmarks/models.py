"""Real models on the GPU: eager, TorchInductor and coil in one process.

Models come from the libraries the GPU machine has (transformers, timm), built
from configs with random weights (no downloads). For each model, in one
process and on the same inputs:

1. correctness first: eager, Inductor and coil outputs against a float32
   eager reference (‖out − ref‖ / ‖ref‖); coil must stay within twice
   Inductor's error (or 1e-2), else the row says ``WRONG``;
2. first-call seconds (compile included) for Inductor and coil;
3. ms per call (``triton.testing.do_bench``, median) for eager, Inductor, coil;
4. peak memory of one call above what was allocated before it
   (``torch.cuda.max_memory_allocated``), for each.

Inference runs in bf16 under ``torch.no_grad()``; ``*_train`` cases time one
training step (forward, loss, backward) in f32 with dropout off.

Run: ``python benchmarks/models.py [names...]`` (default: all); the table is
printed last and written to ``$OUT/models.md`` when OUT is set. A model that
fails shows its error in its row; the exit code is 1 if any row is wrong or
failed.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass
class Model:
    name: str
    build: Callable[[], tuple[torch.nn.Module, tuple]]  # module (f32, cpu), inputs (cpu)
    train: bool = False


class _Main(torch.nn.Module):
    """Returns the model's main output tensor (logits / last hidden state)."""

    def __init__(self, model: torch.nn.Module, key: str | None = None):
        super().__init__()
        self.model = model
        self.key = key

    def forward(self, *args):
        out = self.model(*args)
        if isinstance(out, torch.Tensor):
            return out
        if self.key is not None:
            return getattr(out, self.key)
        return out[0]


class _TrainLoss(torch.nn.Module):
    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(ids, labels=ids).loss


def _ids(vocab: int, batch: int = 8, seq: int = 512) -> torch.Tensor:
    if SMOKE:
        batch, seq = 1, 16
    return torch.randint(0, vocab, (batch, seq))


def _layers(n: int) -> int:
    return 1 if SMOKE else n


def gpt2(layers: int = 12):
    import transformers

    cfg = transformers.GPT2Config(
        n_layer=_layers(layers), resid_pdrop=0, embd_pdrop=0, attn_pdrop=0
    )
    return _Main(transformers.GPT2LMHeadModel(cfg), "logits"), (_ids(cfg.vocab_size),)


def gpt2_train():
    import transformers

    cfg = transformers.GPT2Config(n_layer=_layers(4), resid_pdrop=0, embd_pdrop=0, attn_pdrop=0)
    return _TrainLoss(transformers.GPT2LMHeadModel(cfg)), (_ids(cfg.vocab_size),)


def bert():
    import transformers

    cfg = transformers.BertConfig(
        num_hidden_layers=_layers(12), hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0
    )
    return _Main(transformers.BertModel(cfg), "last_hidden_state"), (_ids(cfg.vocab_size),)


def llama():
    import transformers

    cfg = transformers.LlamaConfig(
        hidden_size=1024,
        intermediate_size=2816,
        num_hidden_layers=_layers(8),
        num_attention_heads=16,
        num_key_value_heads=4,
        vocab_size=32000,
        max_position_embeddings=1024,
    )
    return _Main(transformers.LlamaForCausalLM(cfg), "logits"), (_ids(cfg.vocab_size),)


class _Seq2Seq(torch.nn.Module):
    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids, decoder_ids):
        return self.model(input_ids=ids, decoder_input_ids=decoder_ids).last_hidden_state


def t5():
    import transformers

    cfg = transformers.T5Config(dropout_rate=0.0, num_layers=_layers(6))  # t5-small's sizes
    ids = _ids(cfg.vocab_size)
    return _Seq2Seq(transformers.T5Model(cfg)), (ids, ids[:, :128].clone())


def vit_hf():
    import transformers

    cfg = transformers.ViTConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return _Main(transformers.ViTModel(cfg), "last_hidden_state"), (torch.randn(32, 3, 224, 224),)


def _timm(name: str):
    def build():
        import timm

        return timm.create_model(name, pretrained=False), (torch.randn(32, 3, 224, 224),)

    return build


MODELS = {
    m.name: m
    for m in [
        Model("gpt2", gpt2),
        Model("bert", bert),
        Model("llama", llama),
        Model("t5", t5),
        Model("vit_hf", vit_hf),
        Model("resnet50", _timm("resnet50")),
        Model("convnext_tiny", _timm("convnext_tiny")),
        Model("vit_timm", _timm("vit_base_patch16_224")),
        Model("efficientnet_b0", _timm("efficientnet_b0")),
        Model("mobilenetv3", _timm("mobilenetv3_large_100")),
        Model("gpt2_train", gpt2_train, train=True),
    ]
}


DEVICE = "cuda"
SMOKE = False  # --smoke: tiny sizes on any device, to check the script itself


def _bench(fn: Callable[[], object]) -> float:
    if DEVICE != "cuda":
        fn()
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e3
    import triton.testing

    return triton.testing.do_bench(fn, warmup=100, rep=500, return_mode="median")


def _sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def _rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.double(), ref.double()
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))


def _peak_mb(fn: Callable[[], object]) -> float:
    if DEVICE != "cuda":
        return 0.0
    torch.cuda.synchronize()
    gc.collect()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del out
    return peak / 2**20


def _first_call(fn: Callable[[], object]) -> tuple[object, float]:
    _sync()
    t = time.perf_counter()
    out = fn()
    _sync()
    return out, time.perf_counter() - t


def run_inference(model: Model) -> dict:
    module, inputs = model.build()
    module.eval()
    module = module.to(DEVICE)
    inputs = tuple(x.to(DEVICE) for x in inputs)
    with torch.no_grad():
        ref = module(*inputs).float()
        m = module.to(torch.bfloat16)
        args = tuple(x.to(torch.bfloat16) if x.is_floating_point() else x for x in inputs)
        row: dict = {}
        runs = {"eager": m}
        torch._dynamo.reset()
        runs["inductor"] = torch.compile(m, backend="inductor")
        runs["coil"] = torch.compile(m, backend="coil")
        outs = {}
        for name, f in runs.items():
            outs[name], row[f"{name}_first_s"] = _first_call(lambda f=f: f(*args))
            row[f"{name}_err"] = _rel_err(outs[name], ref)
        del outs
        for name, f in runs.items():
            row[f"{name}_ms"] = _bench(lambda f=f: f(*args))
            row[f"{name}_peak_mb"] = _peak_mb(lambda f=f: f(*args))
    return row


def run_train(model: Model) -> dict:
    module, inputs = model.build()
    module.train()
    module = module.to(DEVICE)
    args = tuple(x.to(DEVICE) for x in inputs)
    params = [p for p in module.parameters() if p.requires_grad]

    def step(f):
        for p in params:
            p.grad = None
        loss = f(*args)
        loss.backward()
        return loss

    torch.manual_seed(0)
    ref_loss = step(module).detach().double()
    ref_grads = [p.grad.double().clone() for p in params]
    torch._dynamo.reset()
    runs = {"eager": module, "inductor": torch.compile(module), "coil": None}
    runs["coil"] = torch.compile(module, backend="coil")
    row: dict = {}
    for name, f in runs.items():
        loss, row[f"{name}_first_s"] = _first_call(lambda f=f: step(f))
        errs = [_rel_err(p.grad, g) for p, g in zip(params, ref_grads)]
        errs.append(abs(float(loss) - float(ref_loss)) / abs(float(ref_loss)))
        row[f"{name}_err"] = max(errs)
    for name, f in runs.items():
        row[f"{name}_ms"] = _bench(lambda f=f: step(f))
        row[f"{name}_peak_mb"] = _peak_mb(lambda f=f: step(f))
    return row


def _row(name: str, r: dict) -> str:
    if "error" in r:
        return f"| {name} | ERROR: {r['error']} |" + " |" * 9
    bad = r["coil_err"] > max(2 * r["inductor_err"], 1e-2) or r["coil_err"] != r["coil_err"]
    status = "WRONG " if bad else ""
    return (
        f"| {name} | {r['eager_ms']:.3f} | {r['inductor_ms']:.3f} | {r['coil_ms']:.3f} | "
        f"{status}{r['inductor_ms'] / r['coil_ms']:.2f}x | {r['eager_ms'] / r['coil_ms']:.2f}x | "
        f"{r['inductor_peak_mb']:.0f} / {r['coil_peak_mb']:.0f} | "
        f"{r['inductor_first_s']:.1f} / {r['coil_first_s']:.1f} | "
        f"{r['inductor_err']:.1e} / {r['coil_err']:.1e} |"
    )


HEADER = (
    "| model | eager ms | inductor ms | coil ms | coil speedup vs inductor | vs eager | "
    "peak MB inductor / coil | first call s inductor / coil | rel. error inductor / coil |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"models (default all): {', '.join(MODELS)}")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, any device")
    args = parser.parse_args()
    names = args.names or list(MODELS)
    global DEVICE, SMOKE
    if args.smoke:
        SMOKE, DEVICE = True, "cuda" if torch.cuda.is_available() else "cpu"
    elif not torch.cuda.is_available():
        print("models: no GPU; this benchmark times CUDA kernels (--smoke runs anywhere)")
        return 1
    import triton

    torch._dynamo.config.cache_size_limit = 64
    lines = [
        f"device: {torch.cuda.get_device_name() if DEVICE == 'cuda' else DEVICE}, "
        f"torch {torch.__version__}, "
        f"triton {triton.__version__}",
        "",
        HEADER,
    ]
    failed = False
    for name in names:
        model = MODELS[name]
        torch.manual_seed(0)
        t = time.perf_counter()
        try:
            r = run_train(model) if model.train else run_inference(model)
        except Exception as e:  # a failing model is a row, not a crash
            traceback.print_exc()
            r = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"}
        line = _row(name, r)
        failed |= "ERROR" in line or "WRONG" in line
        print(f"models: {name} done in {time.perf_counter() - t:.0f}s: {line}", flush=True)
        lines.append(line)
        torch._dynamo.reset()
        gc.collect()
        if DEVICE == "cuda":
            torch.cuda.empty_cache()
    table = "\n".join(lines)
    print(table)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "models.md"), "a") as f:
            f.write(table + "\n\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
