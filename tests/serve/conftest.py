"""Fixtures for the server tests: a model repository built from compiled zoo models, and a
``cuvil serve`` child process on loopback that every protocol test talks to.

The server runs in its own process (``cuvil_ref.serve.process``), so NVIDIA's unmodified
``tritonclient`` (HTTP and gRPC) runs here in the test process, exactly as a user's client would.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("uvicorn", reason="needs the serve extra: pip install 'cuvil-ref[serve]'")
pytest.importorskip(
    "tritonclient", reason="needs tritonclient: pip install 'cuvil-ref[serve-test]'"
)

from cuvil_ref.serve.process import ServerProcess  # noqa: E402
from cuvil_ref.serve.repository import add_model  # noqa: E402

R18_SHAPE = (1, 3, 32, 32)
# Protocol names set in the config (the IR's value names follow the frontend's naming).
NAMES = {
    "inputs": [{"name": "INPUT0"}],
    "outputs": [{"name": "OUTPUT0"}],
}  # ResNet-18 at a small resolution keeps CI fast


class SameBlas:
    """A compiled model called with one BLAS thread, as ``cuvil serve`` runs it by default
    (``--blas-threads 1``): OpenBLAS splits a GEMM differently by thread count, so float
    results are bit-identical only under the same setting."""

    def __init__(self, cm: Any) -> None:
        self.cm = cm

    def __call__(self, *args: Any) -> Any:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            return self.cm(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cm, name)


@dataclass
class Zoo:
    """Compiled models (the oracles) and the repository that serves them."""

    repo: Path
    compiled: dict[str, Any]
    inputs: dict[str, np.ndarray]


def _build_zoo(root: Path) -> Zoo:
    import torch

    import cuvil_ref as cuvil
    from cuvil_ref.zoo import get_model

    gen = torch.Generator().manual_seed(0)
    repo = root / "repo"
    compiled: dict[str, Any] = {}
    inputs: dict[str, np.ndarray] = {}

    mlp, shape = get_model("mlp")
    x = torch.randn(*shape, generator=gen)
    compiled["mlp"] = cuvil.torch.compile(mlp, example_inputs=(x,), dynamic_batch=True)
    add_model(
        repo,
        "mlp",
        compiled["mlp"],
        max_batch_size=8,
        dynamic_batching={"max_queue_delay_us": 1000, "max_queue_size": 64},
        **NAMES,
    )
    inputs["mlp"] = x.numpy()
    from tests.serve.test_pipeline import PIPELINE

    add_model(repo, "mlp_top3", compiled["mlp"], max_batch_size=8, **PIPELINE)

    r18, _ = get_model("resnet18")
    x = torch.randn(*R18_SHAPE, generator=gen)
    compiled["resnet18"] = cuvil.torch.compile(r18, example_inputs=(x,))
    add_model(repo, "resnet18", compiled["resnet18"], max_batch_size=0, **NAMES)
    inputs["resnet18"] = x.numpy()

    calibration = [torch.randn(*R18_SHAPE, generator=gen) for _ in range(2)]
    compiled["resnet18_npu"] = cuvil.torch.compile(
        r18,
        target="npu-v3",
        quantize="int8",
        example_inputs=(x,),
        calibration_data=calibration,
    )
    # A small queue, so the backpressure tests can fill it with a handful of requests.
    add_model(
        repo,
        "resnet18_npu",
        compiled["resnet18_npu"],
        max_batch_size=0,
        dynamic_batching={"max_queue_size": 2},
        **NAMES,
    )
    inputs["resnet18_npu"] = x.numpy()
    return Zoo(repo, {k: SameBlas(v) for k, v in compiled.items()}, inputs)


@pytest.fixture(scope="session")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> Zoo:
    return _build_zoo(tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="session")
def server(zoo: Zoo) -> Iterator[ServerProcess]:
    with ServerProcess(zoo.repo, "--drain-timeout", "10", "--request-body-timeout", "2") as s:
        yield s
