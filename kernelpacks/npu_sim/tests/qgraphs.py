"""Hand-built int8 graphs for the plugin tests (attributes derived with cuvil_ref.ops.qarith)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cuvil_ref.ir import DType, GraphBuilder, TensorType
from cuvil_ref.ir.graph import Graph
from cuvil_ref.ops.qarith import quantize_multipliers, shared_shift_multipliers


def i8(shape: tuple[int, ...]) -> TensorType:
    return TensorType(shape, DType.i8)


def requant(ratios: list[float]) -> dict[str, tuple[int, ...]]:
    m, s = quantize_multipliers(ratios)
    return {"multiplier": tuple(int(v) for v in m), "shift": tuple(int(v) for v in s)}


def conv_attrs(cout: int, **extra: Any) -> dict[str, Any]:
    return {
        "x_zp": 3,
        **requant([0.002 + 0.0001 * c for c in range(cout)]),
        "out_scale": 0.05,
        "out_zp": -4,
        **extra,
    }


def conv_flatten_linear(rng: np.random.Generator, runtime_weight: bool = False) -> Graph:
    """x [1,4,6,6] -> qconv2d 3x3 pad 1 (relu bound) -> qadd with itself -> flatten -> qlinear."""
    b = GraphBuilder()
    x = b.input("x", i8((1, 4, 6, 6)))
    w_arr = rng.integers(-127, 128, (8, 4, 3, 3), dtype=np.int8)
    w = b.input("w", i8(w_arr.shape)) if runtime_weight else b.constant("w", w_arr)
    bias = b.constant("bias", rng.integers(-500, 500, 8).astype(np.int32))
    y = b.op("qconv2d", [x, w, bias], conv_attrs(8, padding=(1, 1, 1, 1), qmin=-4), name="conv")
    ma, sh = shared_shift_multipliers([0.5, 0.7])
    s = b.op(
        "qadd",
        [y, y],
        {"a_zp": -4, "b_zp": -4, "multiplier": ma, "shift": (sh,), "out_scale": 0.1},
        name="add",
    )
    f = b.op("flatten", [s], {"start_dim": 1}, name="flat")
    lw = b.constant("lw", rng.integers(-127, 128, (5, 288), dtype=np.int8))
    out = b.op(
        "qlinear",
        [f, lw],
        {"x_zp": 0, **requant([0.0004] * 5), "out_scale": 0.2, "out_zp": 1},
        name="fc",
    )
    return b.build([out])


def single(op: str, shapes: list[tuple[int, ...]], attrs: dict[str, Any], consts: int = 0) -> Graph:
    """One node; the last `consts` inputs are int8 constants (bias: int32)."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    ins = []
    for i, shape in enumerate(shapes):
        if i >= len(shapes) - consts:
            dtype = np.int32 if len(shape) == 1 and op in ("qconv2d", "qlinear") else np.int8
            ins.append(b.constant(f"c{i}", rng.integers(-100, 100, shape).astype(dtype)))
        else:
            ins.append(b.input(f"x{i}", i8(shape)))
    return b.build([b.op(op, ins, attrs, name="y")])
