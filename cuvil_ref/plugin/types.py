"""The data a kernel pack exchanges with the core: target descriptions, availability, capability
answers, preferences, conformance policy, and the :class:`Executable` a lowering returns.

All records are frozen dataclasses so a pack cannot change the host's state by mutating them.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class OptionSpec:
    """One target option: its type, default, allowed range or choices, and what it does."""

    name: str
    type: type
    default: Any
    doc: str
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None


@dataclass(frozen=True)
class TargetInfo:
    """A target a pack provides.

    ``aliases`` are other names users may give (``"nvidia/nvrtc"``); ``arch`` is matched against a
    target spec's ``arch`` field; ``options`` lists every option the target accepts.
    """

    name: str
    description: str
    aliases: tuple[str, ...] = ()
    arch: str | None = None
    features: tuple[str, ...] = ()
    options: tuple[OptionSpec, ...] = ()
    quantized_only: bool = False  # a target that only runs integer graphs (an int8 NPU)


@dataclass(frozen=True)
class Availability:
    """Whether a target can run on this machine now, and why not."""

    available: bool
    reason: str = ""
    device: str = ""  # e.g. "NVIDIA H200", "CUDA simulator", "numpy (CPU)"


@dataclass(frozen=True)
class Support:
    """A pack's answer for one node: supported, or not with the reason shown to the user."""

    supported: bool
    reason: str = ""

    @staticmethod
    def yes() -> Support:
        return Support(True)

    @staticmethod
    def no(reason: str) -> Support:
        return Support(False, reason)


@dataclass(frozen=True)
class TargetPreferences:
    """What a target wants from the optimizer before partitioning.

    ``layout``: the activation layout its kernels expect (``None`` = no preference);
    ``disable_passes``: pass names to skip; ``extra_passes``: pass names to append.
    """

    layout: str | None = None
    disable_passes: tuple[str, ...] = ()
    extra_passes: tuple[str, ...] = ()
    requires_quantize: str | None = None  # e.g. "int8" for an NPU


@dataclass(frozen=True)
class Tolerance:
    """A float bound for one op: |got - want| <= atol + rtol * |want|, or within ``ulp`` ULPs."""

    atol: float = 0.0
    rtol: float = 0.0
    ulp: int | None = None


@dataclass(frozen=True)
class ConformancePolicy:
    """A pack's declared deviations from the default conformance policy.

    Every loosened tolerance and every skip carries a written reason, shown in the report.
    ``tolerances`` maps op name -> (Tolerance, reason); ``skips`` maps op, case id or a glob
    over case ids (``fnmatch``) -> reason.
    """

    tolerances: Mapping[str, tuple[Tolerance, str]] = field(default_factory=dict)
    skips: Mapping[str, str] = field(default_factory=dict)


class Executable:
    """A lowered partition: ``run(inputs) -> outputs`` on numpy arrays (host memory).

    Subclasses implement :meth:`run`; :meth:`run_async` returns a ``concurrent.futures.Future``
    (the brief's ``launch_async``). A device pack overrides it to launch on a stream and complete
    the future from a callback. :meth:`metrics` returns pack-specific counters for the report.
    """

    _pool: concurrent.futures.ThreadPoolExecutor | None = None
    _pool_lock = threading.Lock()

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError

    def run_async(self, inputs: Sequence[np.ndarray]) -> concurrent.futures.Future:
        with Executable._pool_lock:
            if Executable._pool is None:
                Executable._pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=2, thread_name_prefix="cuvil-exec"
                )
        return Executable._pool.submit(self.run, list(inputs))

    def metrics(self) -> dict[str, Any]:
        return {}
