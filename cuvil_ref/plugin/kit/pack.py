"""``KernelPack``: every hook of the plugin contract, generated from what makes a pack different.

A pack is its targets, one lowering table (op name -> :class:`Lowering`) and an executable
factory; optionally its availability probe, optimizer preferences, a configuration derived from
the target options, checks that apply to every node, and a conformance policy. ``KernelPack``
implements the hooks of :mod:`cuvil_ref.plugin.hookspecs` from those, each answering only for the
pack's own targets (None for any other)::

    PACK = KernelPack(
        name="acme",
        targets=(TargetInfo("acme", "Acme NPU"),),
        lowerings=LOWERINGS,
        executable=lambda request: AcmeExecutable(request.graph, request.memory_plan),
    )
    PACK.export(globals())   # module-level hooks for the entry point "acme = 'acme.plugin'"

A node is claimed when every pack-wide check passes, its op has a lowering, its first input has
one of the lowering's dtypes and the lowering's own check passes (with ``probe=True`` the kit
then also runs the lowering itself and a :class:`Decline` it raises declines the node, so a claim
never breaks on a limit only the lowering sees).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

from cuvil_ref.errors import TargetError
from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.plugin.hookspecs import PLUGIN_API_VERSION, hookimpl
from cuvil_ref.plugin.host import validate_with_specs
from cuvil_ref.plugin.kit.lowering import Check, CheckContext, Decline, Lowering, LowerRequest
from cuvil_ref.plugin.target_spec import TargetSpec
from cuvil_ref.plugin.types import (
    Availability,
    ConformancePolicy,
    Executable,
    Support,
    TargetInfo,
    TargetPreferences,
)

HOOKS = (
    "cuvil_plugin_api_version",
    "cuvil_targets",
    "cuvil_target_available",
    "cuvil_validate_options",
    "cuvil_preferences",
    "cuvil_supports_node",
    "cuvil_lower_partition",
    "cuvil_conformance_policy",
)

#: Exceptions a check or trial lowering raises on attributes it cannot handle: the node is
#: declined with the message rather than crashing partitioning.
_MALFORMED = (KeyError, ValueError, TypeError, IndexError, NotImplementedError)

PerTarget = Callable[[TargetSpec], Any]


def _always_available(target: TargetSpec) -> Availability:
    return Availability(True, "", f"{target.name} (host CPU)")


class KernelPack:
    """The hook implementations of one kernel pack (see the module docstring).

    ``available(target)`` returns an :class:`Availability` (default: available); ``preferences``
    is a :class:`TargetPreferences` or a function of the target; ``configure(target)`` builds
    the pack's configuration once per target spec (it reaches checks as ``cx.config`` and the
    factory as ``request.config``); ``validate(target, options)`` replaces the default option
    validation against ``TargetInfo.options``; ``conformance`` is a policy or a function of the
    target. With ``verify_claims`` (the default) a partition handed to the factory is first
    checked node by node, so a direct caller with a node the pack declines gets a
    ``TargetError`` with the reason, not a failure deep in a kernel.
    """

    def __init__(
        self,
        name: str,
        targets: Sequence[TargetInfo],
        lowerings: Mapping[str, Lowering],
        executable: Callable[[LowerRequest], Executable],
        *,
        available: PerTarget | None = None,
        preferences: TargetPreferences | PerTarget | None = None,
        configure: PerTarget | None = None,
        checks: Sequence[Check] = (),
        probe: bool = False,
        validate: Callable[[TargetSpec, dict[str, Any]], dict[str, Any]] | None = None,
        conformance: ConformancePolicy | PerTarget | None = None,
        verify_claims: bool = True,
    ) -> None:
        self.name = name
        self.targets = tuple(targets)
        self.lowerings = lowerings
        self.executable = executable
        self.available = available or _always_available
        self.preferences = preferences
        self.configure = configure
        self.checks = tuple(checks)
        self.probe = probe
        self.validate = validate
        self.conformance = conformance
        self.verify_claims = verify_claims
        self._infos = {t.name: t for t in self.targets}
        self._configs: dict[TargetSpec, Any] = {}

    # -- what the hooks share --------------------------------------------------------------------
    def mine(self, target: TargetSpec) -> bool:
        return target.name in self._infos

    def coverage(self) -> list[str]:
        """The ops this pack has a lowering for (each still subject to its checks)."""
        return sorted(self.lowerings)

    def config(self, target: TargetSpec) -> Any:
        """``configure(target)``, computed once per target spec."""
        if self.configure is None:
            return None
        try:
            return self._configs[target]
        except KeyError:
            value = self._configs[target] = self.configure(target)
            return value
        except TypeError:  # an unhashable option value: no caching
            return self.configure(target)

    def context(self, target: TargetSpec, graph: Graph) -> CheckContext:
        return CheckContext(graph, target, self.config(target))

    def reason(self, node: Node, cx: CheckContext) -> str | None:
        """None when the pack claims ``node``, else the reason it declines."""
        try:
            if self.probe:
                self.lower(node, cx)
            else:
                self.checked(node, cx)
        except Decline as exc:
            return str(exc)
        return None

    def checked(self, node: Node, cx: CheckContext) -> Lowering:
        """The lowering of ``node`` once every check passed (pack-wide checks, the table, the
        first input's dtype, the lowering's check); raises :class:`Decline` with the reason."""
        lowering = self.lowerings.get(node.op)
        try:
            for check in self.checks:
                reason = check(node, cx)
                if reason:
                    raise Decline(reason)
            if lowering is None:
                count = len(self.lowerings)
                raise Decline(f"op '{node.op}' has no {self.name} lowering ({count} ops have one)")
            if lowering.dtypes is not None and node.inputs:
                first = node.inputs[0]
                if first.type.dtype not in lowering.dtypes:
                    accepted = ", ".join(sorted(d.value for d in lowering.dtypes))
                    raise Decline(
                        f"dtype {first.type.dtype.value} of %{first.name} is not supported for "
                        f"{node.op} (accepted: {accepted})"
                    )
            reason = lowering.check(node, cx)
            if reason:
                raise Decline(reason)
        except _MALFORMED as exc:
            raise Decline(f"cannot lower '{node.op}': {type(exc).__name__}: {exc}") from exc
        return lowering

    def lower(self, node: Node, cx: CheckContext) -> Any:
        """What ``node``'s lowering returns, called as ``lower(node, cx)`` after every check; raises
        :class:`Decline` with the reason a claim would give. A pack that lowers a partition
        node by node (``probe=True``) calls this, so it declines exactly what it never claims."""
        lowering = self.checked(node, cx)
        try:
            return lowering.lower(node, cx)
        except _MALFORMED as exc:
            raise Decline(f"cannot lower '{node.op}': {type(exc).__name__}: {exc}") from exc

    def export(self, namespace: MutableMapping[str, Any]) -> None:
        """Define every hook in ``namespace`` (a plugin module's ``globals()``), so the module
        named by the pack's entry point carries them for pluggy."""
        for hook in HOOKS:
            namespace[hook] = getattr(self, hook)

    # -- the hooks -------------------------------------------------------------------------------
    @hookimpl
    def cuvil_plugin_api_version(self) -> str:
        return PLUGIN_API_VERSION

    @hookimpl
    def cuvil_targets(self) -> list[TargetInfo]:
        return list(self.targets)

    @hookimpl
    def cuvil_target_available(self, target: TargetSpec) -> Availability | None:
        return self.available(target) if self.mine(target) else None

    @hookimpl
    def cuvil_validate_options(
        self, target: TargetSpec, options: dict[str, Any]
    ) -> dict[str, Any] | None:
        if not self.mine(target):
            return None
        if self.validate is not None:
            return self.validate(target, options)
        return validate_with_specs(target.name, self._infos[target.name].options, options)

    @hookimpl
    def cuvil_preferences(self, target: TargetSpec) -> TargetPreferences | None:
        if not self.mine(target):
            return None
        prefs = self.preferences
        if callable(prefs):
            return prefs(target)
        return prefs or TargetPreferences()

    @hookimpl
    def cuvil_supports_node(self, target: TargetSpec, node: Node, graph: Graph) -> Support | None:
        if not self.mine(target):
            return None
        reason = self.reason(node, self.context(target, graph))
        return Support.yes() if reason is None else Support.no(reason)

    @hookimpl
    def cuvil_lower_partition(
        self, target: TargetSpec, graph: Graph, options: dict[str, Any]
    ) -> Executable | None:
        if not self.mine(target):
            return None
        from cuvil_ref.passes.memory_plan import plan_memory

        if self.verify_claims:
            cx = self.context(target, graph)
            for node in graph.nodes:
                reason = self.reason(node, cx)
                if reason is not None:
                    raise TargetError(
                        f"target '{target.name}' cannot lower {node.describe()}: {reason} (the "
                        "partitioner sends such nodes to 'ref')"
                    )
        rest = {k: v for k, v in options.items() if k != "memory_plan"}
        # The host plans each partition; a direct caller without a plan gets the same one.
        plan = options.get("memory_plan") or plan_memory(graph)
        return self.executable(LowerRequest(target, graph, rest, plan, self.config(target)))

    @hookimpl
    def cuvil_conformance_policy(self, target: TargetSpec) -> ConformancePolicy | None:
        if not self.mine(target) or self.conformance is None:
            return None
        policy = self.conformance
        return policy(target) if callable(policy) else policy
