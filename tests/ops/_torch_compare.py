"""Helpers for the linalg/conv/pooling/shape/indexing op tests: run one op through
GraphBuilder + interpret and compare with PyTorch.

``run`` builds a one-node graph (so attribute normalization and inference run), interprets it (so
the interpreter checks each result's dtype against the IR) and asserts every result's shape equals
the inferred one, symbolic dims resolved from the inputs. ``close`` is the tolerance policy:
NaN where torch has NaN, equal infinities, and ``|a - e| <= rtol * max(1, max|e|)`` elsewhere,
i.e. the tolerance is relative to the output's magnitude (sums of many products cancel).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from cuvil_ref.interpreter import interpret
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.types import Dim, TensorType

#: float32 tolerance relative to the output's magnitude, for conv/matmul/pooling.
RTOL_F32 = 1e-5


def run(
    op: str,
    inputs: Sequence[np.ndarray],
    attrs: Mapping[str, Any] | None = None,
    *,
    shapes: Sequence[Sequence[Dim]] | None = None,
) -> tuple[np.ndarray, ...]:
    """Interpret ``op`` on ``inputs`` (``shapes`` may declare symbolic input shapes)."""
    b = GraphBuilder()
    values = [
        b.input(
            f"x{i}", TensorType(tuple(shapes[i]) if shapes else a.shape, DType.from_numpy(a.dtype))
        )
        for i, a in enumerate(inputs)
    ]
    outs = b.op_multi(op, values, attrs)
    results = interpret(b.build(outs), list(inputs))
    bindings = {
        d: n
        for v, a in zip(values, inputs, strict=True)
        for d, n in zip(v.type.shape, a.shape, strict=True)
        if isinstance(d, str)
    }
    for v, r in zip(outs, results, strict=True):
        want = tuple(bindings[d] if isinstance(d, str) else d for d in v.type.shape)
        assert r.shape == want, f"{op}: result shape {r.shape} != inferred {v.type}"
        assert r.dtype == v.type.dtype.numpy, f"{op}: result dtype {r.dtype} != inferred {v.type}"
    return tuple(results)


def run1(
    op: str, inputs: Sequence[np.ndarray], attrs: Mapping[str, Any] | None = None, **kw: Any
) -> np.ndarray:
    (result,) = run(op, inputs, attrs, **kw)
    return result


def close(actual: np.ndarray, expected: torch.Tensor | np.ndarray, rtol: float = RTOL_F32) -> None:
    """Compare with the policy in the module docstring; ints and bools must be equal."""
    e = expected.numpy() if isinstance(expected, torch.Tensor) else np.asarray(expected)
    a = np.asarray(actual)
    assert a.shape == e.shape, (a.shape, e.shape)
    assert a.dtype == e.dtype, (a.dtype, e.dtype)
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e)
        return
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(a64), np.isnan(e64), err_msg="NaN positions differ")
    inf = np.isinf(e64)
    np.testing.assert_array_equal(a64[inf], e64[inf], err_msg="infinities differ")
    fin = np.isfinite(e64)
    scale = max(1.0, float(np.max(np.abs(e64[fin]), initial=0.0)))
    err = float(np.max(np.abs(a64[fin] - e64[fin]), initial=0.0))
    assert err <= rtol * scale, f"max error {err} > {rtol} * {scale}"


def randn(*shape: int, seed: int = 0, dtype: Any = np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def t(a: np.ndarray) -> torch.Tensor:
    """A torch tensor with ``a``'s values (a copy: references may return read-only views)."""
    return torch.from_numpy(np.array(a, order="C", copy=True))
