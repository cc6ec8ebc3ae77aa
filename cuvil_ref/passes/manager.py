"""The pass manager: runs passes in order, times each, verifies after each, dumps IR on request.

``CUVIL_DUMP_IR=<pass>[,<pass>...]`` (or ``all``) prints the IR after the named passes to stderr
(or into the directory given by ``CUVIL_DUMP_IR_DIR``). A pass runs inside every region as well,
innermost first, unless it handles regions itself (``Pass.handles_regions``). Verification after
every pass is on when ``verify_each=True`` or ``CUVIL_VERIFY_EACH=1`` (the test suite sets it); a
pass that breaks the IR raises :class:`PassError` naming the pass and the broken node.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuvil_ref.errors import CuvilError, PassError, VerificationError
from cuvil_ref.ir.graph import Graph, Module
from cuvil_ref.ir.verifier import verify
from cuvil_ref.passes.base import Pass
from cuvil_ref.passes.regions import in_regions


def _dump_set() -> set[str]:
    raw = os.environ.get("CUVIL_DUMP_IR", "")
    return {p.strip() for p in raw.split(",") if p.strip()}


@dataclass
class PassManager:
    passes: Sequence[Pass]
    verify_each: bool | None = None
    dump_after: set[str] = field(default_factory=_dump_set)

    def run(self, module: Module) -> tuple[Module, list[dict[str, Any]]]:
        verify_each = (
            self.verify_each
            if self.verify_each is not None
            else os.environ.get("CUVIL_VERIFY_EACH", "") not in ("", "0")
        )
        graph = module.graph
        timings: list[dict[str, Any]] = []
        for p in self.passes:
            t0 = time.perf_counter()
            try:
                result = p(graph) if p.handles_regions else in_regions(p.fn)(graph)
            except CuvilError as exc:
                raise PassError(f"pass '{p.name}' failed: {exc}") from exc
            except Exception as exc:
                raise PassError(f"pass '{p.name}' crashed: {type(exc).__name__}: {exc}") from exc
            seconds = time.perf_counter() - t0
            if verify_each and result.changed:
                try:
                    verify(result.graph)
                except VerificationError as exc:
                    raise PassError(f"pass '{p.name}' produced invalid IR: {exc}") from exc
            graph = result.graph
            timings.append(
                {
                    "pass": p.name,
                    "seconds": seconds,
                    "changed": result.changed,
                    "nodes": len(graph.nodes),
                }
            )
            if p.name in self.dump_after or "all" in self.dump_after:
                self._dump(p.name, module.with_graph(graph))
        return module.with_graph(graph), timings

    def _dump(self, name: str, module: Module) -> None:
        text = f"// IR after pass '{name}'\n{module}\n"
        directory = os.environ.get("CUVIL_DUMP_IR_DIR")
        if directory:
            path = Path(directory)
            path.mkdir(parents=True, exist_ok=True)
            (path / f"{module.name}.{name}.cuvil.txt").write_text(text, encoding="utf-8")
        else:
            sys.stderr.write(text)


def run_passes(graph: Graph, passes: Sequence[Pass], verify_each: bool = True) -> Graph:
    """Convenience for tests: run passes on a bare graph, verifying after each."""
    module, _ = PassManager(passes, verify_each=verify_each, dump_after=set()).run(Module(graph))
    return module.graph
