"""Fixtures for the rollout tests: signing keys, model versions, a sustained load on loopback.

The load is NVIDIA's ``tritonclient`` (HTTP) in threads of the test process, each a closed loop
of batch-1 requests without a version (so the server's traffic split decides), recording which
version answered and every failure. It is bounded in time and in count.
"""

from __future__ import annotations

import copy
import json
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("uvicorn", reason="needs the serve extra: pip install 'cuvil-ref[serve]'")
pytest.importorskip(
    "tritonclient", reason="needs tritonclient: pip install 'cuvil-ref[serve-test]'"
)
pytest.importorskip("cryptography", reason="needs the sign extra: pip install 'cuvil-ref[sign]'")

NAMES = {"inputs": [{"name": "INPUT0"}], "outputs": [{"name": "OUTPUT0"}]}


@dataclass
class Keys:
    private: Path
    public: Path
    rogue_private: Path  # a valid key pair the server does not trust
    rogue_public: Path


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    from cuvil_ref.artifacts import generate_keypair

    d = tmp_path_factory.mktemp("keys")
    generate_keypair(d / "k.pem", d / "k.pub")
    generate_keypair(d / "rogue.pem", d / "rogue.pub")
    return Keys(d / "k.pem", d / "k.pub", d / "rogue.pem", d / "rogue.pub")


def mlp(scale: float = 1.0) -> Any:
    """The zoo's MLP, its first layer's weights scaled (a different, valid model per scale)."""
    import torch

    from cuvil_ref.zoo import get_model

    model, _ = get_model("mlp")
    model = copy.deepcopy(model)
    with torch.no_grad():
        model[0].weight.mul_(scale)
    return model


def compiled_artifact(
    path: Path, scale: float = 1.0, *, target: Any = "ref", key: Path | None = None
) -> Path:
    """Compile ``mlp(scale)`` for ``target`` into ``path`` (signed with ``key`` when given)."""
    import torch

    import cuvil_ref as cuvil
    from cuvil_ref.artifacts import sign_artifact

    x = torch.zeros(1, 784)
    cm = cuvil.torch.compile(mlp(scale), target=target, example_inputs=(x,), dynamic_batch=True)
    cm.save(str(path))
    if key is not None:
        sign_artifact(path, key)
    return path


@dataclass
class Load:
    """Closed-loop clients on ``http`` until ``stop()`` (or the bounds) -- what they saw."""

    http: str
    model: str
    clients: int = 3
    max_seconds: float = 300.0
    max_requests: int = 500_000
    answers: list[tuple[float, str]] = field(default_factory=list)  # (time, version)
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Load:
        for i in range(self.clients):
            t = threading.Thread(target=self._client, args=(i,), daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def _client(self, seed: int) -> None:
        import tritonclient.http as triton_http

        client = triton_http.InferenceServerClient(self.http, network_timeout=60)
        x = np.random.default_rng(seed).standard_normal((1, 784)).astype(np.float32)
        inp = triton_http.InferInput("INPUT0", [1, 784], "FP32")
        inp.set_data_from_numpy(x, binary_data=True)
        end = time.monotonic() + self.max_seconds
        while not self._stop.is_set() and time.monotonic() < end:
            if len(self.answers) + len(self.failures) >= self.max_requests:
                break
            try:
                result = client.infer(self.model, [inp])
                self.answers.append((time.time(), result.get_response()["model_version"]))
            except Exception as exc:  # every failure is what the test counts
                self.failures.append(f"{type(exc).__name__}: {exc}")
        client.close()

    def served_by(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for _, v in list(self.answers):
            counts[v] = counts.get(v, 0) + 1
        return counts

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(60)


def rollout_status(http: str, model: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://{http}/v2/models/{model}/rollout", timeout=30) as r:
        return json.loads(r.read())


def wait_for(
    http: str, model: str, done: Callable[[dict[str, Any]], bool], timeout: float = 180.0
) -> dict[str, Any]:
    """Poll the rollout status until ``done(status)``; fail with the last status otherwise."""
    end = time.monotonic() + timeout
    status: dict[str, Any] = {}
    while time.monotonic() < end:
        status = rollout_status(http, model)
        if done(status):
            return status
        time.sleep(0.2)
    raise AssertionError(f"rollout of {model} did not get there in {timeout} s: {status}")


def states(status: dict[str, Any], version: int) -> list[tuple[str, int]]:
    """The (state, percent) transitions of ``version`` in the status history."""
    return [(t["state"], t["percent"]) for t in status["history"] if t["version"] == version]
