"""The rollout state machine of one model: pure bookkeeping, no I/O, no clock of its own.

States of a new version (``Candidate.state``)::

    loading --(verified, compiled, golden ok)--> canary step 0 --...--> canary last step (100%)
       |                                          |    ^                     |
       | (any check fails)                        |    | promote             | holds
       v                                          v    |                     v
    rejected                                    paused ----rollback-----> promoted (the stable)
                                                  |
      canary/paused --(probe_failures consecutive failed probes | signature mismatch |
                       rollback)--> rolled_back

A step advances when the new version has served ``step_requests`` requests in it, the step has
held ``step_seconds``, its error rate is within ``max_error_rate`` and the last probe passed (or
on ``promote``); above the error-rate limit the rollout pauses at its current traffic until an
operator promotes (the step starts over) or rolls back, while the probes keep running. The
controller calls these methods and turns the returned :class:`Transition` records into logs,
metrics and actions (unloading the old or the new version).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cuvil_ref.serve.rollout.policy import RolloutPolicy

STABLE, LOADING, CANARY, PAUSED = "stable", "loading", "canary", "paused"
PROMOTED, ROLLED_BACK, REJECTED = "promoted", "rolled_back", "rejected"
STATES = (STABLE, LOADING, CANARY, PAUSED, PROMOTED, ROLLED_BACK, REJECTED)


@dataclass(frozen=True)
class Transition:
    """One change of state: what the logs, the metrics and ``rollout status`` show."""

    ts: float
    model: str
    version: int
    state: str
    percent: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "ts": round(self.ts, 3),
            "version": self.version,
            "state": self.state,
            "percent": self.percent,
            "reason": self.reason,
        }


@dataclass
class Candidate:
    """The new version being rolled out and the counters of its current step."""

    version: int
    state: str = LOADING
    step: int = 0
    step_started: float = 0.0
    requests: int = 0
    errors: int = 0
    probes_failed: int = 0  # consecutive
    probes_passed: int = 0
    last_probe_ok: bool = True
    total_requests: int = 0
    total_errors: int = 0

    @property
    def error_rate(self) -> float:
        return self.errors / self.requests if self.requests else 0.0


@dataclass
class ModelRollout:
    """The stable version, the candidate (if any) and the history of one model."""

    model: str
    policy: RolloutPolicy
    stable: int | None = None
    candidate: Candidate | None = None
    previous: list[int] = field(default_factory=list)  # last good versions, newest last
    refused: dict[int, str] = field(default_factory=dict)  # version -> why it never serves
    history: list[Transition] = field(default_factory=list)

    HISTORY = 100

    # -- what the router reads ------------------------------------------------------------
    @property
    def percent(self) -> int:
        """Traffic share of the candidate (0 while loading or without one)."""
        c = self.candidate
        if c is None or c.state not in (CANARY, PAUSED):
            return 0
        return self.policy.steps[c.step]

    # -- events -----------------------------------------------------------------------------
    def _emit(self, now: float, version: int, state: str, reason: str) -> Transition:
        t = Transition(now, self.model, version, state, self.percent, reason)
        self.history.append(t)
        del self.history[: -self.HISTORY]
        return t

    def start(self, version: int, now: float) -> Transition:
        """``version`` serves all traffic from the start (loaded with the server or the model)."""
        self.stable = version
        t = Transition(now, self.model, version, STABLE, 100, "loaded; serving all traffic")
        self.history.append(t)
        return t

    def begin(self, version: int, now: float) -> Transition:
        """A new version was found on disk; it is verified and compiled next."""
        self.candidate = Candidate(version)
        return self._emit(now, version, LOADING, "found in the repository; verifying")

    def reject(self, version: int, reason: str, now: float) -> Transition:
        """The new version failed a check before serving any traffic."""
        if self.candidate is not None and self.candidate.version == version:
            self.candidate = None
        self.refused[version] = reason
        return self._emit(now, version, REJECTED, reason)

    def loaded(self, version: int, now: float) -> Transition:
        """The candidate passed every check: its first canary step begins."""
        c = self._need(version)
        c.state, c.step = CANARY, 0
        self._start_step(c, now)
        return self._emit(now, version, CANARY, "checks passed; first canary step")

    def record(self, version: int, ok: bool) -> None:
        """One request the candidate served (``ok``) or failed."""
        c = self.candidate
        if c is None or c.version != version or c.state not in (CANARY, PAUSED):
            return
        c.requests += 1
        c.total_requests += 1
        if not ok:
            c.errors += 1
            c.total_errors += 1

    def probe(self, version: int, ok: bool, detail: str, now: float) -> Transition | None:
        """A health probe's result; a rollback after ``probe_failures`` consecutive failures."""
        c = self.candidate
        if c is None or c.version != version or c.state not in (CANARY, PAUSED):
            return None
        c.last_probe_ok = ok
        if ok:
            c.probes_failed = 0
            c.probes_passed += 1
            return None
        c.probes_failed += 1
        if c.probes_failed >= self.policy.probe_failures:
            why = f"{c.probes_failed} consecutive failed health probes: {detail}"
            return self.rollback(why, now)
        return None

    def tick(self, now: float) -> Transition | None:
        """Advance, pause or finish the candidate's step as the policy says (or nothing)."""
        c = self.candidate
        if c is None or c.state != CANARY:
            return None
        p = self.policy
        if c.requests and c.error_rate > p.max_error_rate:
            c.state = PAUSED
            return self._emit(
                now,
                c.version,
                PAUSED,
                f"error rate {c.error_rate:.2%} ({c.errors}/{c.requests}) above the limit "
                f"{p.max_error_rate:.2%}; promote or roll back",
            )
        held = now - c.step_started
        if not p.auto or c.requests < p.step_requests or held < p.step_seconds:
            return None
        if not c.last_probe_ok:
            return None
        return self._advance(c, now, f"step held {c.requests} requests, {held:.1f} s")

    def promote(self, now: float, *, full: bool = False) -> Transition:
        """Operator: the next step now (resuming a paused rollout), or straight to done."""
        c = self.candidate
        if c is None or c.state not in (CANARY, PAUSED):
            raise ValueError(self._nothing("to promote"))
        c.state = CANARY
        if full:
            return self._finish(c, now, "promoted to 100% by the operator")
        return self._advance(c, now, "promoted by the operator")

    def rollback(self, reason: str, now: float) -> Transition:
        """Drop the candidate: all traffic back to the stable version."""
        c = self.candidate
        if c is None or c.state not in (CANARY, PAUSED, LOADING):
            raise ValueError(self._nothing("to roll back"))
        self.candidate = None
        self.refused[c.version] = reason
        return self._emit(now, c.version, ROLLED_BACK, reason)

    def restore(self, bad: int, good: int, reason: str, now: float) -> list[Transition]:
        """After a finished rollout: ``good`` (reloaded) replaces the stable ``bad``."""
        self.stable = good
        if good in self.previous:
            self.previous.remove(good)
        self.refused[bad] = reason
        first = self._emit(now, bad, ROLLED_BACK, reason)
        t = Transition(now, self.model, good, PROMOTED, 100, "restored as the last good version")
        self.history.append(t)
        return [first, t]

    # -- helpers ----------------------------------------------------------------------------
    def _advance(self, c: Candidate, now: float, why: str) -> Transition:
        if c.step + 1 < len(self.policy.steps):
            c.step += 1
            self._start_step(c, now)
            return self._emit(now, c.version, CANARY, why)
        return self._finish(c, now, why)

    def _finish(self, c: Candidate, now: float, why: str) -> Transition:
        """The last step (100%) held: the candidate is the stable version now."""
        if self.stable is not None:
            self.previous.append(self.stable)
        self.stable = c.version
        self.candidate = None
        t = Transition(now, self.model, c.version, PROMOTED, 100, why)
        self.history.append(t)
        return t

    def _start_step(self, c: Candidate, now: float) -> None:
        c.step_started, c.requests, c.errors = now, 0, 0

    def _need(self, version: int) -> Candidate:
        c = self.candidate
        if c is None or c.version != version:
            raise ValueError(f"model '{self.model}' is not rolling out version {version}")
        return c

    def _nothing(self, what: str) -> str:
        return f"model '{self.model}' has no rollout in progress {what} (stable: {self.stable})"

    def status(self) -> dict[str, Any]:
        c = self.candidate
        cand = None
        if c is not None:
            cand = {
                "version": c.version,
                "state": c.state,
                "step": c.step,
                "steps": list(self.policy.steps),
                "percent": self.percent,
                "step_requests": c.requests,
                "step_errors": c.errors,
                "step_error_rate": round(c.error_rate, 6),
                "requests": c.total_requests,
                "errors": c.total_errors,
                "probes_passed": c.probes_passed,
                "probes_failed_in_a_row": c.probes_failed,
            }
        return {
            "model": self.model,
            "stable": self.stable,
            "candidate": cand,
            "previous": list(self.previous),
            "refused": {str(v): r for v, r in sorted(self.refused.items())},
            "policy": self.policy.to_json(),
            "history": [t.to_json() for t in self.history],
        }
