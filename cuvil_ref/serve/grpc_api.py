"""The Open Inference Protocol over gRPC: ``inference.GRPCInferenceService`` on ``grpc.aio``.

Inputs come as ``raw_input_contents`` (what Triton's clients send) or typed ``contents``;
outputs always go back as ``raw_output_contents``. The call's deadline and the ``timeout``
parameter (microseconds) bound the request; errors abort the call with the protocol's status
code (``INVALID_ARGUMENT``, ``NOT_FOUND``, ``UNAVAILABLE`` with a ``retry-after`` trailer,
``DEADLINE_EXCEEDED``...), and a cancelled call cancels its request.

The stubs register the protocol's ``inference.*`` messages in protobuf's default pool, as every
implementation of this protocol does, so a process should not import both these stubs and
another copy of them (such as ``tritonclient.grpc``); clients run in their own process.
"""

from __future__ import annotations

import time
from typing import Any

import grpc
import numpy as np

from cuvil_ref.serve.errors import InvalidRequest, ServeError
from cuvil_ref.serve.http_api import EXTENSIONS
from cuvil_ref.serve.manager import ModelManager, Served
from cuvil_ref.serve.proto import grpc_predict_v2_pb2 as pb
from cuvil_ref.serve.proto import grpc_predict_v2_pb2_grpc as pb_grpc
from cuvil_ref.serve.tensors import DATATYPES, check_shape, from_bytes, numpy_of, to_bytes

MAX_MESSAGE = 256 << 20

_CONTENTS = {
    "BOOL": "bool_contents",
    "UINT8": "uint_contents",
    "UINT16": "uint_contents",
    "UINT32": "uint_contents",
    "UINT64": "uint64_contents",
    "INT8": "int_contents",
    "INT16": "int_contents",
    "INT32": "int_contents",
    "INT64": "int64_contents",
    "FP32": "fp32_contents",
    "FP64": "fp64_contents",
}


def _param(p: Any) -> Any:
    which = p.WhichOneof("parameter_choice")
    return getattr(p, which) if which else None


class InferenceService(pb_grpc.GRPCInferenceServiceServicer):
    """The servicer; every RPC delegates to the model manager."""

    def __init__(self, manager: ModelManager) -> None:
        self.manager = manager

    async def _abort(self, context: grpc.aio.ServicerContext, exc: ServeError) -> None:
        trailers = ()
        if exc.retry_after is not None:
            trailers = (("retry-after", str(int(exc.retry_after))),)
        await context.abort(getattr(grpc.StatusCode, exc.grpc_code), str(exc), trailers)

    async def ServerLive(self, request: Any, context: Any) -> Any:  # noqa: N802
        return pb.ServerLiveResponse(live=True)

    async def ServerReady(self, request: Any, context: Any) -> Any:  # noqa: N802
        return pb.ServerReadyResponse(ready=self.manager.ready)

    async def ModelReady(self, request: Any, context: Any) -> Any:  # noqa: N802
        try:
            self.manager.resolve(request.name, request.version or None)
        except ServeError as exc:
            if exc.http_status == 404:
                await self._abort(context, exc)
            return pb.ModelReadyResponse(ready=False)
        return pb.ModelReadyResponse(ready=not self.manager.draining)

    async def ServerMetadata(self, request: Any, context: Any) -> Any:  # noqa: N802
        from cuvil_ref import __version__

        return pb.ServerMetadataResponse(name="cuvil", version=__version__, extensions=EXTENSIONS)

    async def ModelMetadata(self, request: Any, context: Any) -> Any:  # noqa: N802
        from cuvil_ref.serve.http_api import model_metadata

        try:
            served = self.manager.resolve(request.name, request.version or None)
        except ServeError as exc:
            await self._abort(context, exc)
        meta = model_metadata(served, self.manager)
        return pb.ModelMetadataResponse(
            name=meta["name"],
            versions=meta["versions"],
            platform=meta["platform"],
            inputs=[pb.ModelMetadataResponse.TensorMetadata(**t) for t in meta["inputs"]],
            outputs=[pb.ModelMetadataResponse.TensorMetadata(**t) for t in meta["outputs"]],
        )

    async def ModelInfer(self, request: Any, context: Any) -> Any:  # noqa: N802
        arrival = time.monotonic()
        params = {k: _param(v) for k, v in request.parameters.items()}
        timeout_s = None
        t = params.get("timeout")
        if isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0:
            timeout_s = t * 1e-6
        remaining = context.time_remaining()
        if remaining is not None and (timeout_s is None or remaining < timeout_s):
            timeout_s = max(remaining, 1e-6)
        try:
            result = await self.manager.infer(
                request.model_name,
                request.model_version or None,
                lambda served: _decode(request, served),
                protocol="grpc",
                request_id=request.id,
                timeout_s=timeout_s,
                headers=dict(context.invocation_metadata() or ()),
            )
        except ServeError as exc:
            await self._abort(context, exc)
        response = _encode(request, result)
        self.manager.record_latency(result, arrival)
        return response


def _decode(request: Any, served: Served) -> dict[str, np.ndarray]:
    known = [t.name for t in served.loaded.signature.outputs]
    for o in request.outputs:
        if o.name not in known:
            raise InvalidRequest(f"unknown output {o.name!r}; the model's outputs are {known}")
    raw = list(request.raw_input_contents)
    if raw and len(raw) != len(request.inputs):
        raise InvalidRequest(
            f"{len(raw)} raw_input_contents for {len(request.inputs)} inputs; give one per input"
        )
    arrays: dict[str, np.ndarray] = {}
    for i, t in enumerate(request.inputs):
        if t.name in arrays:
            raise InvalidRequest(f"input '{t.name}' is given twice")
        shape = check_shape(list(t.shape), t.name)
        if raw:
            arrays[t.name] = from_bytes(raw[i], t.datatype, shape, t.name)
            continue
        dtype = numpy_of(t.datatype, t.name)
        field = _CONTENTS.get(t.datatype)
        if field is None:
            raise InvalidRequest(
                f"input '{t.name}': {t.datatype} needs raw_input_contents (no typed contents)"
            )
        values = np.asarray(getattr(t.contents, field))
        count = int(np.prod(shape)) if shape else 1
        if values.size != count:
            raise InvalidRequest(
                f"input '{t.name}': shape {list(shape)} holds {count} elements but contents "
                f"has {values.size}"
            )
        arrays[t.name] = values.astype(dtype).reshape(shape)
    return arrays


def _encode(request: Any, result: Any) -> Any:
    loaded = result.served.loaded
    types = {t.name: t.datatype for t in loaded.signature.outputs}
    names = [o.name for o in request.outputs] or list(result.outputs)  # checked by _decode
    response = pb.ModelInferResponse(
        model_name=loaded.name, model_version=str(loaded.version), id=request.id
    )
    for name in names:
        arr = result.outputs[name]
        response.outputs.add(name=name, datatype=types[name], shape=list(arr.shape))
        response.raw_output_contents.append(to_bytes(arr))
    return response


def build_server(manager: ModelManager, address: str) -> grpc.aio.Server:
    """A grpc.aio server with the inference service bound to ``address`` (not yet started)."""
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE),
            ("grpc.max_send_message_length", MAX_MESSAGE),
            ("grpc.so_reuseport", 0),
        ]
    )
    pb_grpc.add_GRPCInferenceServiceServicer_to_server(InferenceService(manager), server)
    port = server.add_insecure_port(address)
    server.bound_port = port  # type: ignore[attr-defined]
    return server


__all__ = ["DATATYPES", "InferenceService", "build_server"]
