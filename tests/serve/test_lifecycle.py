"""Start-up errors, graceful drain on SIGTERM, the JSON access log and OpenTelemetry spans."""

from __future__ import annotations

import concurrent.futures
import json
import signal
import subprocess
import sys
import time
from concurrent import futures
from pathlib import Path

import grpc
import numpy as np
import tritonclient.http as triton_http

from cuvil_ref.serve.process import ServerProcess
from cuvil_ref.serve.repository import add_model
from tests.serve.conftest import NAMES
from tests.serve.prometheus_server import free_port


def test_bad_config_stops_startup_with_one_line(zoo, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    add_model(repo, "mlp", zoo.compiled["mlp"])
    (repo / "mlp" / "config.json").write_text(json.dumps({"instance_count": "two"}))
    proc = subprocess.run(
        [sys.executable, "-m", "cuvil_ref.cli", "serve", str(repo), "--http-port", "0",
         "--grpc-port", "0", "--metrics-port", "0"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "mlp/config.json: field 'instance_count': must be an integer >= 1" in proc.stderr


def test_static_model_with_batching_is_refused(zoo, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    add_model(repo, "r18", zoo.compiled["resnet18"], max_batch_size=4)
    proc = subprocess.run(
        [sys.executable, "-m", "cuvil_ref.cli", "serve", str(repo), "--http-port", "0",
         "--grpc-port", "0", "--metrics-port", "0"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "field 'max_batch_size'" in proc.stderr and "dynamic_batch=True" in proc.stderr


def test_add_model_command(zoo, tmp_path: Path) -> None:
    art = tmp_path / "mlp.cuvilir"
    zoo.compiled["mlp"].save(str(art))
    proc = subprocess.run(
        [sys.executable, "-m", "cuvil_ref.cli", "add-model", str(tmp_path / "repo"), "mlp",
         str(art), "--max-batch-size", "8"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "repo" / "mlp" / "1" / "model.cuvilir").exists()
    config = json.loads((tmp_path / "repo" / "mlp" / "config.json").read_text())
    assert config["max_batch_size"] == 8


def test_sigterm_drains_in_flight_requests(zoo, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    add_model(
        repo, "npu", zoo.compiled["resnet18_npu"], dynamic_batching={"max_queue_size": 16}, **NAMES
    )
    x = zoo.inputs["resnet18_npu"]
    want = zoo.compiled["resnet18_npu"](x)
    s = ServerProcess(repo, "--drain-timeout", "30").start()

    def one(_: int):
        c = triton_http.InferenceServerClient(s.http, network_timeout=60)
        inp = triton_http.InferInput("INPUT0", list(x.shape), "FP32")
        inp.set_data_from_numpy(x, binary_data=True)
        return c.infer("npu", [inp]).as_numpy("OUTPUT0")

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        pending = [pool.submit(one, i) for i in range(6)]
        time.sleep(0.3)  # the requests are in: the first runs, the others queue
        s.proc.send_signal(signal.SIGTERM)
        results = [f.result() for f in pending]
    assert all(np.array_equal(r, want) for r in results)
    assert s.proc.wait(60) == 0
    s.stop()
    outcomes = [r["outcome"] for r in s.access_records()]
    assert outcomes.count("success") == 6


class _Collector:
    """An OTLP/gRPC trace collector on loopback that keeps what it receives."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as ts
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc as tsg

        self.spans: list = []
        outer = self

        class Service(tsg.TraceServiceServicer):
            def Export(self, request, context):  # noqa: N802
                for rs in request.resource_spans:
                    for ss in rs.scope_spans:
                        outer.spans.extend(ss.spans)
                return ts.ExportTraceServiceResponse()

        self.port = free_port()
        self.server = grpc.server(futures.ThreadPoolExecutor(2))
        tsg.add_TraceServiceServicer_to_server(Service(), self.server)
        self.server.add_insecure_port(f"127.0.0.1:{self.port}")
        self.server.start()


def test_spans_and_access_log_carry_the_trace_id(zoo, tmp_path: Path) -> None:
    collector = _Collector()
    repo = tmp_path / "repo"
    add_model(repo, "mlp", zoo.compiled["mlp"], max_batch_size=8, **NAMES)
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    with ServerProcess(repo, "--otlp-endpoint", f"http://127.0.0.1:{collector.port}") as s:
        client = triton_http.InferenceServerClient(s.http)
        inp = triton_http.InferInput("INPUT0", [1, 784], "FP32")
        inp.set_data_from_numpy(zoo.inputs["mlp"], binary_data=True)
        client.infer(
            "mlp",
            [inp],
            request_id="traced",
            headers={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"},
        )
    collector.server.stop(0)
    (record,) = [r for r in s.access_records() if r["request_id"] == "traced"]
    assert record["trace_id"] == trace_id and record["outcome"] == "success"
    assert {"latency_ms", "queue_ms", "compute_ms", "batch_size"} <= set(record)
    names = {sp.name for sp in collector.spans if sp.trace_id.hex() == trace_id}
    assert names == {"infer mlp", "queue", "batch", "execute"}, names


def test_no_otlp_export_by_default(monkeypatch) -> None:
    from cuvil_ref.serve.telemetry import Telemetry

    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert not Telemetry(access_log=None).exporting
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
    t = Telemetry(access_log=None)
    assert t.exporting
    t.shutdown()
