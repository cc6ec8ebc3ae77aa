"""torch.compile(model, backend="cuvil"): graph breaks, data-dependent branches, prints, an op
Cuvil lacks (run in eager with a warning), dynamic shapes, weights changed in place, options."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import cuvil_ref  # noqa: F401  (nothing more is needed: the backend is an entry point)
from cuvil_ref.torch import dynamo


@pytest.fixture(autouse=True)
def _fresh() -> None:
    torch._dynamo.reset()
    dynamo.reset()


class Branchy(nn.Module):
    """A data-dependent branch and a print: torch.export refuses it, Dynamo breaks the graph."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(4, 8), nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.a(x))
        if y.sum() > 3:
            print("big")
            y = y * 0.5
        return self.b(y).softmax(-1)


class Lacking(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.a(x)
        z = torch.special.bessel_j0(y)  # no Cuvil op for this
        return torch.tanh(z + y)


def test_backend_is_registered_by_entry_point() -> None:
    assert "cuvil" in torch._dynamo.list_backends(exclude_tags=())


def test_graph_breaks_and_both_branches_match_eager(capsys: pytest.CaptureFixture) -> None:
    model = Branchy().eval()
    with pytest.raises(cuvil_ref.CuvilError):
        cuvil_ref.torch.compile(model, example_inputs=(torch.randn(2, 4),), cache=False)
    compiled = torch.compile(model, backend="cuvil", options={"cache": False})
    for x in (torch.full((2, 4), 3.0), torch.full((2, 4), -3.0)):
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)
    assert "big" in capsys.readouterr().out
    r = dynamo.report()
    assert r["graphs"] >= 2 and r["graph_breaks"] >= 1
    assert r["break_reasons"], r  # Dynamo's own words for the print (they vary with the setup)
    assert all(g["on_cuvil"] for g in r["per_graph"])


def test_an_op_cuvil_lacks_runs_in_eager_with_a_warning() -> None:
    model = Lacking().eval()
    compiled = torch.compile(model, backend="cuvil", options={"cache": False})
    x = torch.randn(3, 4)
    with pytest.warns(dynamo.CuvilFallbackWarning, match=r"bessel_j0.*test_dynamo.py:\d+"):
        got = compiled(x)
    torch.testing.assert_close(got, model(x), rtol=1e-5, atol=1e-6)
    (graph,) = dynamo.report()["per_graph"]
    assert [e["op"] for e in graph["eager"]] == ["special_bessel_j0"]
    assert "linear" in graph["on_cuvil"] or "fused_linear" in graph["on_cuvil"]
    assert graph["partitions"] == 2


def test_fallback_error_raises_instead() -> None:
    compiled = torch.compile(Lacking().eval(), backend="cuvil", options={"fallback": "error"})
    with pytest.raises(Exception, match="bessel_j0"):
        compiled(torch.randn(3, 4))


def test_dynamic_shapes_use_symbolic_dims_without_recompiling() -> None:
    class Reshaping(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.a(x)).view(x.shape[0], 2, 2)

    model = Reshaping().eval()
    compiled = torch.compile(model, backend="cuvil", dynamic=True, options={"cache": False})
    for batch in (2, 5, 7):
        x = torch.randn(batch, 4)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)
    (graph,) = dynamo.report()["per_graph"]
    assert graph["recompiles"] == 0


def test_weights_changed_in_place_recompile() -> None:
    model = Lacking().eval()
    compiled = torch.compile(model, backend="cuvil", options={"cache": False})
    x = torch.randn(2, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dynamo.CuvilFallbackWarning)
        compiled(x)
        with torch.no_grad():
            model.a.weight.mul_(2.0)
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)


def test_unknown_option_is_a_clear_error() -> None:
    compiled = torch.compile(Lacking().eval(), backend="cuvil", options={"targte": "ref"})
    with pytest.raises(Exception, match="unknown option.*targte"):
        compiled(torch.randn(2, 4))
