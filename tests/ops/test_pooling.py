"""max/avg/adaptive pooling against torch: kernel/stride/padding/dilation/ceil_mode grids,
count_include_pad, divisor_override, odd sizes, 3-D inputs, NaN/Inf and integer inputs.
f32 tolerance: 1e-5 of the output's magnitude (max pooling is exact)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import get_op
from tests.ops._torch_compare import close, randn, run1, t

WINDOWS = [
    # kernel, stride, padding (torch's symmetric form)
    ((2, 2), (2, 2), (0, 0)),
    ((3, 3), (2, 2), (1, 1)),
    ((3, 2), (1, 2), (1, 0)),
    ((1, 1), (2, 1), (0, 0)),
    ((5, 4), (3, 2), (2, 2)),
]


def _with_specials(x: np.ndarray) -> np.ndarray:
    x = x.copy()
    flat = x.reshape(-1)
    flat[3], flat[17], flat[40] = np.nan, np.inf, -np.inf
    return x


@pytest.mark.parametrize(("k", "s", "p"), WINDOWS)
@pytest.mark.parametrize("ceil", [False, True])
@pytest.mark.parametrize("dilation", [(1, 1), (2, 1)])
@pytest.mark.parametrize("hw", [(7, 9), (8, 8)])
def test_max_pool2d_grid(
    k: tuple[int, int],
    s: tuple[int, int],
    p: tuple[int, int],
    ceil: bool,
    dilation: tuple[int, int],
    hw: tuple[int, int],
) -> None:
    x = randn(2, 3, *hw)
    attrs = {"kernel": k, "stride": s, "padding": p, "dilation": dilation, "ceil_mode": ceil}
    close(run1("max_pool2d", [x], attrs), F.max_pool2d(t(x), k, s, p, dilation, ceil))


def test_max_pool2d_nan_inf_3d_and_default_stride() -> None:
    x = _with_specials(randn(3, 6, 7))
    close(run1("max_pool2d", [x], {"kernel": (2, 2)}), F.max_pool2d(t(x), 2))
    close(
        run1("max_pool2d", [x], {"kernel": (3, 3), "stride": (1, 1), "padding": (1, 1)}),
        F.max_pool2d(t(x), 3, 1, 1),
    )
    neg = -np.abs(randn(1, 2, 5, 5)) - 1  # all-negative input: -inf padding must not win
    close(
        run1("max_pool2d", [neg], {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1)}),
        F.max_pool2d(t(neg), 3, 2, 1),
    )


def test_max_pool2d_integers_and_asymmetric_padding() -> None:
    x = np.random.default_rng(0).integers(-100, 100, (1, 2, 6, 7)).astype(np.int64)
    close(
        run1("max_pool2d", [x], {"kernel": (2, 3), "stride": (2, 2), "ceil_mode": True}),
        F.max_pool2d(t(x), (2, 3), 2, ceil_mode=True),
    )
    y = randn(1, 2, 6, 7)
    got = run1("max_pool2d", [y], {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 0, 0, 1)})
    want = F.max_pool2d(F.pad(t(y), (0, 1, 1, 0), value=-float("inf")), 3, 2)
    close(got, want)


@pytest.mark.parametrize(("k", "s", "p"), WINDOWS)
@pytest.mark.parametrize(("ceil", "include"), list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("hw", [(7, 9), (8, 8)])
def test_avg_pool2d_grid(
    k: tuple[int, int],
    s: tuple[int, int],
    p: tuple[int, int],
    ceil: bool,
    include: bool,
    hw: tuple[int, int],
) -> None:
    x = randn(2, 3, *hw)
    attrs = {
        "kernel": k,
        "stride": s,
        "padding": p,
        "ceil_mode": ceil,
        "count_include_pad": include,
    }
    close(run1("avg_pool2d", [x], attrs), F.avg_pool2d(t(x), k, s, p, ceil, include))


@pytest.mark.parametrize("divisor", [1, 5])
def test_avg_pool2d_divisor_override_and_specials(divisor: int) -> None:
    x = _with_specials(randn(2, 3, 7, 8))
    attrs = {
        "kernel": (3, 3),
        "stride": (2, 2),
        "padding": (1, 1),
        "ceil_mode": True,
        "divisor_override": divisor,
    }
    close(
        run1("avg_pool2d", [x], attrs), F.avg_pool2d(t(x), 3, 2, 1, True, divisor_override=divisor)
    )


def test_avg_pool2d_f16() -> None:
    x = randn(1, 4, 6, 6, dtype=np.float16)
    close(
        run1("avg_pool2d", [x], {"kernel": (3, 3), "stride": (1, 1), "padding": (1, 1)}),
        F.avg_pool2d(t(x), 3, 1, 1),
        rtol=1e-3,
    )


ADAPTIVE = [
    ((7, 7), (1, 1)),
    ((7, 9), (3, 4)),
    ((5, 5), (5, 5)),
    ((4, 6), (7, 9)),
    ((10, 3), (4, 2)),
    ((1, 1), (2, 3)),
]


@pytest.mark.parametrize(("hw", "out"), ADAPTIVE)
def test_adaptive_pools(hw: tuple[int, int], out: tuple[int, int]) -> None:
    x = randn(2, 3, *hw)
    close(run1("adaptive_avg_pool2d", [x], {"output_size": out}), F.adaptive_avg_pool2d(t(x), out))
    close(run1("adaptive_max_pool2d", [x], {"output_size": out}), F.adaptive_max_pool2d(t(x), out))


def test_adaptive_pools_specials_3d_zero_batch() -> None:
    x = _with_specials(randn(3, 9, 7))
    close(
        run1("adaptive_avg_pool2d", [x], {"output_size": (4, 3)}),
        F.adaptive_avg_pool2d(t(x), (4, 3)),
    )
    close(
        run1("adaptive_max_pool2d", [x], {"output_size": (4, 3)}),
        F.adaptive_max_pool2d(t(x), (4, 3)),
    )
    z = randn(0, 3, 4, 4)
    close(run1("adaptive_avg_pool2d", [z], {"output_size": (2, 2)}), F.adaptive_avg_pool2d(t(z), 2))
    close(run1("max_pool2d", [z], {"kernel": (2, 2)}), F.max_pool2d(t(z), 2))


def test_pooling_symbolic_batch() -> None:
    x = randn(3, 4, 9, 9)
    shapes = [("batch", 4, 9, 9)]
    close(
        run1(
            "max_pool2d",
            [x],
            {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1)},
            shapes=shapes,
        ),
        F.max_pool2d(t(x), 3, 2, 1),
    )
    close(run1("avg_pool2d", [x], {"kernel": (2, 2)}, shapes=shapes), F.avg_pool2d(t(x), 2))
    close(
        run1("adaptive_avg_pool2d", [x], {"output_size": (1, 1)}, shapes=shapes),
        F.adaptive_avg_pool2d(t(x), 1),
    )
    out = get_op("max_pool2d").infer_types([TensorType(("n", 4, 9, 9))], {"kernel": (3, 3)})
    assert out[0].shape == ("n", 4, 3, 3)


@pytest.mark.parametrize(
    ("op", "shape", "attrs", "match"),
    [
        ("max_pool2d", (1, 1, 4, 4), {"kernel": (2, 2), "padding": (2, 2)}, "half the kernel"),
        ("max_pool2d", (1, 1, 4, 4), {"kernel": (2,)}, "kernel"),
        ("avg_pool2d", (1, 1, 4, 4), {"kernel": (2, 2), "padding": (1, 1, 1)}, "padding"),
        ("max_pool2d", (1, 1, "h", 4), {"kernel": (2, 2)}, "symbolic"),
        ("max_pool2d", (4, 4), {"kernel": (2, 2)}, r"\[N,C,H,W\]"),
        ("max_pool2d", (1, 1, 1, 4), {"kernel": (2, 2)}, "does not fit"),
        ("adaptive_avg_pool2d", (1, 1, 4, 4), {"output_size": (0, 1)}, "positive"),
    ],
)
def test_pooling_infer_errors(op: str, shape: tuple, attrs: dict, match: str) -> None:
    with pytest.raises(ShapeError, match=match):
        get_op(op).infer_types([TensorType(shape)], attrs)


def test_torch_rejects_what_we_reject() -> None:
    with pytest.raises(RuntimeError):
        F.max_pool2d(torch.zeros(1, 1, 4, 4), 2, padding=2)


@pytest.mark.parametrize("hw", [(3, 3), (3, 5), (1, 2)])
def test_global_pool_kernel_larger_than_input_in_ceil_mode(hw: tuple[int, int]) -> None:
    """Regression (issue 11): AvgPool2d(kernel, ceil_mode=True) over a smaller input is a clipped
    global pool in torch, not an error."""
    x = randn(2, 3, *hw, seed=4)
    for op, fn in (("avg_pool2d", F.avg_pool2d), ("max_pool2d", F.max_pool2d)):
        got = run1(op, [x], {"kernel": (4, 6), "ceil_mode": True})
        close(got, fn(t(x), (4, 6), ceil_mode=True))
    got = run1(
        "avg_pool2d",
        [x],
        {
            "kernel": (4, 4),
            "stride": (1, 1),
            "padding": (2, 2),
            "ceil_mode": True,
            "count_include_pad": False,
        },
    )
    close(got, F.avg_pool2d(t(x), 4, 1, 2, ceil_mode=True, count_include_pad=False))


def test_avg_pool2d_integers_round_toward_zero() -> None:
    x = np.array([[[[-3, 0, -5, 0, 7, 0], [0, 0, 0, 0, 0, 1]]]], dtype=np.int64)
    for attrs, kw in (
        ({"kernel": (1, 2)}, {}),
        ({"kernel": (2, 2), "divisor_override": 3}, {"divisor_override": 3}),
    ):
        want = F.avg_pool2d(t(x), attrs["kernel"], **kw)
        close(run1("avg_pool2d", [x], attrs), want)
