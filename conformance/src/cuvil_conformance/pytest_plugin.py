"""pytest plugin: ``pytest --cuvil-target=T`` runs the conformance suite as test items.

Installed through the ``pytest11`` entry point; it adds options and does nothing unless
``--cuvil-target`` is given or a test uses the ``conformance_case`` parametrization helper::

    # test_my_pack.py
    from cuvil_conformance.pytest_plugin import parametrize_cases
    @parametrize_cases(ops=["relu", "add"])
    def test_conformance(conformance_case, conformance_target):
        ...  # or just: check_case(conformance_case, "my-target")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cuvil-conformance")
    group.addoption("--cuvil-target", default=None, help="run the conformance suite for target")
    group.addoption("--cuvil-ops", default=None, help="comma-separated ops for --cuvil-target")
    group.addoption("--cuvil-quick", action="store_true", help="quick subset of cases")


def parametrize_cases(ops: Sequence[str] | None = None, quick: bool = False) -> Callable:
    """Parametrize a test over conformance cases (ids are the case ids)."""
    from cuvil_conformance.generators import generate_cases

    cases, _ = generate_cases(ops, quick=quick)
    return pytest.mark.parametrize("conformance_case", cases, ids=[c.id for c in cases])


def check_case(case: Any, target: str) -> None:
    """Run ``case`` on ``target``; fail the test on failure/error, skip if unsupported."""
    from cuvil_conformance.runner import _policy, run_case
    from cuvil_ref.plugin.host import get_host

    host = get_host()
    spec = host.resolve(target)
    avail = host.availability(spec)
    if not avail.available:
        pytest.skip(f"target '{spec.name}' unavailable: {avail.reason}")
    result = run_case(case, spec, host, _policy(host, spec))
    if result.status in ("unsupported", "skipped"):
        pytest.skip(f"{result.status}: {result.reason}")
    if result.status != "passed":
        pytest.fail(f"{case.id} {result.status}: {result.reason}", pytrace=False)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "cuvil_conformance_case" not in metafunc.fixturenames:
        return
    target = metafunc.config.getoption("--cuvil-target")
    if not target:
        metafunc.parametrize("cuvil_conformance_case", [], ids=[])
        return
    from cuvil_conformance.generators import generate_cases

    ops = metafunc.config.getoption("--cuvil-ops")
    cases, _ = generate_cases(
        ops.split(",") if ops else None, quick=metafunc.config.getoption("--cuvil-quick")
    )
    metafunc.parametrize("cuvil_conformance_case", cases, ids=[c.id for c in cases])


@pytest.fixture
def conformance_target(request: pytest.FixtureRequest) -> str | None:
    return request.config.getoption("--cuvil-target")
