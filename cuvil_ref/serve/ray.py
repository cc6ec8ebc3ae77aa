"""Scale-out on Ray Serve: a model repository as Ray Serve deployments.

When one machine is not enough, the repository runs on an existing distributed engine instead
of a home-made one. ``serve_application(repo)`` builds a Ray Serve application of

* one deployment per model (``cuvil-<model>``): each replica loads the model exactly as
  ``cuvil serve`` does -- verified artifact, signature against the trusted keys, compiled
  instances, warm-up, golden request -- and runs requests through the same dynamic batcher;
  replicas, autoscaling and actor resources come from the model config's ``ray`` object;
* one ingress deployment (``cuvil-ingress``) serving the same Open Inference Protocol routes
  over HTTP as ``cuvil serve`` (the same Starlette app, JSON and binary tensors): it decodes and
  validates a request against the model's signature, hands the arrays to a replica through a
  Ray Serve deployment handle, and encodes the answer.

::

    "ray": {"num_replicas": 2}                      # or "autoscaling_config": {...}
    "ray": {"autoscaling_config": {"min_replicas": 1, "max_replicas": 8,
                                   "target_ongoing_requests": 4},
            "ray_actor_options": {"num_cpus": 1}}

Run it with ``serve run cuvil_ref.serve.ray:app_builder repo=REPO`` (Ray's own CLI) or from
Python: ``serve.run(serve_application("repo"))``. Rolling out a new version on Ray is Ray
Serve's own rolling update (``serve run`` / ``serve deploy`` again); the canary controller of
``cuvil serve`` is for a single server, KServe's ``canaryTrafficPercent`` for Kubernetes.
Needs ``pip install 'cuvil-ref[ray]'``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from cuvil_ref.errors import CuvilError
from cuvil_ref.serve import errors as serve_errors
from cuvil_ref.serve.config import ModelConfig
from cuvil_ref.serve.errors import ConfigError, ModelNotReady, ServeError
from cuvil_ref.serve.manager import InferResult, ModelManager, ModelState, Served, outcome_of
from cuvil_ref.serve.metrics import ServerMetrics
from cuvil_ref.serve.repository import ModelEntry, scan_model, scan_repository
from cuvil_ref.serve.telemetry import Telemetry


def _ray_serve() -> Any:
    try:
        from ray import serve
    except ImportError:
        raise CuvilError("serving on Ray needs Ray Serve: pip install 'cuvil-ref[ray]'") from None
    return serve


def deployment_options(config: ModelConfig, defaults: dict[str, Any] | None = None) -> dict:
    """Ray Serve options of a model's deployment: ``defaults`` overridden by the config's
    ``ray`` object. ``max_ongoing_requests`` defaults to what the batcher can hold, so Ray
    does not cap the batches below ``max_batch_size``."""
    opts = dict(defaults or {})
    if {"num_replicas", "autoscaling_config"} & set(config.ray):
        # The model's own way of scaling replaces the application's default one.
        opts.pop("num_replicas", None)
        opts.pop("autoscaling_config", None)
    opts.update(config.ray)
    if "num_replicas" in opts and "autoscaling_config" in opts:
        raise ConfigError(
            config.path or config.name,
            "ray",
            "the defaults give both num_replicas and autoscaling_config; use one",
        )
    batch = max(1, config.max_batch_size) * config.instance_count
    opts.setdefault("max_ongoing_requests", config.dynamic_batching.max_queue_size + batch)
    return opts


class ModelReplica:
    """A replica of one model: the ``cuvil serve`` model stack (loader, batcher) for it."""

    async def __init__(
        self, repo: str, model: str, trusted_keys: list[bytes] | None, blas_threads: int = 1
    ) -> None:
        keys = _keys(trusted_keys)
        if blas_threads:
            # As in `cuvil serve`: instances are the unit of parallelism, and the same BLAS
            # thread count gives the same float bits as the single server.
            from threadpoolctl import threadpool_limits

            self._blas = threadpool_limits(limits=blas_threads, user_api="blas")
        self.model = model
        self.manager = ModelManager(
            repo, ServerMetrics(), Telemetry(access_log=None), trusted_keys=keys
        )
        entry = scan_model(Path(repo) / model)
        await self.manager.add_model(entry, exit_on_error=True)
        self.manager.loaded = True
        self.served = 0
        self.replica = _replica_id()

    async def infer(
        self, version: str | None, arrays: dict[str, np.ndarray], timeout_s: float | None
    ) -> dict[str, Any]:
        """Run one request; errors come back as data (class name, message) for the ingress."""
        try:
            result = await self.manager.infer(
                self.model, version, lambda served: arrays, protocol="ray", timeout_s=timeout_s
            )
        except ServeError as exc:
            return {"error": type(exc).__name__, "message": str(exc), "retry": exc.retry_after}
        self.served += 1
        return {"version": result.served.loaded.version, "outputs": result.outputs}

    def stats(self) -> dict[str, Any]:
        """Which replica this is and how many requests it served."""
        return {"replica": self.replica, "served": self.served}

    def check_health(self) -> None:
        if not self.manager.ready:
            raise ModelNotReady(f"model '{self.model}' has no ready version")


def _keys(pems: list[bytes] | None) -> list[Any] | None:
    """Trusted keys travel to the replicas as PEM bytes (they need not see the key files)."""
    if not pems:
        return None
    from cuvil_ref.artifacts.signing import load_public_key

    return [load_public_key(k) for k in pems]


def _replica_id() -> str:
    try:
        from ray import serve

        return str(serve.get_replica_context().replica_id)
    except Exception:  # outside a replica (tests calling the class directly)
        return "local"


class FrontManager(ModelManager):
    """The ingress's model manager: signatures only (nothing compiled); ``infer`` hands the
    decoded arrays to the model's replicas."""

    def __init__(self, repo: str | Path, handles: dict[str, Any], keys: Any) -> None:
        super().__init__(repo, ServerMetrics(), Telemetry(access_log=None), trusted_keys=keys)
        self.handles = handles

    async def add_model(self, entry: ModelEntry, *, exit_on_error: bool = False) -> ModelState:
        from cuvil_ref.serve.loader import LoadedVersion, recorded_target
        from cuvil_ref.serve.pipeline import wrap_module
        from cuvil_ref.serve.rollout.state import ModelRollout
        from cuvil_ref.serve.signature import Signature
        from cuvil_ref.serve.verify import verify_version

        state = self.models.setdefault(entry.name, ModelState(entry))
        state.rollout = ModelRollout(entry.name, entry.config.rollout)
        for v in entry.selected:
            verified = verify_version(
                entry.artifact(v), self.trusted_keys, target=entry.config.target
            )
            module = wrap_module(verified.module, entry.config)
            recorded, _ = recorded_target(verified.meta)
            target = entry.config.target or recorded or "ref"
            name = target if isinstance(target, str) else str(target.get("target"))
            loaded = LoadedVersion(
                entry.name, v, entry.config, module, Signature(module, entry.config), [], name
            )
            state.versions[v] = Served(loaded, None)  # type: ignore[arg-type]
        state.rollout.stable = max(state.versions)
        return state

    async def infer(
        self,
        name: str,
        version: str | None,
        decode: Any,
        *,
        protocol: str,
        request_id: str = "",
        timeout_s: float | None = None,
        headers: Any = None,
    ) -> InferResult:
        start = time.monotonic()
        outcome = "success"
        served: Served | None = None
        try:
            served = self.resolve(name, version)
            arrays = decode(served)
            served.loaded.signature.prepare(arrays)  # 400s answered here, not on a replica
            answer = await self.handles[name].infer.remote(version, arrays, timeout_s)
            if "error" in answer:
                cls = getattr(serve_errors, answer["error"], ServeError)
                raise cls(answer["message"], retry_after=answer.get("retry"))
            served = self.resolve(name, str(answer["version"]))
            return InferResult(served, answer["outputs"], request_id)
        except ServeError as exc:
            outcome = outcome_of(exc)
            raise
        finally:
            labels = (name, str(served.loaded.version) if served else (version or ""))
            self.metrics.requests.labels(*labels, protocol, outcome).inc()
            self.metrics.request_seconds.labels(*labels).observe(time.monotonic() - start)

    def record_latency(self, result: InferResult, arrival: float) -> None:
        return None  # observed in infer


class Ingress:
    """The Open Inference Protocol over HTTP, in front of the model deployments."""

    async def __init__(
        self, repo: str, handles: dict[str, Any], trusted_keys: list[bytes] | None
    ) -> None:
        self.manager = FrontManager(repo, handles, _keys(trusted_keys))
        await self.manager.load_all(exit_on_error=True)

    def __serve_build_asgi_app__(self) -> Any:
        from cuvil_ref.serve.http_api import build_app

        return build_app(self.manager)


def serve_application(
    repo: str | Path,
    *,
    trusted_keys: list[str | Path] | None = None,
    defaults: dict[str, Any] | None = None,
    blas_threads: int = 1,
) -> Any:
    """The Ray Serve application serving every model of ``repo`` (``serve.run(app)``).

    ``defaults`` are Ray Serve deployment options for every model (e.g. ``{"num_replicas": 2,
    "ray_actor_options": {"num_cpus": 0.5}}``); a model config's ``ray`` object overrides them.
    """
    serve = _ray_serve()
    repo = str(Path(repo).resolve())
    keys = [Path(k).read_bytes() for k in trusted_keys or ()]
    replica = serve.deployment(ModelReplica)
    handles = {}
    for entry in scan_repository(repo):
        opts = deployment_options(entry.config, defaults)
        handles[entry.name] = replica.options(name=f"cuvil-{entry.name}", **opts).bind(
            repo, entry.name, keys or None, blas_threads
        )
    ingress = serve.deployment(serve.ingress()(Ingress)).options(
        name="cuvil-ingress", ray_actor_options={"num_cpus": 0}
    )
    return ingress.bind(repo, handles, keys or None)


def app_builder(args: dict[str, str]) -> Any:
    """For Ray's CLI: ``serve run cuvil_ref.serve.ray:app_builder repo=REPO [replicas=N]
    [trusted_key=PATH]``."""
    if "repo" not in args:
        raise CuvilError("give the model repository: serve run ... repo=PATH")
    defaults: dict[str, Any] = {}
    if "replicas" in args:
        defaults["num_replicas"] = int(args["replicas"])
    keys = [args["trusted_key"]] if args.get("trusted_key") else None
    return serve_application(args["repo"], trusted_keys=keys, defaults=defaults)
