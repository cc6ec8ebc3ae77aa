"""JAX primitives whose XLA semantics differ from the IR op of the same name
(cuvil_ref/frontend/jax/math_prims.py): integer div truncates, cumsum keeps its dtype, is_finite,
any/all, rev, sort (argsort too) and top_k -- each against JAX's own result, dtype included."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")  # the optional extra cuvil-ref[jax]
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import cuvil_ref as cuvil  # noqa: E402
from cuvil_ref.errors import CuvilError  # noqa: E402

X = np.array([[1.5, -2.0, np.inf, np.nan, 0.5], [0.0, 3.0, -1.0, 2.5, -np.inf]], np.float32)
XI = np.array([[7, -7, 5, -5, 2**31 - 1], [3, 0, -9, 9, 2**30]], np.int32)
YI = np.array([[2, 2, -3, -3, 1], [1, 5, 4, -4, 2]], np.int32)
TIES = np.array([[2.0, 1.0, 2.0, 1.0, 3.0], [0.5, 0.5, 0.5, -1.0, 0.5]], np.float32)


def _exact(fn: Any, *args: np.ndarray) -> None:
    mod = cuvil.frontend.jax_to_cuvilir(fn, *args)
    got = cuvil.interpret(mod, list(args))
    want = [np.asarray(w) for w in jax.tree_util.tree_leaves(fn(*args))]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, b: lax.div(a, b),  # truncates toward zero
        lambda a, b: a // b,  # jnp's floor division, built from div/rem/select
        lambda a, b: a % b,
    ],
)
def test_integer_division_follows_xla(fn: Any) -> None:
    _exact(fn, XI, YI)


def test_cumsum_keeps_the_operand_dtype_and_wraps() -> None:
    _exact(lambda a: jnp.cumsum(a, axis=1), XI)
    _exact(lambda a: lax.cumsum(a, axis=0, reverse=True), XI)
    _exact(lambda a: jnp.cumsum(a, axis=1), X)


def test_is_finite_any_all() -> None:
    _exact(jnp.isfinite, X)
    _exact(lambda a: jnp.any(a > 1, axis=1), X)
    _exact(lambda a: jnp.all(a > -5, axis=0), X)


def test_bitwise_reduce_is_a_clear_error() -> None:
    with pytest.raises(CuvilError, match="reduce_or on i32"):
        cuvil.frontend.jax_to_cuvilir(lambda a: lax.reduce_or(a, axes=(0,)), XI)


def test_rev_sort_argsort_top_k() -> None:
    _exact(lambda a: jnp.flip(a, (0, 1)), X)
    _exact(lambda a: jnp.sort(a, axis=1), X)  # NaN last, as XLA
    _exact(lambda a: jnp.argsort(a, axis=1, stable=True), TIES)  # (x, iota) carried along
    _exact(lambda a: lax.top_k(a, 3), TIES)  # values and i32 indices, lower index first
