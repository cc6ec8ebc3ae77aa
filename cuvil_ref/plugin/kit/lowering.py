"""The lowering record every pack uses, and what its functions receive.

A pack's lowering table maps op names to :class:`Lowering` records; its keys are the pack's
coverage. A record says which dtypes the op's first input may have, how to ``check`` the rest of
a node (the reason to decline, or None) and how to ``lower`` it. ``lower`` is the pack's own
business -- emit device launches, generate a kernel source, build an NPU program -- and the kit
only calls it when the pack asks for a trial lowering (``KernelPack(probe=True)``), passing the
same :class:`CheckContext` as ``check``.

A check or a lowering declines a node by returning the reason (checks) or raising
:class:`Decline` (lowerings); either way the user sees the reason in the partition report.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cuvil_ref.errors import TargetError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.passes.memory_plan import MemoryPlan
from cuvil_ref.plugin.target_spec import TargetSpec


class Decline(Exception):  # noqa: N818  (a decision, not a failure)
    """Raised by a lowering (or a check) to decline a node; the message is the reason."""


@dataclass(frozen=True)
class CheckContext:
    """What a check sees besides the node: its graph, the target and the pack's configuration.

    ``config`` is whatever the pack's ``configure(target)`` returned (a device description, a
    kernel-options record...); None when the pack has none.
    """

    graph: Graph
    target: TargetSpec
    config: Any = None

    def is_constant(self, index: int, node: Node) -> bool:
        """Whether input ``index`` of ``node`` is a graph constant."""
        return index < len(node.inputs) and node.inputs[index].name in self.graph.constants


Check = Callable[[Node, CheckContext], "str | None"]


def no_check(node: Node, cx: CheckContext) -> str | None:
    """The default check: nothing beyond the dtype of the first input."""
    return None


@dataclass(frozen=True)
class Lowering:
    """How one op runs on a pack.

    ``lower``: the pack's lowering function (its signature is the pack's own). ``dtypes``: the
    dtypes the node's first input may have (None: any). ``check``: the reason to decline a node
    the dtypes admit, or None.
    """

    lower: Callable[..., Any]
    dtypes: frozenset[DType] | None = None
    check: Check = field(default=no_check)


LoweringTable = Mapping[str, Lowering]


@dataclass(frozen=True)
class LowerRequest:
    """One partition to lower, as the kit hands it to the pack's executable factory.

    ``options`` are the validated target options plus ``opt_level``; ``memory_plan`` is the plan
    made for this partition graph (its intermediates and outputs at arena offsets, in this
    graph's node order, views sharing their input's bytes): use it as given.
    """

    target: TargetSpec
    graph: Graph
    options: Mapping[str, Any]
    memory_plan: MemoryPlan
    config: Any = None

    @property
    def opt_level(self) -> int:
        return int(self.options.get("opt_level", 2))


@contextlib.contextmanager
def lowering_node(target: str, node: Node) -> Iterator[None]:
    """Turn any failure while lowering ``node`` into a :class:`TargetError` naming the node, its
    source line and the target (a :class:`Decline` here means the claim was wrong)."""
    try:
        yield
    except TargetError:
        raise
    except Decline as exc:
        raise TargetError(
            f"target '{target}' cannot lower {node.describe()}: {exc} (it claimed the node; "
            "the claim and the lowering disagree)"
        ) from exc
    except Exception as exc:
        raise TargetError(
            f"target '{target}' failed to lower {node.describe()}: {type(exc).__name__}: {exc}"
        ) from exc
