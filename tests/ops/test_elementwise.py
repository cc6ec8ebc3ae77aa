"""Elementwise ops (cuvil_ref/ops/elementwise.py) against PyTorch CPU: unary math on floats and
ints, binary arithmetic with broadcasting and type promotion, where, cast; edge values (NaN, +-Inf,
+-0, division by zero) and symbolic dims. Tolerance: 1e-6 relative to the output's magnitude for
f32 (erf/pow likewise), one rounding step for f16/bf16, exact for ints."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from cuvil_ref.errors import ShapeError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import get_op
from tests.ops.conftest import BF16, assert_close, from_torch, run_op, sample, to_torch

UNARY_FLOAT = {
    "neg": torch.neg,
    "abs": torch.abs,
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "erf": torch.erf,
}
BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "pow": torch.pow,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
}
SHAPES = [(), (1,), (7,), (3, 5), (2, 0, 3), (2, 3, 4, 5)]
F32_INT_DTYPES = ["i8", "u8", "i32", "i64"]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", list(UNARY_FLOAT))
def test_unary_f32_matches_torch(op: str, shape: tuple[int, ...]) -> None:
    x = sample(shape, seed=1, edge=True)
    assert_close(run_op(op, [x]), from_torch(UNARY_FLOAT[op](to_torch(x))))


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("op", list(UNARY_FLOAT))
def test_unary_half_types_match_torch(op: str, dtype: Any) -> None:
    x = sample((4, 9), dtype, seed=2, edge=True)
    assert_close(run_op(op, [x]), from_torch(UNARY_FLOAT[op](to_torch(x))))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
@pytest.mark.parametrize("op", ["neg", "abs"])
def test_neg_abs_on_ints_match_torch(op: str, dtype: Any) -> None:
    x = sample((3, 7), dtype, seed=3)
    x.flat[0] = np.iinfo(dtype).min  # wraps, as in torch
    assert_close(run_op(op, [x]), from_torch(UNARY_FLOAT[op](to_torch(x))))


BROADCAST = [
    ((3, 4), (4,)),
    ((2, 1, 5), (3, 1)),
    ((), (2, 3)),
    ((0, 3), (1, 3)),
    ((2, 3), (2, 3)),
    ((1,), ()),
]


@pytest.mark.parametrize("shapes", BROADCAST, ids=str)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_f32_broadcasting_matches_torch(op: str, shapes: Any) -> None:
    a = sample(shapes[0], seed=4, edge=True)
    b = sample(shapes[1], seed=5, edge=True)
    if op == "pow":
        b = np.asarray(np.round(b), dtype=np.float32)  # integral exponents of negative bases too
    expected = from_torch(BINARY[op](to_torch(a), to_torch(b)))
    assert_close(run_op(op, [a, b]), expected)


def test_division_and_pow_edge_cases_match_torch() -> None:
    v = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, np.inf, -np.inf, np.nan], dtype=np.float32)
    a, b = np.meshgrid(v, v)
    for op in ("div", "pow", "maximum", "minimum"):
        expected = from_torch(BINARY[op](to_torch(a), to_torch(b)))
        assert_close(run_op(op, [a, b]), expected)


PROMOTIONS = [
    ("f32", "i32"),
    ("i64", "f16"),
    ("f16", "bf16"),
    ("i8", "i32"),
    ("u8", "i64"),
    ("i8", "u8"),
    ("bf16", "f32"),
    ("i32", "i32"),
]


@pytest.mark.parametrize("pair", PROMOTIONS, ids=str)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum", "minimum"])
def test_binary_type_promotion_matches_torch(op: str, pair: tuple[str, str]) -> None:
    da, db = (DType(p).numpy for p in pair)
    a, b = sample((3, 4), da, seed=6), sample((4,), db, seed=7)
    got = run_op(op, [a, b])
    expected = from_torch(BINARY[op](to_torch(a), to_torch(b)))
    assert got.dtype == expected.dtype
    assert_close(got, expected)


def test_integer_overflow_wraps_like_torch() -> None:
    a = np.array([120, -128, 100], dtype=np.int8)
    b = np.array([10, -1, 100], dtype=np.int8)
    for op in ("add", "sub", "mul"):
        assert_close(run_op(op, [a, b]), from_torch(BINARY[op](to_torch(a), to_torch(b))))


def test_div_rejects_ints() -> None:
    with pytest.raises(ShapeError, match="i32"):
        run_op("div", [np.ones(3, np.int32), np.ones(3, np.int32)])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64])
def test_integer_pow_matches_torch_with_wraparound(dtype: Any) -> None:
    base = np.arange(-6, 7).astype(dtype) if dtype != np.uint8 else np.arange(13).astype(dtype)
    a, b = np.meshgrid(base, np.arange(0, 13).astype(dtype))
    assert_close(run_op("pow", [a, b]), from_torch(torch.pow(to_torch(a), to_torch(b))))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_integer_pow_negative_exponents_match_torch(dtype: Any) -> None:
    a, b = np.meshgrid(np.arange(-3, 4).astype(dtype), np.arange(-4, 0).astype(dtype))
    assert_close(run_op("pow", [a, b]), from_torch(torch.pow(to_torch(a), to_torch(b))))


def test_bool_is_rejected_by_arithmetic() -> None:
    with pytest.raises(ShapeError, match="bool"):
        run_op("add", [np.ones(3, np.bool_), np.ones(3, np.bool_)])


@pytest.mark.parametrize(
    "shapes",
    [((3, 4), (3, 4), (3, 4)), ((3, 1), (4,), ()), ((), (2, 3), (1, 3)), ((0, 2), (2,), (1, 2))],
    ids=str,
)
@pytest.mark.parametrize("pair", [("f32", "f32"), ("i32", "f16"), ("bool", "i64")], ids=str)
def test_where_matches_torch(shapes: Any, pair: tuple[str, str]) -> None:
    cond = sample(shapes[0], np.bool_, seed=8)
    a = sample(shapes[1], DType(pair[0]).numpy, seed=9, edge=True)
    b = sample(shapes[2], DType(pair[1]).numpy, seed=10, edge=True)
    expected = from_torch(torch.where(to_torch(cond), to_torch(a), to_torch(b)))
    assert_close(run_op("where", [cond, a, b]), expected)


def test_where_needs_a_bool_condition() -> None:
    with pytest.raises(ShapeError, match="condition must be bool"):
        run_op("where", [np.ones(3, np.float32)] * 3)


CASTS = [
    ("f32", "i32"),
    ("f32", "i8"),
    ("f32", "u8"),
    ("f32", "i64"),
    ("f32", "f16"),
    ("f32", "bf16"),
    ("f32", "bool"),
    ("f16", "f32"),
    ("bf16", "f16"),
    ("bf16", "i32"),
    ("i64", "f32"),
    ("i32", "i8"),
    ("i32", "u8"),
    ("i64", "bf16"),
    ("i8", "bool"),
    ("bool", "f32"),
    ("bool", "i64"),
    ("u8", "i8"),
    ("f16", "bool"),
]


@pytest.mark.parametrize("pair", CASTS, ids=str)
def test_cast_matches_torch_where_torch_defines_it(pair: tuple[str, str]) -> None:
    src, dst = DType(pair[0]), DType(pair[1])
    x = sample((5, 8), src.numpy, seed=11, edge=src.is_float)
    if src.is_float and dst.is_int:
        # torch leaves NaN/Inf and out-of-range float -> int undefined: keep to the defined part.
        info = np.iinfo(dst.numpy)
        with np.errstate(invalid="ignore"):
            x = np.where(np.isfinite(x) & (x > info.min - 1) & (x < info.max + 1), x, 1.0)
        x = x.astype(src.numpy)
    expected = from_torch(
        to_torch(x).to(
            getattr(torch, str(np.dtype(dst.numpy))) if dst != DType.bf16 else torch.bfloat16
        )
    )
    assert_close(run_op("cast", [x], {"dtype": dst.value}), expected, tol=0.0)


def test_cast_saturates_and_maps_nan_to_zero_as_documented() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, -2.7, 2.7, 300.0], dtype=np.float32)
    np.testing.assert_array_equal(
        run_op("cast", [x], {"dtype": "i8"}), [0, 127, -128, 127, -128, -2, 2, 127]
    )
    np.testing.assert_array_equal(
        run_op("cast", [x], {"dtype": "u8"}), [0, 255, 0, 255, 0, 0, 2, 255]
    )


def test_symbolic_broadcasting() -> None:
    add = get_op("add")
    (t,) = add.infer_types([TensorType(("batch", 1)), TensorType((1, 4))], None)
    assert t.shape == ("batch", 4)
    with pytest.raises(ShapeError, match="cannot be broadcast"):
        add.infer_types([TensorType(("batch", 3)), TensorType((2, 3))], None)
    a, b = sample((5, 1), seed=12), sample((1, 4), seed=13)
    expected = run_op("mul", [a, b])
    got = run_op("mul", [a, b], shapes=[("batch", 1), (1, 4)])
    assert_close(got, expected, tol=0.0)
    cond = sample((5, 4), np.bool_, seed=14)
    got = run_op("where", [cond, a, b], shapes=[("batch", 4), ("batch", 1), (1, 4)])
    np.testing.assert_array_equal(got, np.where(cond, a, b))
    x = sample((5, 3), seed=15)
    assert_close(run_op("exp", [x], shapes=[("batch", 3)]), np.exp(x))
    got = run_op("cast", [x], {"dtype": "f16"}, shapes=[("batch", 3)])
    np.testing.assert_array_equal(got, x.astype(np.float16))
