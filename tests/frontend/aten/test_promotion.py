"""``promotion.result_dtype`` against ``torch.result_type`` for every pair of Cuvil dtypes as
tensors with dims, 0-d tensors and Python scalars (cuvil_ref/frontend/aten/promotion.py)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import torch

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend.aten.promotion import result_dtype
from cuvil_ref.frontend.context import dtype_from_torch, dtype_to_torch
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.types import TensorType


def _torch_maps(dtype: DType) -> bool:
    try:
        dtype_to_torch(dtype)
    except CaptureError:
        return False
    return True


# The dtypes the torch frontend maps (storage-only and wide unsigned types never come from it).
DTYPES = [d for d in DType if _torch_maps(d)]
SCALARS: list[Any] = [True, 3, -2, 2.5]


def _operand(b: GraphBuilder, kind: Any, name: str) -> tuple[Any, Any]:
    """(IR operand, torch operand) for ('dims'|'zero', dtype) or a Python scalar."""
    if not isinstance(kind, tuple):
        return kind, kind
    where, dtype = kind
    shape = (2,) if where == "dims" else ()
    return b.input(name, TensorType(shape, dtype)), torch.empty(shape, dtype=dtype_to_torch(dtype))


OPERANDS = [("dims", d) for d in DTYPES] + [("zero", d) for d in DTYPES] + SCALARS


@pytest.mark.parametrize("left", [("dims", d) for d in DTYPES] + [("zero", d) for d in DTYPES])
def test_matches_torch_result_type(left: Any) -> None:
    for right in OPERANDS:
        b = GraphBuilder()
        a_ir, a_t = _operand(b, left, "a")
        b_ir, b_t = _operand(b, right, "b")
        want = dtype_from_torch(torch.result_type(a_t, b_t))
        assert result_dtype(a_ir, b_ir) == want, (left, right)
        assert result_dtype(b_ir, a_ir) == want, (right, left)


def test_three_operands_fold_like_torch_clamp() -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType((3,), DType.i8))
    assert result_dtype(x, 0, 5) == DType.i8
    assert result_dtype(x, 0.5, None) == DType.f32
    for a, c in itertools.product(SCALARS, SCALARS):
        want = torch.result_type(torch.empty(3, dtype=torch.int8), a)
        want = torch.promote_types(want, torch.result_type(torch.empty(3, dtype=want), c))
        assert result_dtype(x, a, c) == dtype_from_torch(want)


def test_only_scalars_give_the_default_dtypes() -> None:
    assert result_dtype(0.5, 2.0) == DType.f32
    assert result_dtype(1, 2) == DType.i64
    assert result_dtype(True, False) == DType.bool
    assert result_dtype(True, 2) == DType.i64


def test_complex_scalars_are_refused_naming_them() -> None:
    with pytest.raises(CaptureError, match="complex"):
        result_dtype(2j)
