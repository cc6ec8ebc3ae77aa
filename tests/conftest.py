"""Test-wide settings: verify the IR after every pass, and keep the compile cache in a temp dir."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("CUVIL_VERIFY_EACH", "1")
os.environ.setdefault("CUVIL_CACHE_DIR", tempfile.mkdtemp(prefix="cuvil-test-cache-"))


BIG_ZOO_MODELS = frozenset({"resnet18", "resnet50", "mobilenet_v2"})


def pytest_collection_modifyitems(items: list) -> None:  # noqa: ANN001
    """Tests parametrized by a big zoo model are ``slow`` (``scripts/test.sh --quick`` leaves
    them out, like tests decorated ``@pytest.mark.slow``)."""
    import pytest

    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and BIG_ZOO_MODELS.intersection(
            v for v in callspec.params.values() if isinstance(v, str)
        ):
            item.add_marker(pytest.mark.slow)
