"""Loading one model version: verified artifact -> pre/post-processing -> compiled instances.

The artifact is loaded with its digests checked (never executing code), wrapped with the
config's pre/post-processing IR ops, and compiled once per instance for the config's target (or
the one recorded in the artifact), through the compile cache. Warm-up runs every instance once
on zeros of the smallest accepted shape, so the first request does not pay for lazy work.
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
from cuvil_ref.serve.instances import Instance
from cuvil_ref.serve.repository import ModelEntry
from cuvil_ref.serve.signature import Signature

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

    @property
    def label(self) -> str:
        return f"{self.name}/{self.version}"


def artifact_target(path: Any) -> tuple[Any, int | None]:
    """The target spec and opt_level recorded in an artifact's meta.json."""
    from cuvil_ref.artifacts import artifact_info

    meta = artifact_info(path)
    target = meta.get("target")
    if isinstance(target, dict):
        # meta.json records how the target was requested; a spec is the rest.
        target = {k: v for k, v in target.items() if k != "requested"}
    opt = (meta.get("options") or {}).get("opt_level")
    return target, opt if isinstance(opt, int) else None


def load_version(entry: ModelEntry, version: int) -> LoadedVersion:
    """Load, wrap, compile and warm up ``entry``'s ``version``; errors name the file."""
    from cuvil_ref.artifacts import load_module
    from cuvil_ref.lowering.compiler import compile_module
    from cuvil_ref.serve.pipeline import wrap_module

    start = time.perf_counter()
    config = entry.config
    path = entry.artifact(version)
    if not path.is_file():
        raise ConfigError(path, None, "is missing; each version folder holds one model.cuvilir")
    try:
        module = load_module(path)
        recorded_target, recorded_opt = artifact_target(path)
    except CuvilError as exc:
        raise ConfigError(path, None, f"cannot be loaded: {exc}") from exc
    module = wrap_module(module, config)
    signature = Signature(module, config)
    target = config.target if config.target is not None else (recorded_target or "ref")
    opt_level = config.opt_level if config.opt_level is not None else (recorded_opt or 2)
    instances = []
    for i in range(config.instance_count):
        try:
            program = compile_module(
                module, target, opt_level=opt_level, options=dict(config.options) or None
            )
        except CuvilError as exc:
            field_name = "target" if config.target is not None else None
            raise ConfigError(
                config.path or path, field_name, f"version {version} does not compile: {exc}"
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
    )
    if config.warmup:
        warm_up(loaded)
    loaded.load_seconds = time.perf_counter() - start
    parts = loaded.report.get("partitions", {}).get("partitions", [])
    log.info(
        "loaded %s on %s in %.2f s (%d instance(s); partitions %s)",
        loaded.label,
        loaded.target,
        loaded.load_seconds,
        len(instances),
        [(p["target"], p["nodes"]) for p in parts],
    )
    return loaded


def warm_up(loaded: LoadedVersion) -> None:
    """Run each instance once on zeros of the smallest shape the signature accepts."""
    sig = loaded.signature
    bucket_sizes = {(b.input, b.dim): b.sizes[0] for b in loaded.config.shape_buckets}
    arrays = []
    for t in sig.inputs:
        shape = [
            d if isinstance(d, int) else bucket_sizes.get((t.name, i), 1)
            for i, d in enumerate(t.shape)
        ]
        arrays.append(np.zeros(shape, dtype=t.dtype))
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
