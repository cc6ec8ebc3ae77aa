"""Quantization layering (issue 13 item 4), checked on the source: the op side never imports the
quantizer, and no module imports another module's private helper."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "cuvil_ref"

#: Packages below the quantizer: they define what quantized ops mean and must not depend on it.
BELOW_QUANT = ("ir", "ops", "interpreter", "passes")
#: Packages whose modules share only public names (a private helper stays in its module).
PUBLIC_ONLY = ("quant", "ops", "passes", "lowering", "plugin", "ir")


def _imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) for every ``from cuvil_ref... import name`` and ``import cuvil_ref...``."""
    found: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cuvil_ref"):
            found += [(node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(a.name, "") for a in node.names if a.name.startswith("cuvil_ref")]
    return found


def _sources(package: str) -> list[Path]:
    root = PACKAGE / package
    return sorted(root.rglob("*.py")) if root.is_dir() else [root.with_suffix(".py")]


@pytest.mark.parametrize("package", BELOW_QUANT)
def test_op_side_does_not_import_the_quantizer(package: str) -> None:
    bad = [
        f"{path.relative_to(PACKAGE.parent)} imports {module}"
        for path in _sources(package)
        for module, _ in _imports(path)
        if module.split(".")[:2] in (["cuvil_ref", "quant"], ["cuvil_ref", "frontend"])
    ]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("package", PUBLIC_ONLY)
def test_no_private_helper_is_imported_across_modules(package: str) -> None:
    bad = [
        f"{path.relative_to(PACKAGE.parent)}: from {module} import {name}"
        for path in _sources(package)
        for module, name in _imports(path)
        if name.startswith("_") and not name.startswith("__")
    ]
    assert not bad, "\n".join(bad)
