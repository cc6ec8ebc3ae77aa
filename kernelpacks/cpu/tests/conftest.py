"""Shared fixtures of the cpu pack's tests: a seeded generator and small conv helpers."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


def reduction_bound(k: int, want: np.ndarray) -> float:
    """The conformance suite's float bound for a reduction of ``k`` terms (docs/conformance.md)
    without its 1-ulp term: 2 K eps max(1, |want|_inf)."""
    return 2 * k * 2.0**-23 * max(1.0, float(np.abs(want).max()))
