"""Scale-out on Ray Serve: the repository on a local Ray cluster (started here), 2 replicas per
model, answering the same requests exactly as ``cuvil serve`` does.

One module, one cluster: Ray takes a while to start on 2 cores, so everything Ray is checked
here against the session's ``cuvil serve`` child process (``server`` fixture)."""

from __future__ import annotations

import concurrent.futures
import shutil

import numpy as np
import pytest
import tritonclient.http as triton_http

ray = pytest.importorskip("ray", reason="needs Ray Serve: pip install 'cuvil-ref[ray]'")
pytestmark = pytest.mark.slow  # a Ray cluster and 6 replicas: about 2-3 min on 2 cores
pytest.importorskip("ray.serve", reason="needs Ray Serve: pip install 'cuvil-ref[ray]'")

from cuvil_ref.serve.ray import serve_application  # noqa: E402
from tests.serve.prometheus_server import free_port  # noqa: E402

MODELS = ("mlp", "mlp_top3", "resnet18")


@pytest.fixture(scope="module")
def ray_http(zoo, tmp_path_factory):
    from ray import serve

    repo = tmp_path_factory.mktemp("ray") / "repo"
    for name in MODELS:
        shutil.copytree(zoo.repo / name, repo / name)
    port = free_port()
    _start_ray()
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        app = serve_application(
            repo, defaults={"num_replicas": 2, "ray_actor_options": {"num_cpus": 0.25}}
        )
        serve.run(app, name="cuvil", route_prefix="/")
        yield f"127.0.0.1:{port}"
    finally:
        serve.shutdown()
        ray.shutdown()


def _start_ray(attempts: int = 3) -> None:
    """A local Ray cluster. The raylet gives its Python agents 15 s to come up; on a 2-core
    machine under load their imports can take longer, and the raylet then aborts -- so start
    it again, a bounded number of times."""
    for attempt in range(attempts):
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            return
        except Exception:  # Ray raises a plain Exception for "node timed out during startup"
            ray.shutdown()
            if attempt == attempts - 1:
                raise


def _infer(url: str, model: str, x: np.ndarray, name: str = "INPUT0") -> dict[str, np.ndarray]:
    client = triton_http.InferenceServerClient(url, network_timeout=120)
    datatype = "UINT8" if x.dtype == np.uint8 else "FP32"
    inp = triton_http.InferInput(name, list(x.shape), datatype)
    inp.set_data_from_numpy(x, binary_data=True)
    result = client.infer(model, [inp])
    return {o["name"]: result.as_numpy(o["name"]) for o in result.get_response()["outputs"]}


def test_two_replicas_per_model_are_running(ray_http) -> None:
    from ray import serve

    app = serve.status().applications["cuvil"]
    assert app.status == "RUNNING"
    for name in MODELS:
        dep = app.deployments[f"cuvil-{name}"]
        assert dep.status == "HEALTHY", dep
        assert dep.replica_states.get("RUNNING") == 2, dep.replica_states


def test_same_outputs_as_cuvil_serve(zoo, server, ray_http) -> None:
    rng = np.random.default_rng(3)
    cases = [
        ("mlp", "INPUT0", rng.standard_normal((1, 784)).astype(np.float32)),
        ("mlp", "INPUT0", rng.standard_normal((4, 784)).astype(np.float32)),
        ("mlp_top3", "IMAGE", rng.integers(0, 256, (2, 784), dtype=np.uint8)),
        ("resnet18", "INPUT0", zoo.inputs["resnet18"]),
    ]
    for model, name, x in cases:
        want = _infer(server.http, model, x, name)
        got = _infer(ray_http, model, x, name)
        assert set(got) == set(want), model
        for out in want:
            assert got[out].dtype == want[out].dtype, (model, out)
            assert np.array_equal(got[out], want[out]), (model, out)


def test_load_spreads_over_both_replicas(ray_http) -> None:
    from ray import serve

    x = np.random.default_rng(4).standard_normal((1, 784)).astype(np.float32)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda _: _infer(ray_http, "mlp", x)["OUTPUT0"], range(40)))
    # Concurrent requests share batches: float rows may differ in the last bits (serving.md).
    assert all(np.allclose(o, outs[0], rtol=1e-5, atol=1e-6) for o in outs)
    handle = serve.get_deployment_handle("cuvil-mlp", app_name="cuvil")
    seen: dict[str, int] = {}
    for _ in range(30):
        stats = handle.stats.remote().result(timeout_s=60)
        seen[stats["replica"]] = stats["served"]
    assert len(seen) == 2 and all(n > 0 for n in seen.values()), seen


def test_protocol_errors_match(ray_http) -> None:
    import urllib.error
    import urllib.request

    bad = b'{"inputs": [{"name": "INPUT0", "shape": [1, 3], "datatype": "FP32", "data": [1,2,3]}]}'
    req = urllib.request.Request(f"http://{ray_http}/v2/models/mlp/infer", data=bad)
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=60)
    assert err.value.code == 400 and b"does not match the model" in err.value.read()
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"http://{ray_http}/v2/models/nope", timeout=60)
    assert err.value.code == 404


def test_app_builder_for_rays_cli(zoo) -> None:
    """`serve run cuvil_ref.serve.ray:app_builder repo=... replicas=2` (docs/serving.md): the
    application builds from Ray's string arguments; a missing repo is a clear error."""
    from cuvil_ref.errors import CuvilError
    from cuvil_ref.serve.ray import app_builder

    app = app_builder({"repo": str(zoo.repo), "replicas": "2"})
    assert type(app).__name__ == "Application"
    with pytest.raises(CuvilError, match="repo=PATH"):
        app_builder({"replicas": "2"})
