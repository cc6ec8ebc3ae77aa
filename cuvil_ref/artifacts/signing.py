"""Ed25519 signatures for artifacts (``cuvil sign``), via the ``cryptography`` package.

The signature covers the bytes of ``meta.json``, which holds the SHA-256 of every other member,
so it vouches for the whole artifact. It is stored in the member ``signature.json``:
``{"algorithm": "ed25519", "public_key": hex, "signature": hex}``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cuvil_ref.artifacts.container import Container, write_container
from cuvil_ref.artifacts.strict_json import field, load_json
from cuvil_ref.errors import ArtifactIntegrityError, CuvilError, shorten


def _crypto() -> Any:
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise CuvilError(
            "signatures need the 'cryptography' package (signing, and loading with trusted "
            "keys): pip install 'cuvil-ref[sign]'"
        ) from None
    return ed25519, serialization


def _invalid_signature() -> type[Exception]:
    _crypto()  # the typed "install cryptography" error, before any other import of it
    from cryptography.exceptions import InvalidSignature

    return InvalidSignature


def generate_keypair(private_path: str | Path, public_path: str | Path) -> None:
    """Write a new Ed25519 key pair as PEM files."""
    ed25519, ser = _crypto()
    key = ed25519.Ed25519PrivateKey.generate()
    Path(private_path).write_bytes(
        key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption())
    )
    Path(public_path).write_bytes(
        key.public_key().public_bytes(ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo)
    )


def _load_private(path: str | Path) -> Any:
    ed25519, ser = _crypto()
    try:
        key = ser.load_pem_private_key(Path(path).read_bytes(), password=None)
    except FileNotFoundError:
        raise CuvilError(f"private key file {str(path)!r} does not exist") from None
    except ValueError as exc:
        raise CuvilError(f"{str(path)!r} is not a PEM private key: {exc}") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise CuvilError(f"{str(path)!r} is not an Ed25519 key")
    return key


def load_public_key(key: Any) -> Any:
    """A trusted key given as a path to a PEM file, PEM bytes, raw 32 bytes, or a key object."""
    ed25519, ser = _crypto()
    if isinstance(key, ed25519.Ed25519PublicKey):
        return key
    if isinstance(key, (str, Path)):
        try:
            key = Path(key).read_bytes()
        except OSError as exc:
            raise CuvilError(f"cannot read trusted key {str(key)!r}: {exc.strerror}") from None
    try:
        if isinstance(key, bytes) and len(key) == 32:
            return ed25519.Ed25519PublicKey.from_public_bytes(key)
        pub = ser.load_pem_public_key(key)
    except (ValueError, TypeError) as exc:
        raise CuvilError(
            f"trusted key is not an Ed25519 public key: {shorten(str(exc), 200)}"
        ) from None
    if not isinstance(pub, ed25519.Ed25519PublicKey):
        raise CuvilError("trusted key is not an Ed25519 public key")
    return pub


def _raw_public(pub: Any) -> bytes:
    _, ser = _crypto()
    return pub.public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw)


def sign_artifact(path: str | Path, private_key: str | Path) -> None:
    """Add (or replace) the signature of the artifact at ``path``."""
    key = _load_private(private_key)
    with Container(path) as c:
        members = {n: bytes(c.read(n)) for n in c.members if n != "signature.json"}
    sig = key.sign(members["meta.json"])
    members["signature.json"] = json.dumps(
        {
            "algorithm": "ed25519",
            "public_key": _raw_public(key.public_key()).hex(),
            "signature": sig.hex(),
        }
    ).encode()
    write_container(path, members)


def verify_container(container: Container, trusted_keys: Sequence[Any]) -> None:
    """Raise ArtifactIntegrityError unless a trusted key signed this artifact's meta.json."""
    invalid_signature = _invalid_signature()
    if isinstance(trusted_keys, (str, bytes, Path)):
        trusted_keys = [trusted_keys]  # one key given without a list
    if not trusted_keys:
        raise CuvilError("trusted_keys is empty: give at least one public key")
    if "signature.json" not in container.members:
        raise ArtifactIntegrityError(
            f"{container.path!r} is not signed, and trusted keys were given (sign it with "
            "`cuvil sign --key KEY FILE`)"
        )
    where = f"{container.path!r}: signature.json"
    info = load_json(bytes(container.read("signature.json")), where)
    try:
        sig = bytes.fromhex(field(info, "signature", "str", where))
    except ValueError:
        raise ArtifactIntegrityError(f"{where}: the signature is not hex digits") from None
    meta = bytes(container.read("meta.json"))
    for key in [load_public_key(k) for k in trusted_keys]:
        try:
            key.verify(sig, meta)
            return
        except invalid_signature:
            continue
    raise ArtifactIntegrityError(
        f"{container.path!r}: the signature does not verify with any of the "
        f"{len(trusted_keys)} trusted key(s)"
    )
