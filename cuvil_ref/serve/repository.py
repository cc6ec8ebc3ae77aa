"""The model repository on disk: ``REPO/<model>/config.json`` + ``REPO/<model>/<N>/model.cuvilir``.

``scan_repository`` lists the models, their configs and the version folders their policy
selects. ``add_model`` populates a repository from a compiled model (``cm.save`` into the next
version folder plus a config), which is how ``cuvil compile --repo`` and the tests build one::

    REPO/
      mlp/
        config.json
        1/model.cuvilir
        2/model.cuvilir
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cuvil_ref.serve.config import ModelConfig, parse_config, read_config
from cuvil_ref.serve.errors import ConfigError

ARTIFACT = "model.cuvilir"
_MODEL_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class ModelEntry:
    """One model folder: its config, the versions on disk and those the policy serves."""

    name: str
    path: Path
    config: ModelConfig
    versions: tuple[int, ...]
    selected: tuple[int, ...]

    def artifact(self, version: int) -> Path:
        return self.path / str(version) / ARTIFACT


def scan_repository(root: str | Path) -> list[ModelEntry]:
    """Every model of the repository at ``root``; a broken model raises ConfigError."""
    root = Path(root)
    if not root.is_dir():
        raise ConfigError(
            root,
            None,
            "is not a directory; a model repository is a folder of "
            "model folders (REPO/<model>/<version>/model.cuvilir)",
        )
    entries = []
    for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        entries.append(scan_model(d))
    return entries


def scan_model(d: Path) -> ModelEntry:
    if not _MODEL_NAME.match(d.name):
        raise ConfigError(d, None, "model folder names use letters, digits, '_', '-' and '.'")
    config = read_config(d)
    versions = sorted(
        int(v.name) for v in d.iterdir() if v.is_dir() and v.name.isdigit() and int(v.name) > 0
    )
    if not versions:
        raise ConfigError(
            d, None, f"has no version folder; put the artifact in {d / '1' / ARTIFACT}"
        )
    selected = config.version_policy.select(versions)
    if not selected:
        raise ConfigError(
            config.path or d,
            "version_policy",
            f"selects none of the versions on disk {versions}",
        )
    return ModelEntry(d.name, d, config, tuple(versions), tuple(selected))


def add_model(
    repo: str | Path,
    name: str,
    model: Any,
    *,
    version: int | None = None,
    config: dict[str, Any] | None = None,
    golden: Any = None,
    **fields: Any,
) -> Path:
    """Save ``model`` (a CompiledModule, a Module or a ``.cuvilir`` path) as a new version.

    ``version`` defaults to one past the highest on disk. ``config`` (or keyword fields such
    as ``max_batch_size=8``) is validated and written to ``config.json``; without either, an
    existing config is kept. ``golden`` (the inputs of a request: an array, a tuple, or a dict by
    protocol name) records ``golden.json`` beside the artifact, its expected outputs computed by
    the reference interpreter (``golden.record_golden``). The artifact is written last, so a
    server watching the repository finds the version complete. Returns the artifact's path.
    """
    if not _MODEL_NAME.match(name):
        raise ConfigError(repo, None, f"model name {name!r}: use letters, digits, '_', '-', '.'")
    d = Path(repo) / name
    existing = (
        sorted(int(v.name) for v in d.iterdir() if v.is_dir() and v.name.isdigit())
        if d.is_dir()
        else []
    )
    if version is None:
        version = (existing[-1] + 1) if existing else 1
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ConfigError(d, None, f"version must be a positive integer, got {version!r}")
    target_dir = d / str(version)
    if (target_dir / ARTIFACT).exists():
        raise ConfigError(target_dir / ARTIFACT, None, "exists already; pick another version")
    data = dict(config or {})
    data.update(fields)
    if data or not (d / "config.json").exists():
        parsed = parse_config({**data, "name": name}, name=name, path=d / "config.json")
    else:
        parsed = None
    target_dir.mkdir(parents=True, exist_ok=True)
    path = target_dir / ARTIFACT
    if parsed is not None:
        body = parsed.to_json() if not data else {**data, "name": name}
        (d / "config.json").write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    source = None
    if isinstance(model, (str, Path)):
        from cuvil_ref.artifacts import load_module

        module = load_module(model)  # verify before copying
        source = Path(model).read_bytes()
    else:
        module = getattr(model, "module", model)
    if golden is not None:
        from cuvil_ref.serve.golden import record_golden

        record_golden(target_dir, module, parsed or read_config(d), golden)
    tmp = target_dir / f".{ARTIFACT}.tmp"
    if source is not None:
        tmp.write_bytes(source)
    else:
        model.save(str(tmp))
    tmp.replace(path)  # atomic: a watching server never sees half an artifact
    return path


def with_overrides(config: ModelConfig, **changes: Any) -> ModelConfig:
    """A copy of ``config`` with fields replaced (the CLI's per-run overrides)."""
    return replace(config, **changes)
