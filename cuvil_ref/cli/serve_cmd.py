"""``cuvil serve REPO`` and ``cuvil add-model REPO NAME ARTIFACT``: the inference server.

``serve`` needs the ``serve`` extra (``pip install 'cuvil-ref[serve]'``); without it the command
says so instead of failing on an import.
"""

from __future__ import annotations

import json
from typing import Any

import click

from cuvil_ref.errors import CuvilError


def _require_extra() -> None:
    import importlib.util

    missing = [
        m
        for m in ("uvicorn", "starlette", "grpc", "prometheus_client", "opentelemetry.sdk")
        if importlib.util.find_spec(m.split(".")[0]) is None
    ]
    if missing:
        raise CuvilError(
            f"cuvil serve needs {', '.join(missing)}: install the serve extra with "
            "pip install 'cuvil-ref[serve]'"
        )


@click.command("serve")
@click.argument("repo", type=click.Path(file_okay=False))
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--http-port", default=8000, show_default=True, help="HTTP/REST port (0: any).")
@click.option("--grpc-port", default=8001, show_default=True, help="gRPC port (0: any).")
@click.option("--metrics-port", default=8002, show_default=True, help="Prometheus /metrics port.")
@click.option(
    "--drain-timeout",
    default=30.0,
    show_default=True,
    help="Seconds to finish in-flight requests on SIGTERM.",
)
@click.option(
    "--exit-on-error/--no-exit-on-error",
    default=True,
    show_default=True,
    help="Stop when a model fails to load (else serve the others; it shows as unavailable).",
)
@click.option(
    "--request-body-timeout",
    default=30.0,
    show_default=True,
    help="Seconds a client may take to send a request body (slower ones get 408).",
)
@click.option(
    "--blas-threads",
    default=1,
    show_default=True,
    help="BLAS threads in the server process (0: as configured); add instances to use cores.",
)
@click.option(
    "--trusted-key",
    "trusted_keys",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Ed25519 public key (PEM); repeatable. With keys, every version must be signed by one.",
)
@click.option(
    "--poll-interval",
    default=2.0,
    show_default=True,
    help="Seconds between repository polls for new versions (hot reload); 0 turns it off.",
)
@click.option("--otlp-endpoint", default=None, help="Export OpenTelemetry spans over OTLP/gRPC.")
@click.option(
    "--access-log",
    default="-",
    show_default=True,
    help="JSON access log: '-' for stderr, a file path, or '' for none.",
)
def serve_command(
    repo: str,
    host: str,
    http_port: int,
    grpc_port: int,
    metrics_port: int,
    drain_timeout: float,
    exit_on_error: bool,
    request_body_timeout: float,
    blas_threads: int,
    trusted_keys: tuple[str, ...],
    poll_interval: float,
    otlp_endpoint: str | None,
    access_log: str,
) -> None:
    """Serve the model repository REPO over KServe v2 / Triton HTTP and gRPC."""
    _require_extra()
    from cuvil_ref.serve.server import ServeOptions, serve

    serve(
        repo,
        ServeOptions(
            host=host,
            http_port=http_port,
            grpc_port=grpc_port,
            metrics_port=metrics_port,
            drain_timeout=drain_timeout,
            exit_on_error=exit_on_error,
            body_timeout=request_body_timeout,
            blas_threads=blas_threads,
            trusted_keys=trusted_keys,
            poll_interval=poll_interval,
            otlp_endpoint=otlp_endpoint,
            access_log=access_log or None,
        ),
    )


@click.command("add-model")
@click.argument("repo", type=click.Path(file_okay=False))
@click.argument("name")
@click.argument("artifact", type=click.Path(exists=True, dir_okay=False))
@click.option("--version", "version", type=int, default=None, help="Version (default: next).")
@click.option("--max-batch-size", type=int, default=None, help="Enable batching up to N rows.")
@click.option("--instance-count", type=int, default=None, help="Execution contexts.")
@click.option("--config", "config_json", default=None, help="Config as a JSON object string.")
@click.option(
    "--golden-input",
    "golden_inputs",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="A .npy input (one per model input, in order): records golden.json, the expected "
    "output computed by the reference interpreter.",
)
def add_model_command(
    repo: str,
    name: str,
    artifact: str,
    version: int | None,
    max_batch_size: int | None,
    instance_count: int | None,
    config_json: str | None,
    golden_inputs: tuple[str, ...],
) -> None:
    """Copy the verified ARTIFACT (.cuvilir) into REPO as model NAME (next version)."""
    from cuvil_ref.serve.repository import add_model

    fields: dict[str, Any] = {}
    if config_json:
        try:
            fields = json.loads(config_json)
        except ValueError as exc:
            raise CuvilError(f"--config is not JSON: {exc}") from None
        if not isinstance(fields, dict):
            raise CuvilError("--config must be a JSON object")
    if max_batch_size is not None:
        fields["max_batch_size"] = max_batch_size
    if instance_count is not None:
        fields["instance_count"] = instance_count
    golden = None
    if golden_inputs:
        from cuvil_ref.cli.arrays import read_arrays

        golden = tuple(a for p in golden_inputs for a in read_arrays(p))
    path = add_model(repo, name, artifact, version=version, config=fields or None, golden=golden)
    click.echo(f"added {path}" + (" (with golden.json)" if golden else ""))
