"""A kernel pack whose device "fails" after a few runs: the test's stand-in for a version that
passes its checks at load (warm-up, golden request) and then turns unhealthy while it is a
canary -- the case health probes exist for. Target ``flaky`` runs the reference interpreter;
option ``fail_after`` (runs per executable that succeed) is recorded in the artifact like any
target option.

``python -m tests.serve.rollout.flaky_pack serve REPO ...`` is ``cuvil`` with this pack
installed (the server under test runs in its own process)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CuvilError
from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.plugin import Availability, Executable, OptionSpec, Support, TargetInfo, hookimpl
from cuvil_ref.plugin.host import PackRecord, PluginHost
from cuvil_ref.plugin.ref_target import RefExecutable


class FlakyExecutable(Executable):
    def __init__(self, graph: Graph, fail_after: int) -> None:
        self.inner = RefExecutable(graph)
        self.fail_after = fail_after
        self.runs = 0

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        self.runs += 1
        if self.runs > self.fail_after:
            raise CuvilError(f"flaky device lost after {self.fail_after} runs")
        return self.inner.run(inputs)


class FlakyPack:
    @hookimpl
    def cuvil_targets(self) -> list[TargetInfo]:
        return [
            TargetInfo(
                "flaky",
                "the reference interpreter on a device that fails after a few runs",
                options=(OptionSpec("fail_after", int, 2, "runs that succeed", minimum=0),),
            )
        ]

    @hookimpl
    def cuvil_target_available(self, target: Any) -> Availability | None:
        return Availability(True, device="flaky") if target.name == "flaky" else None

    @hookimpl
    def cuvil_supports_node(self, target: Any, node: Node, graph: Graph) -> Support | None:
        return Support.yes() if target.name == "flaky" else None

    @hookimpl
    def cuvil_lower_partition(
        self, target: Any, graph: Graph, options: dict[str, Any]
    ) -> Executable | None:
        if target.name != "flaky":
            return None
        return FlakyExecutable(graph, int(options.get("fail_after", 2)))


def host_with_flaky() -> PluginHost:
    host = PluginHost()
    host.load_entry_points()
    host.register(FlakyPack(), PackRecord("flaky", "tests.serve.rollout.flaky_pack", "1.0"))
    return host


if __name__ == "__main__":
    from cuvil_ref.cli.main import main
    from cuvil_ref.plugin.host import reset_host

    reset_host(host_with_flaky())
    sys.argv[0] = "cuvil"
    main()
