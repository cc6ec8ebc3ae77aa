"""Energy: the cited dynamic energies plus leakage over the run's cycles, with a range."""

from __future__ import annotations

import numpy as np
import pytest
from cuvil_kernels_npu_sim import NPU_V3, config_from_dict, layer_metrics, lower_qconv2d, simulate
from cuvil_kernels_npu_sim.energy import sram_kib, static_mw


def _run(cfg, rng: np.random.Generator):  # noqa: ANN202, ANN001
    x = rng.integers(-128, 128, (1, 32, 14, 14), dtype=np.int8)
    w = rng.integers(-127, 128, (64, 32, 3, 3), dtype=np.int8)
    prog = lower_qconv2d(x.shape, w, None, 1 << 30, 40, x_zp=0, out_zp=0, padding=1, target=cfg)
    return layer_metrics(simulate(prog, {"x": x}))


def test_static_power_is_leakage_of_the_modeled_sram_and_macs(rng: np.random.Generator) -> None:
    e = NPU_V3.energy
    kib = (256 + 512 + 256 + 16) + 12 * 4096 / 1024 + 28
    assert sram_kib(NPU_V3) == pytest.approx(kib)
    assert static_mw(NPU_V3) == pytest.approx(
        kib * e.leakage_mw_per_kib + 1024 * e.leakage_mw_per_mac
    )
    m = _run(NPU_V3, rng)
    seconds = m["cycles"] / 1e9
    assert m["static_pj"] == pytest.approx(static_mw(NPU_V3) * 1e-3 * seconds * 1e12)
    dynamic = sum(m["energy_by_kind_pj"].values())
    assert m["energy_pj"] == pytest.approx(dynamic + m["static_pj"])
    assert m["power_w_low"] < m["power_w"] < m["power_w_high"]
    # the high end doubles DRAM energy (2.6 instead of 1.3 nJ / 64 bit) and quadruples leakage
    dram = m["energy_by_kind_pj"]["dram"]
    assert m["energy_pj_high"] == pytest.approx(dynamic + dram + 4 * m["static_pj"])


def test_leakage_is_a_config_figure(rng: np.random.Generator) -> None:
    off = config_from_dict({"energy": {"leakage_mw_per_kib": 0.0, "leakage_mw_per_mac": 0.0}})
    assert _run(off, rng)["static_pj"] == 0.0
    with pytest.raises(ValueError, match="leakage_mw_per_kib"):
        config_from_dict({"energy": {"leakage_mw_per_kib": -1.0}})
