"""Cuvil example kernel pack: target 'example', numpy kernels on the pack kit."""

from __future__ import annotations

__version__ = "0.1.0"
