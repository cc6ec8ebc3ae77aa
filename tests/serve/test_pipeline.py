"""Pre/post-processing compiled into the served graph: normalization of uint8 input, softmax and
top-k, checked against numpy through the interpreter, and end to end through the server."""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.http as triton_http

import cuvil_ref as cuvil
from cuvil_ref.serve.config import parse_config
from cuvil_ref.serve.errors import ConfigError
from cuvil_ref.serve.pipeline import wrap_module

PIPELINE = {
    "preprocess": [
        {"op": "normalize", "mean": [0.5], "std": [0.25], "scale": 1 / 255,
         "input_datatype": "UINT8"}
    ],
    "postprocess": [{"op": "softmax"}, {"op": "topk", "k": 3}],
    "inputs": [{"name": "IMAGE"}],
    "outputs": [{"name": "SCORES"}, {"name": "CLASSES"}],
}  # fmt: skip


def _reference(cm, img: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = (img.astype(np.float32) * np.float32(1 / 255) - np.float32(0.5)) / np.float32(0.25)
    logits = cm(x)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    p = e / e.sum(-1, keepdims=True)
    idx = np.argsort(-p, axis=-1, kind="stable")[:, :3]
    return np.take_along_axis(p, idx, -1), idx


def test_wrapped_module_matches_numpy(zoo) -> None:
    cm = zoo.compiled["mlp"]
    wrapped = wrap_module(cm.module, parse_config(PIPELINE, name="m"))
    assert [v.type.dtype.value for v in wrapped.inputs] == ["u8"]
    assert [v.type.dtype.value for v in wrapped.outputs] == ["f32", "i64"]
    img = np.random.default_rng(0).integers(0, 256, (2, 784), dtype=np.uint8)
    scores, classes = cuvil.interpret(wrapped, [img])
    want_scores, want_classes = _reference(cm, img)
    np.testing.assert_allclose(scores, want_scores, rtol=1e-5)
    assert np.array_equal(classes, want_classes)


def test_pipeline_errors_name_the_step(zoo) -> None:
    cm = zoo.compiled["mlp"]
    bad = {"postprocess": [{"op": "topk", "k": 11}]}
    with pytest.raises(ConfigError, match=r"postprocess\[0\].k.*at most 10"):
        wrap_module(cm.module, parse_config(bad, name="m"))
    bad = {"preprocess": [{"op": "normalize", "std": [0.0]}]}
    with pytest.raises(ConfigError, match=r"preprocess\[0\].std.*non-zero"):
        wrap_module(cm.module, parse_config(bad, name="m"))


def test_served_pipeline(zoo, server) -> None:
    img = np.random.default_rng(1).integers(0, 256, (1, 784), dtype=np.uint8)
    client = triton_http.InferenceServerClient(server.http)
    meta = client.get_model_metadata("mlp_top3")
    assert meta["inputs"][0]["datatype"] == "UINT8"
    assert [o["name"] for o in meta["outputs"]] == ["SCORES", "CLASSES"]
    inp = triton_http.InferInput("IMAGE", [1, 784], "UINT8")
    inp.set_data_from_numpy(img, binary_data=True)
    result = client.infer("mlp_top3", [inp])
    want_scores, want_classes = _reference(zoo.compiled["mlp"], img)
    np.testing.assert_allclose(result.as_numpy("SCORES"), want_scores, rtol=1e-5)
    assert np.array_equal(result.as_numpy("CLASSES"), want_classes)
