"""Generated sources are pure functions of their inputs with stable, distinct hashes."""

from __future__ import annotations

import hashlib

import pytest
from cuvil_kernels_hip.kernels.epilogue import Epilogue
from cuvil_kernels_hip.kernels.gemm import gemm_source
from cuvil_kernels_hip.registry import FAMILIES, representative_configs
from cuvil_kernels_hip.source import KernelOptions


def test_regenerating_gives_identical_source_and_sha256() -> None:
    for cfg in representative_configs():
        a, b = cfg.generate(), cfg.generate()
        assert a.code == b.code, cfg.label
        assert a.sha256 == b.sha256 == hashlib.sha256(a.code.encode()).hexdigest()


def test_configs_have_distinct_entries_and_hashes() -> None:
    sources = [cfg.generate() for cfg in representative_configs()]
    assert len({s.entry for s in sources}) == len(sources)
    assert len({s.sha256 for s in sources}) == len(sources)


def test_every_family_has_a_representative_config() -> None:
    covered = {cfg.family for cfg in representative_configs()}
    assert covered == set(FAMILIES)


@pytest.mark.parametrize(
    "changed",
    [
        {"options": KernelOptions(loop_unroll_factor=8)},
        {"epilogue": Epilogue(bias=True, activation="silu")},
        {"trans_b": True},
        {"dtype": "bfloat16"},
    ],
)
def test_any_input_change_changes_entry_and_hash(changed: dict[str, object]) -> None:
    base: dict[str, object] = {"dtype": "float16", "options": KernelOptions(4)}
    a = gemm_source(**base)  # type: ignore[arg-type]
    b = gemm_source(**{**base, **changed})  # type: ignore[arg-type]
    assert a.sha256 != b.sha256
    assert a.entry != b.entry


def test_options_validate_and_come_from_target_spec() -> None:
    opts = KernelOptions.from_target({"loop_unroll_factor": 8}, ("tensor_core", "sm_90"))
    assert opts.loop_unroll_factor == 8
    assert opts.features == frozenset({"tensor_core", "sm_90"})
    with pytest.raises(ValueError, match="loop_unroll_factor=3"):
        KernelOptions(loop_unroll_factor=3)
    with pytest.raises(ValueError, match="block_size=100"):
        KernelOptions(block_size=100)
    with pytest.raises(ValueError, match="must be integers"):
        KernelOptions.from_target({"loop_unroll_factor": "4"})
