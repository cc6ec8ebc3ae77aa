"""The KServe manifests (deploy/kserve/) validate offline against KServe's and Kubernetes'
schemas, the validator refuses what a cluster would refuse, and the runtime's container runs
the real `cuvil serve` command line."""

from __future__ import annotations

import copy
import importlib.util
import os
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")
pytest.importorskip("kubernetes_validate", reason="needs kubernetes-validate (serve-test extra)")

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "kserve_validate", ROOT / "deploy/kserve/validate.py"
)
validator = importlib.util.module_from_spec(_spec)
sys.modules["kserve_validate"] = validator
_spec.loader.exec_module(validator)  # type: ignore[union-attr]
MANIFESTS = sorted((ROOT / "deploy" / "kserve").glob("*.yaml"))


@pytest.fixture(scope="module")
def schema():
    try:
        wheel = validator.find_kserve_wheel()
    except validator.ManifestError as exc:
        if os.environ.get("CI"):
            raise  # CI installs it (scripts/setup.sh): a missing wheel is a failure there
        pytest.skip(str(exc))
    return validator.build_schema(validator.kserve_models(wheel), validator.k8s_definitions())


def _docs() -> dict[str, dict]:
    return {d["kind"]: d for p in MANIFESTS for d in yaml.safe_load_all(p.read_text()) if d}


def test_manifests_validate(schema) -> None:
    assert {"InferenceService", "ServingRuntime"} <= set(_docs())
    for path in MANIFESTS:
        for i, doc in enumerate(yaml.safe_load_all(path.read_text())):
            assert validator.validate(doc, schema, f"{path.name}[{i}]") == []


@pytest.mark.parametrize(
    ("kind", "edit", "message"),
    [
        ("InferenceService", lambda d: d["spec"]["predictor"].update(canaryTrafficPrecent=10),
         "'canaryTrafficPrecent' was unexpected"),
        ("InferenceService", lambda d: d["spec"]["predictor"].update(canaryTrafficPercent="ten"),
         "spec.predictor.canaryTrafficPercent: 'ten' is not of type 'integer'"),
        ("InferenceService", lambda d: d["spec"]["predictor"]["model"].pop("modelFormat"),
         "'modelFormat' is a required property"),
        ("InferenceService", lambda d: d["spec"].pop("predictor"),
         "'predictor' is a required property"),
        ("ServingRuntime", lambda d: d["spec"]["containers"][0].pop("name"),
         "spec.containers.0: 'name' is a required property"),
        ("ServingRuntime", lambda d: d["spec"]["containers"][0]["ports"][0].update(port=1),
         "'port' was unexpected"),
        ("ServingRuntime", lambda d: d["spec"]["containers"][0]["resources"].update(limit={}),
         "'limit' was unexpected"),
        ("ServingRuntime", lambda d: d.update(kind="ServingRuntimes"), "is not a KServe resource"),
    ],
)  # fmt: skip
def test_validator_refuses_what_a_cluster_refuses(schema, kind, edit, message) -> None:
    doc = copy.deepcopy(_docs()[kind])
    edit(doc)
    errors = validator.validate(doc, schema, "edited")
    assert any(message in e for e in errors), errors


def test_command_line(tmp_path) -> None:
    import subprocess

    script = str(ROOT / "deploy/kserve/validate.py")
    ok = subprocess.run([sys.executable, script, *map(str, MANIFESTS)],
                        capture_output=True, text=True, timeout=120)  # fmt: skip
    if ok.returncode == 2 and "no KServe SDK wheel" in ok.stderr and not os.environ.get("CI"):
        pytest.skip(ok.stderr)
    assert ok.returncode == 0, ok.stderr
    bad = tmp_path / "bad.yaml"
    doc = copy.deepcopy(_docs()["InferenceService"])
    doc["spec"]["predictor"]["minReplica"] = 1
    bad.write_text(yaml.safe_dump(doc))
    out = subprocess.run([sys.executable, script, str(bad)],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 1 and "'minReplica' was unexpected" in out.stderr, out.stderr


def test_runtime_runs_the_real_cuvil_serve_command(tmp_path) -> None:
    """The container's args parse as `cuvil serve` options; the runtime and the service agree
    on the model format, the runtime name and the protocol, and the probes hit real routes."""
    from cuvil_ref.cli.serve_cmd import serve_command

    docs = _docs()
    container = docs["ServingRuntime"]["spec"]["containers"][0]
    args = container["args"]
    assert args[0] == "serve"
    key = tmp_path / "release.pub"  # the secret's mount point exists in the pod, not here
    key.write_text("")
    local = [str(key) if a == "/etc/cuvil/keys/release.pub" else a for a in args[1:]]
    ctx = serve_command.make_context("serve", local)
    assert ctx.params["http_port"] == 8080 and ctx.params["host"] == "0.0.0.0"
    assert ctx.params["trusted_keys"] == (str(key),) and ctx.params["poll_interval"] == 0
    model = docs["InferenceService"]["spec"]["predictor"]["model"]
    formats = {f["name"] for f in docs["ServingRuntime"]["spec"]["supportedModelFormats"]}
    assert model["modelFormat"]["name"] in formats
    assert model["runtime"] == docs["ServingRuntime"]["metadata"]["name"]
    assert model["protocolVersion"] in docs["ServingRuntime"]["spec"]["protocolVersions"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"
