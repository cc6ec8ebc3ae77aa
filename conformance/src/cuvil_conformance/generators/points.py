"""Cases from an op's declared grid points (``OpDef.conformance``, see ``cuvil_ref.ops.grid``).

A point that gives its input shapes becomes one case as it stands; the family generators
(``elementwise``, ``reductions``) fill shapes and dtypes for points that leave them open. This
module also derives what a point leaves implicit: the number of accumulated terms per output
(for the reduction bound), and a quantized op's fixed-point multipliers from the float scales
in its hints -- with ``cuvil_ref.ops.qarith``, exactly as the quantizer derives them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from cuvil_conformance.cases import Case, InputSpec, make_case
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ops import OpDef
from cuvil_ref.ops.grid import GridPoint
from cuvil_ref.ops.qarith import quantize_multipliers, shared_shift_multipliers

#: dtype preference when a point names none: the first one the op accepts.
DTYPE_ORDER = ("f32", "f16", "bf16", "i32", "i8", "u8", "i64", "bool")


def default_dtype(opdef: OpDef) -> str:
    allowed = {d.value for d in opdef.dtypes}
    return next((d for d in DTYPE_ORDER if d in allowed), "f32")


def select(opdef: OpDef, quick: bool) -> tuple[GridPoint, ...]:
    """The op's points; with ``quick`` the first of every rule."""
    c = opdef.conformance
    return c.quick_points() if quick else c.points()


def rescale_attrs(hints: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """``multiplier``/``shift`` from a point's float-ratio hints (empty when it has none)."""
    if "ratio" in hints:
        ratios: Sequence[float] = [float(hints["ratio"])]
    elif "ratios" in hints:
        ratios = [float(r) for r in hints["ratios"]]
    elif "shared_ratios" in hints:
        m, sh = shared_shift_multipliers([float(r) for r in hints["shared_ratios"]])
        return {"multiplier": tuple(int(x) for x in m), "shift": (int(sh),)}
    elif "pool_ratio" in hints:
        r = float(hints["pool_ratio"])
        ratios = [r / k for k in range(1, int(hints["pool_max"]) + 1)]
    else:
        return {}
    m, s = quantize_multipliers(list(ratios))
    return {"multiplier": tuple(int(x) for x in m), "shift": tuple(int(x) for x in s)}


def accumulation_length(opdef: OpDef, shapes: Sequence[tuple[int, ...]], attrs: Any) -> int:
    """Terms summed per output element (K of the reduction bound), from the op's family."""
    fam = opdef.family
    if not shapes:
        return 1
    x = shapes[0]
    if fam in ("matmul", "linear", "qbinary") and x:
        return x[-1]
    if fam in ("conv2d", "epilogue", "qgemm") and len(shapes) > 1:
        w = shapes[1]
        return math.prod(w[1:]) if len(w) == 4 else (x[-1] if x else 1)
    if fam in ("pool2d", "qpool") and "kernel" in attrs:
        return math.prod(attrs["kernel"])
    if fam == "adaptive_pool2d":
        return math.prod(x[-3:-1] if attrs.get("data_layout") == "NHWC" else x[-2:])
    if fam in ("reduce", "reduce_var"):
        axes = attrs.get("axes")
        if not x:
            return 1
        return math.prod(x) if not axes else math.prod(x[a] for a in axes)
    if fam == "scan":  # the last element of a running sum adds the whole axis
        return x[attrs["axis"]] if x else 1
    if fam == "softmax":
        return x[attrs.get("axis", -1)] if x else 1
    if fam == "layer_norm":
        return math.prod(attrs.get("normalized_shape", (1,)))
    if fam == "group_norm" and len(x) >= 2:
        return x[1] // attrs.get("num_groups", 1) * math.prod(x[2:])
    return 1


def conditioning(opdef: OpDef, arrays: Sequence[Any], attrs: Any) -> int:
    """Terms to add to K for a normalization of ill-conditioned rows (0 for other ops).

    Centering subtracts a mean computed in the output precision, so every centered value loses
    about ``eps * max|x|`` however the sums are ordered: the normalized result is off by about
    ``eps * max|x| / sqrt(var + eps)`` -- the row's condition number, not its length. (The
    reference computes the statistics in f64; PyTorch eager in f32 loses as much.) A one-pass
    ``E[x^2] - E[x]^2`` variance loses the square of it and still fails.
    """
    fam = opdef.family
    if fam not in ("layer_norm", "group_norm") or not arrays:
        return 0
    x = np.asarray(arrays[0])
    if x.dtype.kind != "f" or x.size == 0:
        return 0
    x = x.astype(np.float64)
    if fam == "layer_norm":
        n = len(attrs.get("normalized_shape", (1,)))
        rows = x.reshape(-1, math.prod(x.shape[x.ndim - n :]) or 1)
    else:
        if x.ndim < 2:
            return 0
        rows = x.reshape(x.shape[0] * attrs.get("num_groups", 1), -1)
    eps = attrs.get("eps")
    eps = 1e-5 if eps is None else float(eps)  # None: the dtype's own (rms_norm)
    with np.errstate(all="ignore"):
        cond = np.max(np.abs(rows), axis=1) / np.sqrt(rows.var(axis=1) + eps)
    cond = cond[np.isfinite(cond)]
    return int(math.ceil(float(cond.max()))) if cond.size else 0


def point_case(opdef: OpDef, p: GridPoint, *, dtype: str | None = None) -> Case:
    """One case from a point that gives its shapes."""
    n = len(p.shapes)
    dtypes = list(p.dtypes) or [dtype or default_dtype(opdef)] * n
    dtypes += dtypes[-1:] * (n - len(dtypes))
    values = list(p.values) or ["normal"] * n
    values += ["normal"] * (n - len(values))
    specs = []
    for i, (shape, dt, kind) in enumerate(zip(p.shapes, dtypes, values)):
        if kind == "normal" and opdef.conformance.domain != "any" and DType(dt).is_float:
            kind = opdef.conformance.domain
        extra = opdef.conformance.edges if kind == "edge" else ()
        specs.append(InputSpec(shape, dt, kind, i in p.consts, extra))
    attrs = {**p.attrs, **rescale_attrs(p.hints)}
    k = 0 if p.exact_accumulation else accumulation_length(opdef, p.shapes, attrs)
    label = p.label or ("" if p.rule == "basic" else p.rule)
    return make_case(opdef.name, specs, attrs, label=label, rule=p.rule, reduce_len=k)


def shape_cases(opdef: OpDef, quick: bool) -> Iterator[Case]:
    """Data movement: each point in f32 and, unless it names its dtypes, in i8 too (integer
    targets move int8 tensors)."""
    for p in select(opdef, quick):
        if not p.shapes:
            continue
        if p.dtypes:
            yield point_case(opdef, p)
            continue
        for dtype in ("f32",) if quick else ("f32", "i8"):
            yield point_case(opdef, p, dtype=dtype)


def factory_cases(opdef: OpDef, quick: bool) -> Iterator[Case]:
    """Ops without tensor inputs (``arange``): one case per point, from its attributes alone."""
    for p in select(opdef, quick):
        yield point_case(opdef, p)


def explicit_cases(opdef: OpDef, quick: bool) -> Iterator[Case]:
    """Every point of the op's grid that gives its shapes (the generic generator)."""
    for p in select(opdef, quick):
        if p.shapes:
            yield point_case(opdef, p)
