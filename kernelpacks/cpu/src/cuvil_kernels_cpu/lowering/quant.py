"""Lowering of the int8 ops of docs/semantics.md (filled in below)."""

from __future__ import annotations

from typing import Any

ENTRIES: dict[str, tuple[Any, ...]] = {}
