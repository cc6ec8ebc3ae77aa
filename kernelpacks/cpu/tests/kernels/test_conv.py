"""Float convolutions through every algorithm, against the interpreter, within the bound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import reduction_bound
from helpers import both, one_op

from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.types import TensorType

GEOMETRIES = [
    # (N, C, H, W, O, K, stride, pad, dilation, groups)
    (1, 3, 11, 11, 5, 3, 2, 1, 1, 1),  # strided im2col, O below one panel
    (2, 16, 9, 7, 70, 3, 1, 1, 1, 1),  # 3x3 s1: Winograd candidate; O spans two panels
    (1, 16, 9, 7, 70, 1, 1, 0, 1, 1),  # 1x1: GEMM on the input rows
    (1, 16, 6, 8, 24, 1, 1, 0, 1, 1),  # 1x1, O = 24: masked stores, every row tile full
    (1, 8, 9, 9, 12, 3, 1, (1, 2, 0, 1), 2, 2),  # grouped, dilated, asymmetric padding
    (1, 12, 10, 10, 12, 3, 2, 1, 1, 12),  # depthwise, strided (channels not a multiple of 16)
    (2, 48, 9, 11, 48, 3, 1, 1, 1, 48),  # depthwise on the register tile, row tails
    (1, 96, 10, 10, 96, 3, 2, (0, 1, 1, 0), 1, 96),  # depthwise tile, strided, 96 = 64 + 32
    (1, 3, 20, 20, 8, 7, 2, 3, 1, 1),  # a ResNet stem
    (1, 32, 12, 13, 32, 3, 1, 2, 2, 32),  # depthwise tile, dilated: two-pixel border
    (1, 64, 11, 11, 64, 5, 2, 2, 1, 64),  # depthwise tile, 5x5 strided
    (2, 16, 2, 2, 16, 3, 1, 1, 1, 16),  # depthwise tile: every pixel on the border
]


@pytest.mark.parametrize("algorithm", ["auto", "measure", "im2col", "direct", "winograd"])
@pytest.mark.parametrize("geom", GEOMETRIES)
def test_conv2d_matches_the_interpreter(geom: tuple, algorithm: str, rng: np.random.Generator,
                                        tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Every algorithm choice, forced or chosen (``measure`` times the legal candidates on
    this machine; its timings go to a cache file under ``CUVIL_CACHE_DIR``)."""
    monkeypatch.setenv("CUVIL_CACHE_DIR", str(tmp_path))
    n, c, h, w, o, k, s, p, d, g = geom
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((o, c // g, k, k)).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    pad = (p,) * 4 if isinstance(p, int) else p
    graph, ins = one_op("conv2d", [x], [wt, bias], stride=(s, s), padding=pad,
                        dilation=(d, d), groups=g)  # fmt: skip
    got, want = both(graph, ins, conv_algorithm=algorithm)
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= reduction_bound(c // g * k * k, want)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize(
    "act,order",
    [("relu", "residual_then_activation"), ("gelu", "activation_then_residual"),
     ("relu6", "activation_then_residual"), ("hardswish", "residual_then_activation"),
     ("clamp", "residual_then_activation"), ("silu", "activation_then_residual")],
)  # fmt: skip
def test_fused_conv_epilogues(act: str, order: str, layout: str, rng: np.random.Generator) -> None:
    x = rng.standard_normal((2, 8, 9, 9)).astype(np.float32) * 2
    if layout == "NHWC":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    res = rng.standard_normal((2, 9, 9, 20) if layout == "NHWC" else (2, 20, 9, 9))
    wt = rng.standard_normal((20, 8, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(20).astype(np.float32)
    extra = {"activation_min": -1.5, "activation_max": 2.0} if act == "clamp" else {}
    attrs = dict(stride=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1), groups=1, activation=act,
                 has_residual=True, order=order, data_layout=layout, **extra)  # fmt: skip
    b = GraphBuilder()
    xv = b.input("x", TensorType(x.shape, DType.f32))
    rv = b.input("r", TensorType(res.shape, DType.f32))
    y = b.op("fused_conv2d", [xv, b.constant("w", wt), b.constant("b", bias), rv], attrs)
    got, want = both(b.build([y]), [x, res.astype(np.float32)])
    assert np.abs(got - want).max() <= reduction_bound(72, want)


@pytest.mark.parametrize(
    "act,order",
    [("gelu", "residual_then_activation"), ("relu6", "activation_then_residual"),
     ("clamp", "residual_then_activation")],
)  # fmt: skip
def test_fused_depthwise_epilogues_on_border_and_interior(
    act: str, order: str, rng: np.random.Generator
) -> None:
    """The register tile (interior) and the border pixels apply the same fused epilogue."""
    x = rng.standard_normal((1, 9, 10, 32)).astype(np.float32) * 2
    res = rng.standard_normal((1, 9, 10, 32)).astype(np.float32)
    wt = rng.standard_normal((32, 1, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(32).astype(np.float32)
    extra = {"activation_min": -1.5, "activation_max": 2.0} if act == "clamp" else {}
    attrs = dict(stride=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1), groups=32, activation=act,
                 has_residual=True, order=order, data_layout="NHWC", **extra)  # fmt: skip
    b = GraphBuilder()
    xv = b.input("x", TensorType(x.shape, DType.f32))
    rv = b.input("r", TensorType(res.shape, DType.f32))
    y = b.op("fused_conv2d", [xv, b.constant("w", wt), b.constant("b", bias), rv], attrs)
    got, want = both(b.build([y]), [x, res])
    assert np.abs(got - want).max() <= reduction_bound(9, want)


@pytest.mark.parametrize("c", [3, 5])  # 3: the one-loop interleaving store
def test_layout_kernels_and_pad_are_exact_copies(c: int) -> None:
    from cuvil_kernels_cpu.kernels import gather, layout

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, c, 5, 7)).astype(np.float32)
    nhwc = np.empty((2, 5, 7, c), np.float32)
    layout.nchw_to_nhwc(x, nhwc, np.zeros(1, np.int64))
    np.testing.assert_array_equal(nhwc, x.transpose(0, 2, 3, 1))
    back = np.empty_like(x)
    layout.nhwc_to_nchw(nhwc, back, np.zeros(1, np.int64))
    np.testing.assert_array_equal(back, x)
    padded = np.full((2, 8, 11, c), np.nan, np.float32)
    gather.pad_nhwc(nhwc, padded, 1, 2, np.zeros(1, np.int64))
    want = np.zeros((2, 8, 11, c), np.float32)
    want[:, 1:6, 2:9] = nhwc
    np.testing.assert_array_equal(padded, want)
    fused = np.full((2, 8, 11, c), np.nan, np.float32)
    layout.pad_from_nchw(x, fused, 1, 2, np.zeros(1, np.int64))
    np.testing.assert_array_equal(fused, want)
    cropped = np.full((2, 4, 6, c), np.nan, np.float32)  # the bottom and right cut off
    layout.pad_from_nchw(x, cropped, 1, 2, np.zeros(1, np.int64))
    np.testing.assert_array_equal(cropped, want[:, :4, :6])


def test_a_network_input_is_transposed_straight_into_the_stem_padding(
    rng: np.random.Generator,
) -> None:
    """permute (NCHW -> NHWC) then a padded direct conv: one fused layout+pad step."""
    from cuvil_kernels_cpu.executable import CpuExecutable

    from cuvil_ref.interpreter import interpret
    from cuvil_ref.passes import plan_memory

    x = rng.standard_normal((1, 3, 20, 20)).astype(np.float32)
    b = GraphBuilder()
    xv = b.input("x", TensorType(x.shape, DType.f32))
    t = b.op("permute", [xv], {"perm": (0, 2, 3, 1)})
    wt = rng.standard_normal((8, 3, 7, 7)).astype(np.float32)
    attrs = dict(stride=(2, 2), padding=(3, 3, 3, 3), dilation=(1, 1), groups=1,
                 activation="relu", has_residual=False, order="residual_then_activation",
                 data_layout="NHWC")  # fmt: skip
    bias = rng.standard_normal(8).astype(np.float32)
    y = b.op("fused_conv2d", [t, b.constant("w", wt), b.constant("b", bias)], attrs)
    graph = b.build([y])
    exe = CpuExecutable(graph, {"threads": 2, "conv_algorithm": "direct"}, plan_memory(graph))
    got = exe.run([x])[0]
    assert exe.metrics()["algorithms"] == {"pad": 1, "direct": 1}
    want = interpret(graph, [x])[0]
    assert np.abs(got - want).max() <= reduction_bound(3 * 49, want)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_depthwise_border_with_non_finite_weights_gives_the_padded_nans(
    bad: float, rng: np.random.Generator
) -> None:
    """With finite weights the border pixels skip the padding's taps (``0 * w`` is exactly 0);
    a non-finite weight makes ``0 * w`` NaN, so those pixels must add the padding's terms as
    the interpreter does: NaN exactly where it has NaN."""
    x = rng.standard_normal((1, 32, 7, 9)).astype(np.float32)
    wt = rng.standard_normal((32, 1, 3, 3)).astype(np.float32)
    wt[5, 0, 0, 0] = bad  # the top-left tap: outside the input on the top row and left column
    bias = rng.standard_normal(32).astype(np.float32)
    graph, ins = one_op("conv2d", [x], [wt, bias], stride=(1, 1), padding=(1, 1, 1, 1),
                        dilation=(1, 1), groups=32)  # fmt: skip
    got, want = both(graph, ins)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(want[0, 5, 0, :]).all()  # the check above is not vacuous
    fin = np.isfinite(want)
    np.testing.assert_array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
    assert np.abs(got[fin] - want[fin]).max() <= reduction_bound(9, want[fin])


def _direct_nhwc(x: np.ndarray, wt: np.ndarray, pad: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """One NHWC fused conv (3x3, stride 1) forced to the direct kernel: (got, interpreter's,
    the executable's step algorithms)."""
    from cuvil_kernels_cpu.executable import CpuExecutable

    from cuvil_ref.interpreter import interpret
    from cuvil_ref.passes import plan_memory

    b = GraphBuilder()
    xv = b.input("x", TensorType(x.shape, DType.f32))
    attrs = dict(stride=(1, 1), padding=(pad,) * 4, dilation=(1, 1), groups=1,
                 activation="relu", has_residual=False, order="residual_then_activation",
                 data_layout="NHWC")  # fmt: skip
    bias = np.linspace(-1, 1, wt.shape[0], dtype=np.float32)
    y = b.op("fused_conv2d", [xv, b.constant("w", wt), b.constant("b", bias)], attrs)
    graph = b.build([y])
    exe = CpuExecutable(graph, {"threads": 2, "conv_algorithm": "direct"}, plan_memory(graph))
    return exe.run([x])[0], interpret(graph, [x])[0], exe.metrics()["algorithms"]


@pytest.mark.parametrize("o,pad", [(64, 1), (128, 2), (24, 1)])
def test_direct_reads_its_input_in_place(o: int, pad: int, rng: np.random.Generator) -> None:
    """Full-width panels: the direct kernel reads the producer's buffer itself, no padding
    step; a panel narrower than the tile (O = 24) still gets a padded copy."""
    x = rng.standard_normal((2, 9, 13, 16)).astype(np.float32)
    wt = rng.standard_normal((o, 16, 3, 3)).astype(np.float32)
    got, want, algorithms = _direct_nhwc(x, wt, pad)
    assert algorithms == ({"direct": 1} if o % 64 == 0 else {"pad": 1, "direct": 1})
    assert np.abs(got - want).max() <= reduction_bound(16 * 9, want)


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_direct_with_non_finite_weights_reads_a_padded_copy(
    bad: float, rng: np.random.Generator
) -> None:
    """``0 * inf`` is NaN: with a non-finite weight the padding's taps must be multiplied, as
    the interpreter does, so the kernel reads a padded copy: NaN exactly where it has NaN."""
    x = rng.standard_normal((1, 7, 9, 16)).astype(np.float32)
    wt = rng.standard_normal((64, 16, 3, 3)).astype(np.float32)
    wt[5, 0, 0, 0] = bad
    got, want, algorithms = _direct_nhwc(x, wt, 1)
    assert algorithms == {"pad": 1, "direct": 1}
    assert np.isnan(want[0, 0, :, 5]).all()  # the padding's taps made NaN: not vacuous
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    fin = np.isfinite(want)
    assert np.abs(got[fin] - want[fin]).max() <= reduction_bound(16 * 9, want[fin])
