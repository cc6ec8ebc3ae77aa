"""Vendor-style reductions, softmax and normalizations, each with its plausible bugs behind a
switch. Statistics in f32 (numpy's pairwise f32 sums, like a GPU tree reduction);
``bug=None`` is the correct kernel."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from cuvil_ref.ir.graph import Node

F32 = np.float32


def _axes(axes: tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    if ndim == 0:
        return ()
    return tuple(range(ndim)) if not axes else tuple(a % ndim for a in axes)


def amax(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    (x,) = args
    ax = _axes(node.attrs["axes"], x.ndim)
    fn = {"amax": (np.max, np.nanmax), "amin": (np.min, np.nanmin)}[node.op][bug == "nan_skip"]
    with np.errstate(all="ignore"):
        y = fn(x, axis=ax, keepdims=node.attrs["keepdim"]) if x.ndim else x
    return [np.asarray(y).astype(x.dtype)]


def argmax(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    (x,) = args
    axis, keep = node.attrs["axis"], node.attrs["keepdim"]
    flat = axis is None or x.ndim == 0
    v = x.reshape(-1) if flat else np.moveaxis(x, axis % x.ndim, -1)
    if node.op == "argmin":
        v = -v.astype(np.float64) if v.dtype.kind == "f" else -v.astype(np.int64)
    if bug == "last":  # ties give the last index
        idx = v.shape[-1] - 1 - np.argmax(v[..., ::-1], axis=-1)
    elif bug == "nan_skip":  # NaN is ignored instead of counting as the extreme
        idx = np.nanargmax(np.where(np.isnan(v), -np.inf, v), axis=-1)
    else:
        idx = np.argmax(v, axis=-1)
    idx = np.asarray(idx, dtype=np.int64)
    if flat:
        return [idx.reshape((1,) * x.ndim) if keep else idx]
    return [np.expand_dims(idx, axis % x.ndim) if keep else idx]


def softmax(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    (x,) = args
    xf = x.astype(F32).reshape(x.shape or (1,))
    ax = node.attrs["axis"] % xf.ndim
    with np.errstate(all="ignore"):
        if bug == "no_max":  # exp overflows for large logits
            shifted = xf
        elif bug == "nan_local":  # NaN stays where it is; the rest of the row is finite
            shifted = xf - np.nanmax(xf, axis=ax, keepdims=True)
        else:
            shifted = xf - np.max(xf, axis=ax, keepdims=True)
        e = np.exp(shifted)
        total = (np.nansum if bug == "nan_local" else np.sum)(e, axis=ax, keepdims=True)
        if node.op == "softmax":
            y = e / total
        elif bug == "log_of_softmax":
            y = np.log(e / total)
        else:
            y = shifted - np.log(total)
    return [y.astype(x.dtype).reshape(x.shape)]


def variance(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    (x,) = args
    a = node.attrs
    ax = _axes(a["axes"], x.ndim)
    xf = x.astype(F32)
    n = math.prod(x.shape[i] for i in ax) if x.ndim else 1
    with np.errstate(all="ignore"):
        if bug == "one_pass":  # E[x^2] - E[x]^2 in f32
            ss = np.sum(xf * xf, axis=ax, keepdims=True) - np.sum(
                xf, axis=ax, keepdims=True
            ) ** 2 / F32(n)
        else:
            d = xf - np.mean(xf, axis=ax, keepdims=True)
            ss = np.sum(d * d, axis=ax, keepdims=True)
        var = ss / F32(max(0, n - a["correction"]))
        y = np.sqrt(var) if node.op == "std" else var
    if not a["keepdim"]:
        y = np.squeeze(y, axis=ax) if ax else y
    return [np.asarray(y).astype(x.dtype)]


def _stats(xf: np.ndarray, ax: tuple[int, ...], bug: str | None) -> tuple[np.ndarray, np.ndarray]:
    mean = np.mean(xf, axis=ax, keepdims=True)
    if bug == "one_pass":
        var = np.mean(xf * xf, axis=ax, keepdims=True) - mean * mean
    else:
        var = np.mean((xf - mean) ** 2, axis=ax, keepdims=True)
    return mean, var


def layer_norm(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    x, *params = args
    k = len(node.attrs["normalized_shape"])
    xf = x.astype(F32)
    ax = tuple(range(x.ndim - k, x.ndim))
    mean, var = _stats(xf, ax, bug)
    y = (xf - mean) / np.sqrt(var + F32(node.attrs["eps"]))
    if params:
        y = y * params[0].astype(F32)
    if len(params) > 1:
        y = y + params[1].astype(F32)
    return [y.astype(x.dtype)]


def rms_norm(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    x, *params = args
    k = len(node.attrs["normalized_shape"])
    eps = node.attrs["eps"]
    eps = F32(ml_dtypes.finfo(x.dtype).eps if eps is None else eps)
    xf = x.astype(F32)
    ms = np.mean(xf * xf, axis=tuple(range(x.ndim - k, x.ndim)), keepdims=True)
    # "eps_outside": x / (sqrt(ms) + eps)
    denom = np.sqrt(ms) + eps if bug == "eps_outside" else np.sqrt(ms + eps)
    y = xf * (F32(1) / denom)
    if params:
        y = y * params[0].astype(F32)
    return [y.astype(x.dtype)]


def group_norm(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    x, *params = args
    g = node.attrs["num_groups"]
    n, c = x.shape[:2]
    xf = x.astype(F32)
    if bug == "interleaved":  # channel c in group c % G instead of c // (C/G)
        grouped = np.swapaxes(xf.reshape(n, c // g, g, -1), 1, 2)
    else:
        grouped = xf.reshape(n, g, c // g, -1)
    mean, var = _stats(grouped, (2, 3), None)
    norm = (grouped - mean) / np.sqrt(var + F32(node.attrs["eps"]))
    if bug == "interleaved":
        norm = np.swapaxes(norm, 1, 2)
    y = norm.reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    if params:
        y = y * params[0].astype(F32).reshape(shape)
    if len(params) > 1:
        y = y + params[1].astype(F32).reshape(shape)
    return [y.astype(x.dtype)]


def batch_norm(node: Node, args: list[np.ndarray], bug: str | None) -> list[np.ndarray]:
    x, mean, var, *params = args
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    eps = F32(node.attrs["eps"])
    v = var.astype(F32).reshape(shape)
    denom = np.sqrt(v) + eps if bug == "eps_outside" else np.sqrt(v + eps)
    y = (x.astype(F32) - mean.astype(F32).reshape(shape)) / denom
    if params:
        y = y * params[0].astype(F32).reshape(shape)
    if len(params) > 1:
        y = y + params[1].astype(F32).reshape(shape)
    return [y.astype(x.dtype)]
