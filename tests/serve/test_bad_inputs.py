"""The bad-input table: every malformed or abusive request gets its protocol error, names what
the model expects, and the server keeps serving the others (checked after every row).
"""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import socket
import time

import numpy as np
import pytest
import tritonclient.grpc as triton_grpc
import tritonclient.http as triton_http
from tritonclient.utils import InferenceServerException

MLP_X = np.zeros((1, 784), np.float32)


def _post(server, path: str, body: bytes, headers: dict[str, str] | None = None):
    host, port = server.http.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("POST", path, body=body, headers=headers or {})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data


def _json(inputs, **extra) -> bytes:
    return json.dumps({"inputs": inputs, **extra}).encode()


def _flat(x: np.ndarray) -> list[float]:
    return x.reshape(-1).tolist()


def _mlp_input(**changes):
    spec = {"name": "INPUT0", "shape": [1, 784], "datatype": "FP32", "data": [0.0] * 784}
    spec.update(changes)
    return spec


def _still_serving(zoo, server) -> None:
    client = triton_http.InferenceServerClient(server.http)
    inp = triton_http.InferInput("INPUT0", [1, 784], "FP32")
    inp.set_data_from_numpy(zoo.inputs["mlp"], binary_data=True)
    got = client.infer("mlp", [inp]).as_numpy("OUTPUT0")
    assert np.array_equal(got, zoo.compiled["mlp"](zoo.inputs["mlp"]))


BINARY_HEADER = json.dumps(
    {
        "inputs": [
            {
                "name": "INPUT0",
                "shape": [1, 784],
                "datatype": "FP32",
                "parameters": {"binary_data_size": 784 * 4},
            }
        ]
    }
).encode()

HTTP_TABLE = [
    # (id, path, body, headers, status, words the message must contain)
    ("malformed-json", "/v2/models/mlp/infer", b'{"inputs": [', {}, 400, ["not valid JSON"]),
    ("not-an-object", "/v2/models/mlp/infer", b"[1, 2]", {}, 400, ['"inputs" list']),
    (
        "wrong-shape",
        "/v2/models/mlp/infer",
        _json([_mlp_input(shape=[1, 783], data=[0.0] * 783)]),
        {},
        400,
        ["[1, 783]", "[-1, 784]"],
    ),
    (
        "data-count-mismatch",
        "/v2/models/mlp/infer",
        _json([_mlp_input(data=[0.0] * 10)]),
        {},
        400,
        ["784 elements", "data has 10"],
    ),
    (
        "wrong-dtype",
        "/v2/models/mlp/infer",
        _json([_mlp_input(datatype="INT32", data=[0] * 784)]),
        {},
        400,
        ["must be FP32", "received INT32"],
    ),
    (
        "unknown-datatype",
        "/v2/models/mlp/infer",
        _json([_mlp_input(datatype="FLOAT")]),
        {},
        400,
        ["unknown datatype", "FP32"],
    ),
    (
        "wrong-name",
        "/v2/models/mlp/infer",
        _json([_mlp_input(name="x")]),
        {},
        400,
        ["unknown input 'x'", "'INPUT0' FP32 [-1, 784]"],
    ),
    ("missing-input", "/v2/models/mlp/infer", _json([]), {}, 400, ["missing input 'INPUT0'"]),
    (
        "unknown-output",
        "/v2/models/mlp/infer",
        _json([_mlp_input()], outputs=[{"name": "logits"}]),
        {},
        400,
        ["unknown output 'logits'", "'OUTPUT0'"],
    ),
    (
        "oversized-batch",
        "/v2/models/mlp/infer",
        _json([_mlp_input(shape=[9, 784], data=[0.0] * 9 * 784)]),
        {},
        400,
        ["batch size 9", "max_batch_size"],
    ),
    (
        "non-numeric-data",
        "/v2/models/mlp/infer",
        _json([_mlp_input(data=["a"] * 784)]),
        {},
        400,
        ["list of numbers"],
    ),
    ("unknown-model", "/v2/models/nope/infer", _json([_mlp_input()]), {}, 404, ["'nope'", "mlp"]),
    (
        "unknown-version",
        "/v2/models/mlp/versions/7/infer",
        _json([_mlp_input()]),
        {},
        404,
        ["no version 7", "[1]"],
    ),
    (
        "truncated-binary",
        "/v2/models/mlp/infer",
        BINARY_HEADER + b"\0" * 1000,
        {"Inference-Header-Content-Length": str(len(BINARY_HEADER))},
        400,
        ["binary_data_size 3136", "1000 bytes", "truncated"],
    ),
    (
        "bad-header-length",
        "/v2/models/mlp/infer",
        BINARY_HEADER,
        {"Inference-Header-Content-Length": str(len(BINARY_HEADER) + 50)},
        400,
        ["Inference-Header-Content-Length"],
    ),
    (
        "bad-gzip",
        "/v2/models/mlp/infer",
        b"not gzip",
        {"Content-Encoding": "gzip"},
        400,
        ["not valid gzip"],
    ),
]


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "words"),
    [row[1:] for row in HTTP_TABLE],
    ids=[row[0] for row in HTTP_TABLE],
)
def test_http_bad_input(zoo, server, path, body, headers, status, words) -> None:
    got, _, data = _post(server, path, body, headers)
    assert got == status, data
    message = json.loads(data)["error"]
    assert "Traceback" not in message
    for w in words:
        assert w in message, message
    _still_serving(zoo, server)


def test_gzip_request_is_accepted(zoo, server) -> None:
    import gzip

    body = gzip.compress(_json([_mlp_input(data=zoo.inputs["mlp"].reshape(-1).tolist())]))
    status, _, data = _post(server, "/v2/models/mlp/infer", body, {"Content-Encoding": "gzip"})
    assert status == 200
    got = np.asarray(json.loads(data)["outputs"][0]["data"], np.float32)
    assert np.array_equal(got, zoo.compiled["mlp"](zoo.inputs["mlp"]).reshape(-1))


GRPC_TABLE = [
    ("wrong-shape", "mlp", [1, 783], "FP32", "INVALID_ARGUMENT", "[-1, 784]"),
    ("wrong-dtype", "mlp", [1, 784], "FP64", "INVALID_ARGUMENT", "must be FP32"),
    ("oversized-batch", "mlp", [9, 784], "FP32", "INVALID_ARGUMENT", "batch size 9"),
    ("unknown-model", "nope", [1, 784], "FP32", "NOT_FOUND", "unknown model 'nope'"),
]


@pytest.mark.parametrize(
    ("model", "shape", "datatype", "code", "words"),
    [row[1:] for row in GRPC_TABLE],
    ids=[row[0] for row in GRPC_TABLE],
)
def test_grpc_bad_input(zoo, server, model, shape, datatype, code, words) -> None:
    client = triton_grpc.InferenceServerClient(server.grpc)
    inp = triton_grpc.InferInput("INPUT0", shape, datatype)
    dtype = np.float64 if datatype == "FP64" else np.float32
    inp.set_data_from_numpy(np.zeros(shape, dtype))
    with pytest.raises(InferenceServerException) as info:
        client.infer(model, [inp])
    assert info.value.status() == f"StatusCode.{code}"
    assert words in info.value.message()
    _still_serving(zoo, server)


def test_grpc_truncated_raw_contents(zoo, server) -> None:
    client = triton_grpc.InferenceServerClient(server.grpc)
    inp = triton_grpc.InferInput("INPUT0", [1, 784], "FP32")
    inp.set_data_from_numpy(np.zeros((1, 784), np.float32))
    inp._raw_content = inp._raw_content[:1000]  # what a truncated upload delivers
    with pytest.raises(InferenceServerException) as info:
        client.infer("mlp", [inp])
    assert info.value.status() == "StatusCode.INVALID_ARGUMENT"
    assert "1000 bytes" in info.value.message()
    _still_serving(zoo, server)


def test_timeout_gives_504_and_deadline_exceeded(zoo, server) -> None:
    x = zoo.inputs["resnet18_npu"]
    client = triton_http.InferenceServerClient(server.http)
    inp = triton_http.InferInput("INPUT0", list(x.shape), "FP32")
    inp.set_data_from_numpy(x, binary_data=True)
    with pytest.raises(InferenceServerException) as info:
        client.infer("resnet18_npu", [inp], timeout=1000)  # microseconds: far too short
    assert info.value.status() == "504"
    grpc_client = triton_grpc.InferenceServerClient(server.grpc)
    ginp = triton_grpc.InferInput("INPUT0", list(x.shape), "FP32")
    ginp.set_data_from_numpy(x)
    with pytest.raises(InferenceServerException) as info:
        grpc_client.infer("resnet18_npu", [ginp], timeout=1000)
    assert info.value.status() == "StatusCode.DEADLINE_EXCEEDED"
    _still_serving(zoo, server)


def test_queue_full_gives_503_with_retry_after(zoo, server) -> None:
    """resnet18_npu queues at most 2 requests: a burst of 12 gets some 503s, none lost."""
    x = zoo.inputs["resnet18_npu"]
    body = _json([{"name": "INPUT0", "shape": list(x.shape), "datatype": "FP32", "data": _flat(x)}])

    def one(_: int):
        return _post(server, "/v2/models/resnet18_npu/infer", body)

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        results = list(pool.map(one, range(12)))
    statuses = sorted(s for s, _, _ in results)
    assert set(statuses) <= {200, 503}, statuses
    assert 200 in statuses and 503 in statuses, statuses
    for status, headers, data in results:
        if status == 503:
            assert int(headers["retry-after"]) >= 1
            assert "queue is full" in json.loads(data)["error"]
    want = zoo.compiled["resnet18_npu"](x)
    for status, _, data in results:
        if status == 200:
            got = np.asarray(json.loads(data)["outputs"][0]["data"], np.float32)
            assert np.array_equal(got, want.reshape(-1))
    _still_serving(zoo, server)


def test_grpc_queue_full_is_unavailable(zoo, server) -> None:
    x = zoo.inputs["resnet18_npu"]

    def one(_: int) -> str:
        client = triton_grpc.InferenceServerClient(server.grpc)
        inp = triton_grpc.InferInput("INPUT0", list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        try:
            client.infer("resnet18_npu", [inp])
            return "OK"
        except InferenceServerException as exc:
            return exc.status()

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        codes = list(pool.map(one, range(12)))
    assert set(codes) <= {"OK", "StatusCode.UNAVAILABLE"}, codes
    assert "OK" in codes and "StatusCode.UNAVAILABLE" in codes, codes


def test_slow_client_gets_408_and_others_are_served(zoo, server) -> None:
    """A client that sends half a body and stalls is cut off (2 s in this server's config)
    while other requests keep being answered."""
    host, port = server.http.split(":")
    slow = socket.create_connection((host, int(port)))
    slow.sendall(
        b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 5000\r\n\r\n" + b'{"inputs": ['
    )
    start = time.monotonic()
    for _ in range(5):
        _still_serving(zoo, server)
    slow.settimeout(10)
    # The reply may arrive in several segments (headers, then body): parse it as HTTP and read
    # the body by its Content-Length rather than trusting one recv() to hold all of it.
    reply = http.client.HTTPResponse(slow)
    reply.begin()
    body = reply.read().decode(errors="replace")
    slow.close()
    assert reply.status == 408, (reply.status, body)
    assert json.loads(body)["error"] == "request body not received within 2 s", body
    assert time.monotonic() - start < 10


def test_client_disconnect_mid_request_is_cancelled(zoo, server) -> None:
    """A client that goes away while its request waits is counted as cancelled; the requests
    ahead of it are answered."""
    x = zoo.inputs["resnet18"]
    body = _json(
        [
            {
                "name": "INPUT0",
                "shape": list(x.shape),
                "datatype": "FP32",
                "data": x.reshape(-1).tolist(),
            }
        ],
        id="gone",
    )
    ahead = _json(
        [{"name": "INPUT0", "shape": list(x.shape), "datatype": "FP32", "data": _flat(x)}]
    )
    host, port = server.http.split(":")
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        busy = [pool.submit(_post, server, "/v2/models/resnet18/infer", ahead) for _ in range(8)]
        time.sleep(0.02)
        s = socket.create_connection((host, int(port)))
        s.sendall(
            b"POST /v2/models/resnet18/infer HTTP/1.1\r\nHost: x\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        s.close()  # gone before its turn (8 requests ahead of it)
        assert [f.result()[0] for f in busy] == [200] * 8
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        rows = [r for r in server.access_records() if r.get("request_id") == "gone"]
        if rows:
            break
        time.sleep(0.1)
    assert rows and rows[-1]["outcome"] == "cancelled", rows
    _still_serving(zoo, server)
