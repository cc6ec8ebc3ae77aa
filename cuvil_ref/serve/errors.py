"""The errors of ``cuvil serve``, each mapped to its protocol status.

Every error a request can meet is a :class:`ServeError` carrying the HTTP status and the gRPC
code the Open Inference Protocol gives it; the front ends turn it into ``{"error": message}``
(HTTP) or an aborted call with that code and message (gRPC). A message says what was received
and what the model accepts. Configuration problems are :class:`ConfigError`, naming the file, the
field and what is accepted.
"""

from __future__ import annotations

from cuvil_ref.errors import CuvilError


class ServeError(CuvilError):
    """A request-level error with its HTTP status and gRPC status code name."""

    http_status = 500
    grpc_code = "INTERNAL"

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class InvalidRequest(ServeError):
    """Malformed request, or a tensor whose name, shape or dtype the model does not accept."""

    http_status = 400
    grpc_code = "INVALID_ARGUMENT"


class ModelNotFound(ServeError):
    """Unknown model or version."""

    http_status = 404
    grpc_code = "NOT_FOUND"


class ModelNotReady(ServeError):
    """The model exists but is not ready (loading, failed to load, draining)."""

    http_status = 503
    grpc_code = "UNAVAILABLE"


class QueueFull(ServeError):
    """Backpressure: the version's queue is at its bound; retry after ``retry_after`` seconds."""

    http_status = 503
    grpc_code = "UNAVAILABLE"


class DeadlineExceeded(ServeError):
    """The request's deadline passed before its result was ready."""

    http_status = 504
    grpc_code = "DEADLINE_EXCEEDED"


class RequestCancelled(ServeError):
    """The client went away; nothing is sent back."""

    http_status = 499
    grpc_code = "CANCELLED"


class ExecutionError(ServeError):
    """The compiled model failed on a batch (a pack error); the others keep being served."""

    http_status = 500
    grpc_code = "INTERNAL"


class ConfigError(CuvilError):
    """A model repository or config.json/config.toml problem: names file, field, what works."""

    def __init__(self, path: object, field: str | None, message: str) -> None:
        where = f"{path}" + (f": field '{field}'" if field else "")
        super().__init__(f"{where}: {message}")
        self.path = path
        self.field = field
