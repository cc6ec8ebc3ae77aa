"""cuvil.torch.compile: call signature, output structure, input checks, targets, report."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import cuvil_ref as cuvil
from cuvil_ref.errors import CuvilError, InputError, TargetError
from cuvil_ref.zoo import get_model


class TwoInputs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor, y: torch.Tensor, scale: float = 2.0):
        h = self.fc(x) + y
        return h, [h * scale, {"neg": -h}]


def test_positional_and_keyword_calls_keep_the_output_structure() -> None:
    model = TwoInputs().eval()
    x, y = torch.randn(2, 4), torch.randn(2, 3)
    cm = cuvil.torch.compile(model, example_inputs=(x, y))
    got = cm(x, y=y)
    want = model(x, y)
    assert isinstance(got, tuple) and isinstance(got[1], list) and set(got[1][1]) == {"neg"}
    for g, w in zip(torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want)):
        assert isinstance(g, torch.Tensor)
        torch.testing.assert_close(g, w.detach(), rtol=1e-5, atol=1e-6)


def test_numpy_in_numpy_out() -> None:
    model, shape = get_model("mlp")
    cm = cuvil.torch.compile(model, example_inputs=(torch.randn(*shape),))
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    out = cm(x)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(
        out, model(torch.from_numpy(x)).detach().numpy(), rtol=1e-4, atol=1e-5
    )


def test_input_checks_state_expected_and_received() -> None:
    model, shape = get_model("mlp")
    cm = cuvil.torch.compile(model, example_inputs=(torch.randn(*shape),))
    with pytest.raises(InputError, match=r"expected 1 inputs .*received 2"):
        cm(torch.randn(*shape), torch.randn(*shape))
    with pytest.raises(InputError, match=r"expected shape \[1,784\].*received \[1, 785\]"):
        cm(torch.randn(1, 785))
    with pytest.raises(InputError, match="expected dtype f32, received float64"):
        cm(torch.randn(*shape, dtype=torch.float64))


@pytest.mark.parametrize("capture", ["fx", "export"])
def test_dynamic_batch_accepts_batch_1_and_3(capture: str) -> None:
    model, shape = get_model("digits_cnn")
    cm = cuvil.torch.compile(
        model, example_inputs=(torch.randn(*shape),), dynamic_batch=True, capture=capture
    )
    for batch in (1, 3):
        x = torch.randn(batch, *shape[1:])
        torch.testing.assert_close(cm(x), model(x).detach(), rtol=1e-4, atol=1e-5)
    with pytest.raises(InputError, match=r"expected shape \[batch,1,8,8\]"):
        cm(torch.randn(2, 1, 8, 9))


def test_symbolic_dims_must_agree_across_inputs() -> None:
    model = TwoInputs().eval()
    cm = cuvil.torch.compile(
        model, example_inputs=(torch.randn(2, 4), torch.randn(2, 3)), dynamic_dims={0: "n"}
    )
    assert cm(torch.randn(5, 4), torch.randn(5, 3))[0].shape == (5, 3)
    with pytest.raises(InputError, match="dim 'n' is 4 here but 5"):
        cm(torch.randn(5, 4), torch.randn(4, 3))


def test_lazy_compile_on_first_call_like_the_brief() -> None:
    model, shape = get_model("mlp")
    cm = cuvil.torch.compile(model, target="ref", enable_fusion=True)
    with pytest.raises(InputError, match="before the first call"):
        cm.report()
    x = torch.randn(*shape)
    torch.testing.assert_close(cm(x), model(x).detach(), rtol=1e-4, atol=1e-5)
    assert cm.report()["target"] == "ref"


def test_report_contents() -> None:
    model, shape = get_model("mlp")
    cm = cuvil.torch.compile(model, example_inputs=(torch.randn(*shape),), opt_level=1)
    r = cm.report()
    assert (r["target"], r["opt_level"], r["capture"]) == ("ref", 1, "export")
    parts = r["partitions"]["partitions"]
    assert [p["target"] for p in parts] == ["ref"]
    assert parts[0]["ops"] == {"linear": 2, "relu": 1}
    assert r["partitions"]["fallback"] == []
    assert r["passes"] and all({"pass", "seconds", "changed"} <= set(p) for p in r["passes"])
    assert r["memory"]["planned_peak_bytes"] <= r["memory"]["naive_sum_bytes"]
    assert r["quantization"] is None


def test_auto_capture_falls_back_to_export() -> None:
    model, shape = get_model("torch_encoder_layer")
    x = torch.randn(*shape)
    cm = cuvil.torch.compile(model, example_inputs=(x,))
    assert cm.report()["capture"] == "export"
    torch.testing.assert_close(cm(x), model(x).detach(), rtol=1e-4, atol=1e-5)


def test_unknown_target_lists_installed_targets() -> None:
    with pytest.raises(TargetError, match=r"unknown target 'npu-v9'; installed targets: .*ref"):
        cuvil.torch.compile(nn.ReLU(), target="npu-v9")
    with pytest.raises(TargetError, match="unknown target 'nvidia/nvx'"):
        cuvil.torch.compile(nn.ReLU(), target={"target": "nvidia/nvx", "arch": "nvx"})


def test_bad_options_are_refused_clearly() -> None:
    with pytest.raises(CuvilError, match="quantize='int4' is not one of"):
        cuvil.torch.compile(nn.ReLU(), quantize="int4")
    with pytest.raises(CuvilError, match="opt_level must be"):
        cuvil.torch.compile(nn.ReLU(), opt_level=7)
    with pytest.raises(TargetError, match="target 'ref' has no option 'loop_unroll_factor'"):
        cuvil.torch.compile(nn.ReLU(), options={"loop_unroll_factor": 4})


def test_run_async_returns_a_future() -> None:
    model, shape = get_model("mlp")
    x = torch.randn(*shape)
    cm = cuvil.torch.compile(model, example_inputs=(x,))
    torch.testing.assert_close(cm.run_async(x).result(timeout=60), cm(x))


def test_save_delegates_to_the_module(monkeypatch: pytest.MonkeyPatch) -> None:
    model, shape = get_model("mlp")
    cm = cuvil.torch.compile(model, example_inputs=(torch.randn(*shape),))
    saved = []
    monkeypatch.setattr(type(cm.module), "save", lambda self, path, **kw: saved.append(path))
    cm.save("m.cuvilir")
    assert saved == ["m.cuvilir"]
