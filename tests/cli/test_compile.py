"""``cuvil compile``: models from a factory file, the zoo and .pt2 files; report; options."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import cuvil_ref as cuvil
from cuvil_ref.cli.models import load_model
from tests.cli.conftest import invoke


def test_factory_model_compiles_and_matches_torch(artifact: Path, model_file: Path) -> None:
    module = cuvil.load(str(artifact))
    assert [str(v.type) for v in module.inputs] == ["f32[2,8]"]
    x = np.random.default_rng(3).standard_normal((2, 8)).astype(np.float32)
    model = load_model(f"{model_file}:make").model
    want = model(torch.from_numpy(x)).detach().numpy()
    (got,) = cuvil.interpret(module, [x])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_saved_meta_records_target_and_compile_options(artifact: Path) -> None:
    from cuvil_ref.artifacts import artifact_info

    meta = artifact_info(str(artifact))
    assert meta["target"]["target"] == "ref"
    assert meta["compile"]["opt_level"] == 2
    assert meta["compile"]["model"].endswith("tiny.py:make")


def test_zoo_mlp_with_report(tmp_path: Path) -> None:
    out = tmp_path / "mlp.cuvilir"
    report_file = tmp_path / "report.json"
    result = invoke(
        "compile", "zoo:mlp", "-o", str(out), "--report", "--report-json", str(report_file)
    )
    assert result.exit_code == 0, result.output
    assert "compiled zoo:mlp for target 'ref'" in result.stdout
    for title in ("partitions", "passes", "memory plan", "target metrics"):
        assert title in result.stdout
    report = json.loads(report_file.read_text())
    peak = report["memory"]["planned_peak_bytes"]
    naive = report["memory"]["naive_sum_bytes"]
    assert 0 < peak <= naive
    assert f"{naive / 1024:.2f} KiB" in result.stdout or f"{naive} B" in result.stdout
    mod = cuvil.load(str(out))
    assert mod.graph.op_histogram() == report["partitions"]["partitions"][0]["ops"]


def test_opt_level_0_runs_no_passes(model_file: Path) -> None:
    result = invoke(
        "compile", f"{model_file}:make", "--input-shape", "2,8", "-O", "0", "--report-json", "-"
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout[result.stdout.index("{") :])
    assert report["opt_level"] == 0
    assert report["passes"] == []
    assert report["partitions"]["partitions"][0]["ops"] == {"linear": 2, "relu": 1}


def test_dynamic_batch_makes_dim0_symbolic(model_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "dyn.cuvilir"
    result = invoke(
        "compile", f"{model_file}:make", "--input-shape", "2,8", "--dynamic-batch", "-o", str(out)
    )
    assert result.exit_code == 0, result.output
    assert [str(v.type) for v in cuvil.load(str(out)).inputs] == ["f32[batch,8]"]


def test_dump_ir_after_a_pass(model_file: Path) -> None:
    result = invoke("compile", f"{model_file}:make", "--input-shape", "2,8", "--dump-ir", "dce")
    assert result.exit_code == 0, result.output
    assert "// IR after pass 'dce'" in result.stderr
    assert "func @main(%x : f32[2,8])" in result.stderr


def test_dump_ir_unknown_pass_lists_passes(model_file: Path) -> None:
    result = invoke("compile", f"{model_file}:make", "--input-shape", "2,8", "--dump-ir", "nope")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: --dump-ir: unknown pass 'nope'; passes: ")
    assert "dce" in result.stderr


def test_pt2_file(tmp_path: Path) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
    path = tmp_path / "m.pt2"
    torch.export.save(torch.export.export(model, (torch.randn(2, 4),)), str(path))
    out = tmp_path / "m.cuvilir"
    result = invoke("compile", str(path), "-o", str(out), "-O", "0")
    assert result.exit_code == 0, result.output
    module = cuvil.load(str(out))
    assert [str(v.type) for v in module.inputs] == ["f32[2,4]"]
    x = np.ones((2, 4), np.float32)
    want = model(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(cuvil.interpret(module, [x])[0], want, rtol=1e-5, atol=1e-6)


def test_target_spec_file_and_target_conflict(model_file: Path, tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"target": "numpy"}))
    ok = invoke("compile", f"{model_file}:make", "--input-shape", "2,8", "--target-spec", str(spec))
    assert ok.exit_code == 0, ok.output
    assert "for target 'ref'" in ok.stdout
    both = invoke(
        "compile",
        f"{model_file}:make",
        "--input-shape",
        "2,8",
        "-t",
        "ref",
        "--target-spec",
        str(spec),
    )
    assert both.exit_code == 2
    assert "give --target or --target-spec, not both" in both.output


def test_unknown_target_option_is_refused(model_file: Path) -> None:
    result = invoke(
        "compile", f"{model_file}:make", "--input-shape", "2,8", "--option", "loop_unroll=4"
    )
    assert result.exit_code == 1
    assert "target 'ref' has no option 'loop_unroll'" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("{dir}/missing.py:make", "model file '{dir}/missing.py' does not exist"),
        ("{file}:nofactory", "has no callable 'nofactory'; callables defined there: "),
        ("{file}:not_a_module", "not_a_module() returned int; it must return a torch.nn.Module"),
        ("{file}", "names a Python file but no factory"),
        ("zoo:nope", "no zoo model 'nope'; available: mlp"),
        ("model.onnx", "ONNX model file 'model.onnx' does not exist"),
        ("model.tflite", "cannot tell what MODEL 'model.tflite' is"),
    ],
)
def test_bad_models_give_one_error_line(model_file: Path, model: str, message: str) -> None:
    fill = {"dir": str(model_file.parent), "file": str(model_file)}
    result = invoke("compile", model.format(**fill), "--input-shape", "2,8")
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and message.format(**fill) in errors[0]
    assert "Traceback" not in result.output


def test_shape_mismatch_names_the_layer(model_file: Path) -> None:
    result = invoke("compile", f"{model_file}:make", "--input-shape", "2,7")
    assert result.exit_code == 1
    assert "fc1" in result.stderr and "Traceback" not in result.output


@pytest.mark.parametrize("shape", ["2,a", "2,-1", ""])
def test_bad_input_shape_is_a_usage_error(model_file: Path, shape: str) -> None:
    result = invoke("compile", f"{model_file}:make", "--input-shape", shape)
    assert result.exit_code == 2
    assert "Invalid value for '--input-shape'" in result.stderr


def test_int8_for_npu_reports_cycles(model_file: Path, tmp_path: Path) -> None:
    if importlib.util.find_spec("cuvil_kernels_npu_sim") is None:
        pytest.skip("the cuvil-kernels-npu-sim distribution is not installed")
    calib = tmp_path / "calib.npy"
    np.save(calib, np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32))
    result = invoke(
        "compile",
        f"{model_file}:make",
        "--input-shape",
        "2,8",
        "-t",
        "npu-v3",
        "--quantize",
        "int8",
        "--calibration",
        str(calib),
        "--report",
        "--report-json",
        "-",
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout[result.stdout.index('{\n  "cache"') :])
    assert report["quantization"]["calibration_batches"] == 4
    metrics = report["metrics"]
    assert metrics["cycles"] >= metrics["roofline_cycles"] > 0
    cycles_row = next(r for r in result.stdout.splitlines() if "│ cycles " in r)
    assert f"{metrics['cycles']:,}" in cycles_row
    assert "quantization per layer" in result.stdout and "per layer" in result.stdout


def test_compile_an_onnx_model(tmp_path: Path) -> None:
    """`cuvil compile model.onnx`: imported by the ONNX frontend, compiled, saved, run."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
        [w],
    )
    path = tmp_path / "tiny.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    out = tmp_path / "tiny.cuvilir"
    result = invoke("compile", str(path), "--input-shape", "2,4", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert f"compiled {path}" in result.stdout and out.exists()
    from cuvil_ref.artifacts import load_module

    module = load_module(str(out))
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    from cuvil_ref.interpreter import interpret

    np.testing.assert_allclose(interpret(module, [x])[0], np.maximum(x @ np.ones((4, 3)), 0),
                               rtol=1e-6)
