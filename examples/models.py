"""The model set every coil stage is tested on: small, real PyTorch modules.

Each entry of :data:`MODELS` builds a fresh module and fresh random inputs, so a
test can compare coil with eager on exactly what a user would run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self, dim: int = 32, hidden: int = 64):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Softmax(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


class LogSoftmax(nn.Module):
    def forward(self, x):
        return torch.log_softmax(x, dim=-1)


class LayerNorm(nn.Module):
    def __init__(self, dim: int = 32):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(x)


class RMSNorm(nn.Module):
    def __init__(self, dim: int = 32, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim))
        self.eps = eps

    def forward(self, x):
        rms = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * rms * self.weight


class CrossEntropy(nn.Module):
    def forward(self, logits, target):
        return F.cross_entropy(logits, target)


class Attention(nn.Module):
    """Multi-head self-attention with explicit views, transposes and matmuls."""

    def __init__(self, dim: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)


class ConvBnRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class EmbeddingIndex(nn.Module):
    def __init__(self, vocab: int = 50, dim: int = 16):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)

    def forward(self, ids, rows):
        e = self.emb(ids)
        picked = e[:, rows]  # advanced indexing -> aten.index.Tensor
        gathered = torch.gather(e, 2, ids.unsqueeze(-1) % 16).squeeze(-1)
        return picked.sum(1) + e.mean(1), gathered * 2


class Dropout(nn.Module):
    def __init__(self, p: float = 0.25):
        super().__init__()
        self.p = p

    def forward(self, x):
        return F.dropout(x * 2, p=self.p, training=True)


class GPT2Block(nn.Module):
    """A GPT-2 transformer block: pre-norm causal attention + GELU MLP."""

    def __init__(self, dim: int = 32, heads: int = 4, seq: int = 16):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(
            nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim)
        )
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        b, t, c = x.shape
        h = self.ln_1(x)
        q, k, v = self.attn.qkv(h).split(c, dim=2)
        nh = self.attn.heads
        q = q.view(b, t, nh, c // nh).transpose(1, 2)
        k = k.view(b, t, nh, c // nh).transpose(1, 2)
        v = v.view(b, t, nh, c // nh).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        y = (att.softmax(dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.attn.proj(y)
        return x + self.mlp(self.ln_2(x))


class ResidualStack(nn.Module):
    """A LayerNorm, then ``depth`` transformer-style residual blocks without
    attention: post-norm (BERT: ``x = LN(x + f(x))``) or pre-norm (GPT-2:
    ``x = x + f(LN(x))``). Fusion must not let kernels grow with depth here."""

    def __init__(self, depth: int = 2, dim: int = 32, pre_norm: bool = False):
        super().__init__()
        self.pre_norm = pre_norm
        self.ln = nn.LayerNorm(dim)
        self.blocks = nn.ModuleList(
            nn.ModuleDict(
                {
                    "attn": nn.Linear(dim, dim),
                    "ln1": nn.LayerNorm(dim),
                    "up": nn.Linear(dim, 4 * dim),
                    "down": nn.Linear(4 * dim, dim),
                    "ln2": nn.LayerNorm(dim),
                }
            )
            for _ in range(depth)
        )

    def forward(self, x):
        x = self.ln(x)
        for b in self.blocks:
            if self.pre_norm:
                x = x + b["attn"](b["ln1"](x))
                x = x + b["down"](F.gelu(b["up"](b["ln2"](x))))
            else:
                x = b["ln1"](x + b["attn"](x))
                x = b["ln2"](x + b["down"](F.gelu(b["up"](x))))
        return x


@dataclass
class Case:
    name: str
    make: Callable[[], nn.Module]
    inputs: Callable[[], tuple[Any, ...]]
    random: bool = False  # output depends on the RNG: compare against the graph, not eager
    train: bool = False
    tags: tuple[str, ...] = field(default_factory=tuple)


def _ids() -> tuple[Any, ...]:
    return (torch.randint(0, 50, (4, 8)), torch.tensor([0, 3, 5]))


MODELS: dict[str, Case] = {
    c.name: c
    for c in [
        Case("mlp", MLP, lambda: (torch.randn(8, 32),)),
        Case("softmax", Softmax, lambda: (torch.randn(8, 64),)),
        Case("log_softmax", LogSoftmax, lambda: (torch.randn(8, 64),)),
        Case("layernorm", LayerNorm, lambda: (torch.randn(4, 8, 32),)),
        Case("rmsnorm", RMSNorm, lambda: (torch.randn(4, 8, 32),)),
        Case(
            "cross_entropy", CrossEntropy, lambda: (torch.randn(8, 10), torch.randint(0, 10, (8,)))
        ),
        Case("attention", Attention, lambda: (torch.randn(2, 16, 32),)),
        Case("conv_bn_relu", ConvBnRelu, lambda: (torch.randn(2, 3, 8, 8),)),
        Case("conv_bn_relu_train", ConvBnRelu, lambda: (torch.randn(2, 3, 8, 8),), train=True),
        Case("embedding_index", EmbeddingIndex, _ids),
        Case("dropout_train", Dropout, lambda: (torch.randn(16, 32),), random=True, train=True),
        Case("gpt2_block", GPT2Block, lambda: (torch.randn(2, 16, 32),)),
        Case("post_norm_stack", ResidualStack, lambda: (torch.randn(2, 16, 32),)),
    ]
}


def build(name: str) -> tuple[nn.Module, tuple[Any, ...]]:
    """A fresh model (in the case's train/eval mode) and fresh random inputs."""
    case = MODELS[name]
    model = case.make()
    model.train(case.train)
    return model, case.inputs()
