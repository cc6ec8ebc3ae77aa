"""The pack kit: hooks generated from (targets, lowering table, executable factory), the order
and wording of claims, trial lowerings, the partition's memory plan, and the shared checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from cuvil_ref.errors import TargetError
from cuvil_ref.interpreter import interpret
from cuvil_ref.ir import GraphBuilder, Module, TensorType
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.lowering import compile_module
from cuvil_ref.plugin import Executable, TargetInfo, TargetPreferences, TargetSpec
from cuvil_ref.plugin.host import PackRecord, PluginHost, reset_host
from cuvil_ref.plugin.kit import (
    HOOKS,
    CheckContext,
    Decline,
    KernelPack,
    Lowering,
    LowerRequest,
    checks,
    lowering_node,
)

F32 = frozenset({DType.f32})


class InterpretExecutable(Executable):
    def __init__(self, request: LowerRequest) -> None:
        self.request = request

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return interpret(self.request.graph, list(inputs))


def _small_exp_only(node: Node, cx: CheckContext) -> None:
    if node.outputs[0].type.shape[-1] > cx.config["max_width"]:
        raise Decline(f"rows wider than {cx.config['max_width']}")


def _pack(**kwargs: Any) -> KernelPack:
    table = {
        "relu": Lowering(lambda node, cx: None, F32),
        "exp": Lowering(_small_exp_only, F32),
        "add": Lowering(lambda node, cx: None, F32, lambda node, cx: checks.equal_shapes(node)),
    }
    return KernelPack(
        name="kit",
        targets=(TargetInfo("kit", "kit test target"), TargetInfo("kit-2", "second target")),
        lowerings=table,
        executable=InterpretExecutable,
        configure=lambda target: {"max_width": 4},
        checks=(checks.static_shapes,),
        **kwargs,
    )


def _graph(width: int = 3, dtype: DType = DType.f32, dims: tuple[Any, ...] = (2,)) -> Graph:
    b = GraphBuilder()
    x = b.input("x", TensorType((*dims, width), dtype))
    return b.build([b.op("add", [b.op("exp", [b.op("relu", [x])]), x])])


def test_claims_in_order_with_reasons() -> None:
    pack = _pack(probe=True)
    spec = TargetSpec("kit")

    def reasons(graph: Graph) -> list[str | None]:
        return [pack.cuvil_supports_node(spec, n, graph).reason or None for n in graph.nodes]

    assert reasons(_graph()) == [None, None, None]
    assert reasons(_graph(width=5))[1] == "rows wider than 4"  # the trial lowering declined
    assert reasons(_graph(dtype=DType.f16))[0].startswith("dtype f16 of %x is not supported")
    assert "symbolic dim 'n'" in reasons(_graph(dims=("n",)))[0]  # pack-wide check comes first
    b = GraphBuilder()
    x = b.input("x", TensorType((3,)))
    g = b.build([b.op("sigmoid", [x])])
    assert reasons(g) == ["op 'sigmoid' has no kit lowering (3 ops have one)"]
    assert _pack(probe=False).reason(_graph(width=5).nodes[1], pack.context(spec, g)) is None


def test_every_hook_answers_for_its_targets_only() -> None:
    pack = _pack()
    mine, other = TargetSpec("kit-2"), TargetSpec("ref")
    g = _graph()
    assert [t.name for t in pack.cuvil_targets()] == ["kit", "kit-2"]
    assert pack.cuvil_target_available(mine).available
    assert pack.cuvil_preferences(mine) == TargetPreferences()
    assert pack.cuvil_validate_options(mine, {}) == {}
    for hook, args in [
        ("cuvil_target_available", (other,)),
        ("cuvil_validate_options", (other, {})),
        ("cuvil_preferences", (other,)),
        ("cuvil_supports_node", (other, g.nodes[0], g)),
        ("cuvil_lower_partition", (other, g, {})),
        ("cuvil_conformance_policy", (other,)),
    ]:
        assert getattr(pack, hook)(*args) is None, hook
    namespace: dict[str, Any] = {}
    pack.export(namespace)
    assert sorted(namespace) == sorted(HOOKS)


def test_the_factory_gets_the_partition_plan_and_options() -> None:
    host = PluginHost()
    host.load_entry_points()
    host.register(_pack(), PackRecord("kit", "test_kit", "1.0"))
    reset_host(host)
    try:
        module = Module(_graph())
        prog = compile_module(module, "kit", opt_level=0, cache=False)
    finally:
        reset_host(None)
    (lowered,) = prog.lowered
    request = lowered.executable.request
    assert request.memory_plan is lowered.memory
    values = {v.name for n in module.graph.nodes for v in n.outputs}
    assert set(request.memory_plan.buffers) == values
    assert request.opt_level == 0 and "memory_plan" not in request.options
    assert request.config == {"max_width": 4}
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(prog.run([x])[0], interpret(module, [x])[0])


def test_lowering_failures_name_the_node_and_target() -> None:
    node = _graph().nodes[0]
    failed = r"target 'kit' failed to lower .*relu.*ValueError: no"
    with pytest.raises(TargetError, match=failed), lowering_node("kit", node):
        raise ValueError("no")
    disagree = "the claim and the lowering disagree"
    with pytest.raises(TargetError, match=disagree), lowering_node("kit", node):
        raise Decline("too wide")


def test_shared_checks() -> None:
    b = GraphBuilder()
    x = b.input("x", TensorType((1, 2, 8, 8)))
    w = b.constant("w", np.zeros((2, 2, 3, 3), np.float32))
    conv = b.op("conv2d", [x, w], {"padding": (1, 2, 1, 1)})
    pool = b.op("max_pool2d", [x], {"kernel": (2, 2), "padding": (1, 1)})
    g = b.build([conv, pool])
    conv_node, pool_node = g.nodes
    assert "asymmetric padding (1, 2, 1, 1)" in checks.padding_reason(conv_node)
    assert checks.symmetric_padding(pool_node) == (1, 1)
    assert checks.pool_window(pool_node) is None
    assert checks.nchw(conv_node) is None
    assert checks.int32_accumulation(conv_node, 2**17, 255 * 128) is not None
    assert checks.int32_accumulation(conv_node, 9, 255 * 128) is None
    cx = CheckContext(g, TargetSpec("kit"))
    assert checks.constant_inputs(conv_node, cx, (1,), "weight") is None
    assert "runtime value" in checks.constant_inputs(conv_node, cx, (0,), "weight")
    assert checks.first_reason(None, "", "second", "third") == "second"
    assert checks.nonempty(conv_node) is None
    e = GraphBuilder()
    empty = e.build([e.op("relu", [e.input("x", TensorType((2, 0, 3)))])])
    assert "zero-size tensor" in (checks.nonempty(empty.nodes[0]) or "")


def test_a_partition_with_a_declined_node_is_refused_with_the_reason() -> None:
    pack = _pack(probe=True)
    with pytest.raises(TargetError, match="cannot lower .*exp.*: rows wider than 4"):
        pack.cuvil_lower_partition(TargetSpec("kit"), _graph(width=5), {})


def test_lower_returns_the_lowering_result_or_declines_with_the_claim_reason() -> None:
    table = {
        "relu": Lowering(lambda node, cx: ("relu-layer", node.outputs[0].name), F32),
        "exp": Lowering(_small_exp_only, F32),
        "add": Lowering(lambda node, cx: node.attrs["missing"], F32),
    }
    pack = KernelPack("kit", (TargetInfo("kit", "kit"),), table, InterpretExecutable,
                      configure=lambda target: {"max_width": 4}, probe=True)  # fmt: skip
    g = _graph(width=5)
    cx = pack.context(TargetSpec("kit"), g)
    relu, exp, add = g.nodes
    assert pack.lower(relu, cx) == ("relu-layer", relu.outputs[0].name)
    for node, reason in ((exp, "rows wider than 4"), (add, "cannot lower 'add': KeyError")):
        with pytest.raises(Decline, match=reason):
            pack.lower(node, cx)
        assert reason in (pack.reason(node, cx) or "")
    b = GraphBuilder()
    f16 = b.build([b.op("relu", [b.input("x", TensorType((2,), DType.f16))])])
    with pytest.raises(Decline, match="dtype f16 of %x is not supported for relu"):
        pack.lower(f16.nodes[0], cx)
