"""Lowering of data-movement ops: views where the storage allows, numpy copies otherwise.

``reshape``/``flatten``/``squeeze``/``unsqueeze`` of a value stored in the IR's layout are
views (no step at all); a ``permute`` to NHWC of a value already stored NHWC is a view too, and
so is a transpose read only by batched matmuls (:mod:`.views`).
Transposes, slices, concatenation, expansion and padding are one numpy copy into the output
buffer (strided copies that release the GIL); gathers run the op's reference (index checks
included) and copy its result. All of these are exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_kernels_cpu.lowering import views
from cuvil_kernels_cpu.lowering.common import ANY
from cuvil_kernels_cpu.lowering.context import TO_NCHW, TO_NHWC, LowerContext
from cuvil_ref.ir.graph import Node
from cuvil_ref.ops import get_op
from cuvil_ref.plugin.kit import CheckContext

VIEWS = ("reshape", "flatten", "squeeze", "unsqueeze")


def lower_view(node: Node, cx: LowerContext) -> None:
    cx.view(node.outputs[0], cx.logical(node.inputs[0]))


def lower_permute(node: Node, cx: LowerContext) -> None:
    x = node.inputs[0]
    perm = views.permutation(node)
    if cx.bufs[x.name].nhwc and tuple(perm) == TO_NHWC:
        cx.view(node.outputs[0], x.name, cx.shape(node.outputs[0]))
        return
    src = cx.logical(x)
    if node.outputs[0].name in cx.permuted and cx.bufs[src].permuted is None:
        cx.permuted_view(node.outputs[0], src, perm)  # read in place by a batched matmul
        return
    out = cx.output(node.outputs[0])
    if tuple(perm) in (TO_NHWC, TO_NCHW):
        cx.transpose4(src, out.name, cx.bufs[src].dtype, tuple(perm))
        return
    cx.add(_copy_transposed, [src], [out.name], algo="copy", static=(tuple(perm),))


def _copy_transposed(x: np.ndarray, out: np.ndarray, perm: tuple[int, ...]) -> None:
    np.copyto(out, x.transpose(perm))


def lower_slice(node: Node, cx: LowerContext) -> None:
    a = node.attrs
    x = node.inputs[0]
    axis = a["axis"] % x.type.rank
    index: list[Any] = [slice(None)] * x.type.rank
    index[axis] = slice(a["start"], a["end"], a["step"])
    out = cx.output(node.outputs[0])
    cx.add(_copy_index, [cx.logical(x)], [out.name], algo="copy", static=(tuple(index),))


def _copy_index(x: np.ndarray, out: np.ndarray, index: tuple[Any, ...]) -> None:
    np.copyto(out, x[index])


def lower_concat(node: Node, cx: LowerContext) -> None:
    names = [cx.logical(v) for v in node.inputs]
    out = cx.output(node.outputs[0])
    axis = node.attrs["axis"] % max(1, node.outputs[0].type.rank)
    cx.add(_concat, names, [out.name], algo="copy", static=(axis,))


def _concat(*arrays: Any) -> None:
    *ins, out, axis = arrays
    np.concatenate(ins, axis=axis, out=out)


def lower_expand(node: Node, cx: LowerContext) -> None:
    out = cx.output(node.outputs[0])
    cx.add(_broadcast, [cx.logical(node.inputs[0])], [out.name], algo="copy")


def _broadcast(x: np.ndarray, out: np.ndarray) -> None:
    np.copyto(out, x)


def lower_reference(node: Node, cx: LowerContext) -> None:
    """Ops whose only work is indexing (gather, embedding, split, pad): the reference, copied."""
    names = [cx.logical(v) for v in node.inputs]
    outs = [cx.output(v).name for v in node.outputs]
    ref = get_op(node.op).reference
    cx.add(_reference_multi, names, outs, algo="numpy-ref",
           static=(ref, dict(node.attrs), len(outs)))  # fmt: skip


def _reference_multi(*arrays: Any) -> None:
    *rest, ref, attrs, nout = arrays
    ins, outs = rest[: len(rest) - nout], rest[len(rest) - nout :]
    result = ref(*ins, **attrs)
    results = result if isinstance(result, (list, tuple)) else [result]
    for dst, r in zip(outs, results, strict=True):
        np.copyto(dst, r, casting="unsafe")


def check_any(node: Node, cx: CheckContext) -> str | None:
    return None


ENTRIES: dict[str, tuple[Any, ...]] = {
    **{op: (lower_view, ANY, None) for op in VIEWS},
    "transpose": (lower_permute, ANY, None),
    "permute": (lower_permute, ANY, None),
    "slice": (lower_slice, ANY, None),
    "concat": (lower_concat, ANY, None),
    "expand": (lower_expand, ANY, None),
    **{op: (lower_reference, ANY, None)
       for op in ("gather", "index_select", "embedding", "split", "pad")},
}  # fmt: skip
