"""Converters for the Core ATen pooling ops: max (with indices), average and adaptive average
pools over 1, 2 and 3 spatial dims.

2-d pools become the ops packs claim (``max_pool2d``, ``avg_pool2d``, ``adaptive_avg_pool2d``);
1-d pools become 2-d pools over a height-1 image; the indices output of
``max_pool2d_with_indices`` / ``max_pool3d_with_indices`` is computed (``max_pool_with_indices``)
only when the graph reads it. ATen passes ``stride=[]`` for "the kernel size" and one int per
spatial dim (or one for all) elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.context import Converter
from cuvil_ref.frontend.convert_args import pair, rank
from cuvil_ref.ir.graph import Value

Conv = Callable[..., Any]


def _ints(name: str, value: Any, k: int, op: str) -> tuple[int, ...]:
    out = pair(value, k)
    if len(out) != k:
        raise CaptureError(f"{op}: {name}={list(out)} needs {k} values (one per spatial dim)")
    return out


def _window(
    op: str, k: int, kernel: Any, stride: Any, padding: Any, dilation: Any = 1
) -> dict[str, tuple[int, ...]]:
    kernel_ = _ints("kernel_size", kernel, k, op)
    no_stride = stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0)
    return {
        "kernel": kernel_,
        "stride": kernel_ if no_stride else _ints("stride", stride, k, op),
        "padding": _ints("padding", padding, k, op),
        "dilation": _ints("dilation", dilation, k, op),
    }


def _check_rank(op: str, x: Value, k: int) -> None:
    if rank(x) not in (k + 1, k + 2):
        raise CaptureError(f"{op} takes an input of rank {k + 1} or {k + 2}, got {x.type}")


def _max_pool(k: int, values_op: str) -> Conv:
    name = f"max_pool{k}d_with_indices"

    def convert(
        cx: Converter,
        x: Value,
        kernel_size: Any,
        stride: Any = (),
        padding: Any = 0,
        dilation: Any = 1,
        ceil_mode: bool = False,
    ) -> tuple[Value, Value | None]:
        _check_rank(name, x, k)
        win = _window(name, k, kernel_size, stride, padding, dilation)
        if cx.wants(1):
            values, indices = cx.op_multi(
                "max_pool_with_indices", [x], **win, ceil_mode=bool(ceil_mode)
            )
            return values, indices
        if k == 2:
            win["padding"] = win["padding"] * 2
        return cx.op(values_op, [x], **win, ceil_mode=bool(ceil_mode)), None

    return convert


def avg_pool2d(
    cx: Converter,
    x: Value,
    kernel_size: Any,
    stride: Any = (),
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Value:
    _check_rank("avg_pool2d", x, 2)
    win = _window("avg_pool2d", 2, kernel_size, stride, padding)
    del win["dilation"]
    return cx.op(
        "avg_pool2d",
        [x],
        **win,
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
        divisor_override=None if divisor_override is None else int(divisor_override),
    )


def avg_pool1d(
    cx: Converter,
    x: Value,
    kernel_size: Any,
    stride: Any = (),
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Value:
    """A 2-d average pool over a height-1 image."""
    _check_rank("avg_pool1d", x, 1)
    win = _window("avg_pool1d", 1, kernel_size, stride, padding)
    x4 = cx.op("unsqueeze", [x], axis=-2)
    y = cx.op(
        "avg_pool2d",
        [x4],
        kernel=(1, *win["kernel"]),
        stride=(1, *win["stride"]),
        padding=(0, *win["padding"]),
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
    )
    return cx.op("squeeze", [y], axes=(rank(y) - 2,))


def avg_pool3d(
    cx: Converter,
    x: Value,
    kernel_size: Any,
    stride: Any = (),
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Value:
    _check_rank("avg_pool3d", x, 3)
    win = _window("avg_pool3d", 3, kernel_size, stride, padding)
    del win["dilation"]
    return cx.op(
        "avg_pool3d",
        [x],
        **win,
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
        divisor_override=None if divisor_override is None else int(divisor_override),
    )


def _output_size(op: str, output_size: Sequence[Any], k: int) -> tuple[int, ...]:
    sizes = tuple(int(s) for s in pair(output_size, k))
    if len(sizes) != k:
        raise CaptureError(f"{op}: output_size {list(sizes)} needs {k} values")
    return sizes


def adaptive_avg_pool1d(cx: Converter, x: Value, output_size: Sequence[Any]) -> Value:
    _check_rank("adaptive_avg_pool1d", x, 1)
    (size,) = _output_size("adaptive_avg_pool1d", output_size, 1)
    x4 = cx.op("unsqueeze", [x], axis=-2)
    y = cx.op("adaptive_avg_pool2d", [x4], output_size=(1, size))
    return cx.op("squeeze", [y], axes=(rank(y) - 2,))


def adaptive_avg_pool2d(cx: Converter, x: Value, output_size: Sequence[Any]) -> Value:
    _check_rank("adaptive_avg_pool2d", x, 2)
    sizes = _output_size("adaptive_avg_pool2d", output_size, 2)
    return cx.op("adaptive_avg_pool2d", [x], output_size=sizes)


def adaptive_avg_pool3d(cx: Converter, x: Value, output_size: Sequence[Any]) -> Value:
    _check_rank("adaptive_avg_pool3d", x, 3)
    sizes = _output_size("adaptive_avg_pool3d", output_size, 3)
    return cx.op("adaptive_avg_pool3d", [x], output_size=sizes)


TABLE: dict[str, Conv] = {
    "aten::max_pool2d_with_indices": _max_pool(2, "max_pool2d"),
    "aten::max_pool3d_with_indices": _max_pool(3, "max_pool3d"),
    "aten::avg_pool1d": avg_pool1d,
    "aten::avg_pool2d": avg_pool2d,
    "aten::avg_pool3d": avg_pool3d,
    "aten::adaptive_avg_pool1d": adaptive_avg_pool1d,
    "aten::_adaptive_avg_pool2d": adaptive_avg_pool2d,
    "aten::_adaptive_avg_pool3d": adaptive_avg_pool3d,
}
