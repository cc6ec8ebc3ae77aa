"""Test setup for the cuda pack: run kernels in Numba's CUDA simulator unless a GPU is asked for.

The simulator must be selected before ``numba.cuda`` is first imported, hence the environment
default here.
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import warnings  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def _quiet_simulated_ieee() -> Iterator[None]:
    """The simulator runs float32 math on numpy scalars, which warn on inf/NaN results that the
    tests provoke on purpose; the device is silent. (Warnings filters are process-wide, so this
    also covers the simulator's per-thread kernels.)"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield
