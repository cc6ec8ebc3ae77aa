"""The plugin host: discovers kernel packs, isolates broken ones, resolves targets.

Packs are found through the entry-point group ``cuvil.kernelpacks``. The process-wide host
(``get_host``) imports a pack only when it is needed: resolving a target loads the pack whose
entry point is named like the target (``ref``, ``cpu``...) and, if that does not provide it,
every pack; reading the table of packs (``packs``, ``target_names``, ``cuvil targets``) loads
them all. So compiling for ``ref`` does not import ninety packs. Each entry point is loaded
inside a try block; a failure is recorded as a :class:`PackRecord` with the error and shown by
``cuvil targets``, and never stops other packs. The built-in ``ref`` target is registered through
the same entry point; when ``cuvil_ref`` runs from a source tree that was never installed (no
entry points), the host registers ``cuvil_ref.plugin.ref_target`` itself so ``ref`` always exists.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pluggy

from cuvil_ref.errors import TargetError
from cuvil_ref.ir.frozen import FrozenDict
from cuvil_ref.plugin import hookspecs
from cuvil_ref.plugin.target_spec import TargetSpec, parse_target_spec
from cuvil_ref.plugin.types import Availability, OptionSpec, TargetInfo

ENTRY_POINT_GROUP = "cuvil.kernelpacks"


@dataclass
class PackRecord:
    """One installed pack as the host sees it."""

    name: str
    module: str
    version: str = "?"
    plugin: Any = None
    error: str | None = None
    targets: list[TargetInfo] = field(default_factory=list)


def api_compatible(pack_version: str, host_version: str = hookspecs.PLUGIN_API_VERSION) -> bool:
    """Same MAJOR, pack MINOR <= host MINOR."""
    try:
        pmaj, pmin = (int(x) for x in pack_version.split("."))
        hmaj, hmin = (int(x) for x in host_version.split("."))
    except ValueError:
        return False
    return pmaj == hmaj and pmin <= hmin


class PluginHost:
    """Owns the pluggy PluginManager and the table of targets."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self._packs: list[PackRecord] = []
        self._pending: list[md.EntryPoint] = []  # found, not loaded yet (``defer_entry_points``)
        self._seen_ref = False
        self._load_lock = threading.RLock()
        self._targets: dict[str, tuple[TargetInfo, PackRecord]] = {}
        self._aliases: dict[str, str] = {}
        self._availability: dict[str, Availability] = {}

    # -- loading -----------------------------------------------------------------------------
    def load_entry_points(self) -> None:
        """Find and load every installed pack now."""
        self.defer_entry_points()
        self._load_pending()

    def defer_entry_points(self) -> None:
        """Find the installed packs without importing them; each is loaded when first needed
        (see the module docstring)."""
        with self._load_lock:
            self._pending.extend(md.entry_points(group=ENTRY_POINT_GROUP))

    def _load_pending(self, name: str | None = None) -> None:
        """Load the deferred packs: only the one whose entry point is ``name`` if given (none
        when there is no such entry point), else all of them, then the built-in ``ref`` if no
        entry point provided it."""
        with self._load_lock:
            chosen = [ep for ep in self._pending if name is None or ep.name == name]
            for ep in chosen:
                self._pending.remove(ep)
                self._load(ep)
            if not self._pending and not self._seen_ref:
                from cuvil_ref import __version__
                from cuvil_ref.plugin import ref_target

                self._seen_ref = True
                record = PackRecord("ref", "cuvil_ref.plugin.ref_target", __version__)
                self.register(ref_target, record)

    def _load(self, ep: md.EntryPoint) -> None:
        if ep.name == "ref":
            self._seen_ref = True
        version = ep.dist.version if ep.dist is not None else "?"
        record = PackRecord(name=ep.name, module=ep.value, version=version)
        try:
            plugin = ep.load()
        except Exception as exc:  # an import-time failure must not break other packs
            record.error = f"import failed: {type(exc).__name__}: {exc}"
            self._packs.append(record)
            return
        self.register(plugin, record)

    @property
    def packs(self) -> list[PackRecord]:
        """Every installed pack (loading the deferred ones), in load order."""
        self._load_pending()
        return self._packs

    def register(self, plugin: Any, record: PackRecord) -> PackRecord:
        """Register one pack object/module (also used by tests for in-process packs)."""
        self._packs.append(record)
        record.plugin = plugin
        try:
            self.pm.register(plugin, name=record.name)
        except Exception as exc:
            record.error = f"registration failed: {type(exc).__name__}: {exc}"
            return record
        try:
            impl = getattr(plugin, "cuvil_plugin_api_version", None)
            version = impl() if impl is not None else "1.0"
            if not api_compatible(str(version)):
                raise TargetError(
                    f"built for plugin API {version}, this cuvil-ref provides "
                    f"{hookspecs.PLUGIN_API_VERSION} (same major, minor <= host's is required)"
                )
            infos: list[Any] = getattr(plugin, "cuvil_targets", lambda: [])() or []
        except Exception as exc:
            record.error = f"{type(exc).__name__}: {exc}"
            self.pm.unregister(plugin)
            return record
        for info in infos:
            if info.name in self._targets:
                other = self._targets[info.name][1].name
                record.error = f"target '{info.name}' is already provided by pack '{other}'"
                continue
            record.targets.append(info)
            self._targets[info.name] = (info, record)
            for alias in info.aliases:
                self._aliases.setdefault(alias, info.name)
        return record

    # -- queries -----------------------------------------------------------------------------
    def target_names(self) -> list[str]:
        self._load_pending()
        return sorted(self._targets)

    def info(self, name: str) -> TargetInfo:
        return self._entry(name)[0]

    def pack_of(self, name: str) -> PackRecord:
        return self._entry(name)[1]

    def _entry(self, name: str) -> tuple[TargetInfo, PackRecord]:
        if name not in self._targets:
            self._load_pending()
        return self._targets[name]

    def _lookup(self, spec: TargetSpec) -> str | None:
        name = spec.name if spec.name in self._targets else self._aliases.get(spec.name)
        if name is None and spec.arch:
            name = spec.arch if spec.arch in self._targets else self._aliases.get(spec.arch)
        return name

    def resolve(self, target: str | Mapping[str, Any] | TargetSpec) -> TargetSpec:
        """Resolve a user's target request to a TargetSpec with a canonical name and options."""
        spec = parse_target_spec(target)
        name = self._lookup(spec)
        if name is None and self._pending:
            self._load_pending(spec.name)  # the pack named like the target, if there is one
            name = self._lookup(spec)
            if name is None:
                self._load_pending()
                name = self._lookup(spec)
        if name is None:
            raise TargetError(
                f"unknown target '{spec.requested or spec.name}'; installed targets: "
                f"{', '.join(self.target_names()) or 'none'} (install a kernel pack, e.g. "
                "`pip install cuvil-kernels-cuda`, to add targets)"
            )
        info = self.info(name)
        features = spec.features or info.features
        resolved = replace(spec, name=name, features=tuple(features), arch=spec.arch or info.arch)
        options = self.validate_options(resolved, dict(spec.options))
        return replace(resolved, options=FrozenDict(options))

    def validate_options(self, spec: TargetSpec, options: dict[str, Any]) -> dict[str, Any]:
        result = self._call("cuvil_validate_options", spec, target=spec, options=dict(options))
        if result is not None:
            return dict(result)
        return validate_with_specs(spec.name, self.info(spec.name).options, options)

    def availability(self, spec: TargetSpec) -> Availability:
        if spec.name not in self._availability:
            try:
                result = self._call("cuvil_target_available", spec, target=spec)
            except TargetError as exc:
                result = Availability(False, str(exc))
            self._availability[spec.name] = result or Availability(True, "", "")
        return self._availability[spec.name]

    def call(self, hook: str, spec: TargetSpec, **kwargs: Any) -> Any:
        """Call a per-target hook on the pack that owns ``spec`` only."""
        return self._call(hook, spec, **kwargs)

    def _call(self, hook: str, spec: TargetSpec, **kwargs: Any) -> Any:
        record = self.pack_of(spec.name)
        others = [
            r.plugin
            for r in self._packs
            if r is not record and r.plugin is not None and self.pm.is_registered(r.plugin)
        ]
        # Only the owning pack is asked, so a broken pack cannot disturb another's target.
        caller = self.pm.subset_hook_caller(hook, remove_plugins=others)
        try:
            return caller(**kwargs)
        except TargetError:
            raise
        except Exception as exc:
            raise TargetError(
                f"kernel pack '{record.name}' (target '{spec.name}') failed in {hook}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc


def validate_with_specs(
    target: str, specs: tuple[OptionSpec, ...], options: dict[str, Any]
) -> dict[str, Any]:
    """Check options against OptionSpecs: unknown names, types, ranges, choices; fill defaults."""
    known = {s.name: s for s in specs}
    for key in options:
        if key not in known:
            accepted = ", ".join(sorted(known)) or "none"
            raise TargetError(
                f"target '{target}' has no option '{key}'; accepted options: {accepted}"
            )
    out: dict[str, Any] = {}
    for s in specs:
        value = options.get(s.name, s.default)
        if s.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, s.type) or (s.type is int and isinstance(value, bool)):
            raise TargetError(
                f"target '{target}': option '{s.name}' must be {s.type.__name__}, got {value!r}"
            )
        if s.choices is not None and value not in s.choices:
            raise TargetError(
                f"target '{target}': option '{s.name}' = {value!r} is not one of {list(s.choices)}"
            )
        if isinstance(value, (int, float)) and (
            (s.minimum is not None and value < s.minimum)
            or (s.maximum is not None and value > s.maximum)
        ):
            raise TargetError(
                f"target '{target}': option '{s.name}' = {value!r} is outside "
                f"[{s.minimum}, {s.maximum}]"
            )
        out[s.name] = value
    return out


_HOST: PluginHost | None = None
_LOCK = threading.Lock()


def get_host() -> PluginHost:
    """The process-wide host; it finds the entry points on first use and loads each pack when
    it is needed."""
    global _HOST
    with _LOCK:
        if _HOST is None:
            host = PluginHost()
            host.defer_entry_points()
            _HOST = host
        return _HOST


def reset_host(host: PluginHost | None = None) -> None:
    """Replace the process-wide host (tests use this to install packs in-process)."""
    global _HOST
    with _LOCK:
        _HOST = host


def list_targets() -> list[dict[str, Any]]:
    """Every installed target and every pack that failed, as rows for ``cuvil targets``."""
    host = get_host()
    rows: list[dict[str, Any]] = []
    for record in host.packs:
        for info in record.targets:
            spec = TargetSpec(info.name, info.name, info.arch, info.features)
            avail = host.availability(spec)
            rows.append(
                {
                    "target": info.name,
                    "pack": record.name,
                    "version": record.version,
                    "available": avail.available,
                    "reason": avail.reason,
                    "device": avail.device,
                    "description": info.description,
                    "aliases": list(info.aliases),
                    "error": None,
                }
            )
        if record.error is not None:
            rows.append(
                {
                    "target": None,
                    "pack": record.name,
                    "version": record.version,
                    "available": False,
                    "reason": record.error,
                    "device": "",
                    "description": f"pack module {record.module}",
                    "aliases": [],
                    "error": record.error,
                }
            )
    return rows


def import_object(path: str) -> Any:
    """Import ``module:attr`` or ``module``."""
    module, _, attr = path.partition(":")
    obj = importlib.import_module(module)
    return getattr(obj, attr) if attr else obj
