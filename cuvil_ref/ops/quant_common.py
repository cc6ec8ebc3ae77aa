"""Shared pieces of the quantized int8 ops: attribute groups, checks, requantization, registration.

Every compile-time constant of a quantized op is an attribute: zero points, fixed-point
multipliers and shifts (``ints`` tuples, from :func:`cuvil_ref.ops.qarith.quantize_multiplier`),
clamp bounds. ``out_scale``/``out_zp`` give the output's :class:`QuantParams` so users can
dequantize; only ``out_zp`` enters the arithmetic. The op families live in ``quantized.py``
(boundary, elementwise, concat), ``qgemm.py`` (accumulating ops) and ``qpool.py`` (pooling).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cuvil_ref.errors import QuantizationError, ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.ir.types import Dim, QuantParams, TensorType
from cuvil_ref.ops import qarith
from cuvil_ref.ops.grid import NO_GRID, Conformance
from cuvil_ref.ops.registry import REQUIRED, Attr, OpDef, register

I8 = frozenset({DType.i8})
I8_I32 = frozenset({DType.i8, DType.i32})


class QuantizedOpError(ShapeError, QuantizationError):
    """A quantized op's attributes or operands break the int8 contract (also a ShapeError)."""


OUT_ATTRS = (
    Attr("out_scale", "float", REQUIRED, "output scale (float32), for the output QuantParams"),
    Attr("out_zp", "int", 0, "output zero point in [-128, 127]"),
    Attr("qmin", "int", -128, "lower clamp bound (a fused relu raises it to out_zp)"),
    Attr("qmax", "int", 127, "upper clamp bound (a fused relu6 lowers it)"),
)
RESCALE_ATTRS = (
    Attr("multiplier", "ints", REQUIRED, "fixed-point multipliers M in [0, 2**31)"),
    Attr("shift", "ints", REQUIRED, "right shifts in [1, 62], one per multiplier"),
)
X_ZP = Attr("x_zp", "int", 0, "input zero point")
ZP_AB = (Attr("a_zp", "int", 0, "zero point of a"), Attr("b_zp", "int", 0, "zero point of b"))


def fail(op: str, message: str) -> QuantizedOpError:
    """The error for op ``op``, to raise."""
    return QuantizedOpError(f"op '{op}': {message}")


def check_out(op: str, attrs: FrozenDict) -> None:
    """``out_zp``, ``qmin``/``qmax`` and ``out_scale`` lie in their ranges."""
    if not -128 <= attrs["out_zp"] <= 127:
        raise fail(op, f"out_zp {attrs['out_zp']} is outside [-128, 127]")
    if not -128 <= attrs["qmin"] <= attrs["qmax"] <= 127:
        raise fail(op, f"need -128 <= qmin <= qmax <= 127, got [{attrs['qmin']}, {attrs['qmax']}]")
    if not (np.isfinite(attrs["out_scale"]) and attrs["out_scale"] > 0):
        raise fail(op, f"out_scale must be positive and finite, got {attrs['out_scale']}")


def check_rescale(
    op: str, attrs: FrozenDict, counts: tuple[int, ...], shared_shift: bool = False
) -> None:
    """``multiplier``/``shift`` have equal lengths among ``counts`` (one shift when
    ``shared_shift``) and lie in the spec ranges."""
    mult, shift = attrs["multiplier"], attrs["shift"]
    shifts_ok = len(shift) == 1 if shared_shift else len(shift) == len(mult)
    if not shifts_ok or len(mult) not in counts:
        want = " or ".join(str(c) for c in counts)
        raise fail(
            op, f"multiplier and shift need {want} entries each, got {len(mult)} and {len(shift)}"
        )
    if any(not 0 <= m < 2**31 for m in mult) or any(not 1 <= s <= 62 for s in shift):
        raise fail(
            op,
            "multipliers must be in [0, 2**31) and shifts in [1, 62]; compute them "
            "with cuvil_ref.ops.qarith.quantize_multiplier",
        )


def check_zp(op: str, name: str, value: int) -> None:
    """Zero point ``name`` is an int8 value."""
    if not -128 <= value <= 127:
        raise fail(op, f"{name} {value} is outside [-128, 127]")


def want_dtype(op: str, t: TensorType, dtype: DType, what: str) -> None:
    """Operand ``what`` has dtype ``dtype``."""
    if t.dtype != dtype:
        raise fail(op, f"{what} must be {dtype.value}, got {t.dtype.value}")


def qtype(shape: tuple[Dim, ...], attrs: FrozenDict, layout: str | None = None) -> TensorType:
    """The int8 output type, tagged with ``out_scale``/``out_zp``."""
    quant = QuantParams.per_tensor(float(np.float32(attrs["out_scale"])), attrs["out_zp"])
    return TensorType(shape, DType.i8, layout, quant)


def static(op: str, d: Dim, what: str) -> int:
    """``d`` as an int; a symbolic dim is an error."""
    if not isinstance(d, int):
        raise fail(op, f"{what} must be static, got symbol '{d}'")
    return d


def check_accumulator(op: str, k: int, two_activations: bool = False) -> None:
    """A reduction of ``k`` int8 products fits the int32 accumulator."""
    try:
        qarith.check_accumulator_bound(k, 0, two_activations=two_activations)
    except QuantizationError as exc:
        raise fail(op, f"{exc}") from exc


def requant(acc: np.ndarray, attrs: dict[str, Any], axis: int | None) -> np.ndarray:
    """The requantized int8 output: per-tensor when ``multiplier`` has one entry."""
    mult, shift = attrs["multiplier"], attrs["shift"]
    if len(mult) == 1:
        mult, shift, axis = mult[0], shift[0], None
    return qarith.requantize_output(
        acc,
        np.asarray(mult, np.int64),
        np.asarray(shift, np.int64),
        attrs["out_zp"],
        attrs["qmin"],
        attrs["qmax"],
        axis=axis,
    )


def register_qop(
    name: str,
    inputs: tuple[str, ...],
    infer: Callable[..., tuple[TensorType, ...]],
    reference: Callable[..., Any],
    doc: str,
    attrs: tuple[Attr, ...],
    dtypes: frozenset[DType] = I8,
    *,
    family: str = "misc",
    conformance: Conformance = NO_GRID,
) -> None:
    """Register an op of category ``quantized`` (results bit-exact, never loosened).

    Conformance points give float scales, not multipliers, as ``hints``: ``ratio`` (one
    multiplier), ``ratios`` (one per channel), ``shared_ratios`` (qadd's shared shift), or
    ``pool_ratio`` with ``pool_max`` (an average pool's table, entry n-1 from ratio / n); the
    generator derives ``multiplier`` and ``shift`` from them exactly as the quantizer does.
    """
    register(
        OpDef(
            name=name,
            inputs=inputs,
            infer=infer,
            reference=reference,
            doc=doc,
            attrs=attrs,
            category="quantized",
            dtypes=dtypes,
            family=family,
            tolerance="exact",
            conformance=conformance,
        )
    )
