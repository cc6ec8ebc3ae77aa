"""torch.cond / torch.while_loop capture: if/while ops with regions, matching eager on each path."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import cuvil_ref as cuvil
from cuvil_ref.errors import CuvilError
from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.interpreter import interpret
from cuvil_ref.ir.graph import Module
from cuvil_ref.ir.parser import parse_module
from cuvil_ref.ir.printer import print_module, resource_table
from tests.frontend import control_flow_models as M
from tests.ir.test_printer_parser import canon

X = torch.zeros(2, 8)


def _eager(model: torch.nn.Module, x: torch.Tensor) -> list[np.ndarray]:
    with torch.no_grad():
        out = model(x)
    return [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]


def _capture(model: torch.nn.Module) -> Module:
    torch.manual_seed(0)
    return torch_to_cuvilir(model.eval(), example_inputs=(X,), capture="export")


@pytest.mark.parametrize("make", [M.Gate, M.Refine, M.Heron], ids=lambda m: m.__name__)
def test_control_flow_matches_eager_on_every_path(make) -> None:  # noqa: ANN001
    torch.manual_seed(0)
    model = make().eval()
    module = torch_to_cuvilir(model, example_inputs=(X,), capture="export")
    ops = [n.op for n in module.graph.nodes]
    assert ("if" if make is M.Gate else "while") in ops
    paths = set()
    for x in M.inputs_for_every_path(model):
        want = _eager(model, x)
        got = interpret(module, [x.numpy()])
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        paths.add(float(x.sum() > 0) if make is M.Gate else float(want[0].ravel()[0]))
    assert len(paths) > 1  # the inputs really took different paths (branches, step counts)


def test_weights_of_a_branch_are_constants_of_its_region() -> None:
    module = _capture(M.Gate())
    (node,) = [n for n in module.graph.nodes if n.op == "if"]
    then, other = node.regions
    assert {"a.weight", "a.bias"} <= set(then.constants) and "a.weight" not in other.constants
    assert {"b.weight", "b.bias"} <= set(other.constants)
    assert len(node.inputs) == 2  # the predicate and x: weights do not cross the region's edge
    assert node.provenance is not None and "control_flow_models.py" in (
        node.provenance.source or ""
    )


@pytest.mark.parametrize("make", [M.Gate, M.Refine, M.Heron], ids=lambda m: m.__name__)
def test_captured_control_flow_round_trips_through_text_and_cuvilir(make, tmp_path) -> None:  # noqa: ANN001
    module = _capture(make())
    text = print_module(module)
    again = parse_module(text, constants=resource_table(module))
    assert print_module(again) == text and canon(again.graph) == canon(module.graph)
    path = tmp_path / "model.cuvilir"
    module.save(str(path))
    loaded = cuvil.load(str(path))
    assert canon(loaded.graph) == canon(module.graph)
    x = M.inputs_for_every_path(make())[1].numpy()
    for got, want in zip(interpret(loaded, [x]), interpret(module, [x]), strict=True):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("flag", [True, False])
def test_a_predicate_known_at_capture_removes_the_branch(flag: bool) -> None:
    model = M.FlagGate(flag).eval()
    cm = cuvil.torch.compile(model, target="ref", example_inputs=(X,), capture="export")
    ops = [n.op for n in cm.module.graph.walk()]
    assert "if" not in ops and ops == ["tanh" if flag else "relu"], ops
    x = torch.linspace(-2, 2, 16).reshape(2, 8)
    np.testing.assert_allclose(cm(x).numpy(), _eager(model, x)[0], rtol=1e-6, atol=1e-6)


def test_an_op_cuvil_lacks_inside_a_branch_is_named_with_its_line() -> None:
    class Odd(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cond(
                x.sum() > 0, lambda v: torch.special.zeta(v, v), lambda v: v.clone(), (x,)
            )

    with pytest.raises(CuvilError) as info:
        torch_to_cuvilir(Odd().eval(), example_inputs=(X,), capture="export")
    message = str(info.value)
    assert "zeta" in message and "test_control_flow.py" in message, message


@pytest.mark.parametrize("make", [M.Gate, M.Refine], ids=lambda m: m.__name__)
def test_regions_take_symbolic_sizes(make) -> None:  # noqa: ANN001
    torch.manual_seed(0)
    model = make().eval()
    cm = cuvil.torch.compile(model, target="ref", example_inputs=(X,), dynamic_dims={0: "batch"})
    (node,) = [n for n in cm.module.graph.nodes if n.regions]
    assert all(r.inputs[-1].type.shape[0] == "batch" for r in node.regions)
    for rows in (1, 5):
        x = torch.randn(rows, 8)
        for got, want in zip(_as_list(cm(x)), _eager(model, x), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _as_list(out: object) -> list[np.ndarray]:
    return [np.asarray(t) for t in (out if isinstance(out, tuple) else (out,))]
