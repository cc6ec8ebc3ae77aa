"""The test helper's spec arithmetic agrees with cuvil_ref's."""

from __future__ import annotations

import pytest
import spec_reference as ref

from cuvil_ref.ops import qarith


@pytest.mark.parametrize("ratio", [0.0, 1.0, 0.5, 1e-3, 3.7e-7, 0.999999999, 2.0**-40, 12345.6])
def test_quantize_multiplier_matches_cuvil_ref(ratio: float) -> None:
    assert ref.quantize_multiplier(ratio) == tuple(qarith.quantize_multiplier(ratio))


def test_shared_shift_matches_cuvil_ref() -> None:
    mults, shift = ref.shared_shift([0.7, 0.31])
    got, got_shift = qarith.shared_shift_multipliers([0.7, 0.31])
    assert (tuple(mults), shift) == (tuple(got), got_shift)
