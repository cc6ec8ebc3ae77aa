"""Malformed artifacts end in typed errors: each hostile input found so far, a hypothesis fuzz of
the loader, and a file changed on disk after loading (which cannot change or crash the model)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cuvil_ref as cuvil
from cuvil_ref.artifacts.container import _PREAMBLE, FORMAT_VERSION, MAGIC
from cuvil_ref.errors import MAX_MESSAGE, ArtifactFormatError, CuvilError
from tests.fuzzing.artifact_mutations import container_bytes, mutate_artifact, reseal
from tests.fuzzing.campaign import check_artifact
from tests.fuzzing.seeds import seed_artifacts, seed_modules


def _with_member(name: str, data: bytes) -> bytes:
    members = dict(seed_artifacts()[0])
    members[name] = data
    return container_bytes(reseal(members) if name != "meta.json" else members)


def _with_header(header: bytes) -> bytes:
    digest = hashlib.sha256(header).digest()
    return _PREAMBLE.pack(MAGIC, FORMAT_VERSION, len(header), digest) + header


def _meta(**changes: object) -> bytes:
    meta = json.loads(reseal(dict(seed_artifacts()[0]))["meta.json"])
    meta.update(changes)
    return json.dumps(meta).encode()


def _weights(text: str) -> bytes:
    return _with_member("weights.json", text.encode())


DEEP = "[" * 1000 + "]" * 1000
HOSTILE = {
    "header nested 1000 deep": _with_header(b'{"members": ' + DEEP.encode() + b"}"),
    "header offset Infinity": _with_header(
        b'{"members": [{"name": "a", "offset": Infinity, "size": 1, "sha256": "0"}]}'
    ),
    "header offset 1e400": _with_header(
        b'{"members": [{"name": "a", "offset": 1e400, "size": 1, "sha256": "0"}]}'
    ),
    "header size of 5000 digits": _with_header(
        b'{"members": [{"name": "a", "offset": 64, "size": ' + b"9" * 5000 + b', "sha256": "0"}]}'
    ),
    "header name not a string": _with_header(
        b'{"members": [{"name": [1], "offset": 64, "size": 1, "sha256": "0"}]}'
    ),
    "meta sha256 a list": _with_member("meta.json", _meta(sha256=[1, 2])),
    "meta sha256 a string": _with_member("meta.json", _meta(sha256="abc")),
    "meta digest an int": _with_member("meta.json", _meta(sha256={"module.cuvil": 1})),
    "meta nested 1000 deep": _with_member("meta.json", DEEP.encode()),
    "meta NaN": _with_member("meta.json", b'{"format": NaN}'),
    "weights nested 1000 deep": _weights(DEEP),
    "weights shape Infinity": _weights(
        '[{"name": "w", "dtype": "f32", "shape": [Infinity], "offset": 0, "nbytes": 4}]'
    ),
    "weights dim of 5000 digits": _weights(
        '[{"name": "w", "dtype": "f32", "shape": [' + "9" * 5000 + '], "offset": 0, "nbytes": 4}]'
    ),
    "weights dims overflowing int64": _weights(
        '[{"name": "w", "dtype": "f32", "shape": [4294967296, 4294967296], "offset": 0, '
        '"nbytes": 0}]'
    ),
    "weights rank 100000": _weights(
        '[{"name": "w", "dtype": "f32", "shape": ['
        + ",".join(["9223372036854775807"] * 100_000)
        + '], "offset": 0, "nbytes": 0}]'
    ),
    "weights dtype f99": _weights(
        '[{"name": "w", "dtype": "f99", "shape": [1], "offset": 0, "nbytes": 4}]'
    ),
    "weights entry a string": _weights('["w"]'),
    "weights offset a bool": _weights(
        '[{"name": "w", "dtype": "f32", "shape": [1], "offset": true, "nbytes": 4}]'
    ),
    "text NaN payload over 64 bits": _with_member(
        "module.cuvil",
        b"module @m attributes {p = nan(0x" + b"f" * 40 + b")} {\n"
        b"  func @main() -> () {\n    return\n  }\n}\n",
    ),
    "text parentheses 1000 deep": _with_member(
        "module.cuvil",
        b"module @m attributes {p = " + b"(" * 1000 + b")" * 1000 + b"} {\n"
        b"  func @main() -> () {\n    return\n  }\n}\n",
    ),
    "text not UTF-8": _with_member("module.cuvil", b"module @m \xff {"),
    "member name of 100,000 characters": _with_header(
        b'{"members": [{"name": "' + b"n" * 100_000 + b'", "offset": 0, "size": 0, '
        b'"sha256": "' + b"0" * 64 + b'"}]}'
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_artifact_is_a_typed_bounded_error(name: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.cuvilir"
    path.write_bytes(HOSTILE[name])
    with pytest.raises(CuvilError) as info:
        cuvil.load(str(path))
    assert len(str(info.value)) <= MAX_MESSAGE
    assert str(path) in str(info.value)


def test_field_errors_name_the_member_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.cuvilir"
    path.write_bytes(HOSTILE["meta sha256 a list"])
    with pytest.raises(ArtifactFormatError, match=r"meta.json: field 'sha256' must be a JSON "):
        cuvil.load(str(path))
    path.write_bytes(HOSTILE["weights shape Infinity"])
    with pytest.raises(ArtifactFormatError, match="Infinity is not allowed"):
        cuvil.load(str(path))


def test_trusted_keys_without_cryptography_is_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.cuvilir"
    seed_modules()[0].save(str(path))
    for name in [m for m in sys.modules if m == "cryptography" or m.startswith("cryptography.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "cryptography", None)  # `import cryptography` now fails
    with pytest.raises(CuvilError, match=r"pip install 'cuvil-ref\[sign\]'"):
        cuvil.load(str(path), trusted_keys=[b"\0" * 32])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(seed_artifacts()) - 1), st.randoms(use_true_random=False))
def test_fuzzed_artifacts_end_in_typed_errors(seed: int, rng: object) -> None:
    """The CI slice of the campaign (``python -m tests.fuzzing.campaign``, docs/ir.md)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        check_artifact(mutate_artifact(seed_artifacts()[seed], rng), Path(tmp) / "f.cuvilir")


CHANGED_ON_DISK = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    import cuvil_ref as cuvil
    path = sys.argv[1]
    module = cuvil.load(path)
    x = np.linspace(-1, 1, 18, dtype=np.float32).reshape(1, 2, 3, 3)
    before = [y.copy() for y in cuvil.interpret(module, [x])]
    size = os.path.getsize(path)
    with open(path, "r+b") as f:  # rewrite the weights in place, then cut the file short
        f.seek(size // 2)
        f.write(b"\\x7f" * (size - size // 2))
        f.flush()
        f.truncate(100)
    after = cuvil.interpret(module, [x])
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(before, after))
    print("unchanged")
    """
)


def test_file_changed_on_disk_after_load_changes_nothing(tmp_path: Path) -> None:
    """A memory-mapped file truncated under the process raises SIGBUS on the next access;
    the loader reads the file once instead, so the loaded model keeps what was verified."""
    path = tmp_path / "m.cuvilir"
    seed_modules()[0].save(str(path))
    done = subprocess.run(
        [sys.executable, "-c", CHANGED_ON_DISK, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr  # -7 would be SIGBUS
    assert done.stdout.strip() == "unchanged"
    with pytest.raises(CuvilError):  # and the damaged file itself is refused
        cuvil.load(str(path))


def test_loaded_weights_are_read_only(tmp_path: Path) -> None:
    path = tmp_path / "m.cuvilir"
    seed_modules()[0].save(str(path))
    for array in cuvil.load(str(path)).graph.constants.values():
        assert isinstance(array, np.ndarray) and not array.flags.writeable
