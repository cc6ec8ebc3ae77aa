"""Target configs: defaults, overrides and validation errors."""

from __future__ import annotations

import pytest
from cuvil_kernels_npu_sim import NPU_V2, NPU_V3, config_from_dict, get_config


def test_npu_v3_spec() -> None:
    assert (NPU_V3.array_rows, NPU_V3.array_cols, NPU_V3.clock_ghz) == (32, 32, 1.0)
    assert (NPU_V3.inp_bytes, NPU_V3.wgt_bytes, NPU_V3.acc_bytes) == (
        256 << 10,
        512 << 10,
        256 << 10,
    )
    assert NPU_V3.dram_bytes_per_cycle == 32 and "45 nm" in NPU_V3.energy.process_node
    assert NPU_V2.peak_macs_per_cycle == 256 < NPU_V3.peak_macs_per_cycle


def test_overrides_and_nested_energy() -> None:
    cfg = config_from_dict({"target": "npu-v2", "dram_latency": 7, "energy": {"mac_pj": 1.5}})
    assert cfg.name == "npu-v2" and cfg.dram_latency == 7 and cfg.energy.mac_pj == 1.5
    assert get_config({"array_rows": 8}).array_rows == 8


@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"arary_rows": 8}, "unknown npu config keys \\['arary_rows'\\]"),
        ({"array_rows": 0}, "array_rows must be a positive int"),
        ({"inp_bytes": 1 << 24}, "exceeds what the ISA can address"),
        ({"energy": {"pj": 1}}, "unknown energy keys"),
        ({"target": "npu-v9"}, "unknown npu target 'npu-v9'"),
        ({"clock_ghz": -1.0}, "clock_ghz must be > 0"),
    ],
)
def test_validation_errors(overrides: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        config_from_dict(overrides)
