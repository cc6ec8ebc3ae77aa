"""The entry-point objects: one :class:`MutantPack` per mutant, named like the mutant with
underscores (``nan-maximum-fmax`` -> ``nan_maximum_fmax``), and one per control. ``pyproject.toml``
lists each under the ``cuvil.kernelpacks`` group; ``tests/test_mutants.py`` checks that the
installed entry points and this catalog agree."""

from __future__ import annotations

from cuvil_conformance_mutants.catalog import MUTANTS, controls
from cuvil_conformance_mutants.pack import MutantPack


def attribute(name: str) -> str:
    return name.replace("-", "_")


PACKS: dict[str, MutantPack] = {
    attribute(m.name): MutantPack(m) for m in (*MUTANTS.values(), *controls().values())
}
globals().update(PACKS)
