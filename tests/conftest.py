"""Test-wide settings: verify the IR after every pass, and keep the compile cache in a temp dir."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("CUVIL_VERIFY_EACH", "1")
os.environ.setdefault("CUVIL_CACHE_DIR", tempfile.mkdtemp(prefix="cuvil-test-cache-"))
