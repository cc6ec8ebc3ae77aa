"""Special functions numpy lacks (erf), vectorized and accurate to float32 rounding."""

from __future__ import annotations

import math

import numpy as np

_erf_vec = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, computed in float64 and rounded to the input dtype.

    Uses scipy when it is installed (fast); otherwise ``math.erf`` element by element.
    """
    try:
        from scipy.special import erf as _scipy_erf
    except ImportError:  # pragma: no cover - scipy is normally present
        out = _erf_vec(np.asarray(x, dtype=np.float64)).astype(np.float64)
    else:
        out = _scipy_erf(np.asarray(x, dtype=np.float64))
    return np.asarray(out).astype(x.dtype)
