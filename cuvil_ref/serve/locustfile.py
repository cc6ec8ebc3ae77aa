"""Locust load for ``cuvil serve``: closed-loop users posting one inference after another.

Configured by environment variables (so the same file serves the CI load test and the
benchmark script): ``CUVIL_LOAD_MODEL`` (default ``mlp``), ``CUVIL_LOAD_INPUT`` (input name,
default ``INPUT0``), ``CUVIL_LOAD_SHAPE`` (default ``1,784``), ``CUVIL_LOAD_BINARY`` (``1``:
Triton's binary tensor extension, the default; ``0``: JSON), ``CUVIL_LOAD_RATE`` (requests per
second per user, paced with locust's ``constant_throughput``; ``0``, the default: closed loop,
the next request as soon as the previous one is answered). Each user sends a fixed random
tensor with the binary extension and checks the response status; anything but 200 is a failure.

    locust -f cuvil_ref/serve/locustfile.py --headless -u 8 -r 8 -t 60s \
        --host http://127.0.0.1:8000 --csv out/load
"""

from __future__ import annotations

import json
import os

import numpy as np
from locust import FastHttpUser, constant, constant_throughput, task

MODEL = os.environ.get("CUVIL_LOAD_MODEL", "mlp")
INPUT = os.environ.get("CUVIL_LOAD_INPUT", "INPUT0")
SHAPE = [int(s) for s in os.environ.get("CUVIL_LOAD_SHAPE", "1,784").split(",")]
BINARY = os.environ.get("CUVIL_LOAD_BINARY", "1") == "1"
RATE = float(os.environ.get("CUVIL_LOAD_RATE", "0"))

_x = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
if BINARY:
    _header = json.dumps(
        {
            "inputs": [
                {
                    "name": INPUT,
                    "shape": SHAPE,
                    "datatype": "FP32",
                    "parameters": {"binary_data_size": _x.nbytes},
                }
            ],
            "parameters": {"binary_data_output": True},
        }
    ).encode()
    BODY = _header + _x.tobytes()
    HEADERS = {
        "Inference-Header-Content-Length": str(len(_header)),
        "Content-Type": "application/octet-stream",
    }
else:
    BODY = json.dumps(
        {
            "inputs": [
                {"name": INPUT, "shape": SHAPE, "datatype": "FP32", "data": _x.ravel().tolist()}
            ]
        }
    ).encode()
    HEADERS = {"Content-Type": "application/json"}


class InferUser(FastHttpUser):
    """One client: next request as soon as the previous one is answered, or paced at RATE."""

    wait_time = constant_throughput(RATE) if RATE > 0 else constant(0)

    @task
    def infer(self) -> None:
        with self.client.post(
            f"/v2/models/{MODEL}/infer",
            data=BODY,
            headers=HEADERS,
            name=f"infer {MODEL}",
            catch_response=True,
        ) as resp:
            if resp.status_code != 200:
                resp.failure(f"status {resp.status_code}: {resp.text[:200]}")
            else:
                resp.success()
