"""JAX import: an MLP, a CNN and an attention block written in jax.numpy/lax match JAX's own
output within fp32 rounding; output structures, closed-over weights, and clear errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")  # the optional extra cuvil-ref[jax]
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import cuvil_ref as cuvil  # noqa: E402
from cuvil_ref.frontend import output_structure, structure  # noqa: E402

RNG = np.random.default_rng(0)


def _arr(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _check(fn: Any, *args: Any) -> Any:
    mod = cuvil.frontend.jax_to_cuvilir(fn, *args)
    flat = [np.asarray(a) for a in jax.tree_util.tree_leaves(args)]
    got = cuvil.interpret(mod, flat)
    want = [np.asarray(w) for w in jax.tree_util.tree_leaves(fn(*args))]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * max(np.abs(w).max(), 1.0))
    return mod


PARAMS = {"w1": _arr(16, 32), "b1": _arr(32), "w2": _arr(32, 10)}


def test_mlp() -> None:
    def mlp(x):
        h = jax.nn.relu(x @ PARAMS["w1"] + PARAMS["b1"])
        return jax.nn.log_softmax(h @ PARAMS["w2"])

    mod = _check(mlp, _arr(4, 16))
    assert sum(n.op == "matmul" for n in mod.graph.nodes) == 2


def test_cnn_with_layouts_padding_and_pooling() -> None:
    k1, k2 = _arr(8, 3, 3, 3), _arr(3, 3, 8, 16)

    def cnn(x):
        y = lax.conv_general_dilated(
            x, k1, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW")
        )
        y = jax.nn.relu(y).transpose(0, 2, 3, 1)  # to NHWC
        y = lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        y = lax.conv_general_dilated(
            y, k2, (2, 2), ((1, 1), (1, 1)), dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        return jnp.mean(jax.nn.gelu(y), axis=(1, 2))

    mod = _check(cnn, _arr(2, 3, 16, 16))
    assert sum(n.op == "conv2d" for n in mod.graph.nodes) == 2


def test_attention_block() -> None:
    wq, wk, wv = (_arr(32, 32, scale=0.2) for _ in range(3))

    def attention(x):
        def heads(t):
            return t.reshape(2, 8, 4, 8).transpose(0, 2, 1, 3)

        q, k, v = heads(x @ wq), heads(x @ wk), heads(x @ wv)
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(8.0)
        s = jnp.where(jnp.tril(jnp.ones((8, 8), bool)), s, -1e9)
        o = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1), v)
        o = o.transpose(0, 2, 1, 3).reshape(2, 8, 32)
        mu = o.mean(-1, keepdims=True)
        var = ((o - mu) ** 2).mean(-1, keepdims=True)
        return (o - mu) / jnp.sqrt(var + 1e-5) + x

    _check(attention, _arr(2, 8, 32))


def test_output_structure_and_pytree_inputs() -> None:
    def f(inputs):
        a, b = inputs["a"], inputs["b"]
        return {"sum": a + b, "parts": (a * 2, jnp.maximum(a, b))}

    args = ({"a": _arr(3), "b": _arr(3)},)
    mod = _check(f, *args)
    rebuilt = structure.rebuild(output_structure(mod), [0, 1, 2])
    assert rebuilt == {"sum": 2, "parts": (0, 1)}


def test_unsupported_primitive_names_it_and_the_line() -> None:
    def f(x):
        return lax.cummax(x, axis=0)

    with pytest.raises(cuvil.CuvilError, match=r"cummax.*test_jax_import.py:\d+"):
        cuvil.frontend.jax_to_cuvilir(f, _arr(4))
