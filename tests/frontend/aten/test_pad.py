"""Reflection and replication padding become constant-index gathers (negative pads crop)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.frontend.aten._compile import compile_and_compare


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize(
    ("shape", "pads"),
    [((2, 3, 7), (2, 3)), ((3, 5, 6), (1, 2, 3, 0)), ((1, 2, 4, 5, 6), (1, 1, 2, 0, 3, 2))],
)
def test_pads_match_torch(mode: str, shape: tuple[int, ...], pads: tuple[int, ...]) -> None:
    ops = compile_and_compare(lambda x: F.pad(x, pads, mode=mode), torch.randn(*shape))
    assert set(ops) <= {"index_select"}


def test_replicate_negative_pads_crop() -> None:
    compile_and_compare(lambda x: F.pad(x, (-1, 2, 1, -2), mode="replicate"), torch.randn(2, 5, 6))


def test_reflection_pad_too_large_is_refused_by_torch_too() -> None:
    with pytest.raises(RuntimeError):
        F.pad(torch.randn(1, 2, 3), (3, 0), mode="reflect")
