"""Hot reload, canary, rejection and rollback on a real server under sustained load (loopback).

One ``cuvil serve`` process with a trusted key and hot reload serves model ``mlp`` version 1
while three tritonclient loops keep sending requests. Then, one after another, the test drops
into the repository:

2. a good new version (signed, with its golden request): it must ramp 1% -> 10% -> 50% -> 100%
   and replace version 1;
3. a version whose outputs are wrong (its golden request, recorded from the right model, fails);
4. a tampered artifact (a weight byte changed after signing);
5. an artifact signed by a key the server does not trust;
6. a version that passes every check and then fails on its device (``flaky_pack``): its requests
   are re-run on the stable version, its probes fail and it is rolled back.

Through all of it not one request may fail, versions 3-6 must never answer one, and the
server's log and metrics must show every transition.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from cuvil_ref.serve.golden import record_golden
from cuvil_ref.serve.process import ServerProcess
from cuvil_ref.serve.repository import add_model, read_config
from tests.serve.rollout.conftest import (
    NAMES,
    Load,
    compiled_artifact,
    rollout_status,
    states,
    wait_for,
)

POLICY = {
    "steps": [1, 10, 50, 100],
    "step_requests": 5,
    "step_seconds": 0.5,
    "probe_interval_seconds": 0.25,
    "probe_timeout_seconds": 10,
    "require_golden": True,
}
GOLDEN_X = np.random.default_rng(7).standard_normal((1, 784)).astype(np.float32)


@pytest.fixture(scope="module")
def served(tmp_path_factory, keys):
    root = tmp_path_factory.mktemp("rollout")
    repo = root / "repo"
    v1 = compiled_artifact(root / "v1.cuvilir", 1.0, key=keys.private)
    config = {"max_batch_size": 8, "dynamic_batching": {"max_queue_delay_us": 500}, **NAMES}
    add_model(repo, "mlp", v1, golden=GOLDEN_X, rollout=POLICY, **config)
    manual = {**POLICY, "auto": False}
    add_model(repo, "manual", v1, golden=GOLDEN_X, rollout=manual, **config)
    server = ServerProcess(
        repo,
        "--trusted-key",
        str(keys.public),
        "--poll-interval",
        "0.3",
        "--drain-timeout",
        "10",
        module="tests.serve.rollout.flaky_pack",
        env={"PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[3]), *sys.path])},
    )
    with server as s:
        yield s, repo, root


def _scrape(server) -> str:
    with urllib.request.urlopen(f"http://{server.metrics}/metrics", timeout=30) as r:
        return r.read().decode()


def _metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def _refused(version: int):
    return lambda s: str(version) in s["refused"] and s["candidate"] is None and not s["loading"]


def test_rollouts_under_sustained_load(served, keys) -> None:
    from cuvil_ref.artifacts import Container, sign_artifact

    server, repo, root = served
    config = read_config(repo / "mlp")
    load = Load(server.http, "mlp").start()
    try:
        # 2: a good version ramps through every step to 100%.
        add_model(repo, "mlp", compiled_artifact(root / "v2.cuvilir", 1.1, key=keys.private),
                  golden=GOLDEN_X)  # fmt: skip
        status = wait_for(server.http, "mlp", lambda s: s["stable"] == 2 and s["serving"] == [2])
        assert states(status, 2) == [
            ("loading", 0), ("canary", 1), ("canary", 10), ("canary", 50), ("canary", 100),
            ("promoted", 100),
        ]  # fmt: skip
        during = load.served_by()
        assert during.get("1", 0) > 0 and during.get("2", 0) > 0, during

        # 3: wrong outputs -- the golden request is the right model's answer.
        right = compiled_artifact(root / "right.cuvilir", 1.2)
        from cuvil_ref.artifacts import load_module

        record_golden(repo / "mlp" / "3", load_module(right), config, GOLDEN_X)
        add_model(repo, "mlp", compiled_artifact(root / "v3.cuvilir", -1.0, key=keys.private),
                  version=3)  # fmt: skip
        status = wait_for(server.http, "mlp", _refused(3))
        assert status["refused"]["3"].startswith("golden:"), status["refused"]

        # 4: tampered after signing: one weight byte changed.
        good = compiled_artifact(root / "v4.cuvilir", 1.3, key=keys.private)
        data = bytearray(good.read_bytes())
        with Container(good) as c:
            info = c.members["weights.bin"]
        data[info.offset + 7] ^= 0x40
        record_golden(repo / "mlp" / "4", load_module(good), config, GOLDEN_X)
        tmp = repo / "mlp" / "4" / ".model.tmp"
        tmp.write_bytes(bytes(data))
        tmp.replace(repo / "mlp" / "4" / "model.cuvilir")
        status = wait_for(server.http, "mlp", _refused(4))
        assert status["refused"]["4"].startswith("digest:"), status["refused"]

        # 5: signed by a key the server does not trust.
        rogue = compiled_artifact(root / "v5.cuvilir", 1.4)
        sign_artifact(rogue, keys.rogue_private)
        add_model(repo, "mlp", rogue, version=5, golden=GOLDEN_X)
        status = wait_for(server.http, "mlp", _refused(5))
        assert status["refused"]["5"].startswith("signature:"), status["refused"]

        # 6: passes its checks, then its device fails: retried on 2, probes fail, rolled back.
        # Probes every 2 s (the policy is read again for each new version), so the canary gets
        # traffic before the third failed probe: at 1% every 100th request goes to it.
        cfg_path = repo / "mlp" / "config.json"
        cfg = json.loads(cfg_path.read_text())
        cfg["rollout"]["probe_interval_seconds"] = 2.0
        cfg_path.write_text(json.dumps(cfg))
        from cuvil_ref.plugin.host import reset_host
        from tests.serve.rollout.flaky_pack import host_with_flaky

        reset_host(host_with_flaky())
        try:
            flaky = compiled_artifact(
                root / "v6.cuvilir",
                1.1,
                target={"target": "flaky", "options": {"fail_after": 2}},
                key=keys.private,
            )
            add_model(repo, "mlp", flaky, version=6, golden=GOLDEN_X)
        finally:
            reset_host(None)
        status = wait_for(server.http, "mlp", _refused(6))
        assert "consecutive failed health probes" in status["refused"]["6"], status["refused"]
        six = states(status, 6)
        assert six == [("loading", 0), ("canary", 1), ("paused", 1), ("rolled_back", 0)], six
        metrics = _scrape(server)
    finally:
        load.stop()

    # Zero failed requests, and only versions 1 and 2 ever answered.
    assert load.failures == [], load.failures[:5]
    counts = load.served_by()
    assert set(counts) == {"1", "2"} and sum(counts.values()) > 500, counts
    assert rollout_status(server.http, "mlp")["serving"] == [2]

    # Metrics show every transition, each refusal with its reason, the re-run requests.
    for state, version in [("canary", 2), ("promoted", 2), ("rejected", 3), ("rejected", 4),
                           ("rejected", 5), ("rolled_back", 6)]:  # fmt: skip
        got = _metric(metrics, "cuvil_rollout_transitions_total", version=str(version), state=state)
        assert got >= 1, (state, version)
    for version, reason in [(3, "golden"), (4, "digest"), (5, "signature")]:
        got = _metric(
            metrics, "cuvil_version_rejections_total", version=str(version), reason=reason
        )
        assert got == 1, (version, reason)
    assert _metric(metrics, "cuvil_canary_retries_total", model="mlp", version="6") >= 1
    assert _metric(metrics, "cuvil_health_probes_total", version="6", outcome="fail") >= 3
    assert _metric(metrics, "cuvil_rollout_traffic_percent", model="mlp", version="2") == 100

    # ...and so does the server's log, one line per transition.
    text = server.stderr_text()
    for pattern in [r"mlp version 2: canary \(1% of traffic\)", r"mlp version 2: canary \(50%",
                    r"mlp version 2: promoted", r"mlp version 3: rejected .*golden",
                    r"mlp version 4: rejected .*digest", r"mlp version 5: rejected .*signature",
                    r"mlp version 6: paused .*error rate", r"mlp/6 failed a request; retried on",
                    r"mlp version 6: rolled_back .*probes", r"unloaded mlp/1"]:  # fmt: skip
        assert re.search(pattern, text), pattern

    # The refused versions show in the model's metadata and the repository index.
    with urllib.request.urlopen(f"http://{server.http}/v2/models/mlp", timeout=30) as r:
        meta = json.loads(r.read())
    assert meta["versions"] == ["2"] and set(meta["rollout"]["refused"]) == {"3", "4", "5", "6"}


def _cuvil(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cuvil_ref.cli", *args], capture_output=True, text=True, timeout=60
    )


def test_operator_promotes_and_rolls_back_with_the_cli(served, keys) -> None:
    server, repo, root = served
    url = f"http://{server.http}"
    add_model(repo, "manual", compiled_artifact(root / "m2.cuvilir", 0.9, key=keys.private),
              golden=GOLDEN_X)  # fmt: skip
    wait_for(server.http, "manual", lambda s: (s["candidate"] or {}).get("state") == "canary")
    out = _cuvil("rollout", "status", "manual", "--url", url)
    assert out.returncode == 0, out.stderr
    assert "rolling out version 2: canary at 1%" in out.stdout, out.stdout

    out = _cuvil("rollout", "promote", "manual", "--url", url)
    assert out.returncode == 0 and "canary at 10%" in out.stdout, (out.stdout, out.stderr)
    out = _cuvil("rollout", "promote", "manual", "--full", "--url", url)
    assert out.returncode == 0 and "stable version 2" in out.stdout, (out.stdout, out.stderr)
    assert rollout_status(server.http, "manual")["serving"] == [2]

    # No rollout in progress: rollback restores the previous good version from disk.
    out = _cuvil("rollout", "rollback", "manual", "--url", url)
    assert out.returncode == 0, out.stderr
    status = rollout_status(server.http, "manual")
    assert status["stable"] == 1 and status["serving"] == [1], status
    assert states(status, 2)[-1] == ("rolled_back", 0)

    out = _cuvil("rollout", "promote", "manual", "--url", url)
    assert out.returncode == 1 and "no rollout in progress" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    out = _cuvil("rollout", "status", "nope", "--url", url)
    assert out.returncode == 1 and "unknown model 'nope'" in out.stderr, out.stderr


def test_docs_rollout_commands_run(served, keys) -> None:
    """The `cuvil rollout` block of docs/serving.md runs as written (model and address
    changed) on a manual rollout: status, one step, straight to 100%, back to the last good."""
    import shlex

    server, repo, root = served
    doc = (Path(__file__).parents[3] / "docs" / "serving.md").read_text()
    block = next(b for b in re.findall(r"```sh\n(.*?)```", doc, re.S) if "cuvil rollout" in b)
    lines = [shlex.split(line, comments=True) for line in block.strip().splitlines()]
    assert [a[:3] for a in lines] == [["cuvil", "rollout", c] for c in
                                      ("status", "promote", "promote", "rollback")]  # fmt: skip
    stable = rollout_status(server.http, "manual")["stable"]
    add_model(repo, "manual", compiled_artifact(root / "m3.cuvilir", 0.8, key=keys.private),
              golden=GOLDEN_X)  # fmt: skip
    new = wait_for(server.http, "manual", lambda s: (s["candidate"] or {}).get("state") == "canary")
    new_version = new["candidate"]["version"]
    outs = []
    for args in lines:
        args = [{"mlp": "manual", "localhost:8000": server.http}.get(a, a) for a in args[1:]]
        out = _cuvil(*args)
        assert out.returncode == 0, (args, out.stderr)
        outs.append(out.stdout)
    assert f"rolling out version {new_version}: canary at 1%" in outs[0], outs[0]
    assert "canary at 10%" in outs[1] and f"stable version {new_version}" in outs[2], outs
    status = rollout_status(server.http, "manual")
    assert status["stable"] == stable and status["serving"] == [stable], status
