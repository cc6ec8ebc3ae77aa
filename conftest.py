"""Settings shared by the test suites of all five distributions.

Tests parametrized by one of the zoo's big models (ResNet-18/50, MobileNetV2) are marked
``slow``, like the tests decorated ``@pytest.mark.slow``: ``bash scripts/test.sh --quick``
leaves them out (``-m "not slow"``); the full run keeps them.
"""

from __future__ import annotations

import pytest

BIG_ZOO_MODELS = frozenset({"resnet18", "resnet50", "mobilenet_v2"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and BIG_ZOO_MODELS.intersection(
            v for v in callspec.params.values() if isinstance(v, str)
        ):
            item.add_marker(pytest.mark.slow)
