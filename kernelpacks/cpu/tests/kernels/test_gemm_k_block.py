"""K-blocked GEMM passes (``conv_gemm``'s ``kc``) against one pass over K, and the rule that
picks the chunk from the host's L1 data cache."""

from __future__ import annotations

import os
from pathlib import Path

import numba
import numpy as np
import pytest
from cuvil_kernels_cpu.kernels import gemm, mathf
from cuvil_kernels_cpu.kernels.isa import K_CHUNKS, MR, NR, l1d_bytes
from cuvil_kernels_cpu.kernels.microkernel import RES_AFTER, RES_BEFORE
from cuvil_kernels_cpu.team import Team

_INF = np.float32(np.inf)


def _run(x: np.ndarray, w_kn: np.ndarray, geom: np.ndarray, direct: bool, oshape: tuple,
         res: np.ndarray, lo: float, hi: float, act: int, res_mode: int, kc: int,
         threads: int = 1) -> np.ndarray:  # fmt: skip
    wp = gemm.pack_weights(w_kn)
    o = w_kn.shape[-1]
    bias = gemm.pack_bias(np.linspace(-1, 1, o, dtype=np.float32), 1, o)
    out = np.full(oshape, np.nan, np.float32)
    m = int(np.prod(oshape[:3]))
    mb, pg = gemm.plan_items(m, w_kn.shape[0], wp.shape[1], threads)
    work = np.zeros(1, np.int64)
    args = (x, wp, bias, res, out, geom, np.float32(lo), np.float32(hi), act, res_mode, direct,
            mb, pg, kc, work)  # fmt: skip
    if threads == 1:
        gemm.conv_gemm(*args)
    else:
        Team(threads).run(lambda: gemm.conv_gemm(*args), work)
    return out


@pytest.mark.parametrize("m", [MR, 5 * MR + 4, 21 * MR + 2])
@pytest.mark.parametrize("n", [NR, 2 * NR + 24])
# k = 2100: three panels exceed gemm.ROWS_OUTER_PANELS, so one pass goes panel by panel; the
# others run each row tile across the panels (the same sums in another order)
@pytest.mark.parametrize("k,kc", [(300, 32), (256, 128), (129, 128), (97, 64), (2100, 512)])
@pytest.mark.parametrize(
    "act,res_mode,lo,hi",
    [(mathf.ACT_NONE, 0, -np.inf, np.inf), (mathf.ACT_NONE, RES_BEFORE, -0.5, 1.0),
     (mathf.ACT_GELU, RES_AFTER, -np.inf, np.inf), (mathf.ACT_SILU, RES_BEFORE, -np.inf, np.inf)],
)  # fmt: skip
def test_linear_k_blocked_is_bit_identical(m: int, n: int, k: int, kc: int, act: int,
                                           res_mode: int, lo: float, hi: float,
                                           rng: np.random.Generator) -> None:  # fmt: skip
    """Every sum runs over k in the same order, resumed from the stored float32 partial sums,
    and the epilogue comes once after the last chunk: the output equals one pass bit for bit
    (rows past the last full tile and the narrow last panel take the one-pass path)."""
    x = rng.standard_normal((1, 1, m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    res = rng.standard_normal((1, 1, m, n)).astype(np.float32)
    geom = np.array([1, 1, 1, 1, 0, 0, 1, 1], np.int64)
    one = _run(x, w, geom, True, (1, 1, m, n), res, lo, hi, act, res_mode, 0)
    blocked = _run(x, w, geom, True, (1, 1, m, n), res, lo, hi, act, res_mode, kc)
    assert not np.isnan(one).any()
    np.testing.assert_array_equal(blocked, one)


@pytest.mark.parametrize("threads", [1, 2])
def test_im2col_conv_k_blocked_is_bit_identical(threads: int, rng: np.random.Generator) -> None:
    """The im2col path (A rows gathered per item), a 3x3 padded convolution, on one thread and
    on two (items split among them)."""
    n, h, w, c, o = 2, 7, 9, 24, NR + 16
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    weight = rng.standard_normal((o, c, 3, 3)).astype(np.float32)
    w_kn = gemm.conv_weight_kn(weight, 1)
    geom = np.array([3, 3, 1, 1, 1, 1, 1, 1], np.int64)
    res = np.zeros((1, 1, 1, 1), np.float32)
    args = (x, w_kn, geom, False, (n, h, w, o), res, 0.0, 6.0, mathf.ACT_NONE, 0)
    one = _run(*args, 0, threads=threads)
    np.testing.assert_array_equal(_run(*args, 64, threads=threads), one)


def test_k_block_follows_the_l1_size() -> None:
    """Off where a whole panel fits in L1 or a chunk would be under MIN_K_BLOCK rows; else K
    in equal chunks of at most two thirds of L1 (rounded to 32 rows), multiples of 4."""
    assert gemm.k_block(768, l1=48 * 1024, nr=64) == 128  # 6 chunks of 128
    assert gemm.k_block(3072, l1=48 * 1024, nr=64) == 128
    assert gemm.k_block(576, l1=48 * 1024, nr=64) == 116  # 5 chunks: 4 of 116 and 112
    assert gemm.k_block(192, l1=48 * 1024, nr=64) == 0  # the panel (48 KiB) fits in L1
    assert gemm.k_block(200, l1=48 * 1024, nr=64) == 100
    assert gemm.k_block(768, l1=32 * 1024, nr=64) == 0  # 85 rows: under MIN_K_BLOCK
    assert gemm.k_block(4096, l1=96 * 1024, nr=64) == 256
    for k in range(193, 5000, 37):
        kc = gemm.k_block(k, l1=48 * 1024, nr=64)
        chunks = -(-k // kc)
        last = k - (chunks - 1) * kc
        assert kc % 4 == 0 and kc <= 128
        assert last >= kc - 4 * chunks  # equal chunks: the last pass is not left short


def test_l1d_bytes_reads_linux_cache_description(tmp_path: Path) -> None:
    caches = [("1", "Instruction", "32K"), ("1", "Data", "48K"), ("2", "Unified", "2M")]
    for index, (level, kind, size) in enumerate(caches):
        d = tmp_path / f"index{index}"
        d.mkdir()
        (d / "level").write_text(level + "\n")
        (d / "type").write_text(kind + "\n")
        (d / "size").write_text(size + "\n")
    assert l1d_bytes.__wrapped__(str(tmp_path)) == 48 * 1024
    assert l1d_bytes.__wrapped__(str(tmp_path / "missing")) == 32 * 1024
    if os.path.isdir("/sys/devices/system/cpu/cpu0/cache"):
        assert l1d_bytes() >= 16 * 1024


@pytest.mark.parametrize(
    "m,k,npanels",
    [(3136, 256, 1), (784, 512, 2), (3136, 64, 4), (49, 2048, 8), (128, 768, 12), (8192, 1024, 16)],
)
def test_plan_gemm_caps_items_where_k_is_chunked(m: int, k: int, npanels: int) -> None:
    """Where K is taken in chunks an item has at most L1 / (MR * NR * 4) row tiles (its partial
    sums); elsewhere (no chunks, or a 32 KiB L1) the plan is plan_items' unchanged; every row
    tile and panel is in some item either way."""
    for l1 in (48 * 1024, 32 * 1024):
        mb, pg, kc = gemm.plan_gemm(m, k, npanels, 2, l1=l1)
        assert kc == (gemm.k_block(k, l1) if K_CHUNKS else 0)
        if kc > 0:
            assert mb <= l1 // (MR * NR * 4)
        else:
            assert (mb, pg) == gemm.plan_items(m, k, npanels, 2)
        tiles = -(-m // MR)
        items = -(-tiles // mb) * -(-npanels // pg)
        assert items >= min(4, tiles * npanels) and 1 <= pg <= npanels


@numba.njit(error_model="numpy")
def _gelu_then(z: np.ndarray, res: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    out = np.empty_like(z)
    for i in range(z.size):
        out.flat[i] = mathf.gelu_f32(z.flat[i]) + res.flat[i]
    return out


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("m,n", [(21 * MR + 2, 2 * NR + 24), (5 * MR, 3 * NR), (MR - 1, NR)])
def test_activation_over_every_stored_value_once(threads: int, m: int, n: int,
                                                 rng: np.random.Generator) -> None:  # fmt: skip
    """GELU with the residual after it equals the same GEMM without activation, then GELU and
    the residual value by value: every element activated exactly once, whether per tile or over
    an item's rows after its panels (gemm.DEFER_ACTIVATION), edge rows and a narrow last panel
    included, with the items split among threads."""
    k = 70
    x = rng.standard_normal((1, 1, m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    res = rng.standard_normal((1, 1, m, n)).astype(np.float32)
    geom = np.array([1, 1, 1, 1, 0, 0, 1, 1], np.int64)
    base = (x, w, geom, True, (1, 1, m, n), res, -np.inf, np.inf)
    z = _run(*base, mathf.ACT_NONE, 0, 0, threads=threads)
    got = _run(*base, mathf.ACT_GELU, RES_AFTER, 0, threads=threads)
    np.testing.assert_array_equal(got, _gelu_then(z, res))
