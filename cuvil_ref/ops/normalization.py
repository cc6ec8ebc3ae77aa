"""Normalization layers in inference form: layer_norm, batch_norm, group_norm, rms_norm.

Statistics are computed in f32 (f16/bf16 widen to f32, as PyTorch's CPU kernels do) with a
two-pass variance, ``mean((x - mean)^2)``, which avoids the cancellation of ``E[x^2] - E[x]^2``.
Optional ``weight``/``bias`` inputs must have the input's dtype; the output has x's type.
"""

from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import FLOAT_DTYPES
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import Dim, TensorType, format_shape
from cuvil_ref.ops.activations import opmath
from cuvil_ref.ops.registry import Attr, OpDef, register

EPS = Attr("eps", "float", 1e-5, "added to the variance before the square root")


def _check_param(name: str, x: TensorType, param: TensorType, shape: Sequence[Dim]) -> None:
    if param.dtype != x.dtype:
        raise ShapeError(f"{name} has dtype {param.dtype.value} but x is {x.dtype.value}")
    if tuple(param.shape) != tuple(shape):
        raise ShapeError(
            f"{name} has shape [{format_shape(param.shape)}], expected [{format_shape(shape)}]"
        )


def _output(x: TensorType) -> tuple[TensorType, ...]:
    return (TensorType(x.shape, x.dtype, x.layout),)


def _normalize(xf: np.ndarray, axes: tuple[int, ...], eps: float) -> np.ndarray:
    """(x - mean) / sqrt(var + eps) over ``axes`` (f32 in, f32 out)."""
    count = max(1, int(np.prod([xf.shape[a] for a in axes], dtype=np.int64)))
    mean = np.sum(xf, axis=axes, keepdims=True) / count
    centered = xf - mean
    var = np.sum(np.square(centered), axis=axes, keepdims=True) / count
    return centered * (1.0 / np.sqrt(var + np.float32(eps)))


def _affine(
    y: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None, shape: tuple[int, ...]
) -> np.ndarray:
    """y * weight + bias with the parameters reshaped to ``shape`` (either may be absent)."""
    if weight is not None:
        y = y * opmath(weight).reshape(shape)
    if bias is not None:
        y = y + opmath(bias).reshape(shape)
    return y


# --- layer_norm -------------------------------------------------------------------------------


def _trailing_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    """x's last len(normalized_shape) dims must equal normalized_shape; params have that shape."""
    x, *params = types
    norm = tuple(attrs["normalized_shape"])
    if not norm:
        raise ShapeError("normalized_shape must name at least one trailing dim")
    if x.rank < len(norm) or tuple(x.shape[x.rank - len(norm) :]) != norm:
        raise ShapeError(
            f"x [{format_shape(x.shape)}] does not end with normalized_shape "
            f"[{format_shape(norm)}] (those dims must be static and equal)"
        )
    for name, p in zip(("weight", "bias"), params, strict=False):
        _check_param(name, x, p, norm)
    return _output(x)


def _layer_norm(
    x: np.ndarray,
    weight: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    *,
    normalized_shape: tuple[int, ...],
    eps: float,
) -> np.ndarray:
    """y = (x - mean) / sqrt(var + eps) * weight + bias over the trailing dims."""
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    with np.errstate(all="ignore"):
        y = _affine(_normalize(opmath(x), axes, eps), weight, bias, tuple(normalized_shape))
    return y.astype(x.dtype, copy=False)


register(
    OpDef(
        name="layer_norm",
        inputs=("x", "weight?", "bias?"),
        infer=_trailing_infer,
        reference=_layer_norm,
        doc="y = (x - E[x]) / sqrt(Var[x] + eps) * weight + bias, statistics over the trailing "
        "normalized_shape dims (biased variance)",
        attrs=(Attr("normalized_shape", "ints", doc="the trailing dims to normalize over"), EPS),
        category="normalization",
        dtypes=FLOAT_DTYPES,
    )
)


# --- rms_norm ---------------------------------------------------------------------------------


def _rms_norm(
    x: np.ndarray,
    weight: np.ndarray | None = None,
    *,
    normalized_shape: tuple[int, ...],
    eps: float | None,
) -> np.ndarray:
    """y = x / sqrt(mean(x^2) + eps) * weight over the trailing dims."""
    if eps is None:
        eps = float(ml_dtypes.finfo(x.dtype).eps)
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    count = max(1, int(np.prod(normalized_shape, dtype=np.int64)))
    xf = opmath(x)
    with np.errstate(all="ignore"):
        ms = np.sum(np.square(xf), axis=axes, keepdims=True) / count
        y = _affine(xf * (1.0 / np.sqrt(ms + np.float32(eps))), weight, None, normalized_shape)
    return y.astype(x.dtype, copy=False)


register(
    OpDef(
        name="rms_norm",
        inputs=("x", "weight?"),
        infer=_trailing_infer,
        reference=_rms_norm,
        doc="y = x / sqrt(mean(x^2) + eps) * weight over the trailing normalized_shape dims; "
        "eps=None means the machine epsilon of x's dtype (as PyTorch)",
        attrs=(
            Attr("normalized_shape", "ints", doc="the trailing dims to normalize over"),
            Attr("eps", "float?", None, "added to mean(x^2); None: finfo(dtype).eps"),
        ),
        category="normalization",
        dtypes=FLOAT_DTYPES,
    )
)


# --- batch_norm (inference) -------------------------------------------------------------------


def _channel_shape(ndim: int) -> tuple[int, ...]:
    """Shape that broadcasts a per-channel vector against (N, C, *spatial)."""
    return (-1,) + (1,) * (ndim - 2)


def _batch_norm_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x, *params = types
    if x.rank < 2:
        raise ShapeError(f"x must have rank >= 2 (N, C, ...), got [{format_shape(x.shape)}]")
    for name, p in zip(("mean", "var", "weight", "bias"), params, strict=False):
        _check_param(name, x, p, (x.shape[1],))
    return _output(x)


def _batch_norm(
    x: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    weight: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    *,
    eps: float,
) -> np.ndarray:
    """y = (x - mean) / sqrt(var + eps) * weight + bias, per channel (axis 1)."""
    shape = _channel_shape(x.ndim)
    with np.errstate(all="ignore"):
        inv_std = 1.0 / np.sqrt(opmath(var).reshape(shape) + np.float32(eps))
        y = (opmath(x) - opmath(mean).reshape(shape)) * inv_std
        y = _affine(y, weight, bias, shape)
    return y.astype(x.dtype, copy=False)


register(
    OpDef(
        name="batch_norm",
        inputs=("x", "mean", "var", "weight?", "bias?"),
        infer=_batch_norm_infer,
        reference=_batch_norm,
        doc="inference batch norm: y = (x - mean[c]) / sqrt(var[c] + eps) * weight[c] + bias[c] "
        "with the channel c on axis 1 (x is (N, C, ...), rank >= 2)",
        attrs=(EPS,),
        category="normalization",
        dtypes=FLOAT_DTYPES,
    )
)


# --- group_norm -------------------------------------------------------------------------------


def _group_norm_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    x, *params = types
    groups = attrs["num_groups"]
    if x.rank < 2:
        raise ShapeError(f"x must have rank >= 2 (N, C, ...), got [{format_shape(x.shape)}]")
    channels = x.shape[1]
    if not isinstance(channels, int):
        raise ShapeError(f"the channel dim must be static, got symbol '{channels}'")
    if groups <= 0 or channels % groups != 0:
        raise ShapeError(f"num_groups={groups} must be positive and divide C={channels}")
    for name, p in zip(("weight", "bias"), params, strict=False):
        _check_param(name, x, p, (channels,))
    return _output(x)


def _group_norm(
    x: np.ndarray,
    weight: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    *,
    num_groups: int,
    eps: float,
) -> np.ndarray:
    """Split C into num_groups groups; normalize each (sample, group) over its channels and
    spatial positions; then apply the per-channel weight and bias."""
    n, c = x.shape[:2]
    per_group = (c // num_groups) * int(np.prod(x.shape[2:], dtype=np.int64))
    grouped = opmath(x).reshape(n, num_groups, per_group)
    with np.errstate(all="ignore"):
        y = _normalize(grouped, (2,), eps).reshape(x.shape)
        y = _affine(y, weight, bias, _channel_shape(x.ndim))
    return y.astype(x.dtype, copy=False)


register(
    OpDef(
        name="group_norm",
        inputs=("x", "weight?", "bias?"),
        infer=_group_norm_infer,
        reference=_group_norm,
        doc="y = (x - E_g[x]) / sqrt(Var_g[x] + eps) * weight[c] + bias[c], statistics over each "
        "sample's group of C/num_groups channels and all spatial positions (biased variance)",
        attrs=(Attr("num_groups", "int", doc="number of channel groups; must divide C"), EPS),
        category="normalization",
        dtypes=FLOAT_DTYPES,
    )
)
