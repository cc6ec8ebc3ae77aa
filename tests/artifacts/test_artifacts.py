"""Artifacts: bit-exact round trip, tampering anywhere refused, no pickle ever executed,
truncation, wrong versions, missing files, signatures."""

from __future__ import annotations

import json
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

import cuvil_ref as cuvil
from cuvil_ref.artifacts import Container, generate_keypair, sign_artifact, write_container
from cuvil_ref.artifacts.module_io import module_members
from cuvil_ref.errors import (
    ArtifactError,
    ArtifactFormatError,
    ArtifactIntegrityError,
    ArtifactVersionError,
)
from cuvil_ref.ir import DType, GraphBuilder, Module, TensorType


def _module() -> Module:
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", TensorType(("batch", 8)))
    w = b.constant("fc.weight", rng.standard_normal((4, 8)).astype(np.float32))
    bias = b.constant("fc.bias", rng.standard_normal(4).astype(np.float32))
    h = b.constant("half", rng.standard_normal(4).astype(np.float16))
    i = b.constant("idx", np.array([3, 1, 2], dtype=np.int64))
    y = b.op("linear", [x, w, bias])
    y = b.op("add", [y, b.op("cast", [h], {"dtype": "f32"})])
    z = b.op("index_select", [y, i], {"axis": 1})
    return Module(b.build([b.op("relu", [z])]), "tiny", {"producer": "test"})


def test_round_trip_bit_exact(tmp_path: Path) -> None:
    m = _module()
    path = tmp_path / "m.cuvilir"
    m.save(str(path))
    m2 = cuvil.load(str(path))
    assert str(m2) == str(m)
    for name, arr in m.graph.constants.items():
        got = m2.graph.constants[name]
        assert got.dtype == arr.dtype and got.shape == arr.shape
        assert got.tobytes() == arr.tobytes()
        assert not got.flags.writeable  # memory-mapped, read-only
    x = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    np.testing.assert_array_equal(cuvil.interpret(m2, [x])[0], cuvil.interpret(m, [x])[0])


def test_every_flipped_byte_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.cuvilir"
    _module().save(str(path))
    data = path.read_bytes()
    bad = tmp_path / "bad.cuvilir"
    step = max(1, len(data) // 400)  # ~400 positions spread over header, padding and members
    positions = sorted(set(range(0, len(data), step)) | {len(data) - 1, 0, 9, 13, 21, 60})
    for pos in positions:
        flipped = bytearray(data)
        flipped[pos] ^= 0x5A
        bad.write_bytes(bytes(flipped))
        with pytest.raises(ArtifactError):
            cuvil.load(str(bad))


def test_truncated_and_extended_files(tmp_path: Path) -> None:
    path = tmp_path / "m.cuvilir"
    _module().save(str(path))
    data = path.read_bytes()
    for cut in (0, 10, 60, len(data) // 2, len(data) - 1):
        (tmp_path / "t.cuvilir").write_bytes(data[:cut])
        with pytest.raises(ArtifactError, match="truncated|not a .cuvilir|digest|modified"):
            cuvil.load(str(tmp_path / "t.cuvilir"))
    (tmp_path / "e.cuvilir").write_bytes(data + b"\0")
    with pytest.raises(ArtifactIntegrityError, match="trailing"):
        cuvil.load(str(tmp_path / "e.cuvilir"))


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(ArtifactFormatError, match="nope.cuvilir.*does not exist"):
        cuvil.load(str(tmp_path / "nope.cuvilir"))


def test_container_version_error(tmp_path: Path) -> None:
    path = tmp_path / "m.cuvilir"
    _module().save(str(path))
    data = bytearray(path.read_bytes())
    data[8:12] = struct.pack("<I", 99)
    path.write_bytes(bytes(data))
    with pytest.raises(ArtifactVersionError, match="version 99"):
        cuvil.load(str(path))


def test_meta_version_error(tmp_path: Path) -> None:
    members = module_members(_module())
    meta = json.loads(members["meta.json"])
    meta["format_version"] = 7
    members["meta.json"] = json.dumps(meta).encode()
    write_container(tmp_path / "v.cuvilir", members)
    with pytest.raises(ArtifactVersionError, match="format version 7"):
        cuvil.load(str(tmp_path / "v.cuvilir"))


def test_pickle_payload_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (Path.write_text, (marker, "x"))

    payload = pickle.dumps(Exploit())
    members = module_members(_module())
    # a consistent file (all digests valid) whose members are pickles instead of data
    for victim in ("weights.json", "module.cuvil", "meta.json"):
        ms = dict(members)
        ms[victim] = payload
        if victim != "meta.json":
            meta = json.loads(ms["meta.json"])
            import hashlib

            meta["sha256"][victim] = hashlib.sha256(payload).hexdigest()
            ms["meta.json"] = json.dumps(meta).encode()
        write_container(tmp_path / "p.cuvilir", ms)
        with pytest.raises(ArtifactError):
            cuvil.load(str(tmp_path / "p.cuvilir"))
    assert not marker.exists()


def test_weights_index_outside_blob(tmp_path: Path) -> None:
    members = module_members(_module())
    index = json.loads(members["weights.json"])
    index[0]["offset"] = 10**9
    members["weights.json"] = json.dumps(index).encode()
    meta = json.loads(members["meta.json"])
    import hashlib

    meta["sha256"]["weights.json"] = hashlib.sha256(members["weights.json"]).hexdigest()
    members["meta.json"] = json.dumps(meta).encode()
    write_container(tmp_path / "o.cuvilir", members)
    with pytest.raises(ArtifactFormatError, match="outside weights.bin"):
        cuvil.load(str(tmp_path / "o.cuvilir"))


def test_signatures(tmp_path: Path) -> None:
    pytest.importorskip("cryptography")
    priv, pub = tmp_path / "k.pem", tmp_path / "k.pub"
    generate_keypair(priv, pub)
    other_priv, other_pub = tmp_path / "o.pem", tmp_path / "o.pub"
    generate_keypair(other_priv, other_pub)
    path = tmp_path / "m.cuvilir"
    _module().save(str(path))
    with pytest.raises(ArtifactIntegrityError, match="not signed"):
        cuvil.load(str(path), trusted_keys=[pub])
    sign_artifact(path, priv)
    assert cuvil.load(str(path), trusted_keys=[other_pub, pub]).name == "tiny"
    with pytest.raises(ArtifactIntegrityError, match="does not verify"):
        cuvil.load(str(path), trusted_keys=[other_pub])
    # re-signing with another key after tampering does not fool a holder of the right key
    sign_artifact(path, other_priv)
    with pytest.raises(ArtifactIntegrityError):
        cuvil.load(str(path), trusted_keys=[pub])
    assert cuvil.load(str(path)).name == "tiny"  # integrity alone still holds


def test_container_rejects_duplicate_members(tmp_path: Path) -> None:
    path = tmp_path / "d.cuvilir"
    write_container(path, {"a": b"1", "b": b"2"})
    with Container(path) as c:
        assert bytes(c.read("a")) == b"1"
        with pytest.raises(ArtifactFormatError, match="no member 'zz'"):
            c.read("zz")


def test_dtypes_survive(tmp_path: Path) -> None:
    b = GraphBuilder()
    consts = []
    for d in DType:
        arr = (np.arange(20) % 3).astype(d.numpy).reshape(4, 5)
        consts.append(b.constant(f"c_{d.value}", arr))
    g = b.build(consts)
    Module(g).save(str(tmp_path / "d.cuvilir"))
    m = cuvil.load(str(tmp_path / "d.cuvilir"))
    for v in consts:
        assert m.graph.constants[v.name].tobytes() == g.constants[v.name].tobytes()
        assert m.graph.constants[v.name].dtype == g.constants[v.name].dtype


def test_zero_dim_and_empty_constants_survive(tmp_path: Path) -> None:
    """A 0-d constant (``x * torch.tensor(0.5)``) was saved as shape [1] and refused on load."""
    b = GraphBuilder()
    x = b.input("x", TensorType((2, 3)))
    half = b.constant("half", np.array(0.5, dtype=np.float32))
    empty = b.constant("empty", np.zeros((0, 3), dtype=np.float32))
    g = b.build([b.op("mul", [x, half]), empty])
    Module(g).save(str(tmp_path / "z.cuvilir"))
    m = cuvil.load(str(tmp_path / "z.cuvilir"))
    assert m.graph.constants["half"].shape == ()
    assert m.graph.constants["empty"].shape == (0, 3)
    arg = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(cuvil.interpret(m, [arg])[0], arg * 0.5)
