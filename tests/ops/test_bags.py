"""embedding_bag (sum/mean/max, offsets, include_last_offset, padding_idx, per-sample weights,
empty bags, NaN rows) and col2im (F.fold over kernel/dilation/padding/stride grids)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch.nn.functional as F

from cuvil_ref.errors import InterpretError
from tests.ops._torch_compare import close, randn, run1, t

WEIGHT = randn(10, 4, seed=1)
WEIGHT[3, 1] = np.nan  # max keeps a NaN only from a bag's first row


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize("pad", [None, 2])
def test_embedding_bag_matches_torch(mode: str, last: bool, pad: int | None) -> None:
    rng = np.random.default_rng(7)
    idx = rng.integers(0, 10, 9)
    idx[:2] = (3, 5)
    offsets = np.array([0, 2, 2, 5, 9] if last else [0, 2, 2, 5])  # bag 1 is empty
    psw = randn(9, seed=8) if mode == "sum" else None
    want = F.embedding_bag(
        t(idx),
        t(WEIGHT),
        t(offsets),
        mode=mode,
        include_last_offset=last,
        padding_idx=pad,
        per_sample_weights=None if psw is None else t(psw),
    )
    ins = [WEIGHT, idx, offsets] + ([psw] if psw is not None else [])
    got = run1(
        "embedding_bag", ins, {"mode": mode, "include_last_offset": last, "padding_idx": pad}
    )
    close(got, want)


def test_embedding_bag_checks_offsets_and_indices() -> None:
    with pytest.raises(InterpretError, match="offsets\\[0\\]"):
        run1("embedding_bag", [WEIGHT, np.array([1, 2]), np.array([1])], {"mode": "sum"})
    with pytest.raises(InterpretError, match="out of range"):
        run1("embedding_bag", [WEIGHT, np.array([10]), np.array([0])], {"mode": "sum"})


@pytest.mark.parametrize(
    ("kernel", "dilation", "padding", "stride"),
    list(itertools.product([(2, 2), (3, 1)], [(1, 1), (2, 1)], [(0, 0), (1, 2)], [(1, 1), (2, 3)])),
)
def test_col2im_matches_fold(kernel, dilation, padding, stride) -> None:  # noqa: ANN001
    out = (7, 8)
    blocks = [
        (out[i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
        for i in range(2)
    ]
    x = randn(2, 3 * kernel[0] * kernel[1], blocks[0] * blocks[1], seed=9)
    want = F.fold(t(x), out, kernel, dilation, padding, stride)
    attrs = {
        "output_size": out,
        "kernel": kernel,
        "dilation": dilation,
        "padding": padding,
        "stride": stride,
    }
    close(run1("col2im", [x], attrs), want)
    close(run1("col2im", [x[0]], attrs), F.fold(t(x[0]), out, kernel, dilation, padding, stride))
