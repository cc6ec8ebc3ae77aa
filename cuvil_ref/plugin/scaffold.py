"""``cuvil pack new NAME``: scaffold a working kernel pack.

The generated project has a pyproject with the ``cuvil.kernelpacks`` entry point, a plugin module
implementing the hooks, one kernel (relu, in numpy — replace it with your device code), and a
conformance test. It installs with ``pip install -e NAME`` and passes conformance for the ops it
claims, so a vendor starts from green and adds kernels one op at a time.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path

from cuvil_ref.errors import CuvilError

_PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "cuvil-kernels-{dist}"
version = "0.1.0"
description = "Cuvil kernel pack for target '{target}'"
requires-python = ">=3.10"
dependencies = ["cuvil-ref>=0.1", "numpy>=1.24"]

[project.optional-dependencies]
test = ["pytest>=8", "cuvil-conformance>=0.1"]

[project.entry-points."cuvil.kernelpacks"]
{target} = "{package}.plugin"

[tool.setuptools.packages.find]
where = ["src"]
"""

_PLUGIN = '''\
"""Kernel pack for target '{target}'.

Each hook answers only for this pack's own target and returns None otherwise. Add an op by
writing a kernel in ``kernels.py``, adding it to ``KERNELS`` and running the conformance test.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cuvil_ref.ir.graph import Graph, Node
from cuvil_ref.plugin import (
    PLUGIN_API_VERSION,
    Availability,
    Executable,
    Support,
    TargetInfo,
    TargetSpec,
    hookimpl,
)
from {package}.kernels import KERNELS

TARGET = "{target}"


class {cls}Executable(Executable):
    """Runs a partition node by node with this pack's kernels."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        env: dict[str, Any] = dict(self.graph.constants)
        env.update({{v.name: a for v, a in zip(self.graph.inputs, inputs)}})
        for node in self.graph.nodes:
            args = [env[v.name] for v in node.inputs]
            outs = KERNELS[node.op](node, args)
            env.update({{v.name: o for v, o in zip(node.outputs, outs)}})
        return [env[v.name] for v in self.graph.outputs]


@hookimpl
def cuvil_plugin_api_version() -> str:
    return PLUGIN_API_VERSION


@hookimpl
def cuvil_targets() -> list[TargetInfo]:
    return [TargetInfo(TARGET, "{target}: scaffolded by `cuvil pack new`")]


@hookimpl
def cuvil_target_available(target: TargetSpec) -> Availability | None:
    if target.name != TARGET:
        return None
    return Availability(True, device="CPU (numpy)")


@hookimpl
def cuvil_supports_node(target: TargetSpec, node: Node, graph: Graph) -> Support | None:
    if target.name != TARGET:
        return None
    if node.op not in KERNELS:
        return Support.no(f"{target} has no kernel for '{{node.op}}'")
    if any(v.type.dtype.value != "f32" for v in node.inputs):
        return Support.no("{target} kernels take f32 only")
    return Support.yes()


@hookimpl
def cuvil_lower_partition(
    target: TargetSpec, graph: Graph, options: dict[str, Any]
) -> Executable | None:
    if target.name != TARGET:
        return None
    return {cls}Executable(graph)
'''

_KERNELS = '''\
"""This pack's kernels: op name -> function(node, input arrays) -> output arrays."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from cuvil_ref.ir.graph import Node

Kernel = Callable[[Node, list[np.ndarray]], list[np.ndarray]]


def relu(node: Node, args: list[np.ndarray]) -> list[np.ndarray]:
    """y = max(x, 0); NaN stays NaN (np.maximum propagates it)."""
    (x,) = args
    return [np.maximum(x, np.float32(0))]


KERNELS: dict[str, Kernel] = {{"relu": relu}}
'''

_TEST = '''\
"""The pack passes conformance for every op it claims (and claims at least one)."""

from __future__ import annotations

from cuvil_conformance import run_suite

from {package}.kernels import KERNELS


def test_conformance() -> None:
    report = run_suite("{target}", sorted(KERNELS))
    summary = report.summary()
    failures = [(r.id, r.reason) for r in report.results if r.status in ("failed", "error")]
    assert failures == []
    assert summary["passed"] > 0
'''

_README = """\
# cuvil-kernels-{dist}

A Cuvil kernel pack for target `{target}`, scaffolded by `cuvil pack new`.

    pip install -e .            # registers the target through the cuvil.kernelpacks entry point
    cuvil targets               # shows '{target}'
    cuvil-conformance run --target {target} --ops relu
    pytest tests

See Cuvil's docs/plugin-authoring.md for the tutorial.
"""


def scaffold_pack(name: str, dest: str | Path = ".") -> Path:
    """Create the pack project ``dest/NAME`` and return its path."""
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", name):
        raise CuvilError(
            f"pack name {name!r} must start with a lowercase letter and use only a-z, 0-9, "
            "'-' and '_'"
        )
    package = "cuvil_pack_" + name.replace("-", "_")
    if keyword.iskeyword(package):
        raise CuvilError(f"pack name {name!r} gives an invalid package name")
    root = Path(dest) / name
    if root.exists():
        raise CuvilError(f"{root} already exists; choose another name or remove it")
    cls = "".join(part.capitalize() for part in re.split(r"[-_]", name))
    fmt = {"dist": name.replace("_", "-"), "target": name, "package": package, "cls": cls}
    files = {
        "pyproject.toml": _PYPROJECT,
        "README.md": _README,
        f"src/{package}/__init__.py": '"""Cuvil kernel pack for target \'{target}\'."""\n',
        f"src/{package}/plugin.py": _PLUGIN,
        f"src/{package}/kernels.py": _KERNELS,
        "tests/test_conformance.py": _TEST,
    }
    for rel, template in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(**fmt), encoding="utf-8")
    return root
