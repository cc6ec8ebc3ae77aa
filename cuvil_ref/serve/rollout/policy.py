"""A model's rollout policy: the ``rollout`` object of its ``config.json``.

Every field is optional::

    "rollout": {
      "steps": [1, 10, 50, 100],       # canary traffic percentages, increasing, ending at 100
      "step_requests": 100,            # requests the new version must serve at each step...
      "step_seconds": 30,              # ...and the seconds each step must hold, both
      "max_error_rate": 0.005,         # new version's error rate in a step above this: pause
      "probe_interval_seconds": 5,     # health probe (the golden request) period
      "probe_timeout_seconds": 5,      # a probe slower than this fails
      "probe_failures": 3,             # consecutive failed probes that roll back
      "require_golden": false,         # refuse new versions without golden.json
      "auto": true,                    # false: every step waits for `cuvil rollout promote`
      "retry_canary_failures": true    # a request the new version fails is re-run on the old
    }
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cuvil_ref.serve.config import Fields
from cuvil_ref.serve.errors import ConfigError

FIELDS = (
    "steps",
    "step_requests",
    "step_seconds",
    "max_error_rate",
    "probe_interval_seconds",
    "probe_timeout_seconds",
    "probe_failures",
    "require_golden",
    "auto",
    "retry_canary_failures",
)


@dataclass(frozen=True)
class RolloutPolicy:
    """How a new version of a model is given traffic and when it is rolled back."""

    steps: tuple[int, ...] = (1, 10, 50, 100)
    step_requests: int = 100
    step_seconds: float = 30.0
    max_error_rate: float = 0.005
    probe_interval_seconds: float = 5.0
    probe_timeout_seconds: float = 5.0
    probe_failures: int = 3
    require_golden: bool = False
    auto: bool = True
    retry_canary_failures: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": list(self.steps),
            "step_requests": self.step_requests,
            "step_seconds": self.step_seconds,
            "max_error_rate": self.max_error_rate,
            "probe_interval_seconds": self.probe_interval_seconds,
            "probe_timeout_seconds": self.probe_timeout_seconds,
            "probe_failures": self.probe_failures,
            "require_golden": self.require_golden,
            "auto": self.auto,
            "retry_canary_failures": self.retry_canary_failures,
        }


def parse_policy(path: object, data: Any) -> RolloutPolicy:
    """Validate the ``rollout`` object; errors name the file and the field."""
    f = Fields(path, data, "rollout", FIELDS)
    d = RolloutPolicy()
    steps = f.ints("steps") if "steps" in f.data else d.steps
    if (
        not steps
        or any(s > 100 for s in steps)
        or list(steps) != sorted(set(steps))
        or steps[-1] != 100
    ):
        raise ConfigError(
            path,
            "rollout.steps",
            f"must be increasing percentages in 1..100 ending at 100, e.g. [1, 10, 50, 100]; "
            f"got {list(steps)}",
        )

    def positive(key: str, default: float) -> float:
        value = f.number(key, default)
        if value <= 0:
            raise f.error(key, f"must be > 0, got {value:g}")
        return value

    rate = f.number("max_error_rate", d.max_error_rate)
    if not 0 <= rate <= 1:
        raise f.error("max_error_rate", f"must be a fraction in [0, 1] (0.005 = 0.5%), got {rate}")
    step_seconds = f.number("step_seconds", d.step_seconds)
    if step_seconds < 0:
        raise f.error("step_seconds", f"must be >= 0, got {step_seconds:g}")
    return RolloutPolicy(
        steps=tuple(steps),
        step_requests=f.int("step_requests", d.step_requests),
        step_seconds=step_seconds,
        max_error_rate=rate,
        probe_interval_seconds=positive("probe_interval_seconds", d.probe_interval_seconds),
        probe_timeout_seconds=positive("probe_timeout_seconds", d.probe_timeout_seconds),
        probe_failures=f.int("probe_failures", d.probe_failures, minimum=1),
        require_golden=f.bool("require_golden", d.require_golden),
        auto=f.bool("auto", d.auto),
        retry_canary_failures=f.bool("retry_canary_failures", d.retry_canary_failures),
    )
