"""The vectorizable float32 exp and gelu of the epilogues: accuracy and special values."""

from __future__ import annotations

import re

import numba
import numpy as np
from cuvil_kernels_cpu.kernels import mathf
from scipy.special import erfc


@numba.njit(error_model="numpy")
def _apply(x, out, which):  # type: ignore[no-untyped-def]
    for i in range(x.size):
        out[i] = mathf.exp_f32(x[i]) if which == 0 else mathf.gelu_f32(x[i])


def _eval(x: np.ndarray, which: int) -> np.ndarray:
    out = np.empty_like(x)
    _apply(x, out, which)
    return out


def test_exp_within_two_ulp_and_ieee_specials() -> None:
    x = np.linspace(-87, 88.5, 400_001).astype(np.float32)
    got = _eval(x, 0).astype(np.float64)
    want = np.exp(x.astype(np.float64))
    ulp = np.abs(got - want) / np.spacing(want.astype(np.float32)).astype(np.float64)
    assert ulp.max() <= 2.0
    special = np.array([np.inf, -np.inf, np.nan, 0.0, 89.0, -200.0], np.float32)
    out = _eval(special, 0)
    assert out[0] == np.inf and out[1] == 0 and np.isnan(out[2]) and out[3] == 1
    assert out[4] == np.inf and out[5] == 0


def test_gelu_absolute_error_and_specials() -> None:
    x = np.linspace(-20, 20, 400_001).astype(np.float32)
    got = _eval(x, 1).astype(np.float64)
    xd = x.astype(np.float64)
    want = xd * 0.5 * erfc(-xd / np.sqrt(2))
    # well inside the reduction bound of any fused layer (>= 2 eps = 2.4e-7 for K = 1)
    assert np.abs(got - want).max() <= 2e-6 * np.maximum(1, np.abs(want)).max()
    small = np.abs(want) > 1e-30
    rel = np.abs(got - want)[small & (x > -5)] / np.abs(want[small & (x > -5)])
    assert rel.max() < 1e-5
    out = _eval(np.array([np.inf, -np.inf, np.nan, -0.0], np.float32), 1)
    assert out[0] == np.inf and np.isnan(out[1]) and np.isnan(out[2]) and out[3] == 0


@numba.njit(nogil=True)
def _gelu_tile(a):  # type: ignore[no-untyped-def]
    mathf.activate_block(a, 0, 6, 0, 16, a, mathf.ACT_GELU, False)


def _gelu_tile_asm() -> str:
    """The compiled GELU of a 6 x 16 tile (a GEMM tile without AVX-512), as assembly."""
    _gelu_tile(np.zeros((6, 16), np.float32))
    return str(_gelu_tile.inspect_asm(_gelu_tile.signatures[0]))


def test_the_activation_of_a_16_column_tile_is_vectorized() -> None:
    """Inlined with a constant 16 columns (a GEMM tile without AVX-512), the GELU loop is still
    put in vector registers (vectors.opaque_count): when LLVM unrolled it first, the compiled
    block had 10 packed vector instructions and 2517 scalar ones, and ran 5x slower."""
    asm = _gelu_tile_asm()
    packed = re.findall(r"\bv\w+ps\s+.*%[yz]mm", asm)
    assert len(packed) >= 100, len(packed)


def test_the_gelu_loop_stores_every_lane() -> None:
    """A final ``x if x != x else y`` (y is NaN there anyway) let LLVM store only the lanes
    that change: with AVX2 that is ``vmaskmovps``, slow on AMD Zen 2 (GELU 4.06 -> 3.03 ns a
    value in GEMM tiles without it). NaN in, NaN out all the same (the specials test above)."""
    asm = _gelu_tile_asm()
    assert not re.search(r"\bvmaskmovps\s+%ymm\d+, %ymm\d+, \(", asm)
