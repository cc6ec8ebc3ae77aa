"""The per-CPU cost profiles of the conv algorithm choice (:mod:`cuvil_kernels_cpu.algo`)."""

from __future__ import annotations

import pytest
from cuvil_kernels_cpu import algo


def _layer(hw: int, c: int, o: int, stride: int = 1, k: int = 3) -> dict[str, int]:
    return {"n": 1, "c": c, "o": o, "oh": hw, "ow": hw, "h": hw * stride, "w": hw * stride,
            "k": k}  # fmt: skip


def _best(prof: algo.CostProfile, shape: dict[str, int], winograd_ok: bool = True) -> str:
    costs = algo.model_costs(shape, winograd_ok, True, prof)
    return min(costs, key=costs.__getitem__)


def test_profiles_by_cpu_name() -> None:
    assert algo.profile("emeraldrapids") is algo.GOLDEN_COVE
    assert algo.profile("sapphirerapids") is algo.GOLDEN_COVE
    assert algo.profile("znver5") is algo.ZEN
    assert algo.profile("some-future-cpu") is algo.ZEN
    assert isinstance(algo.profile(), algo.CostProfile)


@pytest.mark.parametrize(
    "shape,zen,golden_cove",
    [(_layer(56, 64, 64), "winograd", "winograd"), (_layer(28, 128, 128), "winograd", "winograd"),
     (_layer(14, 256, 256), "winograd", "direct"), (_layer(7, 512, 512), "im2col", "direct"),
     (_layer(112, 3, 64, 2, 7), "direct", "direct")],
)  # fmt: skip
def test_resnet18_choices_per_profile(shape: dict[str, int], zen: str, golden_cove: str) -> None:
    """The choices each profile was fitted to reproduce on ResNet-18's layers (batch 1): on
    the AMD host Winograd for 3x3 stride 1 up to 256 channels; on the Intel Xeon, since the
    transforms run on 16-lane vectors (2026-12-06), Winograd up to 128 channels and the direct
    kernel from 256 on, where the transformed weights (9.4 MB, 37.7 MB) come from memory."""
    winograd_ok = shape["k"] == 3
    assert _best(algo.ZEN, shape, winograd_ok) == zen
    assert _best(algo.GOLDEN_COVE, shape, winograd_ok) == golden_cove


def test_weight_traffic_and_exact_tail_only_where_profiled() -> None:
    """The zen profile keeps its fitted costs: no weight term, a row's last tile as MR rows
    (7 wide: 12 rows computed); golden-cove charges weights and counts rows exactly."""
    shape = _layer(7, 512, 512)
    zen = algo.model_costs(shape, False, True, algo.ZEN)
    gc = algo.model_costs(shape, False, True, algo.GOLDEN_COVE)
    weights = 4 * 512 * 9 * 512 / algo.GOLDEN_COVE.weights
    assert gc["im2col"] == pytest.approx(zen["im2col"] + weights)
    pad = 8 * (7 + 3) * (7 + 3) * 512 / algo.ZEN.gather
    assert gc["direct"] - weights - pad == pytest.approx((zen["direct"] - pad) * 7 / 12)


def test_choice_names_the_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(algo, "profile", lambda cpu=None: algo.GOLDEN_COVE)
    choice = algo.choose_conv(_layer(56, 64, 64), False, True, {"threads": 2}, direct_ok=True)
    assert choice["algorithm"] == "winograd"
    assert "golden-cove" in choice["why"]


@pytest.mark.parametrize(
    "shape,best",
    [(_layer(56, 64, 64), "winograd"), (_layer(28, 128, 128), "winograd"),
     (_layer(14, 256, 256), "direct"), (_layer(7, 512, 512), "direct"),
     (_layer(28, 64, 128, 2), "direct"), (_layer(14, 128, 256, 2), "direct"),
     (_layer(7, 256, 512, 2), "direct"), (_layer(14, 128, 256, 2, 1), "direct"),
     (_layer(7, 256, 512, 2, 1), "direct")],
)  # fmt: skip
def test_golden_cove_reading_in_place(shape: dict[str, int], best: str) -> None:
    """With the direct kernel reading its input in place (no copy) golden-cove picks what
    measured fastest on ResNet-18's layers (2026-12-05): direct on the stride-2 layers (3x3
    and 1x1) where the copy had made im2col look cheaper; Winograd on the stride-1 3x3
    layers up to 128 channels since its transforms were vectorized (2026-12-06, 2 threads:
    0.42 against 0.90 ms at 56x56x64; ResNet-18 b1 ran 7 % slower with the direct kernel at
    28x28x128, and 10 % faster with it at 14x14x256 and 7x7x512)."""
    in_place = dict(shape, copy=0)
    winograd_ok = shape["k"] == 3 and shape["h"] == shape["oh"]
    assert _best(algo.GOLDEN_COVE, in_place, winograd_ok) == best


def test_zen_keeps_the_copy_it_was_fitted_with() -> None:
    """The zen profile was fitted when every direct layer copied its input: its costs do not
    change when the kernel reads in place (until it is refit on such a host)."""
    for shape in (_layer(56, 64, 64), _layer(28, 64, 128, 2), _layer(14, 128, 256, 2, 1)):
        assert algo.model_costs(dict(shape, copy=0), True, True, algo.ZEN) == (
            algo.model_costs(shape, True, True, algo.ZEN))
    copy = algo.model_costs(_layer(56, 64, 64), False, True, algo.GOLDEN_COVE)["direct"]
    none = algo.model_costs(dict(_layer(56, 64, 64), copy=0), False, True, algo.GOLDEN_COVE)
    assert none["direct"] < copy


def test_golden_cove_batch_8() -> None:
    """At batch 8 (a whole batch, not split into streams) the transformed weights are streamed
    once per chunk of tiles: golden-cove keeps Winograd up to 128 channels only (ResNet-50 b8
    ran 11 % faster with the direct kernel at 14x14x256 and 7x7x512, 2026-12-06)."""
    for hw, c, best in ((56, 64, "winograd"), (28, 128, "winograd"), (14, 256, "direct"),
                        (7, 512, "direct")):  # fmt: skip
        shape = dict(_layer(hw, c, c), n=8, copy=0)
        assert _best(algo.GOLDEN_COVE, shape) == best
