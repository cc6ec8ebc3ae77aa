"""The plugin tests' host fixture (installed packs plus in-process toy packs), shared here."""

from __future__ import annotations

from tests.plugin.conftest import host  # noqa: F401
