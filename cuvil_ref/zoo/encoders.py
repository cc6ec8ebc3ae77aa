"""Transformer encoders for int8 benchmarks: a BERT-like text encoder and a ViT-like image
classifier, written with plain tensor ops so every matmul, softmax, LayerNorm and GELU is its
own node.

* ``bert_like``: post-LN (BERT) encoder over float token embeddings ``[1, 128, 256]``: an
  embedding LayerNorm, then 4 layers of 4-head self-attention and a GELU MLP (hidden 1024).
* ``vit_like``: 16x16 patches of a 224x224 image (196 tokens of width 192, ViT-Tiny's
  geometry), a learned position embedding, 4 pre-LN layers (3 heads, MLP 768), a final
  LayerNorm, mean over tokens and a 10-class head.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

BERT_INPUT_SHAPE = (1, 128, 256)
VIT_INPUT_SHAPE = (1, 3, 224, 224)


class SelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.reshape(b, t, h, d // h).transpose(1, 2)
        k = k.reshape(b, t, h, d // h).transpose(1, 2)
        v = v.reshape(b, t, h, d // h).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d // h)
        ctx = torch.matmul(F.softmax(scores, dim=-1), v)
        return self.out(ctx.transpose(1, 2).reshape(b, t, d))


class EncoderLayer(nn.Module):
    def __init__(self, dim: int, heads: int, hidden: int, pre_norm: bool):
        super().__init__()
        self.pre_norm = pre_norm
        self.attn = SelfAttention(dim, heads)
        self.ln1 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.ln2 = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.pre_norm:
            x = x + self.attn(self.ln1(x))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class BertLike(nn.Module):
    def __init__(self, dim: int = 256, layers: int = 4, heads: int = 4, hidden: int = 1024):
        super().__init__()
        self.embed_ln = nn.LayerNorm(dim)
        self.layers = nn.ModuleList(
            EncoderLayer(dim, heads, hidden, pre_norm=False) for _ in range(layers)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed_ln(x)
        for layer in self.layers:
            x = layer(x)
        return x


class VitLike(nn.Module):
    def __init__(
        self,
        image: int = 224,
        patch: int = 16,
        dim: int = 192,
        layers: int = 4,
        heads: int = 3,
        hidden: int = 768,
        classes: int = 10,
    ):
        super().__init__()
        tokens = (image // patch) ** 2
        self.patch = nn.Conv2d(3, dim, patch, stride=patch)
        self.pos = nn.Parameter(0.02 * torch.randn(1, tokens, dim))
        self.layers = nn.ModuleList(
            EncoderLayer(dim, heads, hidden, pre_norm=True) for _ in range(layers)
        )
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = x + self.pos[:, : x.shape[1]]  # smaller images use the first positions
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x).mean(dim=1))


def bert_like() -> nn.Module:
    return BertLike()


def vit_like() -> nn.Module:
    return VitLike()
