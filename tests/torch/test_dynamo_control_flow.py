"""torch.compile(backend="cuvil") on models written with torch.cond / torch.while_loop: Dynamo
hands over one graph holding the higher-order op, and Cuvil runs it as an if/while op (no graph
break, nothing in eager) that matches eager on every path."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import cuvil_ref  # noqa: F401  (the backend is an entry point)
from cuvil_ref.torch import dynamo
from tests.frontend import control_flow_models as M


@pytest.fixture(autouse=True)
def _fresh() -> None:
    torch._dynamo.reset()
    dynamo.reset()


@pytest.mark.parametrize(("make", "op"), [(M.Gate, "if"), (M.Refine, "while")])
def test_control_flow_runs_on_cuvil_without_a_graph_break(make, op: str) -> None:  # noqa: ANN001
    torch.manual_seed(0)
    model = make().eval()
    compiled = torch.compile(model, backend="cuvil")
    for x in M.inputs_for_every_path(model):
        with torch.no_grad():
            got, want = compiled(x), model(x)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-5)
    report = dynamo.report()
    assert report["graph_breaks"] == 0
    (graph,) = report["per_graph"]
    assert graph["on_cuvil"].get(op) == 1 and graph["eager"] == []
