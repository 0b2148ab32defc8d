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

Inference runs in bf16 under ``torch.no_grad()``. Training rows time one step
(forward, loss, backward; ``train_step.py``, shared with ``sweep.py``):
``<model>_train`` under bf16 autocast (around forward and loss: how these
GPUs are trained on), ``<model>_train_f32`` in f32; gradients are checked
against an f32 eager reference with dropout off, then the step is timed with
dropout as the config sets it (GPT-2 and BERT: 0.1), same weights.
``adamw_step`` times a compiled ``AdamW.step()`` over GPT-2 small's 124M
parameters (foreach, a tensor learning rate; eager runs its foreach step),
parameters checked after one step.

Run: ``python benchmarks/models.py [names...]`` (default: all); the table is
printed last and written to ``$OUT/models.md`` when OUT is set. A model that
fails shows its error in its row; the exit code is 1 if any row is wrong or
failed. ``--smoke`` runs tiny sizes on any device (on the CPU the kernels run
under Triton's interpreter); ``--backends eager,coil`` leaves Inductor out.
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
    # module (f32, cpu), inputs (cpu); a training model's build takes ``dropout``
    # (default: as its config sets it) and its module returns the scalar loss
    build: Callable[..., tuple[torch.nn.Module, tuple]]
    train: bool = False
    amp: bool = False  # a training step under bf16 autocast (forward and loss)
    optimizer: bool = False  # a compiled AdamW step over the module's parameters


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
    """A transformers model's language-modelling loss (labels: the input ids)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids, labels=ids).loss


class _ClassifierLoss(torch.nn.Module):
    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x, target):
        return torch.nn.functional.cross_entropy(self.model(x), target)


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


_SMOKE_SIZES = {
    "GPT2Config": {"n_embd": 64, "n_head": 4, "vocab_size": 1000},
    "BertConfig": {
        "hidden_size": 64,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "vocab_size": 1000,
    },
    "LlamaConfig": {
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 128,
        "vocab_size": 1000,
    },
}


def _hf_config(cls_name: str, dropout: bool = True, **kwargs):
    """A transformers config (``--smoke``: width 64, a 1000-word vocabulary);
    ``dropout=False`` sets every dropout probability to 0."""
    import transformers

    if SMOKE:
        kwargs.update(_SMOKE_SIZES[cls_name])
    config = getattr(transformers, cls_name)(**kwargs)
    if not dropout:
        for key, value in list(vars(config).items()):
            if ("dropout" in key or key.endswith("_pdrop") or "drop_prob" in key) and isinstance(
                value, float
            ):
                setattr(config, key, 0.0)
    return config


def gpt2_train(dropout: bool = True):
    """HF GPT-2, 4 layers, 8 x 512 tokens, dropout 0.1 as configured."""
    import transformers

    cfg = _hf_config("GPT2Config", dropout, n_layer=_layers(4))
    return _TrainLoss(transformers.GPT2LMHeadModel(cfg)), (_ids(cfg.vocab_size),)


def bert_train(dropout: bool = True):
    """HF BERT with its MLM head, 4 layers, 8 x 256 tokens, dropout 0.1 as configured."""
    import transformers

    cfg = _hf_config("BertConfig", dropout, num_hidden_layers=_layers(4))
    return _TrainLoss(transformers.BertForMaskedLM(cfg)), (_ids(cfg.vocab_size, 8, 256),)


def llama_train(dropout: bool = True):
    """A Llama-style decoder (RMSNorm, SwiGLU, rotary embeddings, grouped-query
    attention): 4 layers of width 1024, 4 x 512 tokens; no dropout."""
    import transformers

    cfg = _hf_config(
        "LlamaConfig",
        dropout,
        hidden_size=1024,
        intermediate_size=2816,
        num_hidden_layers=_layers(4),
        num_attention_heads=16,
        num_key_value_heads=4,
        vocab_size=32000,
        max_position_embeddings=1024,
    )
    return _TrainLoss(transformers.LlamaForCausalLM(cfg)), (_ids(cfg.vocab_size, 4, 512),)


def _timm_train(name: str, batch: int):
    def build(dropout: bool = True):  # timm's models have no dropout by default
        import timm

        size, n = (32, 2) if SMOKE else (224, batch)
        kwargs = {"img_size": size} if "vit" in name else {}
        model = timm.create_model(name, pretrained=False, **kwargs)
        return _ClassifierLoss(model), (torch.randn(n, 3, size, size), torch.randint(0, 1000, (n,)))

    return build


def adamw_model():
    """GPT-2 small (124M parameters; ``--smoke``: a tiny one), whose parameters
    the optimizer rows step."""
    import transformers

    return transformers.GPT2LMHeadModel(_hf_config("GPT2Config", n_layer=_layers(12))), ()


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


TRAINING = {
    "gpt2": gpt2_train,
    "bert": bert_train,
    "llama": llama_train,
    "vit": _timm_train("vit_small_patch16_224", 32),
    "resnet50": _timm_train("resnet50", 32),
    "convnext": _timm_train("convnext_tiny", 16),
}

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
        *(Model(f"{k}_train", b, train=True, amp=True) for k, b in TRAINING.items()),
        *(Model(f"{k}_train_f32", b, train=True) for k, b in TRAINING.items()),
        Model("adamw_step", adamw_model, optimizer=True),
    ]
}


DEVICE = "cuda"
SMOKE = False  # --smoke: tiny sizes on any device, to check the script itself
BACKENDS = ("eager", "inductor", "coil")  # --backends
# --coil-variants "pdl=true,cudagraphs=true+pdl=true": coil again with each of
# these backend options ("+" joins options of one variant), timed in the same
# process as the others (an A/B without the drift between processes);
# reported after the row as `coil[pdl=true] ms`.
OPTION_VARIANTS: dict[str, dict] = {}


def _options(text: str) -> dict:
    """``"cudagraphs=true+pdl=true"`` -> ``{"cudagraphs": True, "pdl": True}``."""
    options: dict = {}
    for item in text.split("+"):
        key, _, value = item.partition("=")
        low = value.strip().lower()
        options[key.strip()] = {"true": True, "false": False}.get(low, value.strip())
    return options


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
        runs = _variants(m)
        outs = {}
        for name, f in runs.items():
            outs[name], row[f"{name}_first_s"] = _first_call(lambda f=f: f(*args))
            row[f"{name}_err"] = _rel_err(outs[name], ref)
        del outs
        for name, f in runs.items():
            row[f"{name}_ms"] = _bench(lambda f=f: f(*args))
            row[f"{name}_peak_mb"] = _peak_mb(lambda f=f: f(*args))
    return row


def _variants(module: torch.nn.Module) -> dict:
    torch._dynamo.reset()
    runs = {
        "eager": module,
        "inductor": lambda: torch.compile(module, backend="inductor"),
        "coil": lambda: torch.compile(module, backend="coil"),
    }
    runs = {k: (v if k == "eager" else v()) for k, v in runs.items() if k in BACKENDS}
    for name, options in OPTION_VARIANTS.items():
        runs[name] = torch.compile(module, backend="coil", options=options)
    return runs


def _time(runs: dict, step: Callable, row: dict) -> None:
    for name, f in runs.items():
        row[f"{name}_ms"] = _bench(lambda f=f: step(f))
        row[f"{name}_peak_mb"] = _peak_mb(lambda f=f: step(f))


def run_train(model: Model) -> dict:
    from train_step import train_row

    row = train_row(
        model.build,
        amp=model.amp,
        device=DEVICE,
        variants=_variants,
        first_call=_first_call,
        timer=_time,
    )
    row.pop("profiles", None)
    return row


def run_optimizer(model: Model) -> dict:
    """A compiled ``AdamW.step()`` over the module's parameters against eager's
    (``train_step.optimizer_row``)."""
    from train_step import optimizer_row

    module, _ = model.build()
    row = optimizer_row(
        module,
        device=DEVICE,
        backends=BACKENDS,
        compile=lambda step, name: torch.compile(step, backend=name),
        first_call=_first_call,
        timer=_time,
    )
    row.pop("profiles", None)
    return row


def _row(name: str, r: dict) -> str:
    if "error" in r:
        return f"| {name} | ERROR: {r['error']} |" + " |" * 9
    nan = float("nan")
    ind = {k: r.get(f"inductor_{k}", nan) for k in ("ms", "err", "peak_mb", "first_s")}
    bad = r["coil_err"] > max(2 * ind["err"], 1e-2) or r["coil_err"] != r["coil_err"]
    status = "WRONG " if bad else ""
    return (
        f"| {name} | {r['eager_ms']:.3f} | {ind['ms']:.3f} | {r['coil_ms']:.3f} | "
        f"{status}{ind['ms'] / r['coil_ms']:.2f}x | {r['eager_ms'] / r['coil_ms']:.2f}x | "
        f"{ind['peak_mb']:.0f} / {r['coil_peak_mb']:.0f} | "
        f"{ind['first_s']:.1f} / {r['coil_first_s']:.1f} | "
        f"{ind['err']:.1e} / {r['coil_err']:.1e} |"
    )


HEADER = (
    "| model | eager ms | inductor ms | coil ms | coil speedup vs inductor | vs eager | "
    "peak MB inductor / coil | first call s inductor / coil | rel. error inductor / coil |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def main() -> int:
    global DEVICE, SMOKE, BACKENDS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"models (default all): {', '.join(MODELS)}")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, any device")
    parser.add_argument(
        "--backends",
        default=",".join(BACKENDS),
        help="comma-separated, among eager, inductor and coil (eager and coil always run)",
    )
    parser.add_argument(
        "--coil-variants",
        default="",
        help="comma-separated backend options, each a further coil run in the same "
        "process; '+' joins the options of one (e.g. pdl=true,cudagraphs=true+pdl=true)",
    )
    args = parser.parse_args()
    OPTION_VARIANTS.update(
        {f"coil[{v.strip()}]": _options(v) for v in args.coil_variants.split(",") if v.strip()}
    )
    names = args.names or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    BACKENDS = tuple(b for b in ("eager", "inductor", "coil") if b in args.backends.split(","))
    BACKENDS = tuple(dict.fromkeys(("eager", *BACKENDS, "coil")))
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
            run = run_optimizer if model.optimizer else run_train if model.train else run_inference
            r = run(model)
        except Exception as e:  # a failing model is a row, not a crash
            traceback.print_exc()
            r = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"}
        line = _row(name, r)
        for v in OPTION_VARIANTS:
            if f"{v}_ms" in r:
                # A CUDA graph's pool is allocated at capture, before the
                # peak is reset: its peak would read 0.
                graphs = OPTION_VARIANTS[v].get("cudagraphs")
                peak = "" if graphs else f", peak {r[f'{v}_peak_mb']:.0f} MB"
                print(
                    f"models: {name} {v}: {r[f'{v}_ms']:.3f} ms (coil {r['coil_ms']:.3f}), "
                    f"error {r[f'{v}_err']:.1e}{peak}",
                    flush=True,
                )
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
