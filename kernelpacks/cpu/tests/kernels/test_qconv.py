"""int8 convolution and linear layers: bit-exact against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import both, one_op

from cuvil_ref.ops import qarith


def _requant_attrs(o: int, rng: np.random.Generator) -> dict:
    ratios = rng.uniform(1e-4, 5e-3, o)
    mults, shifts = qarith.quantize_multipliers(list(ratios))
    return {"multiplier": tuple(int(m) for m in mults), "shift": tuple(int(s) for s in shifts),
            "out_scale": 0.05, "out_zp": 3, "qmin": -128, "qmax": 127}  # fmt: skip


@pytest.mark.parametrize(
    "c,o,k,stride,pad,groups",
    [(3, 16, 7, 2, 3, 1), (64, 70, 3, 1, 1, 1), (130, 64, 1, 1, 0, 1), (8, 12, 3, 2, 1, 2),
     (24, 24, 3, 1, 1, 24), (24, 24, 3, 2, 1, 24)],
)  # fmt: skip
def test_qconv2d_bit_exact(c: int, o: int, k: int, stride: int, pad: int, groups: int,
                           rng: np.random.Generator) -> None:  # fmt: skip
    x = rng.integers(-128, 128, (2, c, 9, 9)).astype(np.int8)
    w = rng.integers(-127, 128, (o, c // groups, k, k)).astype(np.int8)
    bias = rng.integers(-5000, 5000, o).astype(np.int32)
    graph, ins = one_op("qconv2d", [x], [w, bias], stride=(stride, stride),
                        padding=(pad,) * 4, dilation=(1, 1), groups=groups, x_zp=-7,
                        **_requant_attrs(o, rng))  # fmt: skip
    got, want = both(graph, ins)
    np.testing.assert_array_equal(got, want)


def test_qlinear_bit_exact_with_relu_bounds(rng: np.random.Generator) -> None:
    x = rng.integers(-128, 128, (5, 3, 300)).astype(np.int8)
    w = rng.integers(-127, 128, (70, 300)).astype(np.int8)
    attrs = _requant_attrs(70, rng)
    attrs["qmin"] = attrs["out_zp"]
    graph, ins = one_op("qlinear", [x], [w, None], x_zp=100, **attrs)
    got, want = both(graph, ins)
    np.testing.assert_array_equal(got, want)
