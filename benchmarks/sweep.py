"""The model sweep: coil against eager and Inductor on models it was never tuned on.

Models come from the zoos the GPU machine has (timm, transformers, torchvision),
built from configs with random weights (no downloads). Each model runs in a
process of its own; in it, on the same inputs:

1. correctness first: a float32 eager reference, then eager, Inductor and coil
   (bf16 inference; training rows: one step under bf16 autocast or in f32,
   gradients compared) as ``‖out − ref‖ / ‖ref‖``; coil must stay within
   twice the larger of eager's and Inductor's error (or 1e-2), else the row
   says ``WRONG``. A linear layer whose weight is all zeros (timm zero-inits
   some classifier heads) is re-initialized first, so outputs are not zero;
2. first-call seconds (compile included) of Inductor and coil;
3. ms per call (``triton.testing.do_bench``, median) and peak memory above
   the inputs (``max_memory_allocated``) of eager, Inductor and coil;
4. what coil could not do: the ops it called through ATen (logged "no loop
   lowering"), and the graphs it failed to compile and ran in eager PyTorch
   (its default fallback policy warns once per graph: such a row is marked,
   never passed off as coil's);
5. where coil is slower than Inductor, a profile of both (GPU kernel ms and
   launches per call, the kernels taking the most time).

Several processes run at once (``--jobs``), spread over the GPUs
(``CUDA_VISIBLE_DEVICES``); the compiles overlap on the host's cores, the
timing (step 3 and 5) holds a lock on its GPU, so no two processes time on
one GPU at once. Rows go to a CSV keyed by commit: a later call at the same
commit skips the rows already there (``--commit``, default ``git rev-parse``
or ``$SWEEP_COMMIT``), so a sweep may span several calls. ``--deadline``
stops launching and kills what still runs at that many seconds.

    python benchmarks/sweep.py --list              # names, no model library imported
    python benchmarks/sweep.py --jobs 16 --gpus 4  # the sweep (a GPU machine)
    python benchmarks/sweep.py --table             # the Markdown table of the CSV
    python benchmarks/sweep.py --only timm:resnet18 hf:opt --jobs 2
    python benchmarks/sweep.py --retime --gpus 4    # the lost rows again, quietly

Timing under load: with several processes per GPU compiling on the host while
one times, a host-bound model's wall time grows with the load (at 21 processes
on 64 cores, three rows measured 0.66-0.87x Inductor that a quiet re-time put
at 1.11-1.47x). ``--retime`` re-runs the rows of a commit that lost to
Inductor or eager at one process per GPU, keyed ``COMMIT-quiet``; the table
shows those in place of the loaded ones.

Training rows (``train:``) are the subset of the training issue: a step
(forward, loss, backward) with dropout as each config sets it for timing,
off for the correctness check.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import csv
import fcntl
import gc
import json
import logging
import math
import os
import re
import signal
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_CSV = HERE / "results" / "sweep.csv"
OUT = Path(os.environ["OUT"]) if os.environ.get("OUT") else None


# ---------------------------------------------------------------------------
# The models (names only here: --list imports no model library)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    name: str  # zoo:model
    family: str
    batch: int = 32
    train: bool = False
    amp: bool = True  # training rows: bf16 autocast (else f32)
    optimizer: bool = False  # a compiled optimizer step (train_step.optimizer_row)


def kind_of(entry: Entry) -> str:
    """The CSV's ``kind``: infer-bf16, train-amp, train-f32 or optim-f32."""
    if entry.optimizer:
        return "optim-f32"
    if entry.train:
        return "train-amp" if entry.amp else "train-f32"
    return "infer-bf16"


def _timm(model: str, family: str, batch: int = 32) -> Entry:
    return Entry(f"timm:{model}", family, batch)


TIMM = [
    _timm("resnet18", "ResNet"),
    _timm("resnet50d", "ResNet"),
    _timm("resnext50_32x4d", "ResNeXt"),
    _timm("seresnext26d_32x4d", "ResNeXt+SE"),
    _timm("res2net50_26w_4s", "Res2Net"),
    _timm("resnest14d", "ResNeSt"),
    _timm("regnety_016", "RegNet"),
    _timm("regnetx_002", "RegNet"),
    _timm("densenet121", "DenseNet"),
    _timm("inception_v3", "Inception"),
    _timm("dla34", "DLA"),
    _timm("dpn68", "DPN"),
    _timm("hrnet_w18_small", "HRNet"),
    _timm("cspresnet50", "CSPNet"),
    _timm("repvgg_a2", "RepVGG"),
    _timm("ese_vovnet19b_dw", "VoVNet"),
    _timm("hgnetv2_b0", "HGNet"),
    _timm("selecsls42b", "SelecSLS"),
    _timm("efficientnet_b2", "EfficientNet"),
    _timm("tf_efficientnetv2_b0", "EfficientNetV2"),
    _timm("mobilenetv2_100", "MobileNet"),
    _timm("mobilenetv4_conv_small", "MobileNet"),
    _timm("ghostnet_100", "GhostNet"),
    _timm("mnasnet_100", "MNASNet"),
    _timm("lcnet_100", "LCNet"),
    _timm("rexnet_100", "ReXNet"),
    _timm("mobileone_s1", "MobileOne"),
    _timm("repvit_m1", "RepViT"),
    _timm("convnext_nano", "ConvNeXt"),
    _timm("convnextv2_atto", "ConvNeXt"),
    _timm("inception_next_tiny", "ConvNeXt"),
    _timm("vit_small_patch16_224", "ViT"),
    _timm("deit_small_patch16_224", "DeiT"),
    _timm("deit3_small_patch16_224", "DeiT"),
    _timm("beit_base_patch16_224", "BEiT"),
    _timm("cait_xxs24_224", "CaiT"),
    _timm("eva02_tiny_patch14_224", "EVA"),
    _timm("flexivit_small", "ViT"),
    _timm("xcit_tiny_12_p16_224", "XCiT"),
    _timm("pit_s_224", "PiT"),
    _timm("convit_tiny", "ConViT"),
    _timm("swin_tiny_patch4_window7_224", "Swin"),
    _timm("swinv2_cr_tiny_ns_224", "Swin"),
    _timm("maxvit_tiny_tf_224", "MaxViT"),
    _timm("coatnet_0_rw_224", "CoAtNet"),
    _timm("twins_svt_small", "Twins"),
    _timm("pvt_v2_b1", "PVT"),
    _timm("gcvit_xxtiny", "GCViT"),
    _timm("davit_tiny", "DaViT"),
    _timm("focalnet_tiny_srf", "FocalNet"),
    _timm("mobilevit_s", "MobileViT"),
    _timm("mobilevitv2_050", "MobileViT"),
    _timm("levit_128", "LeViT"),
    _timm("efficientvit_b1", "EfficientViT"),
    _timm("efficientvit_m2", "EfficientViT"),
    _timm("fastvit_t8", "FastViT"),
    _timm("efficientformer_l1", "EfficientFormer"),
    _timm("edgenext_small", "EdgeNeXt"),
    _timm("poolformer_s12", "PoolFormer"),
    _timm("poolformerv2_s12", "PoolFormer"),
    _timm("convformer_s18", "MetaFormer"),
    _timm("caformer_s18", "MetaFormer"),
    _timm("mixer_b16_224", "MLP-Mixer"),
    _timm("resmlp_12_224", "ResMLP"),
    _timm("gmlp_s16_224", "gMLP"),
    _timm("nfnet_l0", "NFNet"),
    _timm("nf_resnet50", "NFNet"),
]

HF = [
    Entry("hf:gpt_neo", "decoder, local+global attention", 8),
    Entry("hf:gptj", "decoder, partial rotary", 8),
    Entry("hf:opt", "decoder, learned positions", 8),
    Entry("hf:bloom", "decoder, ALiBi", 8),
    Entry("hf:mpt", "decoder, ALiBi", 8),
    Entry("hf:falcon", "decoder, multi-query", 8),
    Entry("hf:phi", "decoder, partial rotary", 8),
    Entry("hf:qwen2", "decoder, GQA", 8),
    Entry("hf:mistral", "decoder, sliding window GQA", 8),
    Entry("hf:gemma", "decoder, GQA", 8),
    Entry("hf:gpt_neox", "decoder, partial rotary", 8),
    Entry("hf:codegen", "decoder, partial rotary", 8),
    Entry("hf:stablelm", "decoder, partial rotary", 8),
    Entry("hf:roberta", "encoder", 8),
    Entry("hf:distilbert", "encoder", 8),
    Entry("hf:albert", "encoder, shared layers", 8),
    Entry("hf:electra", "encoder", 8),
    Entry("hf:deberta_v2", "encoder, relative positions", 8),
    Entry("hf:xlm_roberta", "encoder", 8),
    Entry("hf:mpnet", "encoder, relative bias", 8),
    Entry("hf:bart", "encoder-decoder LM", 8),
    Entry("hf:pegasus", "encoder-decoder LM", 8),
    Entry("hf:marian", "encoder-decoder LM", 8),
    Entry("hf:wav2vec2", "speech encoder, conv1d front end", 8),
    Entry("hf:hubert", "speech encoder, conv1d front end", 8),
    Entry("hf:whisper", "speech encoder-decoder", 8),
    Entry("hf:swin", "vision, windowed attention", 32),
    Entry("hf:segformer", "segmentation", 8),
    Entry("hf:mobilevit", "vision, hybrid conv/attention", 32),
    Entry("hf:dinov2", "vision transformer", 32),
    Entry("hf:clip_vision", "vision transformer", 32),
]

TV = [
    Entry("tv:shufflenet_v2_x1_0", "ShuffleNet", 32),
    Entry("tv:squeezenet1_1", "SqueezeNet", 32),
    Entry("tv:googlenet", "Inception", 32),
    Entry("tv:mnasnet1_0", "MNASNet", 32),
    Entry("tv:regnet_y_400mf", "RegNet", 32),
    Entry("tv:efficientnet_v2_s", "EfficientNetV2", 32),
    Entry("tv:wide_resnet50_2", "ResNet", 32),
    Entry("tv:vit_b_16", "ViT", 32),
    Entry("tv:swin_t", "Swin", 32),
    Entry("tv:maxvit_t", "MaxViT", 32),
    Entry("tv:deeplabv3_mobilenet_v3_large", "segmentation", 8),
    Entry("tv:fcn_resnet50", "segmentation", 8),
    Entry("tv:lraspp_mobilenet_v3_large", "segmentation", 8),
]

HAND = [
    Entry("hand:attention", "hand-written attention block, 1024 wide, 16 heads", 8),
    Entry("hand:attention_causal", "hand-written causal attention (masked_fill)", 8),
]

TRAIN = [
    Entry(f"train:{name}{suffix}", family, batch, train=True, amp=amp)
    for name, family, batch in [
        ("gpt2", "decoder LM step, dropout 0.1", 4),
        ("bert_mlm", "encoder MLM step, dropout 0.1", 8),
        ("llama", "decoder LM step", 4),
        ("vit_small", "timm ViT step", 32),
        ("resnet50", "timm ResNet step", 32),
        ("convnext_tiny", "timm ConvNeXt step", 16),
    ]
    for suffix, amp in (("", True), ("_f32", False))
]
# A compiled AdamW step (foreach, a tensor learning rate) over GPT-2 small's
# 124M parameters: the optimizer row of the training table.
TRAIN.append(
    Entry(
        "train:adamw_gpt2", "AdamW step, 124M parameters", 1, train=True, amp=False, optimizer=True
    )
)

ENTRIES = {e.name: e for e in [*TIMM, *HF, *TV, *HAND, *TRAIN]}


# ---------------------------------------------------------------------------
# Builders (run in the child process)
# ---------------------------------------------------------------------------


def _ids(vocab: int, batch: int, seq: int):
    import torch

    return torch.randint(0, vocab, (batch, seq))


def _hf_decoder(cls: str, config: str, **cfg):
    def build(batch: int, dropout: bool):
        import transformers

        c = getattr(transformers, config)(**cfg)
        if not dropout:
            _zero_dropout_config(c)
        return getattr(transformers, cls)(c), (_ids(c.vocab_size, batch, 512),)

    return build


def _hf_encoder(cls: str, config: str, seq: int = 512, **cfg):
    def build(batch: int, dropout: bool):
        import transformers

        c = getattr(transformers, config)(**cfg)
        if not dropout:
            _zero_dropout_config(c)
        return getattr(transformers, cls)(c), (_ids(c.vocab_size, batch, seq),)

    return build


class _Seq2Seq:
    """input_ids and decoder_input_ids (batch x 512, batch x 128) of an encoder-decoder."""

    @staticmethod
    def build(cls: str, config: str, **cfg):
        def build(batch: int, dropout: bool):
            import transformers

            c = getattr(transformers, config)(**cfg)
            if not dropout:
                _zero_dropout_config(c)
            ids = _ids(c.vocab_size, batch, 512)
            model = getattr(transformers, cls)(c)
            return _Kwargs(model, ("input_ids", "decoder_input_ids")), (ids, ids[:, :128].clone())

        return build


def _hf_image(cls: str, config: str, size: int = 224, **cfg):
    def build(batch: int, dropout: bool):
        import torch
        import transformers

        c = getattr(transformers, config)(**cfg)
        if not dropout:
            _zero_dropout_config(c)
        return getattr(transformers, cls)(c), (torch.randn(batch, 3, size, size),)

    return build


def _hf_speech(cls: str, config: str, **cfg):
    def build(batch: int, dropout: bool):
        import torch
        import transformers

        c = getattr(transformers, config)(**cfg)
        if not dropout:
            _zero_dropout_config(c)
        return getattr(transformers, cls)(c), (torch.randn(batch, 4 * 16000),)

    return build


def _whisper(batch: int, dropout: bool):
    import torch
    import transformers

    c = transformers.WhisperConfig(
        d_model=512,
        encoder_layers=6,
        decoder_layers=6,
        encoder_attention_heads=8,
        decoder_attention_heads=8,
        encoder_ffn_dim=2048,
        decoder_ffn_dim=2048,
    )
    if not dropout:
        _zero_dropout_config(c)
    model = transformers.WhisperForConditionalGeneration(c)
    features = torch.randn(batch, c.num_mel_bins, 3000)
    return _Kwargs(model, ("input_features", "decoder_input_ids")), (
        features,
        _ids(c.vocab_size, batch, 64),
    )


DEC = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12}
HF_BUILD: dict[str, Callable] = {
    "gpt_neo": _hf_decoder(
        "GPTNeoForCausalLM",
        "GPTNeoConfig",
        hidden_size=768,
        num_layers=12,
        num_heads=12,
        attention_types=[[["global", "local"], 6]],
    ),
    "gptj": _hf_decoder(
        "GPTJForCausalLM", "GPTJConfig", n_embd=768, n_layer=12, n_head=12, rotary_dim=32
    ),
    "opt": _hf_decoder("OPTForCausalLM", "OPTConfig"),
    "bloom": _hf_decoder("BloomForCausalLM", "BloomConfig", hidden_size=768, n_layer=12, n_head=12),
    "mpt": _hf_decoder("MptForCausalLM", "MptConfig", d_model=768, n_heads=12, n_layers=12),
    "falcon": _hf_decoder("FalconForCausalLM", "FalconConfig", **DEC),
    "phi": _hf_decoder(
        "PhiForCausalLM", "PhiConfig", intermediate_size=3072, partial_rotary_factor=0.5, **DEC
    ),
    "qwen2": _hf_decoder(
        "Qwen2ForCausalLM", "Qwen2Config", intermediate_size=2048, num_key_value_heads=2, **DEC
    ),
    "mistral": _hf_decoder(
        "MistralForCausalLM",
        "MistralConfig",
        intermediate_size=2048,
        num_key_value_heads=4,
        sliding_window=256,
        **DEC,
    ),
    "gemma": _hf_decoder(
        "GemmaForCausalLM",
        "GemmaConfig",
        intermediate_size=3072,
        num_key_value_heads=4,
        head_dim=64,
        vocab_size=32000,
        **DEC,
    ),
    "gpt_neox": _hf_decoder(
        "GPTNeoXForCausalLM", "GPTNeoXConfig", intermediate_size=3072, rotary_pct=0.25, **DEC
    ),
    "codegen": _hf_decoder(
        "CodeGenForCausalLM", "CodeGenConfig", n_embd=768, n_layer=12, n_head=12, rotary_dim=32
    ),
    "stablelm": _hf_decoder(
        "StableLmForCausalLM",
        "StableLmConfig",
        intermediate_size=2048,
        num_key_value_heads=12,
        partial_rotary_factor=0.25,
        **DEC,
    ),
    # Positions start after the padding index: 514 positions for 512 tokens.
    "roberta": _hf_encoder("RobertaModel", "RobertaConfig", max_position_embeddings=514),
    "distilbert": _hf_encoder("DistilBertModel", "DistilBertConfig"),
    "albert": _hf_encoder(
        "AlbertModel",
        "AlbertConfig",
        hidden_size=768,
        num_attention_heads=12,
        intermediate_size=3072,
    ),
    "electra": _hf_encoder(
        "ElectraModel",
        "ElectraConfig",
        hidden_size=768,
        embedding_size=768,
        num_attention_heads=12,
        intermediate_size=3072,
    ),
    "deberta_v2": _hf_encoder(
        "DebertaV2Model",
        "DebertaV2Config",
        hidden_size=768,
        num_attention_heads=12,
        intermediate_size=3072,
        relative_attention=True,
        position_buckets=256,
        pos_att_type=["p2c", "c2p"],
    ),
    "xlm_roberta": _hf_encoder("XLMRobertaModel", "XLMRobertaConfig", max_position_embeddings=514),
    "mpnet": _hf_encoder("MPNetModel", "MPNetConfig", max_position_embeddings=514),
    "bart": _Seq2Seq.build(
        "BartForConditionalGeneration",
        "BartConfig",
        d_model=768,
        encoder_layers=6,
        decoder_layers=6,
        encoder_attention_heads=12,
        decoder_attention_heads=12,
        encoder_ffn_dim=3072,
        decoder_ffn_dim=3072,
    ),
    "pegasus": _Seq2Seq.build(
        "PegasusForConditionalGeneration",
        "PegasusConfig",
        d_model=768,
        encoder_layers=6,
        decoder_layers=6,
        encoder_attention_heads=12,
        decoder_attention_heads=12,
        encoder_ffn_dim=3072,
        decoder_ffn_dim=3072,
    ),
    "marian": _Seq2Seq.build(  # opus-mt's sizes
        "MarianMTModel",
        "MarianConfig",
        d_model=512,
        encoder_layers=6,
        decoder_layers=6,
        encoder_attention_heads=8,
        decoder_attention_heads=8,
        encoder_ffn_dim=2048,
        decoder_ffn_dim=2048,
    ),
    "wav2vec2": _hf_speech("Wav2Vec2Model", "Wav2Vec2Config"),
    "hubert": _hf_speech("HubertModel", "HubertConfig"),
    "whisper": _whisper,
    "swin": _hf_image("SwinModel", "SwinConfig"),
    "segformer": _hf_image("SegformerForSemanticSegmentation", "SegformerConfig", size=512),
    "mobilevit": _hf_image("MobileViTModel", "MobileViTConfig", size=256),
    "dinov2": _hf_image("Dinov2Model", "Dinov2Config", image_size=224),
    "clip_vision": _hf_image("CLIPVisionModel", "CLIPVisionConfig"),
}


def _zero_dropout_config(config) -> None:
    """Every dropout probability of a transformers config set to 0."""
    for key, value in list(vars(config).items()):
        if ("dropout" in key or key.endswith("_pdrop") or "drop_prob" in key) and isinstance(
            value, float
        ):
            setattr(config, key, 0.0)


def _build_timm(model: str, batch: int):
    import timm
    import torch

    m = timm.create_model(model, pretrained=False)
    size = m.pretrained_cfg.get("input_size", (3, 224, 224))
    return m, (torch.randn(batch, *size),)


def _build_tv(model: str, batch: int):
    import torch
    import torchvision

    m = (
        torchvision.models.get_model(model, weights=None, weights_backbone=None)
        if ("deeplab" in model or "fcn" in model or "lraspp" in model)
        else torchvision.models.get_model(model, weights=None)
    )
    size = 520 if "deeplab" in model or "fcn" in model or "lraspp" in model else 224
    if model == "vit_b_16" or model.startswith("maxvit"):
        size = 224
    return m, (torch.randn(batch, 3, size, size),)


def _train_build(name: str, batch: int, dropout: bool):
    """A training row's module (returning its scalar loss) and inputs."""
    import torch
    import transformers

    name = name.removesuffix("_f32")
    if name.startswith("gpt2"):
        c = transformers.GPT2Config(n_layer=4)
        if not dropout:
            _zero_dropout_config(c)
        return _LmLoss(transformers.GPT2LMHeadModel(c)), (_ids(c.vocab_size, batch, 512),)
    if name == "bert_mlm":
        c = transformers.BertConfig(num_hidden_layers=4)
        if not dropout:
            _zero_dropout_config(c)
        return _LmLoss(transformers.BertForMaskedLM(c)), (_ids(c.vocab_size, batch, 256),)
    if name == "llama":
        c = transformers.LlamaConfig(
            hidden_size=1024,
            intermediate_size=2816,
            num_hidden_layers=4,
            num_attention_heads=16,
            num_key_value_heads=4,
            vocab_size=32000,
        )
        return _LmLoss(transformers.LlamaForCausalLM(c)), (_ids(c.vocab_size, batch, 512),)
    timm_name = {
        "vit_small": "vit_small_patch16_224",
        "resnet50": "resnet50",
        "convnext_tiny": "convnext_tiny",
    }[name]
    m, (x,) = _build_timm(timm_name, batch)
    return _ClassifierLoss(m), (x, torch.randint(0, 1000, (batch,)))


def _lazy_module_classes():
    import torch

    class Kwargs(torch.nn.Module):
        """Calls the model with its inputs by keyword."""

        def __init__(self, model, keys):
            super().__init__()
            self.model = model
            self.keys = keys

        def forward(self, *args):
            return self.model(**dict(zip(self.keys, args)))

    class LmLoss(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, ids):
            return self.model(input_ids=ids, labels=ids).loss

    class ClassifierLoss(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x, target):
            return torch.nn.functional.cross_entropy(self.model(x), target)

    return Kwargs, LmLoss, ClassifierLoss


def _Kwargs(model, keys):
    return _lazy_module_classes()[0](model, keys)


def _LmLoss(model):
    return _lazy_module_classes()[1](model)


def _ClassifierLoss(model):
    return _lazy_module_classes()[2](model)


def _attention_block(causal: bool):
    """``softmax((q @ k^T) / sqrt(d)) @ v`` written out, as people write it (the
    issue's 0.43x row: coil had no attention rewrite)."""
    import math

    import torch

    class Attention(torch.nn.Module):
        def __init__(self, dim: int = 1024, heads: int = 16, seq: int = 512):
            super().__init__()
            self.heads = heads
            self.qkv = torch.nn.Linear(dim, 3 * dim)
            self.proj = torch.nn.Linear(dim, dim)
            self.register_buffer("mask", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(c // self.heads)
            if causal:
                scores = scores.masked_fill(~self.mask[:t, :t], float("-inf"))
            y = torch.softmax(scores, dim=-1) @ v
            return self.proj(y.transpose(1, 2).reshape(b, t, c))

    return Attention()


def build(entry: Entry, dropout: bool = False):
    """``entry``'s module (f32, CPU) and inputs (CPU)."""
    zoo, model = entry.name.split(":", 1)
    if zoo == "timm":
        return _build_timm(model, entry.batch)
    if zoo == "tv":
        return _build_tv(model, entry.batch)
    if zoo == "hf":
        return HF_BUILD[model](entry.batch, dropout)
    if zoo == "train":
        return _train_build(model, entry.batch, dropout)
    if zoo == "hand":
        import torch

        return _attention_block(model == "attention_causal"), (torch.randn(entry.batch, 512, 1024),)
    raise ValueError(f"unknown zoo {zoo!r}")


def _reinit_zero_heads(module) -> int:
    """Re-initialize every linear/1x1-conv weight that is all zeros (timm's
    zero-init heads): the output of a random-weight model must not be zero."""
    import torch

    n = 0
    for m in module.modules():
        if isinstance(m, torch.nn.Linear | torch.nn.Conv2d) and m.weight.numel() > 0:
            if not bool(m.weight.detach().any()):
                torch.nn.init.normal_(m.weight, std=0.02)
                n += 1
    return n


def _reset_parameters(module) -> int:
    """torch's default initialization for every layer that has one."""
    n = 0
    for m in module.modules():
        if hasattr(m, "reset_parameters"):
            m.reset_parameters()
            n += 1
    return n


def main_output(out):
    """The tensor to compare: a tensor, else logits / last hidden state / 'out'."""
    import torch

    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, dict) and "out" in out:
        return out["out"]
    for key in ("logits", "last_hidden_state"):
        value = getattr(out, key, None)
        if value is not None:
            return value
    if isinstance(out, tuple | list):
        return main_output(out[0])
    return out[0]


# ---------------------------------------------------------------------------
# One model (the child process)
# ---------------------------------------------------------------------------


class _CoilLog(logging.Handler):
    """Collects coil's "no loop lowering for <op>" lines."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.ops: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        m = re.search(r"no loop lowering for (\S+)", record.getMessage())
        if m:
            self.ops.add(m.group(1))


def _rel_err(out, ref) -> float:
    out, ref = out.double(), ref.double()
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))


def _bench(fn) -> float:
    import triton.testing

    return triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median")


def _peak_mb(fn) -> float:
    import torch

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


def _first_call(fn):
    import torch

    torch.cuda.synchronize()
    t = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return out, time.perf_counter() - t


def _profile(fn, calls: int = 5) -> dict:
    """GPU kernel ms and launches per call, and the top kernels, of ``fn``."""
    import torch

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    per: dict[str, list[float]] = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            per.setdefault(e.name, []).append(e.device_time_total / 1e3)
    ranked = sorted(per.items(), key=lambda kv: -sum(kv[1]))
    return {
        "kernel_ms": sum(sum(v) for v in per.values()) / calls,
        "launches": sum(len(v) for v in per.values()) / calls,
        "top": [(k[:100], sum(v) / calls, len(v) / calls) for k, v in ranked[:10]],
    }


class _GpuLock:
    """A readers-writer lock on this process's GPU, shared by the sweep's
    processes (file locks): every run of a model outside the timing holds it
    shared, the timing holds it exclusively, so nothing else runs on the GPU
    while a process times (two processes' kernels time-slice the GPU: the first
    sweep without this measured vit_small at 12.2 ms eager and deit_small, the
    same network, at 8.5). Compiles run outside it: Dynamo and the backends
    trace on fake tensors, and the compiled callables' runs (their first run
    benchmarks kernel configs) take the shared lock themselves. A turnstile
    keeps new readers out while a writer waits, so timing is never starved."""

    def __init__(self):
        gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
        self.turnstile = open(f"/tmp/coil-sweep-gpu{gpu}.turn", "a")
        self.rw = open(f"/tmp/coil-sweep-gpu{gpu}.rw", "a")
        self.depth = 0  # shared sections entered (nested ones take nothing)
        self.exclusive_held = False
        self.waited = 0.0

    @contextlib.contextmanager
    def shared(self):
        if self.exclusive_held or self.depth:
            self.depth += 1
            try:
                yield
            finally:
                self.depth -= 1
            return
        t = time.perf_counter()
        fcntl.flock(self.turnstile, fcntl.LOCK_EX)
        fcntl.flock(self.rw, fcntl.LOCK_SH)
        fcntl.flock(self.turnstile, fcntl.LOCK_UN)
        self.waited += time.perf_counter() - t
        self.depth = 1
        try:
            yield
        finally:
            self.depth = 0
            fcntl.flock(self.rw, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def exclusive(self):
        assert not self.depth, "the timing runs outside every shared section"
        t = time.perf_counter()
        fcntl.flock(self.turnstile, fcntl.LOCK_EX)
        fcntl.flock(self.rw, fcntl.LOCK_EX)
        self.waited += time.perf_counter() - t
        self.exclusive_held = True
        try:
            yield
        finally:
            self.exclusive_held = False
            fcntl.flock(self.rw, fcntl.LOCK_UN)
            fcntl.flock(self.turnstile, fcntl.LOCK_UN)


GPU: _GpuLock | None = None  # the child's lock (created in run_one)


def run_one(entry: Entry) -> dict:
    import torch

    global GPU
    GPU = _GpuLock()
    torch.manual_seed(0)
    torch._dynamo.config.cache_size_limit = 64
    coil_log = _CoilLog()
    logging.getLogger("coil").addHandler(coil_log)
    caught: list[str] = []
    show = warnings.showwarning

    def record(message, category, filename, lineno, file=None, line=None):
        text = str(message)
        if "runs in eager PyTorch" in text:
            caught.append(text)
        show(message, category, filename, lineno, file, line)

    warnings.showwarning = record
    # Always for coil's own fallback warning only: "always" for every
    # UserWarning made each call print the warnings ATen raises on every call
    # (TORCH_WARN, shown once under the default filter) and timed that
    # printing: inception_next_tiny measured 6.7 ms for coil and 9.5 for eager
    # here against 3.3 and 6.6 ms of host time per call in host_profile.py.
    warnings.filterwarnings("always", message="coil: could not compile", category=UserWarning)
    row: dict = {}
    t0 = time.perf_counter()
    run = _run_optimizer if entry.optimizer else _run_train if entry.train else _run_inference
    row.update(run(entry))
    row["fallback_ops"] = ";".join(sorted(coil_log.ops))
    row["eager_graphs"] = len(caught)
    row["eager_cause"] = caught[0][:300] if caught else ""
    row["wall_s"] = round(time.perf_counter() - t0, 1)
    row["lock_wait_s"] = round(GPU.waited, 1)
    return row


def _counting(backend: str, graphs: dict):
    """``backend``'s compile function, counting its graphs in ``graphs`` and
    running each compiled graph under the shared GPU lock."""

    def compile_fn(gm, example_inputs):
        graphs[backend] = graphs.get(backend, 0) + 1
        if backend == "coil":
            from coil.backend import coil

            compiled = coil(gm, example_inputs)
        else:
            from torch._inductor.compile_fx import compile_fx

            compiled = compile_fx(gm, example_inputs)

        def run(*args):
            with GPU.shared():  # a no-op while this process times
                return compiled(*args)

        return run

    return compile_fn


def _variants(m, graphs: dict):
    import torch

    torch._dynamo.reset()
    return {
        "eager": m,
        "inductor": torch.compile(m, backend=_counting("inductor", graphs)),
        "coil": torch.compile(m, backend=_counting("coil", graphs)),
    }


def _time_and_profile(runs: dict, call, row: dict) -> dict:
    """Step 3 (and 5 where coil is slower), holding the GPU lock."""
    profiles = {}
    with GPU.exclusive():
        for name, f in runs.items():
            row[f"{name}_peak_mb"] = _peak_mb(lambda f=f: call(f))
        row["call_warnings"] = _call_warnings(runs, call)
        # Two rounds in opposite orders, each variant's lower median kept: a
        # transient of the machine then cannot fall on one variant alone.
        for order in (list(runs), list(reversed(runs))):
            for name in order:
                ms = _bench(lambda f=runs[name]: call(f))
                row[f"{name}_ms"] = min(ms, row.get(f"{name}_ms", ms))
        if row["coil_ms"] > row["inductor_ms"]:
            for name in ("inductor", "coil"):
                profiles[name] = _profile(lambda f=runs[name]: call(f))
                row[f"{name}_gpu_ms"] = profiles[name]["kernel_ms"]
                row[f"{name}_launches"] = profiles[name]["launches"]
    return profiles


def _call_warnings(runs: dict, call) -> str:
    """The warnings one call of each variant raises (a compiled call should
    raise none): each is host time on every call even where the default
    filter shows it once (ATen's TORCH_WARN converts to a Python warning per
    call). ``eager:N;inductor:N;coil:N`` and the first distinct messages."""
    counts, seen = [], []
    for name, f in runs.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call(f)
        counts.append(f"{name}:{len(caught)}")
        for w in caught:
            text = f"{name}: {w.category.__name__}: {str(w.message).splitlines()[0][:120]}"
            if text not in seen and len(seen) < 3:
                seen.append(text)
    return ";".join(counts) + (" | " + " / ".join(seen) if seen else "")


def _run_inference(entry: Entry) -> dict:
    import torch

    module, inputs = build(entry)
    row: dict = {"reinit_heads": _reinit_zero_heads(module)}
    # The bf16 copy is taken before the reference runs: some models cache
    # tensors at their first call (attention-bias tables, relative indices)
    # in the dtype of that call.
    pristine = copy.deepcopy(module)
    module = module.eval().cuda()
    inputs = tuple(x.cuda() for x in inputs)
    args = tuple(x.to(torch.bfloat16) if x.is_floating_point() else x for x in inputs)
    with torch.no_grad():
        with GPU.shared():
            ref = main_output(module(*inputs)).float()
            if float(ref.abs().max()) < 1e-6:
                # Vanishing activations (HF MobileViT's initializer gives outputs
                # of 1e-40): every layer back to torch's default initialization.
                row["reset_parameters"] = _reset_parameters(pristine)
                module = copy.deepcopy(pristine).eval().cuda()
                ref = main_output(module(*inputs)).float()
            if float(ref.abs().max()) < 1e-6:
                raise RuntimeError("the f32 reference output is all zeros")
        del module
        m = pristine.to(torch.bfloat16).eval().cuda()
        graphs: dict = {}
        runs = _variants(m, graphs)

        def call(f):
            return main_output(f(*args))

        for name, f in runs.items():
            # Compiling runs outside the lock; the compiled runs take it.
            with GPU.shared() if name == "eager" else contextlib.nullcontext():
                out, row[f"{name}_first_s"] = _first_call(lambda f=f: call(f))
            with GPU.shared():
                row[f"{name}_err"] = _rel_err(out, ref)
            del out
        row["graphs"] = graphs.get("coil", 0)
        row["inductor_graphs"] = graphs.get("inductor", 0)
        row["profiles"] = _time_and_profile(runs, call, row)
    return row


def _run_train(entry: Entry) -> dict:
    """A training row: ``train_step.train_row`` (shared with models.py) on the
    GPU, its device uses under the shared lock, timed and profiled by
    ``_time_and_profile``."""
    from train_step import train_row

    counted: list[dict] = []

    def variants(module):
        counted.append({})
        return _variants(module, counted[-1])

    row = train_row(
        lambda dropout: build(entry, dropout=dropout),
        amp=entry.amp,
        device="cuda",
        variants=variants,
        first_call=_first_call,
        timer=_time_and_profile,
        shared=GPU.shared,
    )
    row["graphs"] = counted[-1].get("coil", 0)  # the timed variants' graphs
    row["inductor_graphs"] = counted[-1].get("inductor", 0)
    return row


def _run_optimizer(entry: Entry) -> dict:
    """The optimizer row: ``train_step.optimizer_row`` over GPT-2 small's
    parameters, compiled through the same counting backends as the other rows."""
    import torch
    import transformers
    from train_step import optimizer_row

    graphs: dict = {}
    torch.manual_seed(0)
    module = transformers.GPT2LMHeadModel(transformers.GPT2Config())
    row = optimizer_row(
        module,
        device="cuda",
        backends=("eager", "inductor", "coil"),
        compile=lambda step, name: torch.compile(step, backend=_counting(name, graphs)),
        first_call=_first_call,
        timer=_time_and_profile,
        shared=GPU.shared,
    )
    row["graphs"] = graphs.get("coil", 0)
    row["inductor_graphs"] = graphs.get("inductor", 0)
    return row


def child(name: str, result: Path) -> int:
    entry = ENTRIES[name]
    try:
        row = run_one(entry)
        row["status"] = "ok"
    except Exception as e:  # a failing model is a row, not a crash
        traceback.print_exc()
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
        row = {"status": "ERROR", "error": f"{type(e).__name__}: {first}"}
    import torch

    row["device"] = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    result.write_text(json.dumps(row))
    return 0


# ---------------------------------------------------------------------------
# The scheduler
# ---------------------------------------------------------------------------

COLUMNS = [
    "commit",
    "name",
    "family",
    "kind",
    "batch",
    "status",
    "eager_ms",
    "inductor_ms",
    "coil_ms",
    "vs_inductor",
    "vs_eager",
    "eager_peak_mb",
    "inductor_peak_mb",
    "coil_peak_mb",
    "inductor_first_s",
    "coil_first_s",
    "eager_err",
    "inductor_err",
    "coil_err",
    "graphs",
    "inductor_graphs",
    "eager_graphs",
    "fallback_ops",
    "eager_cause",
    "error",
    "device",
    "wall_s",
    "lock_wait_s",
    "call_warnings",
    "inductor_gpu_ms",
    "coil_gpu_ms",
    "inductor_launches",
    "coil_launches",
]


def _status(row: dict) -> str:
    if row.get("status") != "ok":
        return row.get("status", "ERROR")
    c, i, e = row["coil_err"], row["inductor_err"], row["eager_err"]
    if c != c or c > max(2 * max(i, e), 1e-2):
        return "WRONG"
    if row.get("eager_graphs"):
        return "EAGER"
    return "ok"


def _csv_row(commit: str, entry: Entry, row: dict) -> dict:
    out = {k: row.get(k, "") for k in COLUMNS}
    out.update(
        commit=commit,
        name=entry.name,
        family=entry.family,
        kind=kind_of(entry),
        batch=entry.batch,
        status=_status(row),
    )
    if row.get("status") == "ok":
        out["vs_inductor"] = row["inductor_ms"] / row["coil_ms"]
        out["vs_eager"] = row["eager_ms"] / row["coil_ms"]
    for k, v in out.items():
        if isinstance(v, float):
            out[k] = f"{v:.4g}"
    return out


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open() as fh:
        return list(csv.DictReader(fh))


def write_rows(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="") as fh:
        # LF rows (csv's default is CRLF): a re-written CSV diffs by the rows
        # that changed, not by every line.
        w = csv.DictWriter(fh, COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    tmp.replace(path)


def _commit() -> str:
    if os.environ.get("SWEEP_COMMIT"):
        return os.environ["SWEEP_COMMIT"]
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=HERE,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _format_profiles(name: str, profiles: dict) -> str:
    lines = []
    for backend, p in profiles.items():
        lines.append(
            f"== {name} / {backend}: GPU kernels {p['kernel_ms']:.3f} ms, "
            f"{p['launches']:.0f} launches per call"
        )
        lines += [f"  {ms:8.3f} ms {n:5.0f}x  {k}" for k, ms, n in p["top"]]
    return "\n".join(lines)


QUIET = "-quiet"
"""Suffix of the commit key of rows re-timed by ``--retime``."""


def _slow(r: dict) -> bool:
    """A timed row below Inductor or eager."""
    if r["status"] == "ERROR" or not r.get("vs_inductor"):
        return False
    return float(r["vs_inductor"]) < 1.0 or float(r["vs_eager"]) < 1.0


def schedule(args) -> int:
    commit = args.commit or _commit()
    rows = read_rows(args.csv)
    names = args.only or [n for n in ENTRIES if not args.filter or args.filter in n]
    if args.retime:
        # The rows of COMMIT that lost, run again at one process per GPU: with
        # 4-6 processes per GPU compiling on the host while one times, a
        # host-bound model's wall time grows with the load (the eighteenth
        # session's sweep: three rows at 0.66-0.87x loaded, 1.11-1.47x quiet).
        slow = {r["name"] for r in rows if r["commit"] == commit and _slow(r)}
        names = [n for n in names if n in slow]
        commit += QUIET
        args.jobs = args.gpus
    done = {r["name"] for r in rows if r["commit"] == commit}
    if not args.train:
        names = [n for n in names if not ENTRIES[n].train]
    pending = [n for n in names if n not in done]
    # Longest first (by the last wall time any commit recorded): the call's
    # tail is then short models filling the slots, not one long compile alone.
    last: dict[str, float] = {}
    for r in rows:
        if r.get("wall_s"):
            last[r["name"]] = float(r["wall_s"])
    typical = sum(last.values()) / len(last) if last else 0.0
    pending.sort(key=lambda n: -last.get(n, typical))
    print(f"sweep: commit {commit}: {len(pending)} to run, {len(names) - len(pending)} done")
    tmp = Path(args.workdir)
    tmp.mkdir(parents=True, exist_ok=True)
    log_path = (OUT or tmp) / "sweep.log"
    prof_path = (OUT or tmp) / "sweep-profiles.txt"
    start = time.monotonic()
    running: dict[str, tuple[subprocess.Popen, float, Path, Path]] = {}
    slot = 0
    threads = max(1, (os.cpu_count() or 2) // max(1, args.jobs))
    while pending or running:
        elapsed = time.monotonic() - start
        while pending and len(running) < args.jobs and elapsed < args.deadline - args.last_start:
            name = pending.pop(0)
            result = tmp / (name.replace(":", "_") + ".json")
            result.unlink(missing_ok=True)
            log = tmp / (name.replace(":", "_") + ".log")
            env = dict(os.environ)
            env["CUDA_VISIBLE_DEVICES"] = str(slot % args.gpus)
            env["TORCHINDUCTOR_COMPILE_THREADS"] = str(threads)
            env.setdefault("PYTHONUNBUFFERED", "1")
            slot += 1
            with log.open("w") as fh:
                proc = subprocess.Popen(
                    [sys.executable, __file__, "--child", name, "--result", str(result)],
                    stdout=fh,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            running[name] = (proc, time.monotonic(), result, log)
            print(f"sweep: start {name} on GPU {env['CUDA_VISIBLE_DEVICES']}", flush=True)
        for name, (proc, began, result, log) in list(running.items()):
            over = time.monotonic() - start > args.deadline
            timed_out = time.monotonic() - began > args.timeout
            if proc.poll() is None and not (over or timed_out):
                continue
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            del running[name]
            text = log.read_text(errors="replace")
            with log_path.open("a") as fh:
                fh.write(f"\n===== {name} (exit {proc.returncode})\n{text[-20000:]}")
            if over and not result.exists():
                print(f"sweep: {name} stopped at the deadline (runs again next call)")
                continue
            if result.exists():
                row = json.loads(result.read_text())
            else:
                why = "timed out" if timed_out else f"exit {proc.returncode}"
                tail = [ln for ln in text.strip().splitlines() if ln.strip()][-1:] or [""]
                row = {"status": "ERROR", "error": f"process {why}: {tail[0][:200]}"}
            entry = ENTRIES[name]
            if row.get("profiles"):
                with prof_path.open("a") as fh:
                    fh.write(_format_profiles(name, row["profiles"]) + "\n")
            csv_row = _csv_row(commit, entry, row)
            rows = [
                r for r in read_rows(args.csv) if not (r["commit"] == commit and r["name"] == name)
            ]
            rows.append(csv_row)
            write_rows(args.csv, rows)
            print(
                f"sweep: {name}: {csv_row['status']} vs inductor {csv_row['vs_inductor']} "
                f"vs eager {csv_row['vs_eager']} {csv_row['error']}",
                flush=True,
            )
        if not pending and not running:
            break
        if time.monotonic() - start > args.deadline and not running:
            break
        if pending and time.monotonic() - start >= args.deadline - args.last_start and not running:
            print(f"sweep: deadline: {len(pending)} not started (run again to continue)")
            break
        time.sleep(1)
    if OUT is not None:
        (OUT / "sweep.csv").write_text(args.csv.read_text())
        (OUT / "sweep.md").write_text(table(read_rows(args.csv), commit))
    print(table(read_rows(args.csv), commit))
    return 0


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def _training_summary(rows: list[dict]) -> list[str]:
    """The training issue's numbers: geomean and range of coil/Inductor over the
    training and optimizer rows, rows slower than eager, peaks over Inductor's."""
    timed = [r for r in rows if r["kind"] != "infer-bf16" and r["status"] not in ("ERROR", "")]
    if not timed:
        return []
    ratios = [float(r["vs_inductor"]) for r in timed]
    slower = [r["name"] for r in timed if float(r["vs_eager"]) < 1.0]
    over = [
        r["name"]
        for r in timed
        if float(r["coil_peak_mb"]) > 1.05 * float(r["inductor_peak_mb"]) + 1
    ]
    return [
        f"training ({len(timed)} rows: train-amp, train-f32, optim-f32) geomean coil/Inductor "
        f"{_geomean(ratios):.3f}x, range {min(ratios):.2f}x-{max(ratios):.2f}x, "
        f"{sum(x < 0.95 for x in ratios)} below 0.95x; slower than eager: "
        f"{', '.join(slower) or 'none'}; peak above Inductor's +5 %: {', '.join(over) or 'none'}",
    ]


def table(rows: list[dict], commit: str) -> str:
    """The Markdown table of one commit's rows, with the summary the issue asks for;
    a row re-timed quietly (``--retime``) replaces the one timed under load
    (its status says ``(quiet)``)."""
    quiet = {r["name"]: r for r in rows if r["commit"] == commit + QUIET}
    rows = [quiet.get(r["name"], r) for r in rows if r["commit"] == commit]
    rows.sort(key=lambda r: (r["kind"], float(r["vs_inductor"] or 0)))
    lines = [
        "| model | family | kind | eager ms | inductor ms | coil ms | vs inductor | vs eager | "
        "peak MB eager / inductor / coil | first s inductor / coil | err inductor / coil | "
        "graphs | ATen fallbacks | status |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["status"] == "ERROR":
            lines.append(
                f"| {r['name']} | {r['family']} | {r['kind']} | "
                + " |" * 10
                + f" ERROR: {r['error']} |"
            )
            continue
        lines.append(
            f"| {r['name']} | {r['family']} | {r['kind']} | {r['eager_ms']} | {r['inductor_ms']} "
            f"| {r['coil_ms']} | {float(r['vs_inductor']):.2f}x | {float(r['vs_eager']):.2f}x | "
            f"{float(r['eager_peak_mb']):.0f} / {float(r['inductor_peak_mb']):.0f} / "
            f"{float(r['coil_peak_mb']):.0f} | {r['inductor_first_s']} / {r['coil_first_s']} | "
            f"{r['inductor_err']} / {r['coil_err']} | {r['graphs']} | "
            f"{r['fallback_ops'].replace(';', ', ')} | {r['status']}"
            f"{' (quiet)' if r['commit'].endswith(QUIET) else ''} |"
        )
    infer = [r for r in rows if r["kind"] == "infer-bf16" and r["status"] != "ERROR"]
    ratios = [float(r["vs_inductor"]) for r in infer]
    ops = sorted({op for r in rows for op in r["fallback_ops"].split(";") if op})
    over_mem = [
        r["name"]
        for r in infer
        if float(r["coil_peak_mb"]) > 1.05 * float(r["inductor_peak_mb"]) + 1
    ]
    summary = [
        "",
        f"commit {commit}: {len(rows)} rows ({len(infer)} inference timed, "
        f"{sum(r['status'] == 'ERROR' for r in rows)} errors, "
        f"{sum(r['status'] == 'WRONG' for r in rows)} wrong, "
        f"{sum(r['status'] == 'EAGER' for r in rows)} with graphs run eagerly; "
        f"{len(quiet)} re-timed quietly)",
        f"inference geomean coil/Inductor {_geomean(ratios):.3f}x, range "
        f"{min(ratios, default=float('nan')):.2f}x-{max(ratios, default=float('nan')):.2f}x; "
        f"{sum(x < 1.0 for x in ratios)} below 1.0x, {sum(x < 0.9 for x in ratios)} below 0.9x; "
        f"slower than eager: {sum(float(r['vs_eager']) < 1.0 for r in infer)}",
        f"peak memory above Inductor's +5 %: {', '.join(over_mem) or 'none'}",
        *_training_summary(rows),
        f"distinct ATen-fallback ops: {len(ops)} ({', '.join(ops)})",
    ]
    summary += _losses(infer)
    warned = [f"{r['name']} ({r['call_warnings']})" for r in rows if _coil_warns(r)]
    if warned:
        summary.append(f"coil calls raising warnings every call: {'; '.join(warned)}")
    return "\n".join(lines + summary) + "\n"


def _losses(rows: list[dict]) -> list[str]:
    """The rows below Inductor, split by their profiles (the GPU kernel time of a
    call, profiled where coil was slower: columns ``*_gpu_ms``, empty in rows
    swept before them): coil's kernels no slower than Inductor's (the loss is
    host time: launches, wrappers, guards) or slower (a kernel to find in
    ``sweep-profiles.txt``)."""
    host, kernels = [], []
    for r in rows:
        if float(r["vs_inductor"]) >= 1.0 or not r.get("coil_gpu_ms"):
            continue
        coil, ind = float(r["coil_gpu_ms"]), float(r["inductor_gpu_ms"])
        launches = f"{float(r['coil_launches']):.0f} / {float(r['inductor_launches']):.0f} launches"
        text = f"{r['name']} ({coil:.3f} / {ind:.3f} ms, {launches})"
        (host if coil <= ind * 1.02 else kernels).append(text)
    if not host and not kernels:
        return []
    return [
        "below Inductor, GPU kernels coil / Inductor per call: "
        f"kernels no slower (host time) {', '.join(host) or 'none'}; "
        f"kernels slower {', '.join(kernels) or 'none'}"
    ]


def _coil_warns(row: dict) -> bool:
    """Whether one compiled coil call of ``row`` raised a warning (column
    ``call_warnings``, empty in rows swept before it existed)."""
    m = re.search(r"(?:^|;)coil:(\d+)", row.get("call_warnings") or "")
    return bool(m and int(m.group(1)))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--list", action="store_true", help="print the model names and exit")
    p.add_argument("--table", action="store_true", help="print the CSV's table and exit")
    p.add_argument("--only", nargs="*", help="these models (zoo:name)")
    p.add_argument("--filter", help="models whose name contains this")
    p.add_argument("--no-train", dest="train", action="store_false", help="skip training rows")
    p.add_argument("--jobs", type=int, default=4, help="processes at once")
    p.add_argument(
        "--retime",
        action="store_true",
        help="re-time this commit's rows below Inductor or eager, one process per GPU "
        "(rows keyed COMMIT-quiet; the table prefers them)",
    )
    p.add_argument("--gpus", type=int, default=1, help="GPUs to spread them over")
    p.add_argument("--deadline", type=float, default=540, help="seconds: stop by then")
    p.add_argument("--last-start", type=float, default=150, help="no new model this close to it")
    p.add_argument("--timeout", type=float, default=480, help="seconds per model")
    p.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    p.add_argument("--commit", help="key of the rows (default: git HEAD or $SWEEP_COMMIT)")
    p.add_argument("--workdir", default="/tmp/coil-sweep")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.list:
        for e in ENTRIES.values():
            kind = kind_of(e)
            print(f"{e.name:40s} {kind:10s} batch {e.batch:3d}  {e.family}")
        return 0
    if args.table:
        print(table(read_rows(args.csv), args.commit or _commit()))
        return 0
    if args.child:
        return child(args.child, args.result)
    unknown = [n for n in args.only or [] if n not in ENTRIES]
    if unknown:
        p.error(f"unknown model(s) {', '.join(unknown)} (see --list)")
    return schedule(args)


if __name__ == "__main__":
    sys.exit(main())
