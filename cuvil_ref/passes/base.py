"""What a pass is: a function ``Graph -> PassResult`` with a name and a contract.

Passes never mutate their input; they return a new graph (or the same object when nothing
changed, with ``changed=False``). Each pass lives in its own file with a docstring saying what it
requires and what it ensures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cuvil_ref.ir.graph import Graph


@dataclass(frozen=True)
class PassResult:
    graph: Graph
    changed: bool


PassFn = Callable[[Graph], PassResult]


@dataclass(frozen=True)
class Pass:
    """A named pass. ``fn`` may be configured (e.g. the layout pass's target layout).

    The pass manager runs a pass inside every region too (``passes.regions.in_regions``) unless
    ``handles_regions`` says the function recurses into regions itself."""

    name: str
    fn: PassFn
    handles_regions: bool = False

    def __call__(self, graph: Graph) -> PassResult:
        return self.fn(graph)
