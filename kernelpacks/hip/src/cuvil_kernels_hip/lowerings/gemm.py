"""Emitters for the tiled/WMMA GEMM and the implicit-GEMM conv: the ``gemm`` (linear, matmul)
and ``conv2d`` template families, plain and fused (bias, activation and residual in the
epilogue).

The GEMM variant (tensor cores or SIMT) comes from ``choose_gemm_variant`` for the node's dtype,
problem size and the target features; its reason is kept in the context notes for ``metrics()``.
Batched matmul supports equal batch dims, a 2-D ``b`` (folded into M) and a 2-D ``a``
(broadcast with batch stride 0).
"""

from __future__ import annotations

from cuvil_kernels_hip.kernels import epilogue
from cuvil_kernels_hip.kernels.conv2d import conv2d_source
from cuvil_kernels_hip.kernels.epilogue import Epilogue
from cuvil_kernels_hip.kernels.gemm import gemm_source
from cuvil_kernels_hip.kernels.gemm_variant import choose_gemm_variant
from cuvil_kernels_hip.kernels.tiled_core import THREADS_XY
from cuvil_kernels_hip.lowerings.common import (
    MAX_GRID_YZ,
    LowerContext,
    first_reason,
    float_reason,
    i32,
    i64,
    numel,
    same_dtype_reason,
    storage,
)
from cuvil_ref.ir.graph import Node
from cuvil_ref.ops import families, fused
from cuvil_ref.plugin.kit import CheckContext, checks
from cuvil_ref.plugin.kit.templates import Emitter

GEMM_MICRO = 4
CONV_MICRO = 2
#: Epilogue activations of the fused ops the hip epilogue has (clamp is not among them).
EPILOGUE_ACTIVATIONS = tuple(a for a in fused.ACTIVATIONS if a in epilogue.ACTIVATIONS)
FUSED = families.FUSED_PRODUCERS
LINEAR_OPS = families.LINEARS  # weight [N, K]


def epilogue_of(node: Node) -> Epilogue:
    """The kernel epilogue equivalent to ``node``'s bias/activation/residual."""
    has_bias = len(node.inputs) >= 3
    if node.op not in FUSED:
        return Epilogue(bias=has_bias)
    return Epilogue(
        bias=True,
        activation=node.attrs["activation"],
        residual=node.attrs["has_residual"],
        residual_before_activation=node.attrs["order"] == "residual_then_activation",
    )


def _epilogue_reason(node: Node) -> str | None:
    if node.op in FUSED and node.attrs["activation"] not in EPILOGUE_ACTIVATIONS:
        return (
            f"epilogue activation {node.attrs['activation']!r} has no hip kernel; supported: "
            f"{', '.join(EPILOGUE_ACTIVATIONS)}"
        )
    return None


def gemm_dims(node: Node) -> tuple[int, int, int, int, int, int] | str:
    """(batch, M, N, K, sa, sb) of a linear/matmul node, or the reason it has no GEMM view."""
    a, b = (tuple(int(d) for d in v.type.shape) for v in node.inputs[:2])
    if node.op in LINEAR_OPS:
        if len(a) < 1 or len(b) != 2:
            return f"linear with x rank {len(a)} and weight rank {len(b)}"
        k, n = b[1], b[0]
        return 1, numel(a) // k if k else numel(a[:-1]), n, k, 0, 0
    if len(a) < 2 or len(b) < 2:
        return "matmul with a 1-D operand has no hip GEMM view"
    m, k, n = a[-2], a[-1], b[-1]
    if len(b) == 2:
        return 1, numel(a[:-1]), n, k, 0, 0
    if len(a) == 2:
        return numel(b[:-2]), m, n, k, 0, k * n
    if a[:-2] != b[:-2]:
        return f"matmul batch dims {a[:-2]} and {b[:-2]} differ (broadcast batches)"
    return numel(a[:-2]), m, n, k, m * k, k * n


def _bias_reason(node: Node, n: int) -> str | None:
    if len(node.inputs) < 3:
        return None
    shape = tuple(int(d) for d in node.inputs[2].type.shape)
    if not shape or shape[-1] != n or numel(shape) != n:
        return f"bias shape {shape} is not one value per output column ({n})"
    return None


def check_gemm(node: Node, cx: CheckContext) -> str | None:
    reason = first_reason(float_reason(node, *node.inputs, *node.outputs), same_dtype_reason(node))
    if reason:
        return reason
    dims = gemm_dims(node)
    if isinstance(dims, str):
        return dims
    if dims[0] > MAX_GRID_YZ:
        return f"batch {dims[0]} exceeds the grid's z limit {MAX_GRID_YZ}"
    return first_reason(_epilogue_reason(node), _bias_reason(node, dims[2]))


def lower_gemm(node: Node, ctx: LowerContext) -> None:
    dims = gemm_dims(node)
    assert not isinstance(dims, str)
    batch, m, n, k, sa, sb = dims
    out, dtype = node.outputs[0], storage(node.outputs[0])
    variant = choose_gemm_variant(dtype, m, n, k, ctx.options.features)
    ctx.notes.append(f"%{out.name}: gemm {m}x{n}x{k} {variant.name} ({variant.reason})")
    ep = epilogue_of(node)
    trans_b = node.op in LINEAR_OPS
    src = gemm_source(
        dtype, ctx.options, ep, trans_b=trans_b, variant=variant.name, micro=GEMM_MICRO
    )
    tile = THREADS_XY * GEMM_MICRO
    grid = (-(-n // tile), -(-m // tile), batch)
    extra = [v.name for v in node.inputs[2:]]
    args = (node.inputs[0].name, node.inputs[1].name, *extra, out.name)
    args += (i32(m), i32(n), i32(k), i64(sa), i64(sb))
    ctx.launch(src, grid, (THREADS_XY, THREADS_XY, 1), args)


def conv_reason(node: Node) -> str | None:
    return checks.first_reason(checks.nchw(node), checks.padding_reason(node))


def conv_geometry(node: Node) -> tuple[object, ...]:
    """The conv kernels' geometry arguments (all int32)."""
    nb, c, h, w = (int(d) for d in node.inputs[0].type.shape)
    oc, _, kh, kw = (int(d) for d in node.inputs[1].type.shape)
    oh, ow = (int(d) for d in node.outputs[0].type.shape[2:])
    sh, sw = node.attrs["stride"]
    ph, pw = node.attrs["padding"][:2]
    dh, dw = node.attrs["dilation"]
    values = (nb, c, h, w, oc, kh, kw, sh, sw, ph, pw, dh, dw, node.attrs["groups"], oh, ow)
    return tuple(i32(v) for v in values)


def conv_grid(node: Node, micro: int) -> tuple[int, int, int]:
    nb, oc, oh, ow = (int(d) for d in node.outputs[0].type.shape)
    groups = node.attrs["groups"]
    tile = THREADS_XY * micro
    return (-(-(nb * oh * ow) // tile), -(-(oc // groups) // tile), groups)


def check_conv(node: Node, cx: CheckContext) -> str | None:
    return first_reason(
        float_reason(node, *node.inputs, *node.outputs),
        same_dtype_reason(node),
        conv_reason(node),
        _epilogue_reason(node),
    )


def lower_conv(node: Node, ctx: LowerContext) -> None:
    out = node.outputs[0]
    src = conv2d_source(storage(out), ctx.options, epilogue_of(node), micro=CONV_MICRO)
    args = (*(v.name for v in node.inputs), out.name, *conv_geometry(node))
    ctx.launch(src, conv_grid(node, CONV_MICRO), (THREADS_XY, THREADS_XY, 1), args)


EMITTERS: dict[str, Emitter] = {
    "gemm": Emitter(lower_gemm, check=check_gemm),
    "conv2d": Emitter(lower_conv, check=check_conv),
}
