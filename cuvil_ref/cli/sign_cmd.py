"""``cuvil keygen``, ``cuvil sign`` and ``cuvil verify``: Ed25519 signatures of artifacts."""

from __future__ import annotations

from pathlib import Path

import click

from cuvil_ref.cli.render import stdout_console
from cuvil_ref.errors import CuvilError


@click.command()
@click.argument("private_key", metavar="PRIV")
@click.argument("public_key", metavar="PUB")
@click.option("--force", is_flag=True, help="Overwrite existing key files.")
def keygen(private_key: str, public_key: str, force: bool) -> None:
    """Write a new Ed25519 key pair: PRIV (keep it secret) and PUB (give it to users)."""
    from cuvil_ref.artifacts import generate_keypair

    for path in (private_key, public_key):
        if Path(path).exists() and not force:
            raise CuvilError(f"{path!r} already exists; pass --force to overwrite it")
    generate_keypair(private_key, public_key)
    click.echo(f"wrote private key {private_key} and public key {public_key}")


@click.command()
@click.option("--key", "-k", "key", metavar="PRIV", required=True, help="Ed25519 private key.")
@click.argument("file")
def sign(key: str, file: str) -> None:
    """Sign the artifact FILE in place (replacing an earlier signature)."""
    from cuvil_ref.artifacts import load_module, sign_artifact

    load_module(file)  # never sign a file whose digests do not match
    sign_artifact(file, key)
    click.echo(f"signed {file}")


@click.command("verify")
@click.argument("file")
@click.option(
    "--trusted-key",
    "trusted_keys",
    metavar="PUB",
    multiple=True,
    help="A trusted public key (repeatable); the signature must verify with one.",
)
def verify_command(file: str, trusted_keys: tuple[str, ...]) -> None:
    """Check FILE's digests and, with --trusted-key, that a trusted key signed it."""
    from cuvil_ref.artifacts import artifact_info, load_module

    load_module(file, trusted_keys=list(trusted_keys) or None)
    out = stdout_console()
    if trusted_keys:
        out.print(f"ok: {file} is intact and signed by a trusted key", style="green", markup=False)
    else:
        signed = (
            "signed (signature not checked: pass --trusted-key)"
            if artifact_info(file)["signed"]
            else "not signed"
        )
        out.print(f"ok: {file} is intact; {signed}", style="green", markup=False)
