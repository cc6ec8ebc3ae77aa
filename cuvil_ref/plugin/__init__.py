"""The kernel-pack plugin system: hook specifications, target specs, the host, partitioning.

A pack author imports from here::

    from cuvil_ref.plugin import hookimpl, TargetInfo, Availability, Support, Executable
"""

from __future__ import annotations

from cuvil_ref.plugin.hookspecs import PLUGIN_API_VERSION, hookimpl, hookspec
from cuvil_ref.plugin.target_spec import TargetSpec, parse_target_spec
from cuvil_ref.plugin.types import (
    Availability,
    ConformancePolicy,
    Executable,
    OptionSpec,
    Support,
    TargetInfo,
    TargetPreferences,
    Tolerance,
)

__all__ = [
    "PLUGIN_API_VERSION",
    "Availability",
    "ConformancePolicy",
    "Executable",
    "OptionSpec",
    "Support",
    "TargetInfo",
    "TargetPreferences",
    "TargetSpec",
    "Tolerance",
    "hookimpl",
    "hookspec",
    "parse_target_spec",
]
