"""``cuvil serve``: compiled models behind the Open Inference Protocol (KServe v2 / Triton).

Install with ``pip install cuvil-ref[serve]``. A model repository holds
``<model>/config.json`` and ``<model>/<version>/model.cuvilir``; ``add_model`` writes one from a
compiled model, ``serve`` (or ``cuvil serve REPO``) serves it over HTTP (Starlette on uvicorn)
and gRPC (grpc.aio), with a dynamic batcher per version, execution off the event loop, bounded
queues, deadlines, graceful drain, Prometheus metrics, OpenTelemetry spans and a JSON access
log. See ``docs/serving.md``.
"""

from __future__ import annotations

from typing import Any

from cuvil_ref.serve.config import ModelConfig, parse_config, read_config
from cuvil_ref.serve.errors import ConfigError, ServeError
from cuvil_ref.serve.repository import add_model, scan_repository

__all__ = [
    "ConfigError",
    "InferenceServer",
    "ModelConfig",
    "ServeError",
    "ServeOptions",
    "add_model",
    "parse_config",
    "read_config",
    "scan_repository",
    "serve",
]


def __getattr__(name: str) -> Any:
    # The server pulls in uvicorn and grpc; import them only when a server is wanted.
    if name in ("InferenceServer", "ServeOptions", "serve"):
        from cuvil_ref.serve import server

        return getattr(server, name)
    raise AttributeError(f"module 'cuvil_ref.serve' has no attribute {name!r}")
