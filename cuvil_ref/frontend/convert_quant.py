"""Capture of torch.ao-quantized models: fake-quant modules, QAT layers and converted quantized
modules/functions become ``quantize -> dequantize`` pairs with the model's own parameters.

A torch.ao fake-quant module (``FakeQuantize``, ``FusedMovingAvgObsFakeQuantize``), a QAT
layer's weight fake-quant and a converted quantized module (``torch.ao.nn.quantized.Conv2d``...)
each become a ``quantize -> dequantize`` pair (plus an int8 ``clamp`` when torch's range is
narrower than int8) carrying the module's *current* scale and zero point. The captured float
graph therefore *is* the fake-quant forward, runnable by the reference interpreter. torch's
``quint8`` values ``[0, 255]`` map to our int8 by subtracting 128 from ``q`` and the zero point
(same reals). The converters are merged into ``frontend/op_table.py``'s tables; lowering the
pairs to integer ops is the quantizer's job (:mod:`cuvil_ref.quant.qdq`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError
from cuvil_ref.ir.graph import Value
from cuvil_ref.ops import qarith

INT8_RANGE = (qarith.INT8_MIN, qarith.INT8_MAX)


@dataclass(frozen=True)
class TorchQParams:
    """A torch quantizer's parameters in Cuvil's int8 terms (zero points and range shifted)."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None
    qmin: int
    qmax: int

    def attrs(self) -> dict[str, Any]:
        return {"scale": self.scale, "zero_point": self.zero_point, "axis": self.axis}


def torch_qparams(
    scale: Any, zero_point: Any, dtype: Any, qmin: int, qmax: int, axis: int | None, what: str
) -> TorchQParams:
    """Convert torch's (scale, zero_point, dtype, quant range) to int8 terms."""
    import torch

    offsets = {torch.quint8: -128, torch.qint8: 0}
    if dtype not in offsets:
        raise CaptureError(
            f"{what}: torch quantized dtype {dtype} is not supported; Cuvil imports quint8 and "
            "qint8 (8-bit) quantizers"
        )
    off = offsets[dtype]
    scales = np.atleast_1d(np.asarray(_np(scale), np.float32))
    zps = np.atleast_1d(np.asarray(_np(zero_point))).astype(np.int64) + off
    lo, hi = int(qmin) + off, int(qmax) + off
    if not qarith.INT8_MIN <= lo <= hi <= qarith.INT8_MAX:
        raise CaptureError(f"{what}: quant range [{qmin}, {qmax}] of {dtype} does not fit 8 bits")
    return TorchQParams(tuple(float(s) for s in scales), tuple(int(z) for z in zps), axis, lo, hi)


def _qrange() -> dict[Any, tuple[int, int]]:
    import torch

    return {torch.quint8: (0, 255), torch.qint8: (-128, 127)}


def _np(x: Any) -> Any:
    return x.detach().cpu().numpy() if hasattr(x, "detach") else x


def fake_quant_params(m: Any, what: str) -> TorchQParams | None:
    """A FakeQuantize module's current parameters; ``None`` when its fake quant is disabled."""
    import torch

    if hasattr(m, "fake_quant_enabled") and not bool(m.fake_quant_enabled[0]):
        return None
    per_channel = m.qscheme in (torch.per_channel_symmetric, torch.per_channel_affine)
    axis = int(m.ch_axis) if per_channel else None
    return torch_qparams(m.scale, m.zero_point, m.dtype, m.quant_min, m.quant_max, axis, what)


def qdq(cx: Any, x: Value, p: TorchQParams | None) -> Value:
    """``dequantize(quantize(x))`` with ``p`` (a clamp in between for a narrow range)."""
    if p is None:
        return x
    q = cx.op("quantize", [x], **p.attrs())
    if (p.qmin, p.qmax) != INT8_RANGE:
        q = cx.op("clamp", [q], min=float(p.qmin), max=float(p.qmax))
    return cx.op("dequantize", [q], **p.attrs())


# --- converters --------------------------------------------------------------------------


def _fake_quantize(cx: Any, m: Any, path: str, x: Value) -> Value:
    return qdq(cx, x, fake_quant_params(m, f"fake-quant '{path}'"))


def _const(cx: Any, path: str, name: str, tensor: Any) -> Value | None:
    return None if tensor is None else cx.weight(f"{path}.{name}", tensor)


def _conv(cx: Any, m: Any, path: str, x: Value, w: Value, b: Value | None) -> Value:
    from cuvil_ref.frontend import functional as fn

    if getattr(m, "padding_mode", "zeros") != "zeros":
        raise CaptureError(f"'{path}': padding_mode={m.padding_mode!r} is not supported")
    return fn.conv2d(cx, x, w, b, m.stride, m.padding, m.dilation, m.groups)


def _qat_conv(relu: bool, bn: bool) -> Callable[..., Value]:
    """QAT conv (ConvBn/ConvBnReLU fold BN with running stats exactly as torch's eval forward)."""

    def convert(cx: Any, m: Any, path: str, x: Value) -> Value:
        import torch

        weight, bias = m.weight.detach(), m.bias
        if bn:
            std = torch.sqrt(m.bn.running_var + m.bn.eps)
            factor = (m.bn.weight / std).detach()
            weight = weight * factor.reshape(-1, 1, 1, 1)
            b0 = torch.zeros_like(m.bn.running_mean) if bias is None else bias.detach()
            bias = ((b0 - m.bn.running_mean) * factor + m.bn.bias).detach()
        p = fake_quant_params(m.weight_fake_quant, f"weight fake-quant of '{path}'")
        w = qdq(cx, cx.weight(f"{path}.weight", weight), p)
        y = _conv(cx, m, path, x, w, _const(cx, path, "bias", bias))
        return cx.op("relu", [y]) if relu else y

    return convert


def _qat_linear(relu: bool) -> Callable[..., Value]:
    def convert(cx: Any, m: Any, path: str, x: Value) -> Value:
        from cuvil_ref.frontend import functional as fn

        p = fake_quant_params(m.weight_fake_quant, f"weight fake-quant of '{path}'")
        w = qdq(cx, cx.weight(f"{path}.weight", m.weight), p)
        y = fn.linear(cx, x, w, _const(cx, path, "bias", m.bias))
        return cx.op("relu", [y]) if relu else y

    return convert


def _weight_params(qw: Any, what: str) -> TorchQParams:
    import torch

    if qw.qscheme() in (torch.per_channel_symmetric, torch.per_channel_affine):
        scale, zp = qw.q_per_channel_scales(), qw.q_per_channel_zero_points()
        axis: int | None = int(qw.q_per_channel_axis())
    else:
        scale, zp, axis = qw.q_scale(), qw.q_zero_point(), None
    lo, hi = _qrange().get(qw.dtype, (0, 0))
    return torch_qparams(scale, zp, qw.dtype, lo, hi, axis, what)


def _output_params(m: Any, what: str) -> TorchQParams:
    import torch

    return torch_qparams(m.scale, m.zero_point, torch.quint8, 0, 255, None, what)


def _quantized_layer(kind: str, relu: bool) -> Callable[..., Value]:
    """A converted quantized conv/linear: int weights re-expressed as Q/DQ of their reals."""

    def convert(cx: Any, m: Any, path: str, x: Value) -> Value:
        from cuvil_ref.frontend import functional as fn

        qw = m.weight()
        w = qdq(cx, cx.weight(f"{path}.weight", qw.dequantize()), _weight_params(qw, path))
        b = _const(cx, path, "bias", m.bias())
        y = _conv(cx, m, path, x, w, b) if kind == "conv" else fn.linear(cx, x, w, b)
        if relu:
            y = cx.op("relu", [y])
        return qdq(cx, y, _output_params(m, path))

    return convert


def _quantize_module(cx: Any, m: Any, path: str, x: Value) -> Value:
    p = torch_qparams(m.scale, m.zero_point, m.dtype, 0, 255, None, f"Quantize '{path}'")
    return qdq(cx, x, p)


def _identity(cx: Any, m: Any, path: str, x: Value) -> Value:
    return x


def _scalar(cx: Any, v: Any) -> Any:
    """A Python number from a literal or a captured 0-d constant (fx get_attr of a buffer)."""
    if isinstance(v, Value):
        array = cx.builder.constant_array(v.name)  # a get_attr buffer was captured as a constant
        if array is None:
            raise CaptureError(f"quantization parameter %{v.name} must be a constant buffer")
        return array.reshape(()).item()
    return v


def _quantize_per_tensor(cx: Any, x: Value, scale: Any, zero_point: Any, dtype: Any) -> Value:

    lo, hi = _qrange().get(dtype, (0, 0))
    p = torch_qparams(
        _scalar(cx, scale), _scalar(cx, zero_point), dtype, lo, hi, None, "quantize_per_tensor"
    )
    return qdq(cx, x, p)


def _quint8() -> Any:
    import torch

    return torch.quint8


def _quantized_binary(op: str, relu: bool) -> Callable[..., Value]:
    def convert(cx: Any, a: Value, b: Value, scale: Any, zero_point: Any) -> Value:
        y = cx.op(op, [a, b])
        if relu:
            y = cx.op("relu", [y])
        p = torch_qparams(_scalar(cx, scale), _scalar(cx, zero_point), _quint8(), 0, 255, None, op)
        return qdq(cx, y, p)

    return convert


def module_table() -> dict[type, Callable[..., Any]]:
    """torch.ao module class -> capture converter (merged into ``MODULE_TABLE``)."""
    import torch.ao.nn.intrinsic.qat as nniqat
    import torch.ao.nn.intrinsic.quantized as nniq
    import torch.ao.nn.qat as nnqat
    import torch.ao.nn.quantized as nnq
    from torch.ao.quantization import fake_quantize as fq

    return {
        fq.FakeQuantize: _fake_quantize,
        fq.FusedMovingAvgObsFakeQuantize: _fake_quantize,
        fq.FixedQParamsFakeQuantize: _fake_quantize,
        nnqat.Conv2d: _qat_conv(relu=False, bn=False),
        nniqat.ConvReLU2d: _qat_conv(relu=True, bn=False),
        nniqat.ConvBn2d: _qat_conv(relu=False, bn=True),
        nniqat.ConvBnReLU2d: _qat_conv(relu=True, bn=True),
        nnqat.Linear: _qat_linear(relu=False),
        nniqat.LinearReLU: _qat_linear(relu=True),
        nnq.Conv2d: _quantized_layer("conv", relu=False),
        nniq.ConvReLU2d: _quantized_layer("conv", relu=True),
        nnq.Linear: _quantized_layer("linear", relu=False),
        nniq.LinearReLU: _quantized_layer("linear", relu=True),
        nnq.Quantize: _quantize_module,
        nnq.DeQuantize: _identity,
        nnq.Dropout: _identity,
    }


def function_table() -> dict[Any, Callable[..., Any]]:
    """torch functions of converted models -> converters (merged into ``FUNCTION_TABLE``)."""
    import torch

    return {
        torch.quantize_per_tensor: _quantize_per_tensor,
        torch.ops.quantized.add: _quantized_binary("add", relu=False),
        torch.ops.quantized.add_relu: _quantized_binary("add", relu=True),
        torch.ops.quantized.mul: _quantized_binary("mul", relu=False),
    }
