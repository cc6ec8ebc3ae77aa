"""Control flow on a target that does not claim it: the core drives if/while, the regions run
through the target's pack (npu-v3: the int8 body bit-exact against the interpreter)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import cuvil_ref as cuvil
import cuvil_ref.torch
from cuvil_ref.errors import CuvilError
from cuvil_ref.frontend import torch_to_cuvilir
from cuvil_ref.interpreter import interpret
from cuvil_ref.ir.parser import parse_module
from cuvil_ref.ir.printer import print_module, resource_table
from cuvil_ref.lowering import compile_module
from cuvil_ref.quant import quantize_module
from tests.frontend import control_flow_models as M

X = torch.zeros(2, 8)


def _calibration(model: torch.nn.Module) -> list[tuple[torch.Tensor]]:
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randn(2, 8, generator=g),) for _ in range(6)]
    return batches + [(x,) for x in M.inputs_for_every_path(model)]


def _as_list(out: object) -> list[np.ndarray]:
    items = out if isinstance(out, tuple) else (out,)
    return [np.asarray(t) for t in items]


@pytest.fixture(scope="module", params=[M.Gate, M.Refine], ids=lambda m: m.__name__)
def on_npu(request):  # noqa: ANN001, ANN201
    torch.manual_seed(0)
    model = request.param().eval()
    cm = cuvil.torch.compile(
        model,
        target="npu-v3",
        quantize="int8",
        calibration_data=_calibration(model),
        example_inputs=(X,),
        capture="export",
    )
    return model, cm


def test_int8_regions_run_on_the_pack_bit_exact_with_the_interpreter(on_npu) -> None:  # noqa: ANN001
    model, cm = on_npu
    for x in M.inputs_for_every_path(model):
        got = _as_list(cm(x))
        want = interpret(cm.module, [x.numpy()])  # the quantized graph, on the reference
        for g, w in zip(got, want, strict=True):
            assert np.array_equal(g, w)
        with torch.no_grad():
            eager = _as_list(model(x))
        for g, e in zip(got, eager, strict=True):
            scale = float(np.abs(e).max()) or 1.0
            assert float(np.abs(g - e).max()) / scale < 0.1  # int8 of a few layers
    report = cm.report()
    parts = report["partitions"]["partitions"]
    (index,) = [i for i, p in enumerate(parts) if p["target"] == "host"]
    flow = report["metrics"][f"partition{index}:host"]["control_flow"]
    (entry,) = flow.values()
    on_pack = [
        p["ops"]
        for region in entry["regions"].values()
        for p in region["partitions"]["partitions"]
        if p["target"] == "npu-v3"
    ]
    assert any("qlinear" in ops for ops in on_pack), entry
    assert sum(r["runs"] for r in entry["regions"].values()) >= 3


def test_the_quantization_report_shows_each_region(on_npu) -> None:  # noqa: ANN001
    _, cm = on_npu
    quant = cm.report()["quantization"]
    (layer,) = [x for x in quant["layers"] if x["scheme"] == "control flow"]
    assert all(r["runs"] > 0 and r["reason"] is None for r in layer["regions"])
    qlinear = [x for r in layer["regions"] for x in r["layers"] if x.get("qop") == "qlinear"]
    assert qlinear and quant["summary"]["control_flow"] == 1
    assert quant["summary"]["int8"] >= len(qlinear)


def test_quantized_regions_round_trip_through_text_and_cuvilir(on_npu, tmp_path) -> None:  # noqa: ANN001
    model, cm = on_npu
    text = print_module(cm.module)
    assert "region @" in text and "q<" in text
    assert print_module(parse_module(text, constants=resource_table(cm.module))) == text
    path = tmp_path / "model.cuvilir"
    cm.save(str(path))
    loaded = cuvil.load(str(path))
    program = compile_module(loaded, target="npu-v3")  # already int8: compiled as it is
    for x in M.inputs_for_every_path(model):
        got = program.run([x.numpy()])
        for g, w in zip(got, _as_list(cm(x)), strict=True):
            assert np.array_equal(g, w)


def test_a_branch_calibration_never_reached_stays_float_with_a_warning() -> None:
    torch.manual_seed(0)
    module = torch_to_cuvilir(M.Gate().eval(), example_inputs=(X,), capture="export")
    positive = [(np.abs(np.random.default_rng(i).standard_normal((2, 8))).astype(np.float32),)
                for i in range(3)]  # fmt: skip
    with pytest.warns(UserWarning, match="region @else .* never ran on the calibration data"):
        qmodule, report = quantize_module(module, "int8", positive)
    (node,) = [n for n in qmodule.graph.nodes if n.op == "if"]
    then, other = node.regions
    assert any(n.op == "qlinear" for n in then.nodes)
    assert not any(n.op.startswith("q") for n in other.nodes)
    assert any("@else" in x["reason"] for x in report["float_fallback"] + [
        {"reason": r["reason"] or ""} for x in report["layers"] for r in x.get("regions", ())
    ])  # fmt: skip


@pytest.mark.parametrize("target", ["cpu", "ref"])
def test_float_control_flow_matches_eager_on_a_float_target(target: str) -> None:
    torch.manual_seed(0)
    for model in (M.Gate().eval(), M.Heron().eval()):
        cm = cuvil.torch.compile(model, target=target, example_inputs=(X,), capture="export")
        for x in M.inputs_for_every_path(model):
            with torch.no_grad():
                want = _as_list(model(x))
            for g, w in zip(_as_list(cm(x)), want, strict=True):
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_fp16_rewrites_every_region_and_mixed_refuses_control_flow() -> None:
    torch.manual_seed(0)
    model = M.Gate().eval()
    cm = cuvil.torch.compile(
        model, target="ref", quantize="fp16", example_inputs=(X,), capture="export"
    )
    (node,) = [n for n in cm.module.graph.nodes if n.op == "if"]
    assert all(any(v.type.dtype.name == "f16" for n in r.nodes for v in n.outputs)
               for r in node.regions)  # fmt: skip
    for x in M.inputs_for_every_path(model):
        with torch.no_grad():
            want = model(x).numpy()
        np.testing.assert_allclose(cm(x).numpy(), want, rtol=2e-2, atol=2e-2)
    with pytest.raises(CuvilError, match="does not handle control flow"):
        cuvil.torch.compile(
            model, target="ref", quantize="mixed", example_inputs=(X,), capture="export",
            calibration_data=_calibration(model),
        )  # fmt: skip
