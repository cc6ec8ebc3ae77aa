"""``cuvil pack new NAME``: a new kernel pack, copied from the example pack.

The example pack (``cuvil_ref/plugin/example_pack``: a real project with a pyproject, a plugin
on the pack kit, numpy kernels, an executable that runs in the memory plan's arena, and tests
that CI runs) is copied file for file, with its names replaced: the distribution
``cuvil-kernels-example`` becomes ``cuvil-kernels-NAME``, the package ``cuvil_kernels_example``
becomes ``cuvil_kernels_NAME`` and the target ``example`` becomes ``NAME``. The copy installs
with ``pip install -e NAME`` and passes conformance for the ops it claims, so a vendor starts
from green and replaces the kernels one op at a time.
"""

from __future__ import annotations

import re
import sys
from importlib import resources
from pathlib import Path

from cuvil_ref.errors import CuvilError

if sys.version_info >= (3, 11):
    from importlib.resources.abc import Traversable
else:
    from importlib.abc import Traversable

EXAMPLE = "example_pack"
PACKAGE, DIST, TARGET = "cuvil_kernels_example", "cuvil-kernels-example", "example"
#: Build outputs and caches of the example's own installs and test runs: never copied.
_SKIP = re.compile(r"(__pycache__|\.egg-info|\.pytest_cache|build|dist)$")


def _renames(name: str) -> list[tuple[str, str]]:
    """(old, new) text replacements, most specific first; the target name is replaced only
    where the example spells it as a target (so words like 'example' in prose survive)."""
    package, dist = "cuvil_kernels_" + name.replace("-", "_"), "cuvil-kernels-" + name
    return [
        (PACKAGE, package),
        (DIST, dist),
        (f'TARGET = "{TARGET}"', f'TARGET = "{name}"'),
        (f'\n{TARGET} = "', f'\n{name} = "'),
        (f"--target {TARGET}", f"--target {name}"),
        (f"target `{TARGET}`", f"target `{name}`"),
        (f"target '{TARGET}'", f"target '{name}'"),
        (f"shows '{TARGET}'", f"shows '{name}'"),
    ]


def scaffold_pack(name: str, dest: str | Path = ".") -> Path:
    """Create the pack project ``dest/NAME`` (a renamed copy of the example pack); its path."""
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", name):
        raise CuvilError(
            f"pack name {name!r} must start with a lowercase letter and use only a-z, 0-9, "
            "'-' and '_'"
        )
    root = Path(dest) / name
    if root.exists():
        raise CuvilError(f"{root} already exists; choose another name or remove it")
    source = resources.files("cuvil_ref.plugin") / EXAMPLE
    renames = _renames(name)
    _copy(source, root, renames)
    leftover = [str(p) for p in root.rglob("*") if p.is_file() and PACKAGE in p.read_text("utf-8")]
    if leftover:  # the example spells its package in a way the renames miss
        raise CuvilError(f"scaffold: {PACKAGE!r} is still named in {leftover}")
    return root


def _copy(source: Traversable, dest: Path, renames: list[tuple[str, str]]) -> None:
    dest.mkdir(parents=True)
    for entry in source.iterdir():
        if _SKIP.search(entry.name):
            continue
        target = dest / entry.name.replace(PACKAGE, renames[0][1])
        if entry.is_dir():
            _copy(entry, target, renames)
            continue
        data = entry.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            target.write_bytes(data)
            continue
        for old, new in renames:
            text = text.replace(old, new)
        target.write_text(text, encoding="utf-8")
