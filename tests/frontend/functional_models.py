"""Small models written the way people write PyTorch (not for Cuvil), shared by capture tests.

Each case is (name, model factory, input shapes). They use the ops of the v1 op list with their
usual arguments: F.conv2d with int/tuple/"same"/"valid" padding, F.pad, cat, chunk/split,
view/reshape with -1, x.size(i)/x.shape arithmetic, operator ops, flatten, mean(dim, keepdim),
softmax(dim=), transpose/permute, masked_fill, scalar constants, Identity/Dropout/Sequential.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F


class ConvPaddings(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 3, 3, 3) * 0.3)
        self.w2 = nn.Parameter(torch.randn(4, 4, 2, 2) * 0.3)
        self.b = nn.Parameter(torch.randn(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = F.conv2d(x, self.w, self.b, padding=1)
        b = F.conv2d(x, self.w, None, stride=(2, 1), padding=(0, 2), dilation=(1, 2))
        c = F.conv2d(a, self.w2, padding="same")
        d = F.conv2d(a, self.w2, padding="valid")
        e = F.pad(d, (1, 0, 0, 1), value=0.5)
        return torch.cat([c.flatten(1), b.reshape(b.shape[0], -1), e.view(e.size(0), -1)], dim=1)


class ShapeArithmetic(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(12, 12)
        self.drop = nn.Dropout(0.3)
        self.ident = nn.Identity()
        self.register_buffer("causal", torch.ones(5, 5).triu(1).bool())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.proj(self.ident(x))
        q, k = h.chunk(2, dim=-1)
        q = q.view(b, t, 2, d // 4).permute(0, 2, 1, 3)
        k = k.reshape(b, t, 2, -1).transpose(1, 2)
        s = torch.matmul(q, k.transpose(-1, -2)) * 0.5
        s = s.masked_fill(self.causal, float("-inf"))
        p = F.softmax(s, dim=-1)
        parts = torch.split(h, [4, 8], dim=2)
        m = parts[1].mean(dim=1, keepdim=True) - 1.0
        return self.drop(p.sum(-1)), 2 * m + parts[0][:, :1, :2].sum()


class Pooling(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.SiLU(), nn.MaxPool2d(3, 2, 1, ceil_mode=True)
        )

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        y = self.body(x)
        a = F.avg_pool2d(y, 2, count_include_pad=False, padding=1)
        g = F.adaptive_avg_pool2d(y, (2, 3))
        return [torch.flatten(a, 1), F.hardswish(g).amax(dim=(2, 3)), torch.sigmoid(y[:, 1])]


class Activations(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer(
            "positive", torch.tensor([True, False, True, True, False, True, False])
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.gelu(x) + F.gelu(x, approximate="tanh") + torch.tanh(x) + F.relu6(x * 4)
        y = y + F.leaky_relu(x, 0.2) + x.clamp(min=-0.5, max=0.5) + F.layer_norm(x, (x.shape[-1],))
        y = y - torch.exp(-x.abs()) + torch.sqrt(x * x + 1) / 3 + x.pow(2)
        return F.log_softmax(y, dim=1) + torch.where(self.positive, x, 0.1 * x)


class Indexing(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 6)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        idx = torch.arange(3)
        y = x[..., None, 1:5:2] + x[:, -1:, None, :2]
        z = torch.stack([x[:, 0], x[:, 1]], dim=1).unsqueeze(0).squeeze(0)
        return y.expand(-1, -1, 3, -1), z.index_select(2, idx) + self.emb.weight[:2, :3].sum()


CASES: list[tuple[str, Callable[[], nn.Module], list[tuple[int, ...]]]] = [
    ("conv_paddings", ConvPaddings, [(2, 3, 9, 10)]),
    ("shape_arithmetic", ShapeArithmetic, [(2, 5, 12)]),
    ("pooling", Pooling, [(2, 2, 11, 10)]),
    ("activations", Activations, [(3, 7)]),
    ("indexing", Indexing, [(2, 4, 6)]),
]


def make(factory: Callable[[], nn.Module]) -> nn.Module:
    torch.manual_seed(0)
    model = factory()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            nn.init.uniform_(m.running_mean, -0.5, 0.5)
            nn.init.uniform_(m.running_var, 0.5, 2.0)
    return model.eval()
