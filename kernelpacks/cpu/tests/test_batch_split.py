"""Which partitions may run as sub-batches (``rebatch``'s proof, op by op) and what it builds."""

from __future__ import annotations

import pytest
import torch
from cuvil_kernels_cpu.batch_split import NotSplittable, rebatch, sub_batches
from torch import nn

from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.ir.graph import Graph


def _graph(fn: object, *shapes: tuple[int, ...]) -> Graph:
    class One(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(shapes[0][-1], 6)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return fn(self, x)  # type: ignore[operator]

    class Two(One):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
            return fn(self, x, y)  # type: ignore[operator]

    args = tuple(torch.randn(*s) for s in shapes)
    model = One() if len(shapes) == 1 else Two()
    return torch_to_cuvilir(model.eval(), example_inputs=args).graph


def test_a_per_image_graph_is_retyped_for_the_sub_batch() -> None:
    g = _graph(lambda m, x: torch.softmax(m.lin(torch.relu(x)).view(x.size(0), -1), dim=1),
               (4, 3, 5))  # fmt: skip
    sub = rebatch(g, 4, 1)
    assert sub.inputs[0].type.shape == (1, 3, 5)
    assert sub.outputs[0].type.shape == (1, 18)
    for node in sub.nodes:  # the spelled-out batch of the view became the sub-batch
        if node.op == "reshape":
            assert tuple(node.attrs["shape"])[0] in (1, -1)
    assert sub.constants is g.constants or dict(sub.constants).keys() == dict(g.constants).keys()


def test_batched_attention_matmuls_split() -> None:
    def attn(m: object, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ k

    sub = rebatch(_graph(attn, (4, 2, 8, 16), (4, 2, 8, 16)), 4, 2)
    assert sub.outputs[0].type.shape == (2, 2, 8, 16)


@pytest.mark.parametrize(
    ("fn", "shapes", "reason"),
    [
        (lambda m, x: torch.softmax(x, dim=0), [(4, 5)], "along the batch"),
        (lambda m, x: x - x.mean(dim=0, keepdim=True), [(4, 5)], "does not keep the batch"),
        (lambda m, x: x.sum(dim=0), [(4, 4)], "reduces over the batch"),  # (4,) by chance
        (lambda m, x: x.sum(dim=0), [(4, 5)], "does not keep the batch"),
        (lambda m, x: x.transpose(0, 1).contiguous().transpose(0, 1), [(4, 4)], "batch"),
        (lambda m, x: x @ x, [(4, 4)], "computed matrix"),
        (lambda m, x: torch.cat([x, x], dim=0), [(4, 5)], "batch"),
        (lambda m, x: x + torch.arange(20.0).reshape(4, 5), [(4, 5)], "per image"),
    ],
)
def test_an_op_that_mixes_images_declines_with_the_reason(fn, shapes, reason) -> None:  # type: ignore[no-untyped-def]
    g = _graph(fn, *shapes)
    with pytest.raises(NotSplittable, match=reason):
        rebatch(g, 4, 2)


def test_inputs_must_share_the_batch() -> None:
    g = _graph(lambda m, x, y: x * y.sum(), (4, 5), (3, 5))
    with pytest.raises(NotSplittable, match="dim 0"):
        rebatch(g, 4, 2)


def test_sub_batches_cover_the_batch_in_order() -> None:
    assert sub_batches(8, 8) == [(i, i + 1) for i in range(8)]
    assert sub_batches(5, 2) == [(0, 3), (3, 5)]
    assert sub_batches(3, 3) == [(0, 1), (1, 2), (2, 3)]
