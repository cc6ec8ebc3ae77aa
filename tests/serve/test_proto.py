"""The committed gRPC stubs match the .proto, and the .proto matches the protocol that NVIDIA's
tritonclient speaks (message by message, field by field: names, numbers, types)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("grpc_tools", reason="needs grpcio-tools (the serve-test extra)")

from google.protobuf import descriptor_pb2  # noqa: E402

from cuvil_ref.serve.proto import generate  # noqa: E402

MESSAGES = [
    "ServerLiveRequest", "ServerLiveResponse", "ServerReadyRequest", "ServerReadyResponse",
    "ModelReadyRequest", "ModelReadyResponse", "ServerMetadataRequest", "ServerMetadataResponse",
    "ModelMetadataRequest", "ModelMetadataResponse", "ModelInferRequest", "ModelInferResponse",
    "InferParameter", "InferTensorContents",
]  # fmt: skip


def _our_descriptor(tmp_path: Path) -> descriptor_pb2.FileDescriptorProto:
    from grpc_tools import protoc

    out = tmp_path / "set.pb"
    rel = generate.PROTO.relative_to(generate.ROOT)
    assert (
        protoc.main(["protoc", f"-I{generate.ROOT}", f"--descriptor_set_out={out}", str(rel)]) == 0
    )
    fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    return fds.file[0]


def _fields(msg) -> dict:
    out = {}
    for f in msg.field:
        out[f.name] = (f.number, f.type, f.label, f.type_name.rsplit(".", 1)[-1])
    for n in msg.nested_type:
        out[f"<{n.name}>"] = _fields(n)
    return out


def test_stubs_are_regenerated_from_the_proto(tmp_path: Path) -> None:
    for made in generate.generate(tmp_path):
        committed = Path(generate.__file__).with_name(made.name)
        assert made.read_text() == committed.read_text(), (
            f"{committed.name} is stale: run python -m cuvil_ref.serve.proto.generate"
        )


def test_proto_matches_tritonclients_protocol(tmp_path: Path) -> None:
    spec = importlib.util.find_spec("tritonclient.grpc.service_pb2")
    if spec is None:
        pytest.skip("needs tritonclient[grpc]")
    from tritonclient.grpc import service_pb2

    theirs = descriptor_pb2.FileDescriptorProto()
    service_pb2.DESCRIPTOR.CopyToProto(theirs)
    ours = _our_descriptor(tmp_path)
    assert ours.package == theirs.package == "inference"
    their_msgs = {m.name: m for m in theirs.message_type}
    our_msgs = {m.name: m for m in ours.message_type}
    for name in MESSAGES:
        assert _fields(our_msgs[name]) == _fields(their_msgs[name]), name
    (service,) = ours.service
    their_service = {s.name: s for s in theirs.service}[service.name]
    their_methods = {m.name: m for m in their_service.method}
    for m in service.method:
        t = their_methods[m.name]
        assert (m.input_type, m.output_type) == (t.input_type, t.output_type)
