"""The container image (deploy/docker/): hadolint passes, the runtime stage is what the issue
asks for (slim, non-root, HEALTHCHECK on the ready route, `cuvil` as the entry point), and its
install steps -- the build stage's COPY lines and both stages' `steps.sh` runs, read from the
Dockerfile itself -- work in a fresh virtual environment that then serves a model.

No Docker engine runs here: the steps run with the Dockerfile's paths mapped into a temporary
folder."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "docker" / "Dockerfile"


def _instructions() -> list[list[tuple[str, str]]]:
    """The Dockerfile's stages, each a list of (INSTRUCTION, arguments), continuations joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    stages: list[list[tuple[str, str]]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        op, _, args = line.partition(" ")
        if op.upper() == "FROM":
            stages.append([])
        stages[-1].append((op.upper(), args.strip()))
    return stages


def _tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is not installed (the serve-test extra installs it)")
        pytest.skip(f"needs {name} (the serve-test extra)")
    return path


def test_hadolint_passes() -> None:
    out = subprocess.run([_tool("hadolint"), str(DOCKERFILE)], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr


def test_runtime_stage() -> None:
    build, runtime = _instructions()
    assert build[0] == ("FROM", "python:3.11-slim AS build")
    assert runtime[0][1].endswith("-slim")
    ops = dict(runtime)  # the last of each instruction
    assert ops["USER"] not in ("root", "0")
    health = ops["HEALTHCHECK"]
    assert "/v2/health/ready" in health, health
    assert json.loads(ops["ENTRYPOINT"]) == ["cuvil"]
    assert json.loads(ops["CMD"])[0] == "serve"
    copies = [a for op, a in runtime if op == "COPY"]
    assert all(not c.startswith(("cuvil_ref", "kernelpacks", ".")) for c in copies), copies
    # The runtime stage installs nothing from apt (no compilers) and only the wheels.
    assert not any("apt-get" in a for op, a in runtime if op == "RUN")


@pytest.mark.slow  # a fresh virtual environment: a minute or two on 2 cores
def test_install_steps_in_a_fresh_venv(tmp_path: Path) -> None:
    build, runtime = _instructions()
    paths = {"/src": tmp_path / "src", "/wheels": tmp_path / "wheels",
             "/steps.sh": tmp_path / "steps.sh"}  # fmt: skip

    def local(arg: str) -> str:
        return str(paths.get(arg, arg))

    workdir = Path(local(dict(build)["WORKDIR"]))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    # No .pyc compilation at install: the slowest part of installing scipy and numba here.
    env = {**os.environ, "PYTHON": str(python), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "PIP_NO_COMPILE": "1"}  # fmt: skip
    env.pop("PYTHONPATH", None)
    for stage in (build, runtime):
        for op, args in stage:
            if op == "COPY" and not args.startswith("--from"):
                *sources, dest = args.split()
                target = Path(local(dest)) if dest.startswith("/") else workdir / dest
                for src in sources:
                    to = target / Path(src).name if dest.endswith("/") else target
                    if (ROOT / src).is_dir():
                        shutil.copytree(ROOT / src, to, ignore=shutil.ignore_patterns(
                            "__pycache__", "*.egg-info", "build"))  # fmt: skip
                    else:
                        to.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy(ROOT / src, to)
            elif op == "RUN":
                step = args.split("&&")[0].split()
                assert step[:2] == ["sh", "/steps.sh"], args  # every install step is steps.sh
                out = subprocess.run([local(a) for a in step], env=env, capture_output=True,
                                     text=True, timeout=600)  # fmt: skip
                assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    installed = subprocess.run([str(python), "-m", "pip", "list", "--format=json"], check=True,
                               capture_output=True, text=True, timeout=120).stdout  # fmt: skip
    names = {p["name"].lower() for p in json.loads(installed)}
    assert {"cuvil-ref", "cuvil-kernels-npu-sim", "cuvil-kernels-cpu", "uvicorn"} <= names
    assert not names & {"torch", "pytest", "ray", "tritonclient", "onnx"}, names
    # The release job's SBOM of this environment (CycloneDX, .github/workflows/release.yml).
    sbom = tmp_path / "sbom.cdx.json"
    out = subprocess.run([_tool("cyclonedx-py"), "environment", str(venv), "--of", "JSON", "-o",
                          str(sbom)], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    components = {c["name"].lower() for c in json.loads(sbom.read_text())["components"]}
    assert {"cuvil-ref", "cuvil-kernels-cpu", "numpy"} <= components, components

    # The fresh environment serves a model, as the image's CMD does (ports on loopback).
    import cuvil_ref as cuvil
    from cuvil_ref.serve.repository import add_model
    from cuvil_ref.zoo import get_model
    from tests.serve.prometheus_server import free_port

    torch = pytest.importorskip("torch")
    model, _ = get_model("mlp")
    x = torch.zeros(1, 784)
    cm = cuvil.torch.compile(model, target="ref", example_inputs=(x,))
    add_model(tmp_path / "models", "mlp", cm, inputs=[{"name": "INPUT0"}],
              outputs=[{"name": "OUTPUT0"}])  # fmt: skip
    ports = [str(free_port()) for _ in range(3)]
    cmd = [str(venv / "bin" / "cuvil"), "serve", str(tmp_path / "models"), "--access-log", ""]
    cmd += ["--http-port", ports[0], "--grpc-port", ports[1], "--metrics-port", ports[2]]
    server = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)  # fmt: skip
    base = f"http://127.0.0.1:{ports[0]}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/v2/health/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None, server.communicate(timeout=10)[1][-3000:]
            assert time.monotonic() < deadline, "the server did not get ready in 120 s"
            time.sleep(0.5)
        body = {"inputs": [{"name": "INPUT0", "shape": [1, 784], "datatype": "FP32",
                            "data": [0.0] * 784}]}  # fmt: skip
        req = urllib.request.Request(f"{base}/v2/models/mlp/infer", data=json.dumps(body).encode())
        with urllib.request.urlopen(req, timeout=30) as r:
            out = json.loads(r.read())["outputs"][0]
        want = cm(x).detach().numpy()
        assert np.allclose(np.asarray(out["data"]).reshape(out["shape"]), want, atol=1e-5)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
