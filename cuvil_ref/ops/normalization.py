"""Normalization layers in inference form: layer_norm, batch_norm, group_norm, rms_norm.

layer_norm and group_norm compute their statistics and the normalization in f64 with a two-pass
variance, ``mean((x - mean)^2)``, and round once to f32 (f16/bf16 widen first): the oracle is at
least as accurate as the kernels it judges, which the conformance bounds then allow their f32
rounding. The affine step is f32, as in PyTorch.
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
from cuvil_ref.ops.grid import grid, point, torch_fn
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
    """(x - mean) / sqrt(var + eps) over ``axes``, computed in f64 and rounded once to f32.

    In f32 the rounding of the mean alone costs ulp(mean)/std in every output: 50 ulp for a row
    whose mean is 30 standard deviations (the graph fuzzer found PyTorch eager closer than the
    interpreter there), and the interpreter must be at least as accurate as what it judges.
    """
    x64 = xf.astype(np.float64)
    mean = np.mean(x64, axis=axes, keepdims=True)
    centered = x64 - mean
    var = np.mean(np.square(centered), axis=axes, keepdims=True)
    return (centered / np.sqrt(var + float(np.float32(eps)))).astype(np.float32)


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
        family="layer_norm",
        torch_twin=torch_fn("nn.functional.layer_norm"),
        conformance=grid(
            point("affine", normalized_shape=(8,), shapes=((2, 3, 8), (8,), (8,)), consts=(1, 2)),
            point("no_affine", normalized_shape=(5,), shapes=((4, 5),)),
            point("multi_dim", normalized_shape=(3, 4), shapes=((2, 3, 4), (3, 4), (3, 4)),
                  consts=(1, 2)),
            point("affine", normalized_shape=(16,), shapes=((1, 7, 16), (16,), (16,)),
                  consts=(1, 2)),
            point("eps", normalized_shape=(8,), eps=0.1, shapes=((4, 8),), values="unit"),
            # rows of mean 1e3 and std 1e-2 at transformer widths: a one-pass variance fails
            point("low_variance", normalized_shape=(768,), shapes=((3, 768), (768,), (768,)),
                  consts=(1, 2), values=("lowvar:1000", "normal", "normal")),
            point("low_variance", normalized_shape=(1024,), shapes=((2, 1024),),
                  values="lowvar:300"),
        ),
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
        family="layer_norm",
        torch_twin=torch_fn("nn.functional.rms_norm"),
        conformance=grid(
            point("affine", normalized_shape=(8,), eps=1e-6, shapes=((2, 3, 8), (8,)),
                  consts=(1,)),
            point("affine", normalized_shape=(6,), eps=1e-6, shapes=((4, 6), (6,)), consts=(1,)),
            point("no_affine", normalized_shape=(6,), shapes=((4, 6),)),
            point("eps", normalized_shape=(8,), eps=0.5, shapes=((4, 8),), values="unit"),
            point("low_variance", normalized_shape=(768,), eps=1e-6, shapes=((3, 768), (768,)),
                  consts=(1,), values=("lowvar:10", "normal")),
        ),
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


def _batch_norm_twin(torch: object, x: object, mean: object, var: object, *params: object,
                     eps: float) -> object:
    weight, bias = (list(params) + [None, None])[:2]
    return torch.nn.functional.batch_norm(  # type: ignore[attr-defined]
        x, mean, var, weight, bias, training=False, eps=eps
    )


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
        family="batch_norm",
        torch_twin=_batch_norm_twin,
        conformance=grid(
            *(
                point(rule, shapes=(s, (s[1],), (s[1],), (s[1],), (s[1],)), consts=(1, 2, 3, 4),
                      values=("normal", "normal", "positive", "normal", "normal"))
                for rule, s in (("rank4", (2, 4, 3, 3)), ("rank2", (3, 5)), ("rank3", (1, 3, 7)))
            ),
            point("no_affine", shapes=((2, 3, 4, 4), (3,), (3,)), consts=(1, 2),
                  values=("normal", "normal", "positive")),
            point("eps", eps=0.5, shapes=((2, 3, 4), (3,), (3,)), consts=(1, 2),
                  values=("normal", "normal", "positive")),
        ),
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
        family="group_norm",
        torch_twin=torch_fn("nn.functional.group_norm"),
        conformance=grid(
            point("groups", num_groups=3, shapes=((2, 6, 3, 3), (6,), (6,)), consts=(1, 2)),
            point("groups", num_groups=2, shapes=((1, 4, 5), (4,), (4,)), consts=(1, 2)),
            point("groups", num_groups=6, shapes=((2, 6, 2, 2), (6,), (6,)), consts=(1, 2)),
            point("groups", num_groups=1, shapes=((2, 5, 3),)),
            # two groups of 768 elements each, mean 1e3 and std 1e-2
            point("low_variance", num_groups=2, shapes=((1, 4, 384), (4,), (4,)),
                  consts=(1, 2), values=("lowvar:1000", "normal", "normal")),
        ),
    )
)
