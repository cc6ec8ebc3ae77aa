"""NVIDIA's unmodified tritonclient against ``cuvil serve``: HTTP and gRPC, JSON and binary.

Every served output must equal ``cm(x)`` of the compiled model exactly (the server compiles the
same artifact for the same target): the brief's MLP on ``ref``, ResNet-18 on ``ref`` and
ResNet-18 in int8 on the simulated ``npu-v3``.
"""

from __future__ import annotations

import numpy as np
import pytest
import tritonclient.grpc as triton_grpc
import tritonclient.http as triton_http

MODELS = ("mlp", "resnet18", "resnet18_npu")


def _expected(zoo, name: str) -> tuple[str, str, np.ndarray]:
    cm = zoo.compiled[name]
    x = zoo.inputs[name]
    want = cm(x)
    return "INPUT0", "OUTPUT0", want


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
@pytest.mark.parametrize("name", MODELS)
def test_http_outputs_equal_cm(zoo, server, name: str, binary: bool) -> None:
    in_name, out_name, want = _expected(zoo, name)
    x = zoo.inputs[name]
    client = triton_http.InferenceServerClient(server.http)
    inp = triton_http.InferInput(in_name, list(x.shape), "FP32")
    inp.set_data_from_numpy(x, binary_data=binary)
    out = triton_http.InferRequestedOutput(out_name, binary_data=binary)
    result = client.infer(name, [inp], outputs=[out], request_id="r-1")
    got = result.as_numpy(out_name)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)
    assert result.get_response()["id"] == "r-1"


@pytest.mark.parametrize("name", MODELS)
def test_grpc_outputs_equal_cm(zoo, server, name: str) -> None:
    in_name, out_name, want = _expected(zoo, name)
    x = zoo.inputs[name]
    client = triton_grpc.InferenceServerClient(server.grpc)
    inp = triton_grpc.InferInput(in_name, list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    result = client.infer(name, [inp], outputs=[triton_grpc.InferRequestedOutput(out_name)])
    assert np.array_equal(result.as_numpy(out_name), want)


def test_batched_request_equals_cm_on_the_batch(zoo, server) -> None:
    """A request of 4 rows runs as one batch; its output is cm() of those 4 rows."""
    cm = zoo.compiled["mlp"]
    x = np.random.default_rng(1).standard_normal((4, 784)).astype(np.float32)
    client = triton_http.InferenceServerClient(server.http)
    inp = triton_http.InferInput("INPUT0", [4, 784], "FP32")
    inp.set_data_from_numpy(x, binary_data=True)
    got = client.infer("mlp", [inp]).as_numpy("OUTPUT0")
    assert np.array_equal(got, cm(x))


def test_concurrent_requests_are_batched_and_correct(zoo, server) -> None:
    """16 concurrent single-row requests: answered correctly, in fewer batches than requests."""
    import concurrent.futures

    cm = zoo.compiled["mlp"]
    out = "OUTPUT0"
    xs = np.random.default_rng(2).standard_normal((16, 1, 784)).astype(np.float32)

    def one(x: np.ndarray) -> np.ndarray:
        client = triton_http.InferenceServerClient(server.http)
        inp = triton_http.InferInput("INPUT0", [1, 784], "FP32")
        inp.set_data_from_numpy(x, binary_data=True)
        return client.infer("mlp", [inp]).as_numpy(out)

    before = _batch_count(server)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, xs))
    batches = _batch_count(server) - before
    for x, got in zip(xs, results):
        # Rows batched together go through one GEMM: float rounding may differ from a batch of 1
        # in the last bits (BLAS blocks differently), never more.
        np.testing.assert_allclose(got, cm(x), rtol=1e-5, atol=1e-6)
    assert batches < len(xs)


def _batch_count(server) -> float:
    import urllib.request

    text = urllib.request.urlopen(f"http://{server.metrics}/metrics").read().decode()
    for line in text.splitlines():
        if line.startswith('cuvil_batch_size_count{model="mlp",version="1"}'):
            return float(line.split()[-1])
    return 0.0


def test_health_and_metadata_http(zoo, server) -> None:
    client = triton_http.InferenceServerClient(server.http)
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("mlp") and client.is_model_ready("mlp", "1")
    meta = client.get_model_metadata("mlp")
    assert meta["inputs"] == [{"name": "INPUT0", "datatype": "FP32", "shape": [-1, 784]}]
    assert meta["platform"] == "cuvil_ref" and meta["versions"] == ["1"]
    npu = client.get_model_metadata("resnet18_npu")
    assert npu["platform"] == "cuvil_npu-v3"
    assert npu["inputs"][0]["shape"] == [1, 3, 32, 32]
    server_meta = client.get_server_metadata()
    assert server_meta["name"] == "cuvil" and "binary_tensor_data" in server_meta["extensions"]
    index = {(m["name"], m["state"]) for m in client.get_model_repository_index()}
    assert ("mlp", "READY") in index and ("resnet18_npu", "READY") in index


def test_health_and_metadata_grpc(server) -> None:
    client = triton_grpc.InferenceServerClient(server.grpc)
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("resnet18", "1")
    meta = client.get_model_metadata("mlp", as_json=True)
    assert meta["inputs"][0]["shape"] == ["-1", "784"]
    assert client.get_server_metadata(as_json=True)["name"] == "cuvil"
