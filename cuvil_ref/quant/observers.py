"""Calibration observers: watch float tensors, then propose ``(scale, zero_point)``.

Each observer has ``update(array)`` (called once per calibration batch) and ``qparams()``. The
range they pick always goes through :func:`cuvil_ref.ops.qarith.choose_qparams`, so it includes 0
and never yields a zero scale. Observers are small mutable objects on purpose: they accumulate
state across batches, which a frozen dataclass cannot.

Non-finite calibration data (NaN or inf) raises :class:`QuantArithError` naming the observer;
empty arrays are ignored; ``qparams()`` before any data raises.
"""

from __future__ import annotations

import numpy as np

from cuvil_ref.ops.qarith import (
    INT8_MAX,
    INT8_MIN,
    WEIGHT_QMAX,
    WEIGHT_QMIN,
    QuantArithError,
    choose_qparams,
    dequantize,
    quantize,
)


class Observer:
    """Base class: stores the integer range and symmetry, checks batches."""

    def __init__(self, symmetric: bool = False, qmin: int = INT8_MIN, qmax: int = INT8_MAX):
        self.symmetric = symmetric
        self.qmin = qmin
        self.qmax = qmax

    def _finite(self, array: object) -> np.ndarray:
        x = np.asarray(array, dtype=np.float32)
        if not np.all(np.isfinite(x)):
            bad = "NaN" if np.isnan(x).any() else "inf"
            raise QuantArithError(
                f"{type(self).__name__}.update: calibration batch contains {bad}; quantization "
                "needs finite activations, fix the model or the calibration data"
            )
        return x

    def _no_data(self) -> QuantArithError:
        return QuantArithError(
            f"{type(self).__name__}.qparams: no calibration data was observed; call update() "
            "with at least one non-empty batch first"
        )

    def update(self, array: object) -> None:
        raise NotImplementedError

    def qparams(self) -> tuple[np.float32, int]:
        raise NotImplementedError


class MinMaxObserver(Observer):
    """Running minimum and maximum over all batches."""

    def __init__(self, symmetric: bool = False, qmin: int = INT8_MIN, qmax: int = INT8_MAX):
        super().__init__(symmetric, qmin, qmax)
        self.min_val: float | None = None
        self.max_val: float | None = None

    def update(self, array: object) -> None:
        x = self._finite(array)
        if x.size == 0:
            return
        lo, hi = float(x.min()), float(x.max())
        self.min_val = lo if self.min_val is None else min(self.min_val, lo)
        self.max_val = hi if self.max_val is None else max(self.max_val, hi)

    def qparams(self) -> tuple[np.float32, int]:
        if self.min_val is None or self.max_val is None:
            raise self._no_data()
        return choose_qparams(self.min_val, self.max_val, self.symmetric, self.qmin, self.qmax)


class MovingAverageMinMaxObserver(MinMaxObserver):
    """Exponential moving average of per-batch min and max: ``v += c * (batch_v - v)``.

    The first batch sets the range directly.
    """

    def __init__(
        self,
        averaging_constant: float = 0.01,
        symmetric: bool = False,
        qmin: int = INT8_MIN,
        qmax: int = INT8_MAX,
    ):
        super().__init__(symmetric, qmin, qmax)
        if not 0.0 < averaging_constant <= 1.0:
            raise QuantArithError(
                f"MovingAverageMinMaxObserver: averaging_constant must be in (0, 1], "
                f"got {averaging_constant!r}"
            )
        self.averaging_constant = averaging_constant

    def update(self, array: object) -> None:
        x = self._finite(array)
        if x.size == 0:
            return
        lo, hi = float(x.min()), float(x.max())
        if self.min_val is None or self.max_val is None:
            self.min_val, self.max_val = lo, hi
            return
        c = self.averaging_constant
        self.min_val += c * (lo - self.min_val)
        self.max_val += c * (hi - self.max_val)


class _SampleObserver(Observer):
    """Keeps every observed value (float32) for observers that need the distribution."""

    def __init__(self, symmetric: bool = False, qmin: int = INT8_MIN, qmax: int = INT8_MAX):
        super().__init__(symmetric, qmin, qmax)
        self._chunks: list[np.ndarray] = []

    def update(self, array: object) -> None:
        x = self._finite(array)
        if x.size:
            self._chunks.append(x.ravel().copy())

    def _samples(self) -> np.ndarray:
        if not self._chunks:
            raise self._no_data()
        return np.concatenate(self._chunks)


class PercentileObserver(_SampleObserver):
    """Clips outliers: range ``[P(100 - p), P(p)]`` of all values (``P(p)`` of ``|x|`` when
    symmetric), ``P`` being numpy's linear-interpolation percentile."""

    def __init__(
        self,
        percentile: float = 99.99,
        symmetric: bool = False,
        qmin: int = INT8_MIN,
        qmax: int = INT8_MAX,
    ):
        super().__init__(symmetric, qmin, qmax)
        if not 50.0 < percentile <= 100.0:
            raise QuantArithError(
                f"PercentileObserver: percentile must be in (50, 100], got {percentile!r}"
            )
        self.percentile = percentile

    def qparams(self) -> tuple[np.float32, int]:
        x = self._samples().astype(np.float64)
        if self.symmetric:
            hi = float(np.percentile(np.abs(x), self.percentile))
            lo = -hi
        else:
            lo = float(np.percentile(x, 100.0 - self.percentile))
            hi = float(np.percentile(x, self.percentile))
        return choose_qparams(lo, hi, self.symmetric, self.qmin, self.qmax)


class MSEObserver(_SampleObserver):
    """Searches clipping ranges ``alpha * [min, max]`` for the least quantization MSE.

    ``alpha`` runs over ``num_candidates`` evenly spaced values from 1 down to ``min_fraction``;
    the error of a candidate is ``mean((dequantize(quantize(x)) - x) ** 2)`` with the exact
    quantize/dequantize of the spec. Ties keep the widest range. The error is measured on at most
    ``max_samples`` values, a deterministic even-strided subsample of everything observed.
    """

    def __init__(
        self,
        num_candidates: int = 100,
        min_fraction: float = 0.05,
        max_samples: int = 1 << 18,
        symmetric: bool = False,
        qmin: int = INT8_MIN,
        qmax: int = INT8_MAX,
    ):
        super().__init__(symmetric, qmin, qmax)
        if num_candidates < 1 or not 0.0 < min_fraction <= 1.0 or max_samples < 1:
            raise QuantArithError(
                f"MSEObserver: need num_candidates >= 1, 0 < min_fraction <= 1 and "
                f"max_samples >= 1, got {num_candidates!r}, {min_fraction!r}, {max_samples!r}"
            )
        self.max_samples = max_samples
        self.num_candidates = num_candidates
        self.min_fraction = min_fraction

    def _mse(self, x: np.ndarray, lo: float, hi: float) -> tuple[float, tuple[np.float32, int]]:
        qp = choose_qparams(lo, hi, self.symmetric, self.qmin, self.qmax)
        q = quantize(x, qp[0], qp[1], self.qmin, self.qmax)
        err = dequantize(q, qp[0], qp[1]).astype(np.float64) - x
        return float(np.mean(err * err)), qp

    def qparams(self) -> tuple[np.float32, int]:
        x = self._samples()
        lo, hi = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
        stride = -(-x.size // self.max_samples)  # ceil division
        xd = x[::stride].astype(np.float64)
        best: tuple[float, tuple[np.float32, int]] | None = None
        for alpha in np.linspace(1.0, self.min_fraction, self.num_candidates):
            mse, qp = self._mse(xd, float(alpha) * lo, float(alpha) * hi)
            if best is None or mse < best[0]:
                best = (mse, qp)
        assert best is not None
        return best[1]


class PerChannelMinMaxObserver(Observer):
    """Symmetric per-channel range for weights: ``scale[c] = max|w[c]| / 127``, zero points 0.

    ``qparams()`` returns ``(scales float32 array, zero_points int64 array)`` indexed by channel
    along ``axis`` (the output-channel axis, 0 for conv and linear weights).
    """

    def __init__(self, axis: int = 0, qmin: int = WEIGHT_QMIN, qmax: int = WEIGHT_QMAX):
        super().__init__(True, qmin, qmax)
        self.axis = axis
        self.absmax: np.ndarray | None = None

    def update(self, array: object) -> None:
        x = self._finite(array)
        if x.ndim == 0 or not -x.ndim <= self.axis < x.ndim:
            raise QuantArithError(
                f"PerChannelMinMaxObserver: axis {self.axis} is out of range for shape {x.shape}"
            )
        if x.size == 0:
            return
        reduce = tuple(i for i in range(x.ndim) if i != self.axis % x.ndim)
        amax = (np.abs(x).max(axis=reduce) if reduce else np.abs(x)).astype(np.float64)
        if self.absmax is not None and self.absmax.shape != amax.shape:
            raise QuantArithError(
                f"PerChannelMinMaxObserver: batch has {amax.shape[0]} channels along axis "
                f"{self.axis}, earlier batches had {self.absmax.shape[0]}"
            )
        self.absmax = amax if self.absmax is None else np.maximum(self.absmax, amax)

    def qparams(self) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[override]
        if self.absmax is None:
            raise self._no_data()
        pairs = [choose_qparams(-a, a, True, self.qmin, self.qmax) for a in self.absmax]
        scales = np.array([p[0] for p in pairs], dtype=np.float32)
        return scales, np.zeros(len(pairs), dtype=np.int64)
