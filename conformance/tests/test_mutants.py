"""The suite can fail: every planted bug of the mutant library is caught, by the full suite and
(>= 90%) by --quick, while the same kernels without a bug pass.

The mutants are real packs installed through the ``cuvil.kernelpacks`` entry points by
``scripts/setup.sh`` (``pip install -e conformance/tests/mutants``).
"""

from __future__ import annotations

import importlib.metadata as md

import pytest
from cuvil_conformance import run_suite
from cuvil_conformance_mutants import MUTANTS, controls
from cuvil_conformance_mutants.__main__ import QUICK_THRESHOLD, catch_rates
from cuvil_conformance_mutants.packs import PACKS

from cuvil_ref.plugin.host import ENTRY_POINT_GROUP, get_host


def test_library_has_at_least_30_mutants_each_installed_as_a_pack() -> None:
    assert len(MUTANTS) >= 30
    installed = {
        ep.value.rsplit(":", 1)[1]
        for ep in md.entry_points(group=ENTRY_POINT_GROUP)
        if ep.value.startswith("cuvil_conformance_mutants.")
    }
    assert installed == set(PACKS), "pyproject.toml's entry points and the catalog differ"
    host = get_host()
    for m in MUTANTS.values():
        record = host.pack_of(m.target)
        assert record.error is None and record.module.startswith("cuvil_conformance_mutants")


@pytest.fixture(scope="module")
def full() -> dict:
    return catch_rates(quick=False)


@pytest.fixture(scope="module")
def quick() -> dict:
    return catch_rates(quick=True)


def test_full_suite_catches_every_mutant(full: dict) -> None:
    missed = [n for n in MUTANTS if not full["rows"][n]["failed_cases"]]
    assert missed == [], f"the full suite misses {missed}"


def test_quick_suite_catches_at_least_90_percent(quick: dict) -> None:
    assert quick["rate"] >= QUICK_THRESHOLD, quick["rows"]


@pytest.mark.parametrize("mode", ["full", "quick"])
def test_controls_pass(mode: str, full: dict, quick: dict) -> None:
    rows = (full if mode == "full" else quick)["rows"]
    for name in controls():
        assert rows[name]["claimed"] > 0 and rows[name]["failed_cases"] == 0, rows[name]


def test_each_mutant_is_caught_by_the_rule_it_breaks(full: dict) -> None:
    """The case that separates the rule from the bug is among the failures (not only some
    unrelated case that happens to fail too)."""
    for name, m in MUTANTS.items():
        assert m.rule in full["rows"][name]["caught_by"], (name, full["rows"][name])


def test_unclaimed_ops_are_unsupported_not_passed() -> None:
    report = run_suite("mutant-nan-relu-select", ["relu", "exp"], quick=True)
    by_op = {r.op: r.status for r in report.results}
    assert by_op["exp"] == "unsupported"
    assert report.summary()["coverage"] == 0.5
    assert not report.ok  # the relu bug
