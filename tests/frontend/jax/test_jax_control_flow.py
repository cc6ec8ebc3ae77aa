"""JAX import of lax.cond, lax.switch and lax.while_loop: if/while regions that match JAX on
every path, round-trip through text, and run on a target whose pack does not claim them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")  # the optional extra cuvil-ref[jax]
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import cuvil_ref as cuvil  # noqa: E402
from cuvil_ref.ir.parser import parse_module  # noqa: E402
from cuvil_ref.ir.printer import print_module, resource_table  # noqa: E402
from cuvil_ref.lowering import compile_module  # noqa: E402

RNG = np.random.default_rng(0)
W = (RNG.standard_normal((8, 8)) * 0.5).astype(np.float32)


def _match(mod: Any, fn: Any, *args: np.ndarray) -> list[np.ndarray]:
    got = cuvil.interpret(mod, list(args))
    want = [np.asarray(w) for w in jax.tree_util.tree_leaves(fn(*args))]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * max(np.abs(w).max(), 1.0))
    return want


def gate(x):
    return lax.cond(x.sum() > 0, lambda v: jnp.tanh(v @ W), lambda v: v * 2.0, x)


def refine(x):
    def cond(state):
        i, h = state
        return (i < 5) & (jnp.abs(h).max() < 4.0)

    def body(state):
        i, h = state
        return i + 1, h + jnp.tanh(h @ W) * x  # x: a loop invariant (a body const)

    return lax.while_loop(cond, body, (0, x))


def pick(i, x):
    return lax.switch(i, [lambda v: v, lambda v: -v, lambda v: jnp.maximum(v, 0.0)], x)


def test_lax_cond_takes_each_branch() -> None:
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    mod = cuvil.frontend.jax_to_cuvilir(gate, x)
    assert [n.op for n in mod.graph.nodes][-1] == "if"
    for v in (np.abs(x), -np.abs(x)):
        _match(mod, gate, v)


def test_lax_while_loop_runs_until_its_condition_fails() -> None:
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    mod = cuvil.frontend.jax_to_cuvilir(refine, x)
    (node,) = [n for n in mod.graph.nodes if n.op == "while"]
    assert node.attrs["num_carried"] == 2 and len(node.inputs) == 4  # W and x are invariants
    steps = {int(_match(mod, refine, v)[0]) for v in (x, x * 0.1, np.full((2, 8), 3.5, "f4"))}
    assert len(steps) > 1  # early exits and the step limit


def test_lax_switch_becomes_a_chain_of_ifs() -> None:
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    mod = cuvil.frontend.jax_to_cuvilir(pick, np.int32(0), x)
    assert sum(n.op == "if" for n in mod.graph.walk()) == 2
    for i in (-1, 0, 1, 2, 7):  # lax.switch clamps the index
        _match(mod, pick, np.int32(i), x)


def test_control_flow_round_trips_and_runs_on_a_float_target() -> None:
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    for fn, args in ((refine, (x,)), (pick, (np.int32(1), x)), (gate, (x,))):
        mod = cuvil.frontend.jax_to_cuvilir(fn, *args)
        text = print_module(mod)
        assert print_module(parse_module(text, constants=resource_table(mod))) == text
        program = compile_module(mod, target="cpu")
        want = [np.asarray(w) for w in jax.tree_util.tree_leaves(fn(*args))]
        for g, w in zip(program.run(list(args)), want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_int8_loop_body_runs_on_npu_v3_bit_exact_with_the_interpreter() -> None:
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    mod = cuvil.frontend.jax_to_cuvilir(refine, x)
    batches = [(RNG.standard_normal((2, 8)).astype(np.float32),) for _ in range(6)]
    program = compile_module(mod, target="npu-v3", quantize="int8", calibration_data=batches)
    for v in (x, x * 0.1):
        got = program.run([v])
        for g, w in zip(got, cuvil.interpret(program.module, [v]), strict=True):
            assert np.array_equal(g, w)
        steps, h = jax.tree_util.tree_leaves(refine(v))
        assert int(got[0]) == int(steps)
        assert np.abs(got[1] - np.asarray(h)).max() < 0.1 * max(np.abs(np.asarray(h)).max(), 1.0)
    metrics = program.report()["metrics"]
    (flow,) = [m["control_flow"] for m in metrics.values() if "control_flow" in m]
    (loop,) = flow.values()
    on_pack = [p["ops"] for p in loop["regions"]["body"]["partitions"]["partitions"]
               if p["target"] == "npu-v3"]  # fmt: skip
    assert any("qmatmul" in ops for ops in on_pack), on_pack


def test_an_unsupported_primitive_in_a_branch_names_it_and_the_line() -> None:
    def f(x):
        return lax.cond(x.sum() > 0, lambda v: lax.cummax(v, axis=0), lambda v: v, x)

    with pytest.raises(cuvil.CuvilError, match=r"cummax.*test_jax_control_flow.py:\d+"):
        cuvil.frontend.jax_to_cuvilir(f, np.ones(4, np.float32))
