"""cuvil-ref: the Cuvil reference compiler.

Public API (names fixed by PRODUCT.md)::

    import cuvil_ref as cuvil
    cm = cuvil.torch.compile(model, target="ref", example_inputs=(x,))
    mod = cuvil.frontend.torch_to_cuvilir(model, input_shape=(1, 3, 224, 224))
    outs = cuvil.interpret(mod, [x_numpy])
    text = str(mod); mod2 = cuvil.parse(text)
    mod.save("m.cuvilir"); mod = cuvil.load("m.cuvilir")
    cuvil.targets()

``cuvil_ref.torch`` and ``cuvil_ref.frontend`` import torch lazily, on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from cuvil_ref import ops  # noqa: F401  (registers the op set)
from cuvil_ref.errors import CuvilError
from cuvil_ref.interpreter import interpret
from cuvil_ref.ir import DType, Graph, GraphBuilder, Module, Node, TensorType, Value, verify

__version__ = "0.1.0"

__all__ = [
    "CuvilError",
    "DType",
    "Graph",
    "GraphBuilder",
    "Module",
    "Node",
    "TensorType",
    "Value",
    "__version__",
    "interpret",
    "load",
    "parse",
    "targets",
    "verify",
]

_LAZY_SUBMODULES = {
    "torch", "frontend", "passes", "lowering", "quant", "plugin", "artifacts", "zoo"
}  # fmt: skip


def parse(text: str, constants: Any = None) -> Module:
    """Parse the textual IR printed by ``str(module)`` back into a Module."""
    from cuvil_ref.ir.parser import parse_module

    return parse_module(text, constants=constants)


def load(path: str, **kwargs: Any) -> Module:
    """Load a ``.cuvilir`` artifact (digests checked; never executes code)."""
    from cuvil_ref.artifacts import load_module

    return load_module(path, **kwargs)


def targets() -> list[dict[str, Any]]:
    """Installed targets: name, pack, version, availability and the reason when unavailable."""
    from cuvil_ref.plugin.host import list_targets

    return list_targets()


def __getattr__(name: str) -> Any:
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"cuvil_ref.{name}")
    raise AttributeError(f"module 'cuvil_ref' has no attribute {name!r}")
