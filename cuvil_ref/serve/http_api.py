"""The Open Inference Protocol over HTTP/REST, as a Starlette ASGI app (served by uvicorn).

Routes (KServe v2 / Triton): ``GET /v2/health/live``, ``GET /v2/health/ready``, ``GET /v2``
(server metadata), ``GET /v2/models/{m}[/versions/{v}]`` (model metadata),
``GET .../ready``, ``GET .../config``, ``POST .../infer`` and ``POST /v2/repository/index``.
Rollouts (``rollout/``): ``GET /v2/models/{m}/rollout`` (state, steps, counters, history),
``POST .../rollout/promote`` (``{"full": true}`` to go straight to 100%) and
``POST .../rollout/rollback`` -- what ``cuvil rollout status|promote|rollback`` calls.
``infer`` takes JSON tensors and Triton's binary tensor data extension (request and response,
``Inference-Header-Content-Length``), gzip/deflate request bodies, and the ``timeout``
parameter (microseconds). Errors are ``{"error": "..."}`` with the protocol's status; a client
that disconnects mid-request has its request cancelled.
"""

from __future__ import annotations

import asyncio
import json
import zlib
from typing import Any

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from cuvil_ref.serve.arrival import arrival as arrived
from cuvil_ref.serve.errors import InvalidRequest, RequestCancelled, ServeError
from cuvil_ref.serve.manager import ModelManager, Served
from cuvil_ref.serve.tensors import (
    check_shape,
    from_bytes,
    from_json_data,
    split_binary,
    to_bytes,
    to_json_data,
)

HEADER_LENGTH = "Inference-Header-Content-Length"
EXTENSIONS = ["binary_tensor_data", "model_repository", "parameters"]


class _Slow(ServeError):
    http_status = 408
    grpc_code = "DEADLINE_EXCEEDED"


class _TooLarge(ServeError):
    http_status = 413
    grpc_code = "RESOURCE_EXHAUSTED"


def error_response(exc: ServeError) -> JSONResponse:
    headers = {}
    if exc.retry_after is not None:
        headers["Retry-After"] = str(int(exc.retry_after))
    return JSONResponse({"error": str(exc)}, status_code=exc.http_status, headers=headers)


def model_metadata(served: Served, manager: ModelManager) -> dict[str, Any]:
    loaded = served.loaded
    state = manager.models[loaded.name]
    inputs, outputs = loaded.signature.metadata()
    return {
        "name": loaded.name,
        "versions": [str(v) for v in sorted(state.versions)],
        "platform": f"cuvil_{loaded.target}",
        "inputs": inputs,
        "outputs": outputs,
    }


def rollout_summary(manager: ModelManager, name: str) -> dict[str, Any]:
    """The rollout part of a model's HTTP metadata: who serves, who ramps, who was refused."""
    state = manager.models[name]
    r = state.rollout
    if r is None:
        return {}
    c = r.candidate
    return {
        "stable": r.stable,
        "candidate": None
        if c is None
        else {"version": c.version, "state": c.state, "percent": r.percent},
        "refused": {str(v): why for v, why in sorted(r.refused.items())},
    }


def build_app(
    manager: ModelManager,
    *,
    body_timeout: float = 30.0,
    max_body_bytes: int = 256 << 20,
    rollouts: Any = None,
) -> Starlette:
    """The ASGI app for ``manager``."""
    from cuvil_ref import __version__

    async def live(request: Request) -> Response:
        return JSONResponse({"live": True})

    async def ready(request: Request) -> Response:
        ok = manager.ready
        return JSONResponse({"ready": ok}, status_code=200 if ok else 503)

    async def server_metadata(request: Request) -> Response:
        return JSONResponse({"name": "cuvil", "version": __version__, "extensions": EXTENSIONS})

    def served_of(request: Request) -> Served:
        p = request.path_params
        return manager.resolve(p["model"], p.get("version"))

    async def metadata(request: Request) -> Response:
        try:
            served = served_of(request)
            doc = model_metadata(served, manager)
            doc["rollout"] = rollout_summary(manager, served.loaded.name)
            return JSONResponse(doc)
        except ServeError as exc:
            return error_response(exc)

    async def rollout(request: Request) -> Response:
        name, action = request.path_params["model"], request.path_params.get("action")
        if rollouts is None:
            return error_response(InvalidRequest("this server runs without rollouts"))
        try:
            if action is None:
                return JSONResponse(rollouts.status(name))
            if action == "promote":
                body = await request.body()
                try:
                    opts = json.loads(body) if body.strip() else {}
                except ValueError:
                    msg = 'promote takes a JSON object such as {"full": true}'
                    raise InvalidRequest(msg) from None
                full = bool(opts.get("full")) if isinstance(opts, dict) else False
                return JSONResponse(await rollouts.promote(name, full=full))
            if action == "rollback":
                return JSONResponse(await rollouts.rollback(name))
            raise InvalidRequest(f"unknown rollout action {action!r}: use promote or rollback")
        except ServeError as exc:
            return error_response(exc)

    async def model_ready(request: Request) -> Response:
        try:
            served_of(request)
        except ServeError as exc:
            return error_response(exc) if exc.http_status == 404 else Response(status_code=503)
        return Response(status_code=200 if not manager.draining else 503)

    async def config(request: Request) -> Response:
        try:
            return JSONResponse(served_of(request).loaded.config.to_json())
        except ServeError as exc:
            return error_response(exc)

    async def index(request: Request) -> Response:
        rows = []
        for name, state in sorted(manager.models.items()):
            refused = state.rollout.refused if state.rollout else {}
            for v in sorted(set(state.versions) | set(state.failed) | set(refused)):
                row = {"name": name, "version": str(v)}
                if v in state.versions:
                    row["state"] = "READY"
                else:
                    row.update(state="UNAVAILABLE", reason=refused.get(v) or state.failed[v])
                rows.append(row)
        return JSONResponse(rows)

    async def infer(request: Request) -> Response:
        arrival = arrived(request.scope)
        p = request.path_params
        try:
            body = await _read_body(request, body_timeout, max_body_bytes)
            header, binary = _parse_body(request, body)
        except ServeError as exc:
            outcome = "cancelled" if isinstance(exc, RequestCancelled) else "invalid"
            manager.metrics.requests.labels(p["model"], p.get("version", ""), "http", outcome).inc()
            return error_response(exc)
        params = header.get("parameters") or {}
        timeout_s = _timeout(params)
        task = asyncio.ensure_future(
            manager.infer(
                p["model"],
                p.get("version"),
                lambda served: _decode_inputs(header, binary, served),
                protocol="http",
                request_id=str(header.get("id", "")),
                timeout_s=timeout_s,
                headers=request.headers,
            )
        )
        gone = asyncio.ensure_future(_disconnected(request))
        try:
            await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not task.done():
                task.cancel()
            gone.cancel()
        try:
            result = task.result()
        except asyncio.CancelledError:
            return error_response(RequestCancelled("client disconnected"))
        except ServeError as exc:
            return error_response(exc)
        response = _encode_response(header, result)
        manager.record_latency(result, arrival)
        return response

    routes = [
        Route("/v2/health/live", live),
        Route("/v2/health/ready", ready),
        Route("/v2", server_metadata),
        Route("/v2/repository/index", index, methods=["POST", "GET"]),
        Route("/v2/models/{model}", metadata),
        Route("/v2/models/{model}/versions/{version}", metadata),
        Route("/v2/models/{model}/ready", model_ready),
        Route("/v2/models/{model}/versions/{version}/ready", model_ready),
        Route("/v2/models/{model}/config", config),
        Route("/v2/models/{model}/versions/{version}/config", config),
        Route("/v2/models/{model}/rollout", rollout),
        Route("/v2/models/{model}/rollout/{action}", rollout, methods=["POST"]),
        Route("/v2/models/{model}/infer", infer, methods=["POST"]),
        Route("/v2/models/{model}/versions/{version}/infer", infer, methods=["POST"]),
    ]
    return Starlette(routes=routes)


async def _read_body(request: Request, timeout: float, limit: int) -> bytes:
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise _TooLarge(f"request body of {length} bytes exceeds the limit of {limit}")

    async def read() -> bytes:
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _TooLarge(f"request body exceeds the limit of {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    try:
        return await asyncio.wait_for(read(), timeout)
    except ClientDisconnect:
        raise RequestCancelled("client disconnected while sending the request") from None
    except asyncio.TimeoutError:
        raise _Slow(f"request body not received within {timeout:g} s") from None


def _parse_body(request: Request, body: bytes) -> tuple[dict[str, Any], memoryview]:
    encoding = request.headers.get("content-encoding", "").lower()
    try:
        if encoding == "gzip":
            body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        elif encoding not in ("", "identity"):
            raise InvalidRequest(f"Content-Encoding {encoding!r}: use gzip, deflate or none")
    except zlib.error as exc:
        raise InvalidRequest(f"request body is not valid {encoding}: {exc}") from None
    header_length = request.headers.get(HEADER_LENGTH)
    if header_length is not None:
        text, binary = split_binary(body, header_length)
    else:
        text, binary = body, memoryview(b"")
    try:
        header = json.loads(text)
    except ValueError as exc:
        raise InvalidRequest(f"request body is not valid JSON: {exc}") from None
    if not isinstance(header, dict) or not isinstance(header.get("inputs"), list):
        raise InvalidRequest('request must be a JSON object with an "inputs" list')
    return header, binary


def _timeout(params: Any) -> float | None:
    t = params.get("timeout") if isinstance(params, dict) else None
    if t is None:
        return None
    if isinstance(t, bool) or not isinstance(t, (int, float)) or t < 0:
        raise InvalidRequest(f"parameter 'timeout' must be microseconds >= 0, got {t!r}")
    return t * 1e-6 if t else None


def _decode_inputs(header: dict[str, Any], binary: memoryview, served: Served) -> dict[str, Any]:
    requested = header.get("outputs")
    if requested is not None:
        if not isinstance(requested, list):
            raise InvalidRequest('"outputs" must be a list of {"name": ...} objects')
        known = [t.name for t in served.loaded.signature.outputs]
        for spec in requested:
            name = spec.get("name") if isinstance(spec, dict) else None
            if name not in known:
                raise InvalidRequest(f"unknown output {name!r}; the model's outputs are {known}")
    arrays: dict[str, Any] = {}
    offset = 0
    for i, spec in enumerate(header["inputs"]):
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise InvalidRequest(f"inputs[{i}] must be an object with a 'name'")
        name = spec["name"]
        if name in arrays:
            raise InvalidRequest(f"input '{name}' is given twice")
        shape = check_shape(spec.get("shape"), name)
        datatype = spec.get("datatype")
        params = spec.get("parameters") or {}
        size = params.get("binary_data_size") if isinstance(params, dict) else None
        if size is not None:
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise InvalidRequest(f"input '{name}': binary_data_size must be an integer >= 0")
            if offset + size > len(binary):
                raise InvalidRequest(
                    f"input '{name}': binary_data_size {size} at offset {offset} runs past the "
                    f"{len(binary)} bytes of binary data (truncated payload?)"
                )
            arrays[name] = from_bytes(binary[offset : offset + size], datatype, shape, name)
            offset += size
        elif "data" in spec:
            arrays[name] = from_json_data(spec["data"], datatype, shape, name)
        else:
            raise InvalidRequest(f"input '{name}' has neither 'data' nor binary_data_size")
    if offset != len(binary):
        raise InvalidRequest(
            f"{len(binary) - offset} bytes of binary data are not claimed by any input"
        )
    return arrays


def _encode_response(header: dict[str, Any], result: Any) -> Response:
    params = header.get("parameters") or {}
    binary_default = bool(params.get("binary_data_output", False))
    requested = header.get("outputs")
    outputs = result.outputs
    if requested is None:
        wanted = [(n, binary_default) for n in outputs]
    else:
        wanted = []
        for spec in requested:  # names checked by _decode_inputs
            name = spec["name"]
            p = spec.get("parameters") or {}
            wanted.append((name, bool(p.get("binary_data", binary_default))))
    loaded = result.served.loaded
    types = {t.name: t.datatype for t in loaded.signature.outputs}
    body_outputs, blobs = [], []
    for name, binary in wanted:
        arr = outputs[name]
        entry: dict[str, Any] = {"name": name, "datatype": types[name], "shape": list(arr.shape)}
        if binary:
            blob = to_bytes(arr)
            entry["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            entry["data"] = to_json_data(arr)
        body_outputs.append(entry)
    doc: dict[str, Any] = {
        "model_name": loaded.name,
        "model_version": str(loaded.version),
        "outputs": body_outputs,
    }
    if result.request_id:
        doc["id"] = result.request_id
    text = json.dumps(doc, separators=(",", ":")).encode()
    if not blobs:
        return Response(text, media_type="application/json")
    return Response(
        b"".join([text, *blobs]),
        media_type="application/octet-stream",
        headers={HEADER_LENGTH: str(len(text))},
    )


async def _disconnected(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
