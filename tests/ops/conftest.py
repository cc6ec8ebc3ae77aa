"""Shared helpers for op tests: run one op through GraphBuilder + interpret, compare with torch.

``run_op`` builds a one-node graph (so inference runs), interprets it (so the interpreter checks
the reference's dtype against the IR) and asserts the output shape equals the inferred one, with
symbolic dims resolved from the inputs. ``assert_close`` is the tolerance policy of these tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import torch

from cuvil_ref.interpreter import interpret
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.types import Dim, TensorType

BF16 = np.dtype(ml_dtypes.bfloat16)
#: Values that stress NaN/Inf handling and signed zeros.
EDGE_VALUES = (0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 30.0, -30.0, 1e-30, -100.0)
#: Default tolerance per dtype: about 8 ulp for f32; one rounding step for the half types.
TOL = {np.dtype(np.float32): 1e-6, np.dtype(np.float16): 2.0**-10, BF16: 2.0**-7}


def run_op(
    op: str,
    inputs: Sequence[np.ndarray],
    attrs: Mapping[str, Any] | None = None,
    *,
    shapes: Sequence[Sequence[Dim]] | None = None,
) -> Any:
    """Run ``op`` on ``inputs`` via the interpreter; ``shapes`` may give symbolic input shapes.

    Returns one array, or a tuple for multi-output ops.
    """
    b = GraphBuilder()
    values = [
        b.input(
            f"x{i}",
            TensorType(tuple(shapes[i]) if shapes else a.shape, DType.from_numpy(a.dtype)),
        )
        for i, a in enumerate(inputs)
    ]
    outs = b.op_multi(op, values, attrs)
    results = interpret(b.build(outs), list(inputs))
    bindings: dict[str, int] = {}
    for v, a in zip(values, inputs, strict=True):
        for d, n in zip(v.type.shape, a.shape, strict=True):
            if isinstance(d, str):
                bindings[d] = n
    for v, r in zip(outs, results, strict=True):
        want = tuple(bindings[d] if isinstance(d, str) else d for d in v.type.shape)
        assert r.shape == want, f"{op}: reference shape {r.shape} != inferred {v.type}"
        assert r.dtype == v.type.dtype.numpy, f"{op}: reference dtype {r.dtype} != {v.type}"
    return results[0] if len(results) == 1 else tuple(results)


def assert_close(actual: np.ndarray, expected: np.ndarray, tol: float | None = None) -> None:
    """Same dtype and shape, NaN exactly where expected, equal infinities, and
    ``|a - e| <= tol * (|e| + max(1, max|e|))`` for the finite rest (tol relative to the output's
    magnitude; default from :data:`TOL`, exact for ints and bool)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected)
        return
    tol = TOL[actual.dtype] if tol is None else tol
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(a), np.isnan(e), err_msg="NaN positions differ")
    inf = np.isinf(e)
    np.testing.assert_array_equal(a[inf], e[inf], err_msg="infinities differ")
    finite = np.isfinite(e)
    scale = max(1.0, float(np.max(np.abs(e[finite]), initial=0.0)))
    err = np.abs(a[finite] - e[finite])
    bound = tol * (np.abs(e[finite]) + scale)
    assert np.all(err <= bound), f"max error {err.max()} exceeds tol {tol} (scale {scale})"


def to_torch(a: np.ndarray) -> torch.Tensor:
    """A torch tensor with ``a``'s values and dtype (bf16 goes through f32, exactly)."""
    if a.dtype == BF16:
        return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(a.copy(order="C"))


def from_torch(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(BF16)
    return t.numpy()


def sample(
    shape: Sequence[int],
    dtype: Any = np.float32,
    *,
    seed: int = 0,
    scale: float = 3.0,
    edge: bool = False,
) -> np.ndarray:
    """Random test data: normal * scale for floats, small ints for ints, with EDGE_VALUES mixed
    in (about one element in three) when ``edge``."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -50
        return np.asarray(rng.integers(lo, 50, size=shape), dtype=dtype)
    x = np.asarray(rng.standard_normal(shape) * scale)
    if edge and x.size:
        mask = rng.random(shape) < 0.35
        x[mask] = rng.choice(EDGE_VALUES, size=int(mask.sum()))
    return np.asarray(x).astype(dtype)
