"""``.cuvilir`` artifacts: save, load (verified, memory-mapped, pickle-free), sign."""

from __future__ import annotations

from cuvil_ref.artifacts.container import FORMAT_VERSION, Container, write_container
from cuvil_ref.artifacts.module_io import artifact_info, load_module, save_module
from cuvil_ref.artifacts.signing import generate_keypair, sign_artifact

__all__ = [
    "FORMAT_VERSION",
    "Container",
    "artifact_info",
    "generate_keypair",
    "load_module",
    "save_module",
    "sign_artifact",
    "write_container",
]
