"""PyTorch's own ``nn.TransformerEncoderLayer`` (batch_first): captured with ``capture="export"``.

``torch.fx.symbolic_trace`` cannot trace its forward (it branches on tensor properties), so the zoo
marks it export-only.
"""

from __future__ import annotations

from torch import nn

INPUT_SHAPE = (2, 10, 32)


def torch_encoder_layer() -> nn.Module:
    return nn.TransformerEncoderLayer(
        d_model=32, nhead=4, dim_feedforward=64, dropout=0.1, batch_first=True
    )
