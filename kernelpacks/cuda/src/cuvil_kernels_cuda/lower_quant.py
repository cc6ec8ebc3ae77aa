"""Emitters of the int8 template families, bit-exact: the IR carries every fixed-point
``(M, shift)`` as attributes, so these emitters launch the library's integer kernels with those
values directly (the library's host wrappers would recompute them from scales)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_kernels_cuda.lower_common import FLOAT, INT8, EmitContext, kernels, pads
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Node
from cuvil_ref.plugin.kit import CheckContext, checks
from cuvil_ref.plugin.kit.templates import Emitter, formula


def _cuda() -> Any:
    from numba import cuda

    return cuda


def _launch_1d(kernel: Any, n: int, *args: Any) -> None:
    common = kernels("common")
    if n:
        tpb = common.threads_1d()
        common.launch(kernel, common.blocks_for(n, tpb), tpb, *args)


def _per_channel(values: tuple[int, ...], channels: int) -> Any:
    arr = np.asarray(values, np.int64)
    if arr.size == 1:
        arr = np.full(channels, arr[0], np.int64)
    return _cuda().to_device(arr)


def _elementwise_args(x: Any) -> tuple[Any, ...]:
    common = kernels("common")
    t = common.strided(x, "quantized")
    return t, common.i64(t.shape or (1,)), common.i64(t.strides or (0,))


def _new(shape: tuple[int, ...], dtype: Any) -> Any:
    return _cuda().device_array(shape, dtype=np.dtype(dtype))


# --- boundary and elementwise --------------------------------------------------------------------


def _boundary_check(node: Node, cx: CheckContext) -> str | None:
    return checks.per_tensor(node)


def _quantize(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    q = kernels("quant")
    t, shape, strides = _elementwise_args(args[0])
    out = _new(t.shape, np.int8)
    scale, zp = np.float32(node.attrs["scale"][0]), int(node.attrs["zero_point"][0])
    _launch_1d(q._quantize_kernel, t.size, _flat(out), t.data, shape, strides, t.offset, t.size,
               scale, zp)  # fmt: skip
    return [out]


def _dequantize(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    q = kernels("quant")
    t, shape, strides = _elementwise_args(args[0])
    out = _new(t.shape, np.float32)
    scale, zp = np.float32(node.attrs["scale"][0]), int(node.attrs["zero_point"][0])
    _launch_1d(q._dequantize_kernel, t.size, _flat(out), t.data, shape, strides, t.offset, t.size,
               scale, zp)  # fmt: skip
    return [out]


def _flat(x: Any) -> Any:
    return kernels("common").flat(x)


def _requantize_into(x: Any, x_zp: int, mult: int, shift: int, a: Any) -> Any:
    q, common = kernels("quant"), kernels("common")
    t, shape, strides = _elementwise_args(x)
    out = _new(t.shape, np.int8)
    params = common.i64([int(x_zp), int(mult), int(shift), a["out_zp"], a["qmin"], a["qmax"]])
    _launch_1d(q._requantize_kernel, t.size, _flat(out), t.data, shape, strides, t.offset, t.size,
               params)  # fmt: skip
    return out


def _requantize(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    a = node.attrs
    return [_requantize_into(args[0], a["x_zp"], a["multiplier"][0], a["shift"][0], a)]


def _qconcat(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    a = node.attrs
    parts = [
        _requantize_into(x, z, m, s, a)
        for x, z, m, s in zip(args, a["x_zp"], a["multiplier"], a["shift"], strict=True)
    ]
    return [kernels("movement").concat(parts, a["axis"])]


def _qbinary(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    q, common = kernels("quant"), kernels("common")
    a = node.attrs
    ta, tb = common.strided(args[0], node.op), common.strided(args[1], node.op)
    shape = tuple(int(d) for d in np.broadcast_shapes(ta.shape, tb.shape))
    out = _new(shape, np.int8)
    ls = shape or (1,)
    if node.op == "qadd":
        m_a, m_b, shift = a["multiplier"][0], a["multiplier"][1], a["shift"][0]
    else:
        m_a, m_b, shift = a["multiplier"][0], 0, a["shift"][0]
    params = [a["a_zp"], a["b_zp"], a["out_zp"], a["qmin"], a["qmax"], m_a, m_b, shift]
    kernel = common.cached(("qbinary", node.op), lambda: q._build_binary(node.op == "qadd"))
    n = out.size
    _launch_1d(
        kernel, n, _flat(out), n, common.i64(ls),
        ta.data, common.i64(ta.broadcast_to(ls)), ta.offset,
        tb.data, common.i64(tb.broadcast_to(ls)), tb.offset, common.i64(params),
    )  # fmt: skip
    return [out]


# --- accumulating ops ----------------------------------------------------------------------------


def _bias(args: list[Any], channels: int) -> Any:
    if len(args) > 2:
        return args[2]
    return _cuda().to_device(np.zeros(channels, np.int32))


def _out_params(a: Any, x_zp: int) -> Any:
    return kernels("common").i64([int(x_zp), a["out_zp"], a["qmin"], a["qmax"]])


def _qlinear(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    q, common = kernels("quant"), kernels("common")
    a = node.attrs
    x, w = args[0], args[1]
    n, k = (int(d) for d in w.shape)
    rows = x.size // k if k else 0
    out = _new(tuple(int(d) for d in x.shape[:-1]) + (n,), np.int8)
    _launch_1d(
        q._qlinear_kernel, rows * n, _flat(out), _flat(x), _flat(w), _flat(_bias(args, n)),
        _per_channel(a["multiplier"], n), _per_channel(a["shift"], n),
        common.i64((rows, n, k)), _out_params(a, a["x_zp"]),
    )  # fmt: skip
    return [out]


def _qconv_check(node: Node, cx: CheckContext) -> str | None:
    return checks.padding_reason(node)


def _qconv2d(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    q, conv, common = kernels("quant"), kernels("conv"), kernels("common")
    a = node.attrs
    geo = conv.conv_geometry(
        args[0].shape, args[1].shape, tuple(a["stride"]), pads(node), tuple(a["dilation"]),
        a["groups"], "qconv2d",
    )  # fmt: skip
    oc = geo[conv.OC]
    out = _new((geo[0], oc, geo[conv.OH], geo[conv.OW]), np.int8)
    _launch_1d(
        q._qconv_kernel, out.size, _flat(out), _flat(args[0]), _flat(args[1]),
        _flat(_bias(args, oc)), _per_channel(a["multiplier"], oc), _per_channel(a["shift"], oc),
        common.i64(geo), out.size, _out_params(a, a["x_zp"]),
    )  # fmt: skip
    return [out]


# --- pooling -------------------------------------------------------------------------------------


def _geometry(node: Node, x: Any, include_pad: bool) -> list[int]:
    a = node.attrs
    dilation = tuple(a.get("dilation", (1, 1)))
    return kernels("pool").pool_geometry(
        tuple(x.shape), tuple(a["kernel"]), tuple(a["stride"]), pads(node), dilation,
        a["ceil_mode"], include_pad, node.op,
    )  # fmt: skip


def _qmax_pool2d(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    qp, common = kernels("quant_pool"), kernels("common")
    geo = _geometry(node, args[0], False)
    out = _new((geo[0], geo[1], geo[4], geo[5]), np.int8)
    _launch_1d(qp._qmax_kernel, out.size, _flat(out), _flat(args[0]), common.i64(geo), out.size)
    return [out]


def _qavg(node: Node, x: Any, geo: list[int]) -> Any:
    qp, common = kernels("quant_pool"), kernels("common")
    a = node.attrs
    # The kernel indexes the tables by the window count n; the IR's entry n-1 is for n.
    mults = _cuda().to_device(np.asarray((0, *a["multiplier"]), np.int64))
    shifts = _cuda().to_device(np.asarray((1, *a["shift"]), np.int64))
    out = _new((geo[0], geo[1], geo[4], geo[5]), np.int8)
    _launch_1d(
        qp._qavg_kernel, out.size, _flat(out), _flat(x), common.i64(geo), out.size, mults, shifts,
        _out_params(a, a["x_zp"]),
    )  # fmt: skip
    return out


def _qavg_pool2d(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    return [_qavg(node, args[0], _geometry(node, args[0], node.attrs["count_include_pad"]))]


def _qadaptive(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    geo = kernels("pool").adaptive_geometry(
        tuple(args[0].shape), tuple(node.attrs["output_size"]), node.op
    )
    return [_qavg(node, args[0], geo)]


def _qpool_check(node: Node, cx: CheckContext) -> str | None:
    if formula(node.op) == "adaptive_avg":
        return checks.rank(node, 4)
    return checks.pool_window(node)


def _qpool(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    pool = {"max": _qmax_pool2d, "avg": _qavg_pool2d, "adaptive_avg": _qadaptive}
    return pool[formula(node.op)](node, args, cx)


EMITTERS: dict[str, Emitter] = {
    "quantize": Emitter(_quantize, FLOAT, _boundary_check),
    "dequantize": Emitter(_dequantize, frozenset({DType.i8, DType.i32}), _boundary_check),
    "requantize": Emitter(_requantize, INT8),
    "qconcat": Emitter(_qconcat, INT8),
    "qbinary": Emitter(_qbinary, INT8),
    "qgemm": Emitter(_qlinear, INT8, formulas=frozenset({"linear"})),
    "qconv2d": Emitter(_qconv2d, INT8, _qconv_check),
    "qpool2d": Emitter(_qpool, INT8, _qpool_check),
}
