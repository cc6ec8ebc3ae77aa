"""Emitters for the float and int8 pooling kernels (NCHW): the ``pool2d`` (max, avg, adaptive)
and ``qpool2d`` template families.

The output size (including ``ceil_mode``) is read from the IR type; the kernels clip windows the
way torch does. Padding must be the same on both sides of an axis. The int8 average pools get
their per-count multiplier tables as device constants indexed by the window count (entry 0 is
unused padding, so entry ``n`` is the IR attribute's entry ``n - 1``).
"""

from __future__ import annotations

import numpy as np

from cuvil_kernels_hip.kernels.pooling import POOL_MODES, pooling_source
from cuvil_kernels_hip.kernels.qpool import QPOOL_MODES, qpool_source
from cuvil_kernels_hip.lowerings.common import (
    LowerContext,
    first_reason,
    float_reason,
    grid_1d,
    i32,
    i64,
    numel,
    same_dtype_reason,
    storage,
)
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Node
from cuvil_ref.plugin.kit import CheckContext, checks
from cuvil_ref.plugin.kit.templates import Emitter, formula


def _window(node: Node) -> tuple[int, ...]:
    """(KH, KW, sh, sw, ph, pw, dh, dw); zeros for adaptive pools."""
    if "output_size" in node.attrs:
        return (0,) * 8
    kh, kw = node.attrs["kernel"]
    sh, sw = node.attrs["stride"] or (kh, kw)
    ph, pw = node.attrs["padding"][:2]
    dh, dw = node.attrs.get("dilation", (1, 1))
    return (kh, kw, sh, sw, ph, pw, dh, dw)


def _geometry(node: Node) -> tuple[object, ...]:
    nb, c, h, w = (int(d) for d in node.inputs[0].type.shape)
    oh, ow = (int(d) for d in node.outputs[0].type.shape[2:])
    return (i64(nb), *(i32(v) for v in (c, h, w, oh, ow, *_window(node))))


def _shape_reason(node: Node) -> str | None:
    x = node.inputs[0]
    if len(x.type.shape) != 4 or x.type.layout not in (None, "NCHW"):
        return f"x of rank {len(x.type.shape)}, layout {x.type.layout}: hip pools take 4-D NCHW"
    if "padding" in node.attrs and (reason := checks.padding_reason(node)):
        return reason
    if node.attrs.get("divisor_override") is not None:
        return "divisor_override has no hip kernel"
    return None


def _launch(node: Node, ctx: LowerContext, src: object, args: tuple[object, ...]) -> None:
    total = numel(tuple(int(d) for d in node.outputs[0].type.shape))
    block = ctx.options.block_size
    ctx.launch(src, grid_1d(total, block), (block, 1, 1), args)  # type: ignore[arg-type]


def check_pool(node: Node, cx: CheckContext) -> str | None:
    return first_reason(float_reason(node), same_dtype_reason(node), _shape_reason(node))


def lower_pool(node: Node, ctx: LowerContext) -> None:
    x, y = node.inputs[0], node.outputs[0]
    include_pad = node.attrs.get("count_include_pad", True)
    src = pooling_source(formula(node.op), storage(x), ctx.options, include_pad)
    _launch(node, ctx, src, (x.name, y.name, *_geometry(node)))


def check_qpool(node: Node, cx: CheckContext) -> str | None:
    for v in (node.inputs[0], node.outputs[0]):
        if v.type.dtype != DType.i8:
            return f"%{v.name} is {v.type.dtype.value}: hip int8 pools take i8"
    return _shape_reason(node)


def _count_table(node: Node, ctx: LowerContext, key: str) -> str:
    table = np.asarray((0, *node.attrs[key]), dtype=np.int32)
    return ctx.add_constant(node, key, table)


def lower_qpool(node: Node, ctx: LowerContext) -> None:
    x, y = node.inputs[0], node.outputs[0]
    mode = formula(node.op)
    src = qpool_source(mode, ctx.options, node.attrs.get("count_include_pad", True))
    if mode == "max":
        _launch(node, ctx, src, (x.name, y.name, *_geometry(node)))
        return
    tables = (_count_table(node, ctx, "multiplier"), _count_table(node, ctx, "shift"))
    tail = (node.attrs["x_zp"], node.attrs["out_zp"], node.attrs["qmin"], node.attrs["qmax"])
    args = (x.name, y.name, *tables, *_geometry(node), *(i32(v) for v in tail))
    _launch(node, ctx, src, args)


EMITTERS: dict[str, Emitter] = {
    "pool2d": Emitter(lower_pool, check=check_pool, formulas=frozenset(POOL_MODES)),
    "qpool2d": Emitter(lower_qpool, check=check_qpool, formulas=frozenset(QPOOL_MODES)),
}
