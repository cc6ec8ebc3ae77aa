"""Loading one model version: verified artifact -> pre/post-processing -> compiled instances.

The artifact passes the checks of ``verify`` (digests, the Ed25519 signature against the
trusted keys, compatibility; never executing code), is wrapped with the config's pre/post-
processing IR ops, and compiled once per instance for the config's target (or the one recorded
in the artifact), through the compile cache. Warm-up runs every instance once on zeros of the
smallest accepted shape, so the first request does not pay for lazy work; when the version has
a golden request (``golden.json``), every instance must answer it correctly. Any failure is a
:class:`~cuvil_ref.serve.verify.VersionRejected` with its reason.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cuvil_ref.errors import CuvilError
from cuvil_ref.ir.graph import Module
from cuvil_ref.serve.config import ModelConfig
from cuvil_ref.serve.errors import ConfigError
from cuvil_ref.serve.golden import Golden, GoldenMismatch
from cuvil_ref.serve.instances import Instance
from cuvil_ref.serve.repository import ModelEntry
from cuvil_ref.serve.signature import Signature
from cuvil_ref.serve.verify import VersionRejected, verify_version

log = logging.getLogger("cuvil.serve")


@dataclass
class LoadedVersion:
    """A compiled, warmed-up model version (the batcher is attached by the manager)."""

    name: str
    version: int
    config: ModelConfig
    module: Module
    signature: Signature
    instances: list[Instance]
    target: str
    report: dict[str, Any] = field(default_factory=dict)
    load_seconds: float = 0.0
    golden: Golden | None = None
    meta_sha256: str = ""
    signer: str | None = None

    @property
    def label(self) -> str:
        return f"{self.name}/{self.version}"


def artifact_target(path: Any) -> tuple[Any, int | None]:
    """The target spec and opt_level recorded in an artifact's meta.json."""
    from cuvil_ref.artifacts import artifact_info

    return recorded_target(artifact_info(path))


def recorded_target(meta: dict[str, Any]) -> tuple[Any, int | None]:
    """The target (a spec the target parser reads back, ``requested`` included) and opt_level
    recorded in ``meta``."""
    opt = (meta.get("options") or {}).get("opt_level")
    return meta.get("target"), opt if isinstance(opt, int) else None


def load_version(
    entry: ModelEntry,
    version: int,
    *,
    trusted_keys: Any = None,
    require_golden: bool = False,
) -> LoadedVersion:
    """Verify, wrap, compile and warm up ``entry``'s ``version``; errors name the file."""
    from cuvil_ref.lowering.compiler import compile_module
    from cuvil_ref.serve.pipeline import wrap_module

    start = time.perf_counter()
    config = entry.config
    path = entry.artifact(version)
    verified = verify_version(
        path, trusted_keys, target=config.target, require_golden=require_golden
    )
    recorded, recorded_opt = recorded_target(verified.meta)
    module = wrap_module(verified.module, config)
    signature = Signature(module, config)
    target = config.target if config.target is not None else (recorded or "ref")
    opt_level = config.opt_level if config.opt_level is not None else (recorded_opt or 2)
    instances = []
    for i in range(config.instance_count):
        try:
            program = compile_module(
                module, target, opt_level=opt_level, options=dict(config.options) or None
            )
        except CuvilError as exc:
            where = f"{config.path}: field 'target'" if config.target is not None else path
            raise VersionRejected(
                where, "compile", f"version {version} does not compile: {exc}"
            ) from exc
        instances.append(Instance(program, f"{entry.name}-{version}-{i}"))
    loaded = LoadedVersion(
        entry.name,
        version,
        config,
        module,
        signature,
        instances,
        instances[0].program.target.name,
        report=instances[0].program.report(),
        golden=verified.golden,
        meta_sha256=verified.meta_sha256,
        signer=verified.signer,
    )
    try:
        if config.warmup:
            warm_up(loaded)
        if loaded.golden is not None:
            check_golden(loaded)
    except ConfigError:
        for inst in instances:
            inst.close()
        raise
    loaded.load_seconds = time.perf_counter() - start
    parts = loaded.report.get("partitions", {}).get("partitions", [])
    log.info(
        "loaded %s on %s in %.2f s (%d instance(s); partitions %s%s)",
        loaded.label,
        loaded.target,
        loaded.load_seconds,
        len(instances),
        [(p["target"], p["nodes"]) for p in parts],
        "; golden request passed" if loaded.golden is not None else "",
    )
    return loaded


def warmup_inputs(loaded: LoadedVersion) -> dict[str, np.ndarray]:
    """Zeros of the smallest shape the signature accepts, by protocol name."""
    bucket_sizes = {(b.input, b.dim): b.sizes[0] for b in loaded.config.shape_buckets}
    arrays = {}
    for t in loaded.signature.inputs:
        shape = [
            d if isinstance(d, int) else bucket_sizes.get((t.name, i), 1)
            for i, d in enumerate(t.shape)
        ]
        arrays[t.name] = np.zeros(shape, dtype=t.dtype)
    return arrays


def warm_up(loaded: LoadedVersion) -> None:
    """Run each instance once on zeros of the smallest shape the signature accepts."""
    arrays = list(warmup_inputs(loaded).values())
    for inst in loaded.instances:
        try:
            inst.run_sync(arrays)
        except CuvilError as exc:
            raise ConfigError(
                loaded.config.path or loaded.label,
                "warmup",
                f"warm-up of {loaded.label} on zeros {[list(a.shape) for a in arrays]} failed: "
                f'{exc}; set "warmup": false if the model needs other sizes',
            ) from exc


def run_named(loaded: LoadedVersion, inst: Instance, inputs: dict[str, np.ndarray]) -> Any:
    """Run one request (protocol names in and out) on ``inst``, synchronously."""
    prepared = loaded.signature.prepare(inputs)
    outs = inst.run_sync(list(prepared.arrays))
    return name_outputs(loaded, outs, prepared.strip)


def name_outputs(
    loaded: LoadedVersion, outs: list[np.ndarray], strip: Any
) -> dict[str, np.ndarray]:
    """The outputs by protocol name, with bucket padding stripped."""
    result = {}
    for sig, arr in zip(loaded.signature.outputs, outs):
        if sig.name in strip:
            dim, n = strip[sig.name]
            arr = arr[(slice(None),) * dim + (slice(0, n),)]
        result[sig.name] = arr
    return result


def check_golden(loaded: LoadedVersion) -> None:
    """Every instance answers the golden request as stored, or VersionRejected('golden')."""
    golden = loaded.golden
    assert golden is not None
    for inst in loaded.instances:
        try:
            got = run_named(loaded, inst, dict(golden.inputs))
        except CuvilError as exc:
            raise VersionRejected(
                golden.path, "golden", f"{loaded.label}: the golden request fails: {exc}"
            ) from exc
        try:
            golden.check(got, loaded.label)
        except GoldenMismatch as exc:
            raise VersionRejected(golden.path, "golden", str(exc)) from None
