"""Emitters of the ``view``, ``movement`` and ``gather`` template families (every dtype but bf16,
values copied bit for bit).

reshape / flatten / squeeze / unsqueeze are views of a contiguous device array (no launch); the
others use the library's strided copy, fill and gather kernels.
"""

from __future__ import annotations

from typing import Any

from cuvil_kernels_cuda.lower_common import ALL, EmitContext, kernels
from cuvil_ref.ir.graph import Node
from cuvil_ref.plugin.kit import CheckContext
from cuvil_ref.plugin.kit.templates import Emitter, formula


def _view(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    return [args[0].reshape(cx.shape(node.outputs[0]))]


def _expand(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    common, movement = kernels("common"), kernels("movement")
    from numba import cuda

    shape = cx.shape(node.outputs[0])
    src = common.strided(args[0], "expand")
    out = cuda.device_array(shape, dtype=args[0].dtype)
    movement.copy_strided(
        common.flat(out), shape, common.c_strides(shape), 0, src, src.broadcast_to(shape),
        src.offset,
    )  # fmt: skip
    return [out]


def _permute(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    return [kernels("movement").permute(args[0], tuple(node.attrs["perm"]))]


def _transpose(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    if len(args[0].shape) == 0:  # the input itself: the arena keeps it out (shared bytes)
        return [args[0]]
    return [kernels("movement").transpose(args[0], node.attrs["dim0"], node.attrs["dim1"])]


def _slice_along(x: Any, axis: int, start: int | None, end: int | None, step: int) -> Any:
    nd = len(x.shape)
    axis %= nd
    starts: list[int | None] = [None] * nd
    stops: list[int | None] = [None] * nd
    steps: list[int | None] = [1] * nd
    starts[axis], stops[axis], steps[axis] = start, end, step
    return kernels("movement").slice_(x, starts, stops, steps)


def _slice(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    a = node.attrs
    return [_slice_along(args[0], a["axis"], a["start"], a["end"], a["step"])]


def _split(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    axis, outs, start = node.attrs["axis"], [], 0
    for size in node.attrs["sizes"]:
        outs.append(_slice_along(args[0], axis, start, start + size, 1))
        start += size
    return outs


def _concat(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    return [kernels("movement").concat(args, node.attrs["axis"])]


def _concat_check(node: Node, cx: CheckContext) -> str | None:
    if len({v.type.dtype for v in node.inputs}) != 1:
        return "concat: inputs of different dtypes not supported"
    if node.inputs[0].type.rank == 0:
        return "concat: rank-0 inputs not supported"
    return None


def _pad(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    a = node.attrs
    return [kernels("movement").pad_constant(args[0], tuple(a["pads"]), float(a["value"]))]


def _pad_check(node: Node, cx: CheckContext) -> str | None:
    pads, value = node.attrs["pads"], node.attrs["value"]
    if any(p < 0 for p in pads):
        return f"pad: negative pads {tuple(pads)} (cropping) not supported"
    dtype = node.inputs[0].type.dtype.value
    if dtype not in ("f32", "f16") and not (value == value and float(value).is_integer()):
        return f"pad: value {value} cannot be stored exactly as {dtype}"
    return None


def _index_check(node: Node, cx: CheckContext) -> str | None:
    idx = node.inputs[1].type.dtype.value
    if idx != "i64":
        return f"{node.op}: index dtype {idx} not supported (i64 only)"
    if node.inputs[0].type.rank == 0:
        return f"{node.op}: rank-0 inputs not supported"
    return None


def _index_select(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    index = args[1].reshape(max(args[1].size, 1)) if args[1].size else args[1]
    out = kernels("movement").index_select(args[0], node.attrs["axis"], index)
    return [out.reshape(cx.shape(node.outputs[0]))]


def _gather(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    return [kernels("movement").gather(args[0], node.attrs["axis"], args[1])]


def _embedding(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    index = args[1].reshape(args[1].size) if args[1].size else args[1]
    out = kernels("movement").index_select(args[0], 0, index)
    return [out.reshape(cx.shape(node.outputs[0]))]


_MOVEMENT = {
    "expand": _expand,
    "permute": _permute,
    "transpose": _transpose,
    "slice": _slice,
    "split": _split,
    "concat": _concat,
    "pad": _pad,
}
_MOVEMENT_CHECKS = {"concat": _concat_check, "pad": _pad_check}
_GATHER = {"index_select": _index_select, "gather": _gather, "embedding": _embedding}


def _movement(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    return _MOVEMENT[formula(node.op)](node, args, cx)


def _movement_check(node: Node, cx: CheckContext) -> str | None:
    check = _MOVEMENT_CHECKS.get(formula(node.op))
    return check(node, cx) if check else None


def _gathering(node: Node, args: list[Any], cx: EmitContext) -> list[Any]:
    return _GATHER[formula(node.op)](node, args, cx)


EMITTERS: dict[str, Emitter] = {
    "view": Emitter(_view, ALL),
    "movement": Emitter(_movement, ALL, _movement_check, frozenset(_MOVEMENT)),
    "gather": Emitter(_gathering, ALL, _index_check, frozenset(_GATHER)),
}
