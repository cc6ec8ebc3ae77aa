from __future__ import annotations

import json

import pytest

import cuvil_ref as cuvil
from cuvil_ref.errors import TargetError
from cuvil_ref.plugin.host import PluginHost, api_compatible


def test_ref_is_always_a_target(host: PluginHost) -> None:
    rows = {r["target"]: r for r in cuvil.targets() if r["target"]}
    assert rows["ref"]["available"] is True
    assert rows["toy"]["device"] == "toy device"


def test_broken_and_incompatible_packs_are_listed_not_fatal(host: PluginHost) -> None:
    rows = cuvil.targets()
    errors = {r["pack"]: r["error"] for r in rows if r["error"]}
    assert "driver library missing" in errors["broken"]
    assert "plugin API 2.0" in errors["future"]
    assert "future" not in host.target_names()
    assert host.resolve("ref").name == "ref"  # others keep working


def test_unavailable_target_reports_reason(host: PluginHost) -> None:
    row = next(r for r in cuvil.targets() if r["target"] == "gpu-x")
    assert row["available"] is False
    assert "no GPU" in row["reason"]


def test_api_version_rule() -> None:
    assert api_compatible("1.0", "1.0")
    assert api_compatible("1.0", "1.3")
    assert not api_compatible("1.4", "1.3")
    assert not api_compatible("2.0", "1.9")
    assert not api_compatible("garbage", "1.0")


def test_resolve_by_alias_arch_dict_and_file(host: PluginHost, tmp_path) -> None:
    assert host.resolve("vendor/toy").name == "toy"
    spec = host.resolve({"target": "vendor/unknown", "arch": "toy", "features": ["f1"]})
    assert spec.name == "toy" and spec.features == ("f1",)
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"target": "toy", "options": {"loop_unroll_factor": 4}}))
    spec = host.resolve(str(path))
    assert spec.options["loop_unroll_factor"] == 4


def test_unknown_target_lists_installed(host: PluginHost) -> None:
    with pytest.raises(TargetError, match=r"unknown target 'nope'.*installed targets: .*ref"):
        host.resolve("nope")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"loop_unrol_factor": 2},
            "has no option 'loop_unrol_factor'; accepted options: loop_unroll_factor",
        ),
        ({"loop_unroll_factor": 0}, r"outside \[1, 8\]"),
        ({"loop_unroll_factor": "4"}, "must be int"),
    ],
)
def test_option_validation(host: PluginHost, options: dict, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        host.resolve({"target": "toy", "options": options})


def test_bad_spec_files(tmp_path) -> None:
    from cuvil_ref.plugin.target_spec import parse_target_spec

    with pytest.raises(TargetError, match="does not exist"):
        parse_target_spec(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(TargetError, match="not valid JSON"):
        parse_target_spec(str(bad))
    with pytest.raises(TargetError, match="unknown keys"):
        parse_target_spec({"target": "toy", "flavour": 1})


def test_spec_recorded_in_an_artifact_reads_back(host: PluginHost) -> None:
    """``cm.save`` records ``TargetSpec.to_json()`` (with ``requested``) in meta.json; that dict
    is a valid ``target=`` again, so a served artifact compiles for the target it records."""
    from cuvil_ref.plugin.target_spec import parse_target_spec

    recorded = host.resolve({"target": "toy", "options": {"loop_unroll_factor": 2}}).to_json()
    assert recorded["requested"] == "toy"
    again = parse_target_spec(recorded)
    assert again.to_json() == recorded
    assert host.resolve(recorded).to_json() == recorded
    with pytest.raises(TargetError, match="'requested' must be a target name"):
        parse_target_spec({**recorded, "requested": 3})


def test_deferred_host_loads_only_the_pack_a_target_needs() -> None:
    h = PluginHost()
    h.defer_entry_points()
    assert h.resolve("ref").name == "ref"
    assert [r.name for r in h._packs] == ["ref"]  # the other installed packs stay unimported
    assert h.pack_of("ref").name == "ref"  # a loaded target's queries load nothing more
    assert len(h._packs) == 1
    names = {r.name for r in h.packs}  # reading the table loads every pack
    assert names >= {"ref", "cpu"}
    assert len(h.packs) == len(names)  # each loaded once


def test_deferred_host_loads_everything_for_a_target_no_entry_point_names() -> None:
    h = PluginHost()
    h.defer_entry_points()
    with pytest.raises(TargetError, match="installed targets: .*ref"):
        h.resolve("no-such-target")
    assert {"ref", "cpu"} <= {r.name for r in h._packs}
