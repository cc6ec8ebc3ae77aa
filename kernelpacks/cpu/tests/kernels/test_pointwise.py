"""The team-parallel float32 add/sub/mul/div give numpy's bits, specials included."""

from __future__ import annotations

import numpy as np
import pytest
from cuvil_kernels_cpu.kernels import pointwise

UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}


@pytest.mark.parametrize("op", sorted(UFUNCS))
@pytest.mark.parametrize("scalar", [False, True])
def test_binary_f32_is_bit_identical_to_numpy(op: str, scalar: bool,
                                              rng: np.random.Generator) -> None:  # fmt: skip
    a = rng.standard_normal(pointwise.CHUNK * 2 + 77).astype(np.float32)
    a[:6] = [0.0, -0.0, np.inf, -np.inf, 1.0, -1.0]
    if scalar:
        b = np.array([np.float32(-0.0)], np.float32)
    else:
        b = rng.standard_normal(a.size).astype(np.float32)
        b[:6] = [0.0, 0.0, np.inf, 2.0, -0.0, 0.0]
    out = np.empty_like(a)
    pointwise.binary_f32(a, b, out, pointwise.CODES[op], np.zeros(1, np.int64))
    with np.errstate(all="ignore"):
        want = UFUNCS[op](a, b.reshape(()) if scalar else b)
    nan = np.isnan(want)
    assert (np.isnan(out) == nan).all()
    assert (out[~nan].view(np.int32) == want[~nan].view(np.int32)).all()


@pytest.mark.parametrize("scalar_b", [False, True])
def test_where_f32_broadcasts_the_condition_over_leading_axes(
    scalar_b: bool, rng: np.random.Generator
) -> None:
    cond = rng.random((1, 1, 9, 130)) < 0.5
    a = rng.standard_normal((2, 3, 9, 130)).astype(np.float32)
    a[0, 0, 0, :3] = [np.nan, -0.0, np.inf]
    b = np.array([-np.inf], np.float32) if scalar_b else rng.standard_normal(a.shape).astype(
        np.float32)  # fmt: skip
    out = np.empty_like(a)
    pointwise.where_f32(cond.reshape(-1), a.reshape(-1), b.reshape(-1), out.reshape(-1),
                        np.zeros(1, np.int64))  # fmt: skip
    want = np.where(cond, a, b.reshape(()) if scalar_b else b)
    np.testing.assert_array_equal(out.view(np.int32), want.view(np.int32))


def test_where_lowers_to_the_kernel_only_for_leading_broadcasts() -> None:
    from cuvil_kernels_cpu.executable import CpuExecutable
    from helpers import both

    from cuvil_ref.ir.builder import GraphBuilder
    from cuvil_ref.ir.dtypes import DType
    from cuvil_ref.ir.types import TensorType
    from cuvil_ref.passes import plan_memory

    rng = np.random.default_rng(1)
    for cshape, kernel in (((1, 1, 4, 6), True), ((1, 3, 1, 6), False)):
        b = GraphBuilder()
        c = b.input("c", TensorType(cshape, DType.bool))
        x = b.input("x", TensorType((2, 3, 4, 6), DType.f32))
        y = b.op("where", [c, x, b.constant("m", np.array(-1e9, np.float32))], {})
        graph = b.build([y])
        ins = [rng.random(cshape) < 0.5, rng.standard_normal((2, 3, 4, 6)).astype(np.float32)]
        got, want = both(graph, ins)
        np.testing.assert_array_equal(got, want)
        exe = CpuExecutable(graph, {"threads": 2}, plan_memory(graph))
        assert ("pointwise" in exe.metrics()["algorithms"]) == kernel
