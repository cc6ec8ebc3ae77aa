"""``cuvil keygen``, ``sign``, ``verify`` and ``pack new``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli.conftest import invoke

pytest.importorskip("cryptography")


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path, Path]:
    priv, pub, other_pub = tmp_path / "k.pem", tmp_path / "k.pub", tmp_path / "o.pub"
    assert invoke("keygen", str(priv), str(pub)).exit_code == 0
    assert invoke("keygen", str(tmp_path / "o.pem"), str(other_pub)).exit_code == 0
    return priv, pub, other_pub


def test_sign_verify_round_trip(artifact: Path, keys: tuple[Path, Path, Path], tmp_path: Path):
    priv, pub, other_pub = keys
    art = tmp_path / "a.cuvilir"
    shutil.copy(artifact, art)
    unsigned = invoke("verify", str(art))
    assert unsigned.exit_code == 0 and "intact; not signed" in unsigned.stdout
    refused = invoke("verify", str(art), "--trusted-key", str(pub))
    assert refused.exit_code == 1 and "is not signed" in refused.stderr

    assert invoke("sign", "--key", str(priv), str(art)).exit_code == 0
    ok = invoke("verify", str(art), "--trusted-key", str(other_pub), "--trusted-key", str(pub))
    assert ok.exit_code == 0 and "signed by a trusted key" in ok.stdout
    signed_row = next(r for r in invoke("inspect", str(art)).stdout.splitlines() if "signed" in r)
    assert "yes" in signed_row


def test_wrong_key_is_refused_by_verify_and_run(
    artifact: Path, keys: tuple[Path, Path, Path], tmp_path: Path, x_npy: Path
) -> None:
    priv, _, other_pub = keys
    art = tmp_path / "a.cuvilir"
    shutil.copy(artifact, art)
    invoke("sign", "-k", str(priv), str(art))
    bad = invoke("verify", str(art), "--trusted-key", str(other_pub))
    assert bad.exit_code == 1
    assert "the signature does not verify with any of the 1 trusted key(s)" in bad.stderr
    run = invoke("run", str(art), "-i", str(x_npy), "--trusted-key", str(other_pub))
    assert run.exit_code == 1 and "does not verify" in run.stderr


def test_keygen_does_not_overwrite(keys: tuple[Path, Path, Path]) -> None:
    priv, pub, _ = keys
    before = priv.read_bytes()
    result = invoke("keygen", str(priv), str(pub))
    assert result.exit_code == 1 and "already exists; pass --force" in result.stderr
    assert priv.read_bytes() == before
    assert invoke("keygen", "--force", str(priv), str(pub)).exit_code == 0
    assert priv.read_bytes() != before


def test_sign_with_missing_key(artifact: Path, tmp_path: Path) -> None:
    art = tmp_path / "a.cuvilir"
    shutil.copy(artifact, art)
    result = invoke("sign", "--key", str(tmp_path / "nokey.pem"), str(art))
    assert result.exit_code == 1
    assert "nokey.pem' does not exist" in result.stderr


def test_pack_new(tmp_path: Path) -> None:
    result = invoke("pack", "new", "my-npu", "--dest", str(tmp_path))
    assert result.exit_code == 0, result.output
    root = tmp_path / "my-npu"
    assert (root / "src" / "cuvil_kernels_my_npu" / "plugin.py").is_file()
    assert 'my-npu = "cuvil_kernels_my_npu.plugin"' in (root / "pyproject.toml").read_text()
    assert str(root) in result.stdout
    again = invoke("pack", "new", "my-npu", "--dest", str(tmp_path))
    assert again.exit_code == 1 and "already exists" in again.stderr
    bad = invoke("pack", "new", "My NPU", "--dest", str(tmp_path))
    assert bad.exit_code == 1 and "must start with a lowercase letter" in bad.stderr
