"""Fused ops made by the optimizer, and NHWC variants of the layout-sensitive ops.

Every fused op is defined as a composition of registered ops: its reference calls their
references from the registry in a fixed order, so a fused node computes what the unfused chain
computes (bit for bit, except where a pass folded constants into a bias: then within f32
rounding). Nothing here re-implements arithmetic.

* ``fused_conv2d`` / ``fused_linear`` / ``fused_matmul``: the producer op, plus a bias, plus an
  epilogue of one activation and an optional residual add, in the order named by ``order``.
* ``fused_elementwise`` (:mod:`.fused_elementwise`): a chain of unary ops and binary ops with a
  scalar operand, written as a small program in its ``program`` attribute.
* ``max_pool2d_nhwc``, ``avg_pool2d_nhwc``, ``adaptive_avg_pool2d_nhwc``: the pools on
  ``[N, H, W, C]`` inputs, with the base op's attributes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import TensorType, format_shape

# The ops composed here must be registered first, whatever order the package imports modules in.
from cuvil_ref.ops import activations, elementwise, families, linalg, pooling  # noqa: F401
from cuvil_ref.ops import conv as _conv_ops  # noqa: F401
from cuvil_ref.ops.grid import Conformance, GridPoint, grid, point
from cuvil_ref.ops.registry import Attr, OpDef, get_op, register
from cuvil_ref.ops.shapes import broadcast_shapes

# --- the epilogue -------------------------------------------------------------------------------

#: Epilogue activation name -> (registered op, its attributes; "min"/"max" come from the node).
ACTIVATIONS: dict[str, tuple[str, dict[str, Any]] | None] = {
    "none": None,
    "relu": ("relu", {}),
    "relu6": ("relu6", {}),
    "gelu": ("gelu", {"approximate": "none"}),
    "gelu_tanh": ("gelu", {"approximate": "tanh"}),
    "silu": ("silu", {}),
    "hardswish": ("hardswish", {}),
    "clamp": ("clamp", {}),
}
ORDERS = ("residual_then_activation", "activation_then_residual")

EPILOGUE_ATTRS = (
    Attr("activation", "str", "none", "activation applied in the epilogue", tuple(ACTIVATIONS)),
    Attr("activation_min", "float?", None, "clamp's lower bound (activation='clamp' only)"),
    Attr("activation_max", "float?", None, "clamp's upper bound (activation='clamp' only)"),
    Attr("has_residual", "bool", False, "the last input is a residual added in the epilogue"),
    Attr(
        "order", "str", ORDERS[0], "where the residual add sits relative to the activation", ORDERS
    ),
)

EPILOGUE_DOC = (
    " Epilogue, after the bias: order='residual_then_activation' gives "
    "y = act(z + residual) (PyTorch ResNets: add, then relu); order='activation_then_residual' "
    "gives y = act(z) + residual. Without a residual y = act(z). act is the registered op named "
    "by `activation` (gelu_tanh = gelu(approximate='tanh'), clamp uses activation_min/max; "
    "'none' is the identity)."
)


def epilogue_grid(
    shapes: tuple[tuple[int, ...], ...],
    consts: tuple[int, ...],
    residual: tuple[int, ...],
    **attrs: Any,
) -> tuple[GridPoint, ...]:
    """Grid points of a fused producer: every activation, both residual orders, and the same
    epilogues on inputs whose accumulation is exact (multiples of 1/4 in [-3, 3]), where the
    result is held to the elementwise bound -- an approximated activation cannot hide in the
    accumulation allowance."""
    points = []
    for act in ACTIVATIONS:
        bounds = {"activation_min": -0.5, "activation_max": 1.5} if act == "clamp" else {}
        points.append(point("activation", shapes=shapes, consts=consts, activation=act,
                            **bounds, **attrs))
    for order in ORDERS:
        points.append(point(order, shapes=(*shapes, residual), consts=consts,
                            activation="relu", has_residual=True, order=order, **attrs))
    for act in ("gelu", "gelu_tanh", "silu", "hardswish"):
        points.append(point("epilogue_bound", shapes=shapes, consts=consts, activation=act,
                            values="grid:0.25", exact_accumulation=True, **attrs))
    for order in ORDERS:
        points.append(point("epilogue_bound", shapes=(*shapes, residual), consts=consts,
                            activation="gelu", has_residual=True, order=order,
                            values="grid:0.25", exact_accumulation=True, **attrs))
    return tuple(points)


def _activate(y: np.ndarray, activation: str, lo: float | None, hi: float | None) -> np.ndarray:
    spec = ACTIVATIONS[activation]
    if spec is None:
        return y
    op, attrs = spec
    if op == "clamp":
        attrs = {"min": lo, "max": hi}
    return get_op(op).reference(y, **attrs)


def epilogue(
    y: np.ndarray,
    residual: np.ndarray | None,
    *,
    activation: str,
    activation_min: float | None,
    activation_max: float | None,
    has_residual: bool,
    order: str,
    owned: bool = False,
) -> np.ndarray:
    """Apply the activation and the residual add in ``order`` with the registered references.

    ``owned``: ``y`` is a fresh buffer of the op's own (the GEMM/conv output), so the add and the
    clamp-family activations may update it in place. The in-place forms call the very ufuncs the
    references call (``np.add``, ``np.maximum``, ``np.minimum`` on f32), so the bits are the same.
    """
    inplace = owned and y.dtype == np.float32 and activation in _INPLACE
    if inplace and (residual is None or residual.dtype == y.dtype):
        if has_residual and order == "residual_then_activation":
            np.add(y, residual, out=y)
        _INPLACE[activation](y, activation_min, activation_max)
        if has_residual and order == "activation_then_residual":
            np.add(y, residual, out=y)
        return y
    add = get_op("add").reference
    if has_residual and order == "residual_then_activation":
        y = add(y, residual)
    y = _activate(y, activation, activation_min, activation_max)
    if has_residual and order == "activation_then_residual":
        y = add(y, residual)
    return y


def _clamp_inplace(y: np.ndarray, lo: float | None, hi: float | None) -> None:
    if lo is not None:
        np.maximum(y, lo, out=y)
    if hi is not None:
        np.minimum(y, hi, out=y)


_INPLACE = {
    "none": lambda y, lo, hi: None,
    "relu": lambda y, lo, hi: _clamp_inplace(y, 0, None),
    "relu6": lambda y, lo, hi: _clamp_inplace(y, 0, 6),
    "clamp": _clamp_inplace,
}


def _check_epilogue(
    op: str, types: tuple[TensorType, ...], out: TensorType, attrs: FrozenDict
) -> None:
    extra = len(types) - 3
    if extra != int(attrs["has_residual"]):
        raise ShapeError(
            f"op '{op}': has_residual={attrs['has_residual']} needs {3 + attrs['has_residual']} "
            f"inputs, got {len(types)}"
        )
    if attrs["activation"] != "clamp" and (
        attrs["activation_min"] is not None or attrs["activation_max"] is not None
    ):
        raise ShapeError(f"op '{op}': activation_min/max are only for activation='clamp'")
    if attrs["has_residual"]:
        res = types[3]
        if (res.shape, res.dtype) != (out.shape, out.dtype):
            raise ShapeError(
                f"op '{op}': residual [{format_shape(res.shape)}] {res.dtype.value} must equal "
                f"the output [{format_shape(out.shape)}] {out.dtype.value}"
            )


def _epilogue_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    return {a.name: attrs[a.name] for a in EPILOGUE_ATTRS}


# --- fused_conv2d ---------------------------------------------------------------------------------

TO_NCHW = (0, 3, 1, 2)
TO_NHWC = (0, 2, 3, 1)


def permute_type(t: TensorType, perm: tuple[int, ...], layout: str | None) -> TensorType:
    return TensorType(tuple(t.shape[p] for p in perm), t.dtype, layout, t.quant)


_CONV_ATTRS = ("stride", "padding", "dilation", "groups")


def _fused_conv2d_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    nhwc = attrs["data_layout"] == "NHWC"
    x = types[0]
    if x.rank != 4:
        raise ShapeError(f"fused_conv2d takes a 4-D x, got [{format_shape(x.shape)}]")
    conv = get_op("conv2d")
    x_nchw = permute_type(x, TO_NCHW, None) if nhwc else x
    conv_attrs = conv.normalize_attrs({k: attrs[k] for k in _CONV_ATTRS})
    (out,) = conv.infer_types((x_nchw, types[1], types[2]), conv_attrs)
    if nhwc:
        out = permute_type(out, TO_NHWC, "NHWC")
    _check_epilogue("fused_conv2d", types, out, attrs)
    return (out,)


def _fused_conv2d(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray,
    residual: np.ndarray | None = None,
    **attrs: Any,
) -> np.ndarray:
    """conv2d (registered reference) + bias, then the epilogue; NHWC via transposed views (the
    conv reference works on NHWC internally, so the views cost no copies)."""
    nhwc = attrs["data_layout"] == "NHWC"
    conv = get_op("conv2d").reference
    xin = x.transpose(TO_NCHW) if nhwc else x
    y = conv(xin, weight, bias, **{k: attrs[k] for k in _CONV_ATTRS})
    if nhwc:
        y = y.transpose(TO_NHWC)
    return epilogue(y, residual, **_epilogue_attrs(attrs), owned=True)


register(
    OpDef(
        name="fused_conv2d",
        inputs=("x", "weight", "bias", "residual?"),
        attrs=(
            *get_op("conv2d").attrs,
            *EPILOGUE_ATTRS,
            Attr("data_layout", "str", "NCHW", "layout of x, residual and y", ("NCHW", "NHWC")),
        ),
        infer=_fused_conv2d_infer,
        reference=_fused_conv2d,
        doc=(
            "z = conv2d(x, weight, bias; stride, padding, dilation, groups) with weight always "
            "OIHW and bias [O]; with data_layout='NHWC' x, residual and y are [N, H, W, C] and "
            "z[n, p, q, o] = conv2d(x[n].transpose)[n, o, p, q]." + EPILOGUE_DOC
        ),
        category="fused",
        dtypes=get_op("conv2d").dtypes,
        family="epilogue",
        conformance=grid(
            *epilogue_grid(((1, 4, 7, 7), (6, 4, 3, 3), (6,)), (1, 2), (1, 6, 4, 4),
                           stride=(2, 2), padding=(1, 1, 1, 1)),
            point("nhwc", shapes=((1, 6, 6, 4), (4, 1, 3, 3), (4,)), consts=(1, 2),
                  padding=(1, 1, 1, 1), groups=4, data_layout="NHWC", activation="relu6"),
            point("groups", shapes=((1, 4, 6, 6), (6, 2, 3, 3), (6,)), consts=(1, 2),
                  padding=(1, 1, 1, 1), groups=2, activation="silu"),
        ),
    )
)


# --- fused_linear / fused_matmul ----------------------------------------------------------------


def _fused_linear_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    (out,) = get_op("linear").infer_types(types[:3], {})
    _check_epilogue("fused_linear", types, out, attrs)
    return (out,)


def _fused_linear(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray,
    residual: np.ndarray | None = None,
    **attrs: Any,
) -> np.ndarray:
    y = get_op("linear").reference(x, weight, bias)
    return epilogue(y, residual, **attrs, owned=True)


register(
    OpDef(
        name="fused_linear",
        inputs=("x", "weight", "bias", "residual?"),
        attrs=EPILOGUE_ATTRS,
        infer=_fused_linear_infer,
        reference=_fused_linear,
        doc="z = linear(x, weight, bias) = x @ weight^T + bias (weight [out, in])." + EPILOGUE_DOC,
        category="fused",
        dtypes=get_op("linear").dtypes,
        family="epilogue",
        conformance=grid(*epilogue_grid(((3, 9), (5, 9), (5,)), (1, 2), (3, 5))),
    )
)


def _fused_matmul_infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
    (out,) = get_op("matmul").infer_types(types[:2], {})
    bias = types[2]
    if bias.dtype != out.dtype or broadcast_shapes(out.shape, bias.shape) != out.shape:
        raise ShapeError(
            f"fused_matmul: bias {bias} must have the output's dtype and broadcast to "
            f"[{format_shape(out.shape)}] without growing it"
        )
    _check_epilogue("fused_matmul", types, out, attrs)
    return (out,)


def _fused_matmul(
    a: np.ndarray, b: np.ndarray, bias: np.ndarray, residual: np.ndarray | None = None, **attrs: Any
) -> np.ndarray:
    y = get_op("add").reference(get_op("matmul").reference(a, b), bias)
    return epilogue(y, residual, **attrs, owned=True)


register(
    OpDef(
        name="fused_matmul",
        inputs=("a", "b", "bias", "residual?"),
        attrs=EPILOGUE_ATTRS,
        infer=_fused_matmul_infer,
        reference=_fused_matmul,
        doc="z = add(matmul(a, b), bias), bias broadcasting to the result (e.g. [N])."
        + EPILOGUE_DOC,
        category="fused",
        dtypes=get_op("matmul").dtypes,
        family="epilogue",
        conformance=grid(*epilogue_grid(((2, 3, 7), (7, 4), (4,)), (2,), (2, 3, 4))),
    )
)


# --- NHWC pools ----------------------------------------------------------------------------------


def _nhwc_variant(base: str) -> OpDef:
    opdef = get_op(base)

    def infer(types: tuple[TensorType, ...], attrs: FrozenDict) -> tuple[TensorType, ...]:
        x = types[0]
        if x.rank != 4:
            raise ShapeError(f"{base}_nhwc takes [N, H, W, C], got [{format_shape(x.shape)}]")
        (out,) = opdef.infer_types((permute_type(x, TO_NCHW, None),), attrs)
        return (permute_type(out, TO_NHWC, "NHWC"),)

    def reference(x: np.ndarray, **attrs: Any) -> np.ndarray:
        return opdef.reference(x.transpose(TO_NCHW), **attrs).transpose(TO_NHWC)

    def twin(torch: Any, x: Any, **attrs: Any) -> Any:
        assert opdef.torch_twin is not None
        return opdef.torch_twin(torch, x.permute(*TO_NCHW), **attrs).permute(*TO_NHWC)

    return OpDef(
        name=f"{base}_nhwc",
        inputs=opdef.inputs,
        attrs=opdef.attrs,
        infer=infer,
        reference=reference,
        doc=f"{base} on x [N, H, W, C] giving [N, OH, OW, C]: y = {base}(x in NCHW) in NHWC.",
        category=opdef.category,
        dtypes=opdef.dtypes,
        family=opdef.family,
        tolerance=opdef.tolerance,
        torch_twin=twin if opdef.torch_twin is not None else None,
        conformance=_nhwc_grid(opdef.conformance),
    )


def _nhwc_grid(base: Conformance) -> Conformance:
    """The base pool's grid with its NCHW input shapes written as NHWC."""
    points = [
        replace(p, shapes=tuple(tuple(s[i] for i in TO_NHWC) for s in p.shapes[:1]))
        for p in base.points()
    ]
    return Conformance(tuple(points), base.edges, base.domain)


NHWC_VARIANTS: dict[str, str] = {
    base: register(_nhwc_variant(base)).name for base in sorted(families.NHWC_POOLS)
}
