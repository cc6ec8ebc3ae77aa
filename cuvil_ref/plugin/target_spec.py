"""Target specs: what ``target=`` accepts — a name, a dict, or a JSON file.

A dict or JSON file follows the brief (section 2.5)::

    {"target": "nvidia/nvrtc", "arch": "cuda", "features": ["tensor_core", "sm_90"],
     "options": {"loop_unroll_factor": 4}}

``target`` is a target name or alias; when it is neither, ``arch`` names the target.
``TargetSpec.to_json`` (what ``cm.save`` records in an artifact's ``meta.json``) adds
``requested``, the name the user asked for; a spec read back from it keeps that name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cuvil_ref.errors import TargetError
from cuvil_ref.ir.frozen import FrozenDict

_SPEC_KEYS = {"target", "requested", "arch", "features", "options"}


@dataclass(frozen=True)
class TargetSpec:
    """A resolved target request. ``name`` is the canonical target name once resolved."""

    name: str
    requested: str = ""
    arch: str | None = None
    features: tuple[str, ...] = ()
    options: FrozenDict = field(default_factory=FrozenDict)

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.name,
            "requested": self.requested or self.name,
            "arch": self.arch,
            "features": list(self.features),
            "options": dict(self.options),
        }


def parse_target_spec(target: str | Mapping[str, Any] | TargetSpec) -> TargetSpec:
    """Turn a name, dict or JSON-file path into an (unresolved) TargetSpec."""
    if isinstance(target, TargetSpec):
        return target
    if isinstance(target, str):
        if target.endswith(".json") or os.path.sep in target and os.path.exists(target):
            return _from_file(target)
        return TargetSpec(name=target, requested=target)
    if isinstance(target, Mapping):
        return _from_dict(dict(target), "target dict")
    raise TargetError(
        f"target must be a name, a dict or a JSON file path, got {type(target).__name__}"
    )


def _from_file(path: str) -> TargetSpec:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise TargetError(f"target spec file {path!r} does not exist") from None
    except json.JSONDecodeError as exc:
        raise TargetError(f"target spec file {path!r} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise TargetError(f"target spec file {path!r} must hold a JSON object")
    return _from_dict(data, f"target spec file {path!r}")


def _from_dict(data: dict[str, Any], where: str) -> TargetSpec:
    unknown = set(data) - _SPEC_KEYS
    if unknown:
        raise TargetError(
            f"{where}: unknown keys {sorted(unknown)}; a target spec has {sorted(_SPEC_KEYS)}"
        )
    name = data.get("target") or data.get("arch")
    if not isinstance(name, str) or not name:
        raise TargetError(f"{where}: needs a 'target' name (or an 'arch')")
    features = data.get("features", [])
    if not isinstance(features, (list, tuple)) or not all(isinstance(f, str) for f in features):
        raise TargetError(f"{where}: 'features' must be a list of strings, got {features!r}")
    options = data.get("options", {})
    if not isinstance(options, dict):
        raise TargetError(f"{where}: 'options' must be an object, got {options!r}")
    arch = data.get("arch")
    if arch is not None and not isinstance(arch, str):
        raise TargetError(f"{where}: 'arch' must be a string, got {arch!r}")
    requested = data.get("requested", name)
    if not isinstance(requested, str) or not requested:
        raise TargetError(f"{where}: 'requested' must be a target name, got {requested!r}")
    return TargetSpec(name, requested, arch, tuple(features), FrozenDict(options))
