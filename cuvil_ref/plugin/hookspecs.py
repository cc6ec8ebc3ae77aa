"""Hook specifications: the contract between the Cuvil core and a kernel pack.

A kernel pack is a Python module (or object) registered under the entry-point group
``cuvil.kernelpacks``. It implements the hooks below with ``@cuvil_ref.plugin.hookimpl``; it need
not implement all of them. Every hook that concerns one target receives the resolved
:class:`~cuvil_ref.plugin.target_spec.TargetSpec` and **must return None for targets it does not
provide**, so several packs can coexist (pluggy calls them in turn, ``firstresult`` stops at the
first non-None answer). The built-in ``ref`` target is a plugin like any other
(``cuvil_ref.plugin.ref_target``).

Packs load lazily: the entry point is imported when targets are first listed, and importing it
must not need the pack's hardware or heavy libraries. A pack that fails to import, or whose hook
raises, is isolated: ``cuvil targets`` shows it with its error and the other targets keep working.

Versioning: :data:`PLUGIN_API_VERSION` is ``"MAJOR.MINOR"``. A pack reports the version it was
built for through :func:`cuvil_plugin_api_version`. It is compatible when its MAJOR equals the
host's and its MINOR is not greater than the host's (hooks are only ever added in a minor
version; a change of meaning bumps MAJOR).
"""

from __future__ import annotations

from typing import Any

import pluggy

from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.plugin.target_spec import TargetSpec
from cuvil_ref.plugin.types import (
    Availability,
    ConformancePolicy,
    Executable,
    Support,
    TargetInfo,
    TargetPreferences,
)

PROJECT_NAME = "cuvil"
PLUGIN_API_VERSION = "1.1"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec(firstresult=True)
def cuvil_plugin_api_version() -> str:
    """Return the plugin API version (``"MAJOR.MINOR"``) this pack was built against.

    Called once, right after the pack is loaded. A pack that does not implement it is assumed to
    be built for ``"1.0"``. An incompatible pack (see the module docstring) is not registered; it
    is listed by ``cuvil targets`` with the reason.

    .. versionadded:: 1.0
    """


@hookspec
def cuvil_targets() -> list[TargetInfo]:
    """Return the targets this pack provides.

    Called once per process, when the pack is loaded: the host loads a pack when a target named
    like its entry point is resolved, or all packs when a target no loaded pack provides is
    resolved or the targets are listed. Names must be unique across installed packs; a clash is
    reported and the target of the pack loaded later is ignored. Must be cheap and must not
    touch the hardware (availability is a separate hook).

    .. versionadded:: 1.0
    """


@hookspec(firstresult=True)
def cuvil_target_available(target: TargetSpec) -> Availability | None:
    """Return whether ``target`` can run on this machine, and if not, why.

    Return None if ``target`` is not one of this pack's. May probe the device (import the device
    library, query drivers); the result is cached per process. An unavailable target is listed by
    ``cuvil targets`` with the reason, and compiling for it raises ``TargetError`` with the reason.
    A simulated device (e.g. Numba's CUDA simulator) is *available* with ``device`` saying so.

    .. versionadded:: 1.0
    """


@hookspec(firstresult=True)
def cuvil_validate_options(target: TargetSpec, options: dict[str, Any]) -> dict[str, Any] | None:
    """Validate and complete the target options (``loop_unroll_factor`` and the like).

    Return the options with defaults filled in, or None if ``target`` is not yours. Raise
    ``cuvil_ref.errors.TargetError`` naming the option, the value, and what is accepted for an
    unknown or invalid option. If no pack answers, the host validates against the
    :class:`OptionSpec` list in :class:`TargetInfo`.

    .. versionadded:: 1.0
    """


@hookspec(firstresult=True)
def cuvil_preferences(target: TargetSpec) -> TargetPreferences | None:
    """Return what the target wants from the optimizer (layout, passes to add or skip).

    Called once per compilation, before the optimization passes run. None: not your target
    (or no preference, for your own target, is expressed by ``TargetPreferences()``).

    .. versionadded:: 1.0
    """


@hookspec(firstresult=True)
def cuvil_supports_node(target: TargetSpec, node: Node, graph: Graph) -> Support | None:
    """Say whether ``target`` can execute ``node`` of ``graph`` (after optimization).

    Return ``Support.yes()``, ``Support.no(reason)`` — the reason is shown in
    ``cm.report()["partitions"]["fallback"]`` — or None if ``target`` is not yours. Nodes no
    pack supports run on the ``ref`` target unless the user passed ``fallback="error"``.
    Be exact: claiming a node means the pack will reproduce the interpreter's result (bit-exact
    for integer and quantized ops, within the documented bound for floats).

    .. versionadded:: 1.0
    """


@hookspec(firstresult=True)
def cuvil_lower_partition(
    target: TargetSpec, graph: Graph, options: dict[str, Any]
) -> Executable | None:
    """Lower one partition to an :class:`Executable`.

    ``graph`` contains only nodes the pack said it supports; its inputs are the values that
    cross into the partition (numpy arrays at run time) and its outputs those that leave it.
    ``options`` are the validated target options plus ``"opt_level"`` and ``"memory_plan"``: a
    :class:`~cuvil_ref.passes.memory_plan.MemoryPlan` made for this partition graph after
    partitioning (arena offsets of its intermediates and outputs, lifetimes in this graph's node
    order, pointwise ops in place over a dying input, views sharing their input's bytes). Use it
    as given: it is exact for the partition. Return None if ``target`` is not yours. Called once
    per partition per compilation; the Executable is reused for every call of the compiled module.

    .. versionadded:: 1.0
    .. versionchanged:: 1.1
       ``memory_plan`` is planned per partition (it was planned for the whole graph).
    """


@hookspec(firstresult=True)
def cuvil_conformance_policy(target: TargetSpec) -> ConformancePolicy | None:
    """Declare loosened tolerances or skipped cases for ``target``, each with a written reason.

    The conformance report shows every deviation with its reason; an op or case that is skipped
    is reported as skipped, never as passed. None: not your target, or the default policy.

    .. versionadded:: 1.0
    """
