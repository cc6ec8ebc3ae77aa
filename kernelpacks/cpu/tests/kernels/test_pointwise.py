"""The team-parallel float32 add/sub/mul/div give numpy's bits, specials included."""

from __future__ import annotations

import numpy as np
import pytest
from cuvil_kernels_cpu.kernels import pointwise

UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}


@pytest.mark.parametrize("op", sorted(UFUNCS))
@pytest.mark.parametrize("scalar", [False, True])
def test_binary_f32_is_bit_identical_to_numpy(op: str, scalar: bool,
                                              rng: np.random.Generator) -> None:  # fmt: skip
    a = rng.standard_normal(pointwise.CHUNK * 2 + 77).astype(np.float32)
    a[:6] = [0.0, -0.0, np.inf, -np.inf, 1.0, -1.0]
    if scalar:
        b = np.array([np.float32(-0.0)], np.float32)
    else:
        b = rng.standard_normal(a.size).astype(np.float32)
        b[:6] = [0.0, 0.0, np.inf, 2.0, -0.0, 0.0]
    out = np.empty_like(a)
    pointwise.binary_f32(a, b, out, pointwise.CODES[op], np.zeros(1, np.int64))
    with np.errstate(all="ignore"):
        want = UFUNCS[op](a, b.reshape(()) if scalar else b)
    nan = np.isnan(want)
    assert (np.isnan(out) == nan).all()
    assert (out[~nan].view(np.int32) == want[~nan].view(np.int32)).all()
