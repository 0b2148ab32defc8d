"""LLM decode: prefill, then token-by-token generation from a static KV cache.

The latency-bound use of torch.compile that gpt-fast made the reference: batch
1 (and 8) generation where each step reads every weight once and the cache
up to the current position, so its floor is memory bandwidth. For each model
and batch size, in one process and from the same prompt:

* the prompt (``--prefill`` tokens) runs eagerly and fills the static cache,
  which every decode step then updates in place (gpt-fast: ``index_put`` on a
  module buffer; transformers: ``StaticCache``, ``index_copy_`` on tensors
  marked static);
* the decode step (one token in, logits and the greedy next token out) runs
  in the variants ``--variants`` names (default ``eager,inductor-ro,coil-ro``):
  ``eager``; ``inductor-ro`` and ``coil-ro``, ``mode="reduce-overhead"`` (CUDA
  graphs; both ``fullgraph=True``); ``coil-ro-base``, coil-ro with the
  default pipeline less the decode rewrites (``aten-fuse-matvec``,
  ``loop-matvec-prologue``, ``convert-decode-attention-to-tt``), for
  before/after on one machine; ``coil-ro-atenattn``, coil-ro with the
  attention left to ATen's kernel (no ``convert-decode-attention-to-tt``);
  ``coil-ro-prologue``, coil-ro with every matrix-vector product taking its
  norm prologue (``loop-matvec-prologue{max-read-bytes=0}``);
  ``coil-ro-rows``, coil-ro with every product of at most 16 rows (a batch)
  streamed as a matrix-vector reduction (``convert-aten-to-loop{matvec=on}``,
  where ``auto`` keeps cuBLAS's at batch 8); ``coil-ro-pdl``, coil-ro with
  programmatic dependent launch (the backend option ``pdl``: on sm90+ each
  kernel may start under the previous one and loads its weights before it
  waits for it, ``lowering/loop_to_tt/pdl.py``); and without
  CUDA graphs (``--no-graphs`` adds them): ``coil`` (Python wrapper),
  ``coil-cpp`` (the C++ wrapper: launches through the CUDA driver) and
  ``inductor``;
* the first ``--check-steps`` (3) compiled steps' logits are checked against
  eager's from the same cache state, eager's tokens fed to both (the largest
  ‖out − ref‖ / ‖ref‖ is shown, above 5e-2 is WRONG; whether the argmax
  agrees), before anything is timed: the first call (compilation, a CUDA
  graph's recording) and the calls after it, which read what it wrote;
* ``--steps`` decode steps are timed (CUDA events around the whole loop, the
  next token fed back as gpt-fast does): ms per token and tokens per second
  (batch x steps / time);
* ``--cache N``: a static cache of N slots (default: just enough for the run),
  most of them unfilled, as a server's maximum length leaves them;
* bandwidth: the bytes a step must read -- every weight once (the input
  embedding's one row per token, not the table; a tied output head counts)
  plus the cache up to the current position (keys and values, every layer) --
  over the step's time, as a percent of this device's copy bandwidth
  (``y.copy_(x)`` of 1 GiB, read + write, measured here);
* kernels per token: the CUDA kernels (and memcpy/memset) torch.profiler sees
  over a few steps, per step.

Models: ``llama150m`` (transformers' LlamaForCausalLM, 8 layers, width 1024,
16 heads over 4 key/value heads, 155M parameters), ``llama1b`` (TinyLlama-1.1B's
shape: 22 layers, width 2048, 32 heads over 4, 1.1B) and ``gptfast150m`` (a
plain gpt-fast-style model written below, the 150M shape: one fused ``wqkv``
projection, the cache as module buffers, rotary from a table). Weights are
random (no downloads), bf16 on the GPU.

Run: ``python benchmarks/decode.py [names...] [--batch 1,8] [--budget S]``;
the table is printed and written to ``$OUT/decode.md`` after every row (a run
stopped from outside keeps its rows); batch 1 of every model comes first.
``--budget`` (seconds) skips the rows that would end after it, judged by the
longest row so far (listed as skipped). ``--smoke``: tiny
configs on any device (f32; on the CPU coil's kernels run under Triton's
interpreter, and only eager and coil run): checks that the decode step
compiles as one graph with no fallback. Exit status 1 if a row is wrong or
failed.
"""

from __future__ import annotations

import argparse
import inspect
import logging
import math
import os
import re
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from coil.pipeline import PIPELINES

SMOKE = False


# ---- a gpt-fast-style model ---------------------------------------------------------


@dataclass
class GFConfig:
    vocab_size: int = 32000
    n_layer: int = 8
    n_head: int = 16
    n_local_heads: int = 4
    dim: int = 1024
    intermediate_size: int = 2816
    norm_eps: float = 1e-5
    rope_base: float = 10000.0

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_head


class KVCache(nn.Module):
    def __init__(self, batch: int, max_seq: int, heads: int, head_dim: int, dtype, device):
        super().__init__()
        shape = (batch, heads, max_seq, head_dim)
        self.register_buffer("k_cache", torch.zeros(shape, dtype=dtype, device=device))
        self.register_buffer("v_cache", torch.zeros(shape, dtype=dtype, device=device))

    def update(self, input_pos: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        # [B, H, T, D] written at positions input_pos, in place (gpt-fast's update)
        k_out, v_out = self.k_cache, self.v_cache
        k_out[:, :, input_pos] = k
        v_out[:, :, input_pos] = v
        return k_out, v_out


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        out = xf * torch.rsqrt(torch.mean(xf * xf, dim=-1, keepdim=True) + self.eps)
        return out.type_as(x) * self.weight


def _rotary(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    # x [B, T, H, D]; freqs_cis [T, D/2, 2] (cos, sin): gpt-fast's apply_rotary_emb
    xs = x.float().reshape(*x.shape[:-1], -1, 2)
    fc = freqs_cis.view(1, xs.size(1), 1, xs.size(3), 2)
    out = torch.stack(
        [
            xs[..., 0] * fc[..., 0] - xs[..., 1] * fc[..., 1],
            xs[..., 1] * fc[..., 0] + xs[..., 0] * fc[..., 1],
        ],
        -1,
    )
    return out.flatten(3).type_as(x)


class GFAttention(nn.Module):
    def __init__(self, c: GFConfig):
        super().__init__()
        self.c = c
        total = (c.n_head + 2 * c.n_local_heads) * c.head_dim
        self.wqkv = nn.Linear(c.dim, total, bias=False)
        self.wo = nn.Linear(c.dim, c.dim, bias=False)
        self.kv_cache: KVCache | None = None

    def forward(self, x, freqs_cis, mask, input_pos):
        c = self.c
        b, t, _ = x.shape
        kv = c.n_local_heads * c.head_dim
        q, k, v = self.wqkv(x).split([c.dim, kv, kv], dim=-1)
        q = _rotary(q.view(b, t, c.n_head, c.head_dim), freqs_cis)
        k = _rotary(k.view(b, t, c.n_local_heads, c.head_dim), freqs_cis)
        v = v.view(b, t, c.n_local_heads, c.head_dim)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        k, v = self.kv_cache.update(input_pos, k, v)
        rep = c.n_head // c.n_local_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0)
        return self.wo(y.transpose(1, 2).contiguous().view(b, t, c.dim))


class GFFeedForward(nn.Module):
    def __init__(self, c: GFConfig):
        super().__init__()
        self.w1 = nn.Linear(c.dim, c.intermediate_size, bias=False)
        self.w3 = nn.Linear(c.dim, c.intermediate_size, bias=False)
        self.w2 = nn.Linear(c.intermediate_size, c.dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class GFBlock(nn.Module):
    def __init__(self, c: GFConfig):
        super().__init__()
        self.attention = GFAttention(c)
        self.feed_forward = GFFeedForward(c)
        self.attention_norm = RMSNorm(c.dim, c.norm_eps)
        self.ffn_norm = RMSNorm(c.dim, c.norm_eps)

    def forward(self, x, input_pos, freqs_cis, mask):
        h = x + self.attention(self.attention_norm(x), freqs_cis, mask, input_pos)
        return h + self.feed_forward(self.ffn_norm(h))


class GFTransformer(nn.Module):
    """gpt-fast's ``Transformer`` (model.py), its static cache set up by
    :meth:`setup_caches`; ``forward(idx [B, T], input_pos [T])`` -> logits."""

    def __init__(self, c: GFConfig):
        super().__init__()
        self.c = c
        self.tok_embeddings = nn.Embedding(c.vocab_size, c.dim)
        self.layers = nn.ModuleList(GFBlock(c) for _ in range(c.n_layer))
        self.norm = RMSNorm(c.dim, c.norm_eps)
        self.output = nn.Linear(c.dim, c.vocab_size, bias=False)

    def setup_caches(self, batch: int, max_seq: int) -> None:
        c, p = self.c, self.output.weight
        for layer in self.layers:
            layer.attention.kv_cache = KVCache(
                batch, max_seq, c.n_local_heads, c.head_dim, p.dtype, p.device
            )
        half = c.head_dim // 2
        inv = 1.0 / (c.rope_base ** (torch.arange(0, half, device=p.device).float() / half))
        ang = torch.outer(torch.arange(max_seq, device=p.device).float(), inv)
        self.register_buffer(
            "freqs_cis", torch.stack([ang.cos(), ang.sin()], -1).to(p.dtype), persistent=False
        )
        causal = torch.tril(torch.ones(max_seq, max_seq, dtype=torch.bool, device=p.device))
        self.register_buffer("causal_mask", causal, persistent=False)

    def forward(self, idx: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        mask = self.causal_mask[None, None, input_pos]
        freqs_cis = self.freqs_cis[input_pos]
        x = self.tok_embeddings(idx)
        for layer in self.layers:
            x = layer(x, input_pos, freqs_cis, mask)
        return self.output(self.norm(x))


# ---- the models and their decode steps ---------------------------------------------------


@dataclass
class Session:
    """One model with its static cache: ``prefill(ids)`` fills the cache from
    position 0 (eagerly); ``step(ids [B, 1], pos [1])`` -> logits [B, 1, V] is
    the function compiled; ``reset()`` empties the cache; ``cache_bytes(n)``:
    the bytes of keys and values at ``n`` positions (all layers)."""

    model: nn.Module
    step: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    prefill: Callable[[torch.Tensor], torch.Tensor]
    reset: Callable[[], None]
    cache_bytes: Callable[[int], int]
    weight_bytes: int
    vocab: int


def _weight_bytes(model: nn.Module, embedding: nn.Embedding, batch: int) -> int:
    """Bytes of the weights one step reads: all parameters, but of an input
    embedding table not shared with the output only the rows looked up."""
    total = 0
    tied = any(p is embedding.weight for n, p in model.named_parameters() if "embed" not in n)
    for p in model.parameters():
        if p is embedding.weight and not tied:
            total += batch * p.shape[1] * p.element_size()
        else:
            total += p.numel() * p.element_size()
    return total


def _gptfast(c: GFConfig, batch: int, max_seq: int, dtype, device) -> Session:
    model = GFTransformer(c).to(device=device, dtype=dtype).eval()
    _init(model)
    model.setup_caches(batch, max_seq)

    def reset():
        for layer in model.layers:
            layer.attention.kv_cache.k_cache.zero_()
            layer.attention.kv_cache.v_cache.zero_()

    def prefill(ids):
        return model(ids, torch.arange(ids.shape[1], device=device))

    def step(ids, pos):
        return model(ids, pos)

    per_pos = 2 * c.n_layer * batch * c.n_local_heads * c.head_dim * dtype.itemsize
    return Session(
        model,
        step,
        prefill,
        reset,
        lambda n: per_pos * n,
        _weight_bytes(model, model.tok_embeddings, batch),
        c.vocab_size,
    )


def _init(model: nn.Module) -> None:
    """Weights like a trained model's scale (std 0.02; norms 1): logits stay
    in a range where bf16 argmax comparisons mean something."""
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:
                p.fill_(1.0)
            else:
                p.normal_(0.0, 0.02)


def _llama(kwargs: dict, batch: int, max_seq: int, dtype, device) -> Session:
    import transformers
    from transformers import StaticCache

    config = transformers.LlamaConfig(**kwargs)
    config._attn_implementation = "sdpa"
    model = transformers.LlamaForCausalLM(config).to(device=device, dtype=dtype).eval()
    _init(model)
    holder: dict = {}
    params = inspect.signature(model.forward).parameters
    takes_cache_position = "cache_position" in params

    def new_cache():
        try:
            cache = StaticCache(config=config, max_cache_len=max_seq)
        except TypeError:  # transformers 4.x
            cache = StaticCache(
                config=config,
                max_batch_size=batch,
                max_cache_len=max_seq,
                device=device,
                dtype=dtype,
            )
        holder["cache"] = cache

    def call(ids, pos):
        kw = {"cache_position": pos} if takes_cache_position else {}
        out = model(
            input_ids=ids,
            position_ids=pos.unsqueeze(0).expand(ids.shape[0], -1),
            past_key_values=holder["cache"],
            use_cache=True,
            **kw,
        )
        return out.logits

    def prefill(ids):
        new_cache()  # transformers' StaticCache counts positions itself: a new one
        return call(ids, torch.arange(ids.shape[1], device=device))

    heads = config.num_key_value_heads
    head_dim = config.hidden_size // config.num_attention_heads
    per_pos = 2 * config.num_hidden_layers * batch * heads * head_dim * dtype.itemsize
    new_cache()
    return Session(
        model,
        call,
        prefill,
        new_cache,
        lambda n: per_pos * n,
        _weight_bytes(model, model.model.embed_tokens, batch),
        config.vocab_size,
    )


LLAMA150M = dict(
    vocab_size=32000,
    hidden_size=1024,
    intermediate_size=2816,
    num_hidden_layers=8,
    num_attention_heads=16,
    num_key_value_heads=4,
    max_position_embeddings=4096,
)
LLAMA1B = dict(  # TinyLlama-1.1B's shape
    vocab_size=32000,
    hidden_size=2048,
    intermediate_size=5632,
    num_hidden_layers=22,
    num_attention_heads=32,
    num_key_value_heads=4,
    max_position_embeddings=4096,
)
SMOKE_LLAMA = dict(
    vocab_size=256,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=128,
)
SMOKE_GF = GFConfig(
    vocab_size=256, n_layer=2, n_head=4, n_local_heads=2, dim=64, intermediate_size=128
)


def _build(name: str, batch: int, max_seq: int, dtype, device) -> Session:
    if name == "llama150m":
        return _llama(SMOKE_LLAMA if SMOKE else LLAMA150M, batch, max_seq, dtype, device)
    if name == "llama1b":
        return _llama(SMOKE_LLAMA if SMOKE else LLAMA1B, batch, max_seq, dtype, device)
    if name == "gptfast150m":
        return _gptfast(SMOKE_GF if SMOKE else GFConfig(), batch, max_seq, dtype, device)
    raise SystemExit(f"decode: unknown model {name!r}; known: {', '.join(MODELS)}")


MODELS = ("llama150m", "llama1b", "gptfast150m")

# ---- measuring -------------------------------------------------------------------------------


def copy_bandwidth(device: str) -> float:
    """Bytes per second of ``y.copy_(x)`` on 1 GiB (read + write), the best of 10."""
    if device != "cuda":
        return float("nan")
    x = torch.empty(1 << 28, device=device, dtype=torch.float32).normal_()
    y = torch.empty_like(x)
    best = math.inf
    for _ in range(12):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        y.copy_(x)
        b.record()
        b.synchronize()
        best = min(best, a.elapsed_time(b) / 1e3)
    del x, y
    return 2 * (1 << 28) * 4 / best


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


class FallbackWatch(logging.Handler):
    """Collects coil's warnings (a graph run in eager, an op sent to ATen, a
    graph not recorded as a CUDA graph)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage().splitlines()[0][:200])


@dataclass
class Row:
    model: str
    batch: int
    variant: str
    ms: float = math.nan
    tokens_s: float = math.nan
    pct_bw: float = math.nan
    kernels: float = math.nan
    err: float = math.nan
    same_argmax: bool | None = None
    compile_s: float = math.nan
    graphs: int | None = None
    breaks: int | None = None
    note: str = ""


VARIANTS = {
    # name: (backend, torch.compile keyword arguments; coil's "options" join
    # coil_options')
    "eager": (None, {}),
    "inductor-ro": ("inductor", {"mode": "reduce-overhead"}),
    "coil-ro": ("coil", {"mode": "reduce-overhead"}),
    "coil": ("coil", {}),
    "coil-cpp": ("coil", {"options": {"wrapper": "cpp"}}),  # the C++ wrapper's launches
    # the default pipeline less the decode rewrites (before/after on one machine)
    "coil-ro-base": ("coil", {"mode": "reduce-overhead", "base": True}),
    # every matrix-vector product takes its norm prologue (no max-read-bytes)
    "coil-ro-prologue": ("coil", {"mode": "reduce-overhead", "prologue_bytes": 0}),
    # coil-ro with the attention left to ATen's kernel (no convert-decode-attention-to-tt)
    "coil-ro-atenattn": ("coil", {"mode": "reduce-overhead", "aten_attention": True}),
    # coil-ro with every product of at most 16 rows a streamed matrix-vector
    # reduction (convert-aten-to-loop{matvec=on}; auto asks strategy/rows.py)
    "coil-ro-rows": ("coil", {"mode": "reduce-overhead", "matvec_on": True}),
    # coil-ro with programmatic dependent launch (sm90+; the option does nothing
    # on other GPUs and the CPU): weights loaded before each kernel's wait
    "coil-ro-pdl": ("coil", {"mode": "reduce-overhead", "options": {"pdl": True}}),
    "inductor": ("inductor", {}),
}


DECODE_PASSES = ("aten-fuse-matvec", "loop-matvec-prologue", "convert-decode-attention-to-tt")


def with_matvec_on(pipeline: str) -> str:
    """``pipeline`` with ``convert-aten-to-loop{matvec=on}`` (its other options kept)."""

    def on(m: re.Match) -> str:
        opts = [o for o in (m.group(1) or "").split() if not o.startswith("matvec=")]
        return "convert-aten-to-loop{" + " ".join([*opts, "matvec=on"]) + "}"

    return re.sub(r"convert-aten-to-loop(?:\{([^}]*)\})?", on, pipeline)


def without_decode_passes(pipeline: str) -> str:
    """``pipeline`` without the passes written for decoding (the in-place cache
    write is bufferize's and stays)."""
    kept = [p for p in pipeline.split(",") if p.split("{")[0] not in DECODE_PASSES]
    return ",".join(kept)


def coil_options(args: argparse.Namespace, label: str) -> dict:
    """coil's options: on the CPU the pipeline lowers and fuses matrix-vector
    products as on CUDA (``matvec=on``, ``all-devices=true``), so the smoke run
    compiles what the GPU runs;
    ``--dump DIR`` writes each row's IR, kernels and wrapper under DIR/label."""
    options: dict = {"fallback": "extern"}
    if args.device == "cpu":
        options["pipeline"] = (
            PIPELINES["default"]
            .replace("convert-aten-to-loop", "convert-aten-to-loop{matvec=on}")
            .replace("aten-fuse-matvec", "aten-fuse-matvec{all-devices=true}")
            .replace(
                "convert-decode-attention-to-tt", "convert-decode-attention-to-tt{all-devices=true}"
            )
        )
    if args.prologue_bytes is not None:
        pipeline = options.get("pipeline", PIPELINES["default"])
        options["pipeline"] = pipeline.replace(
            "loop-matvec-prologue", f"loop-matvec-prologue{{max-read-bytes={args.prologue_bytes}}}"
        )
    if args.dump:
        options["dump_dir"] = os.path.join(args.dump, label)
    return options


def run_variant(
    name: str,
    batch: int,
    variant: str,
    args: argparse.Namespace,
    ref: list[tuple[torch.Tensor, torch.Tensor]] | None,
    bandwidth: float,
) -> tuple[Row, torch.Tensor | None]:
    device, dtype = args.device, args.dtype
    row = Row(name, batch, variant)
    backend, kw = VARIANTS[variant]
    max_seq = args.max_seq
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    torch.manual_seed(0)
    s = _build(name, batch, max_seq, dtype, device)
    gen = torch.Generator(device="cpu").manual_seed(1)
    prompt = torch.randint(0, s.vocab, (batch, args.prefill), generator=gen).to(device)

    def decode_one(tok: torch.Tensor, pos: torch.Tensor):
        # gpt-fast's decode_one_token: logits and the greedy next token
        logits = s.step(tok, pos)
        return logits, logits[:, -1].argmax(-1, keepdim=True)

    step = decode_one
    if backend is not None:
        kw = dict(kw)
        if backend == "coil":
            # torch.compile takes mode or options, not both: reduce-overhead is
            # coil's cudagraphs option (what the mode turns on)
            options = coil_options(args, f"{name}-b{batch}-{variant}")
            options.update(kw.pop("options", {}))
            if kw.pop("base", False):
                options["pipeline"] = without_decode_passes(
                    options.get("pipeline", PIPELINES["default"])
                )
            if kw.pop("aten_attention", False):
                options["pipeline"] = ",".join(
                    p
                    for p in options.get("pipeline", PIPELINES["default"]).split(",")
                    if p.split("{")[0] != "convert-decode-attention-to-tt"
                )
            if (limit := kw.pop("prologue_bytes", None)) is not None:
                options["pipeline"] = re.sub(
                    r"loop-matvec-prologue(\{[^}]*\})?",
                    f"loop-matvec-prologue{{max-read-bytes={limit}}}",
                    options.get("pipeline", PIPELINES["default"]),
                )
            if kw.pop("matvec_on", False):
                options["pipeline"] = with_matvec_on(options.get("pipeline", PIPELINES["default"]))
            if kw.pop("mode", None) == "reduce-overhead":
                options["cudagraphs"] = True
            kw["options"] = options
        step = torch.compile(decode_one, backend=backend, fullgraph=True, **kw)
    watch = FallbackWatch()
    coil_log = logging.getLogger("coil")
    coil_log.addHandler(watch)
    try:
        with torch.no_grad():
            s.reset()
            logits = s.prefill(prompt)
            tok = logits[:, -1:].argmax(-1)
            # The first --check-steps steps are fed eager's tokens (``ref``'s) and
            # compared with eager's logits: the first call (compile, a CUDA
            # graph's recording) and the replays after it, so a cache written at
            # the wrong slot shows in the steps that read it.
            got: list[tuple[torch.Tensor, torch.Tensor]] = []
            errs, same = [], []
            for i in range(args.check_steps):
                pos = torch.tensor([args.prefill + i], device=device)
                _sync(device)
                t = time.perf_counter()
                out = step(tok, pos)
                _sync(device)
                if i == 0:
                    row.compile_s = time.perf_counter() - t
                # a copy, and the results dropped: a CUDA graph's outputs held
                # across the next call would make it return copies from then on
                logits = out[0].to(torch.float32, copy=True)
                nxt = out[1].clone()
                del out
                got.append((logits, nxt))
                if ref is not None:
                    want, nxt = ref[i]
                    errs.append(((logits - want).norm() / want.norm()).item())
                    same.append(bool((logits.argmax(-1) == want.argmax(-1)).all()))
                tok = nxt
            if ref is not None:
                row.err = max(errs)
                row.same_argmax = all(same)
                if len(errs) > 1:
                    row.note = "per step: " + " ".join(f"{e:.1e}" for e in errs)
            if backend is not None:
                counts = torch._dynamo.utils.counters
                row.graphs = int(counts["stats"]["unique_graphs"])
                row.breaks = sum(counts["graph_break"].values())

            def decode(n: int, tok: torch.Tensor, p: int) -> tuple[torch.Tensor, int]:
                # the position stays on the device, advanced in place (gpt-fast's
                # input_pos += 1): no host-to-device copy per token
                pos = torch.tensor([p], device=device)
                for _ in range(n):
                    logits, nxt = step(tok, pos)
                    tok = nxt.clone()  # the next call's input, not a graph's output
                    del logits, nxt
                    pos += 1
                return tok, p + n

            tok, p = decode(args.warmup, tok, args.prefill + args.check_steps)
            _sync(device)
            start = p
            t = time.perf_counter()
            tok, p = decode(args.steps, tok, p)
            _sync(device)
            elapsed = time.perf_counter() - t
            row.ms = elapsed / args.steps * 1e3
            row.tokens_s = batch * args.steps / elapsed
            read = s.weight_bytes + s.cache_bytes((start + p) // 2)
            row.pct_bw = 100 * read / (row.ms / 1e3) / bandwidth
            if device == "cuda" and args.profile_steps:
                acts = [torch.profiler.ProfilerActivity.CUDA]
                with torch.profiler.profile(activities=acts) as prof:
                    tok, p = decode(args.profile_steps, tok, p)
                    _sync(device)
                cuda = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
                row.kernels = len(cuda) / args.profile_steps
                _print_top_kernels(row, cuda, args.profile_steps)
    finally:
        coil_log.removeHandler(watch)
    if watch.messages:
        row.note = "; ".join([row.note, *dict.fromkeys(watch.messages)]).strip("; ")
    return row, got if ref is None else None


def _print_top_kernels(row: Row, events: list, steps: int, top: int = 12) -> None:
    """The GPU kernels taking the most time per token (name, us per token,
    launches per token), printed under the row: where a slow row's time goes."""
    by: dict[str, list[float]] = {}
    for e in events:
        # torch 2.11 names it device_time_total; older, cuda_time_total
        us = getattr(e, "device_time_total", None)
        by.setdefault(e.name, []).append(e.cuda_time_total if us is None else us)
    total = sum(sum(v) for v in by.values()) / steps
    print(f"profile {row.model} batch {row.batch} {row.variant}: {total:.1f} us of kernels a token")
    ranked = sorted(by.items(), key=lambda kv: -sum(kv[1]))[:top]
    for name, times in ranked:
        print(f"  {sum(times) / steps:8.1f} us {len(times) / steps:6.1f}x  {name[:110]}")


def _fmt(v: float, spec: str) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def table(rows: list[Row], header: str) -> str:
    lines = [
        header,
        "",
        "| model | batch | variant | ms/token | tokens/s | % copy bw | kernels/token "
        "| rel. err vs eager | argmax | first call s | graphs / breaks | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        arg = "" if r.same_argmax is None else ("same" if r.same_argmax else "DIFFERS")
        gb = "" if r.graphs is None else f"{r.graphs} / {r.breaks}"
        lines.append(
            f"| {r.model} | {r.batch} | {r.variant} | {_fmt(r.ms, '.3f')} | "
            f"{_fmt(r.tokens_s, '.0f')} | {_fmt(r.pct_bw, '.1f')} | {_fmt(r.kernels, '.0f')} | "
            f"{_fmt(r.err, '.2e')} | {arg} | {_fmt(r.compile_s, '.1f')} | {gb} | {r.note} |"
        )
    return "\n".join(lines)


def speedups(rows: list[Row]) -> str:
    """coil over Inductor per (model, batch), with and without graphs."""
    out = []
    by = {(r.model, r.batch, r.variant): r for r in rows}
    for (m, b, v), r in by.items():
        if not v.startswith("coil"):
            continue
        other = by.get((m, b, v.replace("coil", "inductor")))
        if other and r.ms == r.ms and other.ms == other.ms:
            out.append(f"- {m} batch {b}, {v}: {other.ms / r.ms:.2f}x Inductor")
        base = by.get((m, b, v + "-base"))
        if base and r.ms == r.ms and base.ms == base.ms:
            out.append(f"- {m} batch {b}, {v}: {base.ms / r.ms:.2f}x without the decode passes")
        wide = by.get((m, b, v + "-prologue"))
        if wide and r.ms == r.ms and wide.ms == wide.ms:
            out.append(f"- {m} batch {b}, {v}: {wide.ms / r.ms:.2f}x every norm as a prologue")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    global SMOKE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", help=f"default: {' '.join(MODELS)}")
    ap.add_argument("--batch", default="1,8", help="batch sizes, comma-separated")
    ap.add_argument(
        "--variants",
        default="eager,inductor-ro,coil-ro",
        help=f"comma-separated, of: {', '.join(VARIANTS)}",
    )
    ap.add_argument("--no-graphs", action="store_true", help="add coil, coil-cpp and inductor rows")
    ap.add_argument("--prefill", type=int, default=128)
    ap.add_argument("--steps", type=int, default=100, help="decode steps timed")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument(
        "--check-steps",
        type=int,
        default=3,
        help="decode steps whose logits are compared with eager's (eager's tokens fed)",
    )
    ap.add_argument("--profile-steps", type=int, default=5)
    ap.add_argument(
        "--cache",
        type=int,
        default=0,
        help="static cache slots (default: just enough for the run, rounded to 64); "
        "a longer cache is mostly unfilled, as a server's max length is",
    )
    ap.add_argument("--budget", type=float, default=math.inf, help="seconds; later rows skip")
    ap.add_argument("--smoke", action="store_true", help="tiny configs on any device")
    ap.add_argument("--device", default=None)
    ap.add_argument("--out", default=os.environ.get("OUT"))
    ap.add_argument("--dump", default=None, help="coil's dump directory (per row below it)")
    ap.add_argument(
        "--prologue-bytes",
        type=int,
        default=None,
        help="loop-matvec-prologue's max-read-bytes for the coil rows (0: no limit)",
    )
    args = ap.parse_args(argv)
    SMOKE = args.smoke
    args.device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.smoke:
        args.prefill, args.steps, args.warmup = min(args.prefill, 8), min(args.steps, 3), 1
        args.profile_steps = min(args.profile_steps, 2)
    args.dtype = torch.bfloat16 if args.device == "cuda" and not args.smoke else torch.float32
    args.check_steps = max(1, args.check_steps)
    args.max_seq = (
        args.prefill + args.check_steps + args.warmup + args.steps + args.profile_steps + 2
    )
    args.max_seq = -(-max(args.max_seq, args.cache or 0) // 64) * 64
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if args.no_graphs:
        variants += [v for v in ("coil", "coil-cpp", "inductor") if v not in variants]
    if args.device == "cpu":  # Inductor's CPU code is not what this measures
        variants = [v for v in variants if not v.startswith("inductor")]
    for v in variants:
        if v not in VARIANTS:
            raise SystemExit(f"decode: unknown variant {v!r}; known: {', '.join(VARIANTS)}")
    if "eager" in variants:
        variants = ["eager"] + [v for v in variants if v != "eager"]
    models = args.models or list(MODELS)
    batches = [int(b) for b in args.batch.split(",")]
    start = time.perf_counter()
    bandwidth = copy_bandwidth(args.device)
    header = (
        f"device: {torch.cuda.get_device_name() if args.device == 'cuda' else 'cpu'}, "
        f"copy bandwidth {bandwidth / 1e9:.0f} GB/s; {args.dtype}; prefill {args.prefill}, "
        f"{args.steps} decode steps timed"
    )
    print(header, flush=True)
    rows: list[Row] = []
    failed = False
    longest = 0.0  # the longest row so far: a row that would end past --budget is skipped

    def write() -> str:
        # after every row: a run stopped from outside still leaves its table
        extra = speedups(rows)
        text = table(rows, header) + ("\n\n" + extra if extra else "") + "\n"
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "decode.md"), "w") as fh:
                fh.write(text)
        return text

    # batch 1 of every model first, then the larger batches
    for batch in batches:
        for name in models:
            ref = None
            for variant in variants:
                if time.perf_counter() - start + longest > args.budget:
                    rows.append(Row(name, batch, variant, note="skipped (--budget)"))
                    continue
                began = time.perf_counter()
                try:
                    row, got = run_variant(name, batch, variant, args, ref, bandwidth)
                    if variant == "eager":
                        ref = got
                    # bf16 logits of random weights: the top two can be closer than
                    # the rounding, so a different argmax alone is not an error
                    if row.err == row.err and row.err > 5e-2:
                        row.note = ("WRONG; " + row.note).strip("; ")
                        failed = True
                    if row.breaks:
                        failed = True
                except Exception as e:  # a failed row, the others still run
                    traceback.print_exc()
                    row = Row(name, batch, variant, note=f"FAILED: {type(e).__name__}: {e}"[:300])
                    failed = True
                rows.append(row)
                longest = max(longest, time.perf_counter() - began)
                print(table([row], "").splitlines()[-1], flush=True)
                write()
                if args.device == "cuda":
                    torch.cuda.empty_cache()
    print("\n" + write())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
