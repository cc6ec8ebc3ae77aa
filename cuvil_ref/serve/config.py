"""A model's ``config.json`` (or ``config.toml``): what the server does with its versions.

Every field is optional; the defaults serve the artifact as it was compiled, one instance, no
batching, the latest version. A bad field is refused with :class:`ConfigError` naming the file,
the field and what is accepted -- never a traceback. The reference is ``docs/serving.md``::

    {
      "target": "ref",                   # default: the target recorded in the artifact
      "options": {},                     # the target's options (validated by its pack)
      "opt_level": 2,                    # default: the artifact's
      "max_batch_size": 8,               # 0: no batching; requests carry the full shape
      "inputs": [{"name": "INPUT0"}],    # protocol names for the model's inputs, in order
      "outputs": [{"name": "OUTPUT0"}],
      "dynamic_batching": {"max_queue_delay_us": 500, "preferred_batch_size": [4, 8],
                           "max_queue_size": 128, "default_timeout_us": 0},
      "shape_buckets": [{"input": "INPUT0", "dim": 1, "sizes": [16, 32, 64], "pad_value": 0,
                         "outputs": {"OUTPUT0": 1}}],
      "instance_count": 1,
      "version_policy": {"latest": 1},   # or {"specific": [1, 3]} or "all"
      "preprocess": [{"op": "normalize", "mean": [...], "std": [...], "scale": 0.0039}],
      "postprocess": [{"op": "softmax"}, {"op": "topk", "k": 5}],
      "warmup": true,
      "rollout": {"steps": [1, 10, 50, 100], ...}   # canary and rollback: rollout/policy.py
    }
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cuvil_ref.serve.errors import ConfigError

if TYPE_CHECKING:
    from cuvil_ref.serve.rollout.policy import RolloutPolicy

CONFIG_NAMES = ("config.json", "config.toml")


@dataclass(frozen=True)
class Bucket:
    """Pad dimension ``dim`` of input ``input`` up to the next of ``sizes``; strip outputs back."""

    input: str
    dim: int
    sizes: tuple[int, ...]
    pad_value: float = 0.0
    outputs: Mapping[str, int] = field(default_factory=dict)

    def size_for(self, n: int) -> int | None:
        """The smallest bucket size that holds ``n``, or None when ``n`` exceeds them all."""
        return next((s for s in self.sizes if s >= n), None)


@dataclass(frozen=True)
class DynamicBatching:
    """The batcher's window, preferred sizes, queue bound and default deadline."""

    max_queue_delay_us: int = 0
    preferred_batch_size: tuple[int, ...] = ()
    max_queue_size: int = 128
    default_timeout_us: int = 0


@dataclass(frozen=True)
class VersionPolicy:
    """Which versions to serve: the ``latest`` N, a ``specific`` list, or all of them."""

    kind: str = "latest"  # "latest" | "specific" | "all"
    latest: int = 1
    specific: tuple[int, ...] = ()

    def select(self, versions: list[int]) -> list[int]:
        ordered = sorted(versions)
        if self.kind == "all":
            return ordered
        if self.kind == "specific":
            return [v for v in ordered if v in self.specific]
        return ordered[-self.latest :]


@dataclass(frozen=True)
class ModelConfig:
    """The validated configuration of one model of the repository."""

    name: str
    path: str | None = None
    target: Any = None
    options: Mapping[str, Any] = field(default_factory=dict)
    opt_level: int | None = None
    max_batch_size: int = 0
    inputs: tuple[str, ...] | None = None
    outputs: tuple[str, ...] | None = None
    dynamic_batching: DynamicBatching = field(default_factory=DynamicBatching)
    shape_buckets: tuple[Bucket, ...] = ()
    instance_count: int = 1
    version_policy: VersionPolicy = field(default_factory=VersionPolicy)
    preprocess: tuple[Mapping[str, Any], ...] = ()
    postprocess: tuple[Mapping[str, Any], ...] = ()
    warmup: bool = True
    rollout: RolloutPolicy = field(default_factory=lambda: _default_policy())
    ray: Mapping[str, Any] = field(default_factory=dict)  # Ray Serve deployment options

    def to_json(self) -> dict[str, Any]:
        """The config as written by ``add_model`` (only what differs from the defaults)."""
        out: dict[str, Any] = {"name": self.name}
        if self.target is not None:
            out["target"] = self.target
        if self.options:
            out["options"] = dict(self.options)
        if self.opt_level is not None:
            out["opt_level"] = self.opt_level
        out["max_batch_size"] = self.max_batch_size
        if self.inputs is not None:
            out["inputs"] = [{"name": n} for n in self.inputs]
        if self.outputs is not None:
            out["outputs"] = [{"name": n} for n in self.outputs]
        b = self.dynamic_batching
        out["dynamic_batching"] = {
            "max_queue_delay_us": b.max_queue_delay_us,
            "preferred_batch_size": list(b.preferred_batch_size),
            "max_queue_size": b.max_queue_size,
            "default_timeout_us": b.default_timeout_us,
        }
        if self.shape_buckets:
            out["shape_buckets"] = [
                {
                    "input": s.input,
                    "dim": s.dim,
                    "sizes": list(s.sizes),
                    "pad_value": s.pad_value,
                    "outputs": dict(s.outputs),
                }
                for s in self.shape_buckets
            ]
        out["instance_count"] = self.instance_count
        p = self.version_policy
        out["version_policy"] = (
            "all"
            if p.kind == "all"
            else {p.kind: p.latest if p.kind == "latest" else list(p.specific)}
        )
        if self.preprocess:
            out["preprocess"] = [dict(s) for s in self.preprocess]
        if self.postprocess:
            out["postprocess"] = [dict(s) for s in self.postprocess]
        out["warmup"] = self.warmup
        if self.rollout != _default_policy():
            out["rollout"] = self.rollout.to_json()
        if self.ray:
            out["ray"] = dict(self.ray)
        return out


def _default_policy() -> RolloutPolicy:
    from cuvil_ref.serve.rollout.policy import RolloutPolicy

    return RolloutPolicy()


class Fields:
    """Typed readers for one JSON object; every error names the file and the dotted field."""

    def __init__(self, path: object, data: Any, prefix: str, accepted: tuple[str, ...]) -> None:
        if not isinstance(data, dict):
            raise ConfigError(path, prefix or None, f"must be an object, got {_kind(data)}")
        for key in data:
            if key not in accepted:
                near = difflib.get_close_matches(str(key), accepted, n=1)
                hint = f" (did you mean '{near[0]}'?)" if near else ""
                raise ConfigError(
                    path,
                    self._join(prefix, str(key)),
                    f"unknown field{hint}; accepted fields: {', '.join(accepted)}",
                )
        self.path, self.data, self.prefix = path, data, prefix

    @staticmethod
    def _join(prefix: str, key: str) -> str:
        return f"{prefix}.{key}" if prefix else key

    def name(self, key: str) -> str:
        return self._join(self.prefix, key)

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(self.path, self.name(key), message)

    def get(self, key: str, default: Any, check: Callable[[Any], Any], what: str) -> Any:
        if key not in self.data:
            return default
        value = self.data[key]
        try:
            return check(value)
        except (TypeError, ValueError):
            raise self.error(key, f"must be {what}, got {json.dumps(value, default=str)}") from None

    def int(self, key: str, default: int, minimum: int = 0) -> int:
        def check(v: Any) -> int:
            if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
                raise ValueError
            return v

        return self.get(key, default, check, f"an integer >= {minimum}")

    def ints(self, key: str, minimum: int = 1) -> tuple[int, ...]:
        def check(v: Any) -> tuple[int, ...]:
            if not isinstance(v, list) or any(
                isinstance(x, bool) or not isinstance(x, int) or x < minimum for x in v
            ):
                raise ValueError
            return tuple(v)

        return self.get(key, (), check, f"a list of integers >= {minimum}")

    def bool(self, key: str, default: bool) -> bool:
        def check(v: Any) -> bool:
            if not isinstance(v, bool):
                raise ValueError
            return v

        return self.get(key, default, check, "true or false")

    def number(self, key: str, default: float) -> float:
        def check(v: Any) -> float:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError
            return float(v)

        return self.get(key, default, check, "a finite number")


def _opt_level(value: Any) -> int:
    if isinstance(value, bool) or value not in (0, 1, 2, 3):
        raise ValueError
    return int(value)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string"}.get(
        type(value), json.dumps(value, default=str)
    )


def _names(f: Fields, key: str) -> tuple[str, ...] | None:
    if key not in f.data:
        return None
    items = f.data[key]
    if not isinstance(items, list):
        raise f.error(key, f'must be a list of {{"name": ...}} objects, got {_kind(items)}')
    names = []
    for i, item in enumerate(items):
        sub = Fields(f.path, item, f"{f.name(key)}[{i}]", ("name",))
        n = sub.data.get("name")
        if not isinstance(n, str) or not n:
            raise sub.error("name", "must be a non-empty string")
        if n in names:
            raise sub.error("name", f"'{n}' is given twice")
        names.append(n)
    return tuple(names)


def _batching(path: object, data: Any) -> DynamicBatching:
    f = Fields(
        path,
        data,
        "dynamic_batching",
        ("max_queue_delay_us", "preferred_batch_size", "max_queue_size", "default_timeout_us"),
    )
    return DynamicBatching(
        max_queue_delay_us=f.int("max_queue_delay_us", 0),
        preferred_batch_size=tuple(sorted(f.ints("preferred_batch_size"))),
        max_queue_size=f.int("max_queue_size", 128, minimum=1),
        default_timeout_us=f.int("default_timeout_us", 0),
    )


def _bucket(path: object, data: Any, i: int) -> Bucket:
    f = Fields(path, data, f"shape_buckets[{i}]", ("input", "dim", "sizes", "pad_value", "outputs"))
    name = f.data.get("input")
    if not isinstance(name, str):
        raise f.error("input", "must name one of the model's inputs (a string)")
    if "dim" not in f.data:
        raise f.error("dim", "is required: the index of the variable dimension (>= 1)")
    dim = f.int("dim", 1, minimum=1)
    sizes = tuple(sorted(set(f.ints("sizes"))))
    if not sizes:
        raise f.error("sizes", "must list at least one bucket size, e.g. [16, 32, 64]")
    outs = f.data.get("outputs", {})
    if not isinstance(outs, dict) or any(
        not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, int) or v < 1
        for k, v in outs.items()
    ):
        raise f.error("outputs", 'must map output names to the dimension to strip, e.g. {"y": 1}')
    return Bucket(name, dim, sizes, f.number("pad_value", 0.0), dict(outs))


def _policy(path: object, data: Any) -> VersionPolicy:
    if data == "all":
        return VersionPolicy("all")
    f = Fields(path, data, "version_policy", ("latest", "specific"))
    if len(f.data) != 1:
        raise ConfigError(
            path, "version_policy", 'must be "all", {"latest": N} or {"specific": [1, 3]}'
        )
    if "latest" in f.data:
        return VersionPolicy("latest", latest=f.int("latest", 1, minimum=1))
    versions = f.ints("specific")
    if not versions:
        raise f.error("specific", "must list at least one version number")
    return VersionPolicy("specific", specific=versions)


def _steps(path: object, data: Any, key: str, ops: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    if not isinstance(data, list):
        raise ConfigError(path, key, f"must be a list of steps such as {{'op': '{ops[0]}'}}")
    for i, step in enumerate(data):
        if not isinstance(step, dict) or step.get("op") not in ops:
            got = step.get("op") if isinstance(step, dict) else step
            raise ConfigError(
                path, f"{key}[{i}].op", f"must be one of {list(ops)}, got {json.dumps(got)}"
            )
    return tuple(dict(s) for s in data)


FIELDS = (
    "name",
    "target",
    "options",
    "opt_level",
    "max_batch_size",
    "inputs",
    "outputs",
    "dynamic_batching",
    "shape_buckets",
    "instance_count",
    "version_policy",
    "preprocess",
    "postprocess",
    "warmup",
    "rollout",
    "ray",
)
#: Ray Serve deployment options a config's ``ray`` object may set (``cuvil_ref.serve.ray``).
RAY_FIELDS = ("num_replicas", "autoscaling_config", "ray_actor_options", "max_ongoing_requests")


def parse_config(data: Any, *, name: str, path: object = "<config>") -> ModelConfig:
    """Validate a config object (from JSON or TOML) for model ``name``."""
    from cuvil_ref.serve.pipeline import POSTPROCESS_OPS, PREPROCESS_OPS
    from cuvil_ref.serve.rollout.policy import parse_policy

    f = Fields(path, data, "", FIELDS)
    if "name" in f.data and f.data["name"] != name:
        raise f.error("name", f"is {json.dumps(f.data['name'])} but the model folder is '{name}'")
    target = f.data.get("target")
    if target is not None and not isinstance(target, (str, dict)):
        raise f.error("target", 'must be a target name such as "ref" or a target-spec object')
    options = f.data.get("options", {})
    if not isinstance(options, dict):
        raise f.error("options", "must be an object of target options")
    opt_level = f.get("opt_level", None, _opt_level, "0, 1, 2 or 3")
    buckets_raw = f.data.get("shape_buckets", [])
    if not isinstance(buckets_raw, list):
        raise f.error("shape_buckets", "must be a list of bucket objects")
    config = ModelConfig(
        name=name,
        path=str(path),
        target=target,
        options=dict(options),
        opt_level=opt_level,
        max_batch_size=f.int("max_batch_size", 0),
        inputs=_names(f, "inputs"),
        outputs=_names(f, "outputs"),
        dynamic_batching=_batching(path, f.data.get("dynamic_batching", {})),
        shape_buckets=tuple(_bucket(path, b, i) for i, b in enumerate(buckets_raw)),
        instance_count=f.int("instance_count", 1, minimum=1),
        version_policy=_policy(path, f.data.get("version_policy", {"latest": 1})),
        preprocess=_steps(path, f.data.get("preprocess", []), "preprocess", PREPROCESS_OPS),
        postprocess=_steps(path, f.data.get("postprocess", []), "postprocess", POSTPROCESS_OPS),
        warmup=f.bool("warmup", True),
        rollout=parse_policy(path, f.data.get("rollout", {})),
        ray=_ray(path, f.data.get("ray", {})),
    )
    big = [p for p in config.dynamic_batching.preferred_batch_size if p > config.max_batch_size]
    if big:
        raise ConfigError(
            path,
            "dynamic_batching.preferred_batch_size",
            f"{big} exceed max_batch_size {config.max_batch_size}; each preferred size must be "
            "<= max_batch_size",
        )
    return config


def _ray(path: object, data: Any) -> dict[str, Any]:
    """The ``ray`` object: Ray Serve options, checked for shape here and by Ray at deploy."""
    f = Fields(path, data, "ray", RAY_FIELDS)
    if "num_replicas" in f.data and "autoscaling_config" in f.data:
        raise f.error("autoscaling_config", "replaces num_replicas: give one of the two")
    if "num_replicas" in f.data and f.data["num_replicas"] != "auto":
        f.int("num_replicas", 1, minimum=1)
    if "max_ongoing_requests" in f.data:
        f.int("max_ongoing_requests", 1, minimum=1)
    for key in ("autoscaling_config", "ray_actor_options"):
        if key in f.data and not isinstance(f.data[key], dict):
            raise f.error(key, "must be an object of Ray Serve options")
    return dict(f.data)


def read_config(model_dir: Path) -> ModelConfig:
    """The config of the model folder ``model_dir`` (defaults when it has none)."""
    name = model_dir.name
    found = [model_dir / n for n in CONFIG_NAMES if (model_dir / n).is_file()]
    if len(found) > 1:
        raise ConfigError(model_dir, None, "has both config.json and config.toml; keep one")
    if not found:
        return ModelConfig(name=name, path=None)
    path = found[0]
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, None, f"cannot be read: {exc}") from None
    if path.suffix == ".toml":
        data = _load_toml(path, text)
    else:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(path, None, f"is not valid JSON: {exc}") from None
    return parse_config(data, name=name, path=path)


def _load_toml(path: Path, text: str) -> Any:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            raise ConfigError(
                path, None, "TOML needs Python 3.11+ (or the 'tomli' package); use config.json"
            ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, None, f"is not valid TOML: {exc}") from None
