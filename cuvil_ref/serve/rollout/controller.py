"""Hot reload and rollouts: the server's watcher, canary driver, health prober and rollback.

One asyncio task beside the listeners. Every ``poll_interval`` seconds it polls the repository:

* a new version folder (higher than the stable version, selected by the version policy) whose
  artifact has not changed between two polls is verified (``verify``: digests, signature,
  compatibility), compiled and checked against its golden request off the event loop, then
  enters the canary steps of its model's rollout policy (``state``); a failed check rejects it
  with the reason -- logged, counted (``cuvil_version_rejections_total``), shown in metadata --
  and it never serves;
* a new model folder is loaded and serves at once (there is nothing to compare it with);
* a loaded version whose artifact changed on disk is verified again: one that no longer
  verifies (tampered, re-signed by an untrusted key) is rolled back if it is the new version,
  and the last good version is restored if it is the stable one.

Several times a second it advances the rollouts (``ModelRollout.tick``) and runs each loaded
version's health probe (its golden request through its own batcher) when due. After a
promotion the versions the version policy no longer selects are unloaded, each only once its
queued and running requests have finished. Every transition is logged on ``cuvil.serve.rollout``
and counted in ``cuvil_rollout_transitions_total``; ``cuvil_rollout_traffic_percent`` holds the
split.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import Any

from cuvil_ref.errors import CuvilError
from cuvil_ref.serve.errors import ConfigError, ServeError
from cuvil_ref.serve.manager import ModelManager, ModelState
from cuvil_ref.serve.repository import ARTIFACT, scan_model
from cuvil_ref.serve.rollout.state import PROMOTED, ROLLED_BACK, ModelRollout, Transition
from cuvil_ref.serve.verify import VersionRejected, verify_version

log = logging.getLogger("cuvil.serve.rollout")

TICK_SECONDS = 0.1


class RolloutConflict(ServeError):
    """An operator action that does not apply now (no rollout to promote, nothing to restore)."""

    http_status = 409
    grpc_code = "FAILED_PRECONDITION"


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


class RolloutController:
    """Watches the repository of ``manager`` and drives every model's rollout."""

    def __init__(
        self, manager: ModelManager, *, poll_interval: float = 2.0, drain_timeout: float = 30.0
    ) -> None:
        self.manager = manager
        self.poll_interval = poll_interval
        self.drain_timeout = drain_timeout
        self._seen: dict[Path, tuple[int, int] | None] = {}  # artifact -> stat at the last poll
        self._loaded: dict[tuple[str, int], tuple[int, int] | None] = {}  # stat when loaded
        self._refused: dict[tuple[str, int], tuple[int, int] | None] = {}  # stat when refused
        self._busy: set[str] = set()  # models with a load, restore or re-verification running
        self._probing: set[tuple[str, int]] = set()
        self._next_probe: dict[tuple[str, int], float] = {}
        self._stable_failures: dict[tuple[str, int], int] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._main: asyncio.Task[None] | None = None

    # -- life cycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Record what the manager loaded at start-up and begin watching."""
        now = time.time()
        for name, state in self.manager.models.items():
            self._adopt(name, state, now)
        self._main = asyncio.get_running_loop().create_task(self._run(), name="rollouts")

    async def stop(self) -> None:
        """Stop watching; let running unloads finish their requests (up to the drain timeout)."""
        if self._main is not None:
            self._main.cancel()
            await asyncio.gather(self._main, return_exceptions=True)
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=self.drain_timeout)
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _adopt(self, name: str, state: ModelState, now: float) -> None:
        r = state.rollout
        if r is None:
            return
        for v in state.versions:
            self._loaded[(name, v)] = _stat(self._artifact(name, v))
        for v in r.refused:
            self._refused[(name, v)] = _stat(self._artifact(name, v))
        if r.stable is not None:
            self._record(r.start(r.stable, now))
        self._set_traffic(name)

    def _artifact(self, name: str, version: int) -> Path:
        return self.manager.repo / name / str(version) / ARTIFACT

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            log.error("rollout task failed: %s", exc, exc_info=exc)

    async def _run(self) -> None:
        next_poll = 0.0
        while True:
            now = time.monotonic()
            if self.poll_interval > 0 and now >= next_poll:
                next_poll = now + self.poll_interval
                try:
                    self.poll()
                except OSError as exc:  # the repository folder went away, permissions...
                    log.error("cannot poll the repository %s: %s", self.manager.repo, exc)
            self.tick()
            self._probe_due(now)
            await asyncio.sleep(TICK_SECONDS)

    # -- transitions ------------------------------------------------------------------------
    def _record(self, t: Transition) -> None:
        self.manager.metrics.transitions.labels(t.model, str(t.version), t.state).inc()
        level = logging.WARNING if t.state in (ROLLED_BACK, "rejected", "paused") else logging.INFO
        log.log(
            level,
            "rollout %s version %d: %s (%d%% of traffic): %s",
            t.model,
            t.version,
            t.state,
            t.percent,
            t.reason,
        )
        self._set_traffic(t.model)

    def _set_traffic(self, name: str) -> None:
        state = self.manager.models.get(name)
        if state is None or state.rollout is None:
            return
        r = state.rollout
        pct = r.percent
        cand = r.candidate.version if r.candidate else None
        for v in state.versions:
            share = pct if v == cand else (100 - pct if v == r.stable else 0)
            self.manager.metrics.traffic.labels(name, str(v)).set(share)

    # -- watching ---------------------------------------------------------------------------
    def poll(self) -> None:
        """One look at the repository: new models, new versions, changed artifacts."""
        root = self.manager.repo
        for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
            name = d.name
            if name in self._busy:
                continue
            versions = self._settled_versions(d)
            state = self.manager.models.get(name)
            if state is None:
                if versions:
                    self._busy.add(name)
                    self._spawn(self._new_model(d))
                continue
            self._check_changed(name, state)
            self._forget_replaced_refusals(name, state)
            r = state.rollout
            if r is None or r.candidate is not None:
                continue
            stable = r.stable or 0
            fresh = [v for v in versions if v > stable and v not in r.refused]
            fresh = [v for v in fresh if v not in state.versions]
            if fresh and state.entry is not None:
                fresh = state.entry.config.version_policy.select(fresh) or []
            if fresh:
                self._busy.add(name)
                self._spawn(self._roll_out(d, max(fresh)))

    def _settled_versions(self, d: Path) -> list[int]:
        """Version folders whose artifact exists and did not change since the last poll."""
        out = []
        for v in d.iterdir():
            if not (v.is_dir() and v.name.isdigit() and int(v.name) > 0):
                continue
            path = v / ARTIFACT
            st = _stat(path)
            before = self._seen.get(path)
            self._seen[path] = st
            if st is not None and st == before:
                out.append(int(v.name))
        return sorted(out)

    def _forget_replaced_refusals(self, name: str, state: ModelState) -> None:
        """A refused version whose artifact was replaced gets another chance."""
        r = state.rollout
        assert r is not None
        for v in list(r.refused):
            key = (name, v)
            if key in self._refused and _stat(self._artifact(name, v)) != self._refused[key]:
                log.info("%s/%d: artifact replaced since it was refused; checking again", name, v)
                del r.refused[v]
                del self._refused[key]
                state.failed.pop(v, None)

    def _check_changed(self, name: str, state: ModelState) -> None:
        for v in list(state.versions):
            key = (name, v)
            if key in self._loaded and _stat(self._artifact(name, v)) != self._loaded[key]:
                self._loaded[key] = _stat(self._artifact(name, v))
                self._busy.add(name)
                self._spawn(self._reverify(name, v))

    async def _new_model(self, d: Path) -> None:
        name = d.name
        try:
            entry = await asyncio.get_running_loop().run_in_executor(None, scan_model, d)
            state = await self.manager.add_model(entry)
            self._adopt(name, state, time.time())
            log.info("new model %s: serving versions %s", name, sorted(state.versions))
        except ConfigError as exc:
            log.error("new model folder %s cannot be served: %s", d, exc)
            self.manager.models.pop(name, None)
        finally:
            self._busy.discard(name)

    async def _roll_out(self, d: Path, version: int) -> None:
        """Verify, compile and check ``version``, then start its canary."""
        name = d.name
        state = self.manager.models[name]
        r = state.rollout
        assert r is not None
        try:
            try:
                entry = await asyncio.get_running_loop().run_in_executor(None, scan_model, d)
            except ConfigError as exc:
                self.manager.metrics.rejections.labels(name, str(version), "config").inc()
                self._reject(name, r, version, VersionRejected(exc.path, "config", str(exc)))
                return
            r.policy = entry.config.rollout
            state.entry = entry
            self._record(r.begin(version, time.time()))
            try:
                served = await self.manager.load(entry, version)
            except ConfigError as exc:
                self._reject(name, r, version, exc)
                return
            if r.candidate is None or r.candidate.version != version:  # rolled back meanwhile
                await served.batcher.close(self.drain_timeout)
                return
            state.versions[version] = served
            self._loaded[(name, version)] = _stat(self._artifact(name, version))
            self._record(r.loaded(version, time.time()))
        finally:
            self._busy.discard(name)

    def _reject(self, name: str, r: ModelRollout, version: int, exc: ConfigError) -> None:
        reason = exc.reason if isinstance(exc, VersionRejected) else "config"
        self._refused[(name, version)] = _stat(self._artifact(name, version))
        self.manager.models[name].failed[version] = f"{reason}: {exc}"
        self._record(r.reject(version, f"{reason}: {exc}", time.time()))

    async def _reverify(self, name: str, version: int) -> None:
        state = self.manager.models[name]
        served = state.versions.get(version)
        try:
            if served is None:
                return
            loop = asyncio.get_running_loop()
            path = self._artifact(name, version)
            try:
                verified = await loop.run_in_executor(
                    None,
                    lambda: verify_version(
                        path, self.manager.trusted_keys, target=served.loaded.config.target
                    ),
                )
            except ConfigError as exc:
                verdict, detail = "tampered", str(exc)
            else:
                same = verified.meta_sha256 == served.loaded.meta_sha256
                verdict = "touched" if same else "replaced"
                detail = "verifies" + ("" if same else " but differs from the loaded copy")
            self.manager.metrics.artifact_changes.labels(name, str(version), verdict).inc()
            if verdict != "tampered":
                log.warning(
                    "%s/%d: artifact changed on disk and %s; still serving the copy verified at "
                    "load (versions are immutable: add a new version folder)",
                    name,
                    version,
                    detail,
                )
                return
            await self._fail_version(name, version, f"signature mismatch on disk: {detail}")
        finally:
            self._busy.discard(name)

    async def _fail_version(self, name: str, version: int, reason: str) -> None:
        """Roll back the candidate ``version``, or restore the last good one if it is stable."""
        r = self.manager.models[name].rollout
        assert r is not None
        if r.candidate is not None and r.candidate.version == version:
            self._record(r.rollback(reason, time.time()))
            self._refused[(name, version)] = _stat(self._artifact(name, version))
            await self.manager.unload(name, version, self.drain_timeout)
        elif r.stable == version and r.previous:
            await self._restore(name, reason)
        else:
            log.error(
                "%s/%d: %s; no earlier good version to restore, so it keeps serving the copy "
                "verified at load",
                name,
                version,
                reason,
            )

    async def _restore(self, name: str, reason: str) -> None:
        """Reload the last good version and give it all traffic; unload the stable one."""
        state = self.manager.models[name]
        r = state.rollout
        assert r is not None and r.stable is not None
        bad = r.stable
        while r.previous:
            good = r.previous[-1]
            if good in state.versions:
                break
            try:
                entry = await asyncio.get_running_loop().run_in_executor(
                    None, scan_model, self.manager.repo / name
                )
                served = await self.manager.load(entry, good)
            except ConfigError as exc:
                log.error("%s: cannot restore version %d: %s", name, good, exc)
                r.previous.pop()
                continue
            state.versions[good] = served
            self._loaded[(name, good)] = _stat(self._artifact(name, good))
            break
        else:
            raise RolloutConflict(f"model '{name}': no earlier good version can be restored")
        for t in r.restore(bad, good, reason, time.time()):
            self._record(t)
        self._refused[(name, bad)] = _stat(self._artifact(name, bad))
        await self.manager.unload(name, bad, self.drain_timeout)

    # -- canary steps -----------------------------------------------------------------------
    def tick(self) -> None:
        now = time.time()
        for name, state in list(self.manager.models.items()):
            r = state.rollout
            if r is None:
                continue
            t = r.tick(now)
            if t is None:
                continue
            self._record(t)
            if t.state == PROMOTED:
                self._spawn(self._after_promotion(name))

    async def _after_promotion(self, name: str) -> None:
        """Unload the versions the version policy no longer selects (after their requests)."""
        state = self.manager.models[name]
        r = state.rollout
        if state.entry is None or r is None:
            return
        keep = set(state.entry.config.version_policy.select(sorted(state.versions)))
        keep.add(r.stable)  # type: ignore[arg-type]
        for v in sorted(set(state.versions) - keep):
            await self.manager.unload(name, v, self.drain_timeout)
        self._set_traffic(name)

    # -- health probes ----------------------------------------------------------------------
    def _probe_due(self, now: float) -> None:
        for name, state in list(self.manager.models.items()):
            r = state.rollout
            if r is None:
                continue
            for v, served in list(state.versions.items()):
                key = (name, v)
                if key in self._probing or now < self._next_probe.get(key, 0.0):
                    continue
                self._next_probe[key] = now + r.policy.probe_interval_seconds
                self._probing.add(key)
                self._spawn(self._probe(name, v, served, r.policy.probe_timeout_seconds))

    async def _probe(self, name: str, version: int, served: Any, timeout: float) -> None:
        key = (name, version)
        try:
            ok, detail = await self.manager.run_golden(served, timeout)
        finally:
            self._probing.discard(key)
        state = self.manager.models.get(name)
        if state is None or state.versions.get(version) is not served or state.rollout is None:
            return  # unloaded meanwhile
        r = state.rollout
        self.manager.metrics.probes.labels(name, str(version), "pass" if ok else "fail").inc()
        if not ok:
            log.warning("health probe of %s/%d failed: %s", name, version, detail)
        if r.candidate is not None and r.candidate.version == version:
            t = r.probe(version, ok, detail, time.time())
            if t is not None:
                self._record(t)
                self._refused[key] = _stat(self._artifact(name, version))
                await self.manager.unload(name, version, self.drain_timeout)
            return
        if version != r.stable:
            return
        fails = 0 if ok else self._stable_failures.get(key, 0) + 1
        self._stable_failures[key] = fails
        if fails >= r.policy.probe_failures and r.previous and name not in self._busy:
            self._busy.add(name)
            try:
                await self._restore(name, f"{fails} consecutive failed health probes: {detail}")
            except RolloutConflict as exc:
                log.error("%s", exc)
            finally:
                self._busy.discard(name)

    # -- operator actions -------------------------------------------------------------------
    def _rollout(self, name: str) -> ModelRollout:
        state = self.manager.models.get(name)
        if state is None or state.rollout is None:
            known = ", ".join(sorted(self.manager.models)) or "none"
            from cuvil_ref.serve.errors import ModelNotFound

            raise ModelNotFound(f"unknown model '{name}'; the repository serves: {known}")
        return state.rollout

    def status(self, name: str) -> dict[str, Any]:
        r = self._rollout(name)
        state = self.manager.models[name]
        doc = r.status()
        doc["serving"] = sorted(state.versions)
        doc["loading"] = name in self._busy
        return doc

    async def promote(self, name: str, *, full: bool = False) -> dict[str, Any]:
        r = self._rollout(name)
        try:
            t = r.promote(time.time(), full=full)
        except ValueError as exc:
            raise RolloutConflict(str(exc)) from None
        self._record(t)
        if t.state == PROMOTED:
            await self._after_promotion(name)
        return self.status(name)

    async def rollback(self, name: str) -> dict[str, Any]:
        r = self._rollout(name)
        if r.candidate is not None:
            version = r.candidate.version
            self._record(r.rollback("rolled back by the operator", time.time()))
            self._refused[(name, version)] = _stat(self._artifact(name, version))
            with contextlib.suppress(KeyError):
                await self.manager.unload(name, version, self.drain_timeout)
            return self.status(name)
        if not r.previous:
            raise RolloutConflict(
                f"model '{name}' has no rollout in progress and no earlier good version to "
                f"roll back to (stable: {r.stable})"
            )
        if name in self._busy:
            raise RolloutConflict(f"model '{name}' is loading a version; try again shortly")
        self._busy.add(name)
        try:
            await self._restore(name, "rolled back by the operator")
        except CuvilError as exc:
            raise RolloutConflict(str(exc)) from None
        finally:
            self._busy.discard(name)
        return self.status(name)
