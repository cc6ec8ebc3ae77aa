"""cuvil-conformance-mutants: planted-bug kernel packs that prove the conformance suite can fail.

Each mutant is a real kernel pack (entry-point group ``cuvil.kernelpacks``, target
``mutant-<name>``) whose kernels are written vendor-style from the docs, with one plausible bug
switched on; ``control-*`` targets run the same kernels without a bug. ``python -m
cuvil_conformance_mutants [--quick]`` runs the suite on every mutant and prints the catch rate.
This distribution is a test fixture: it is installed by ``scripts/setup.sh``, never shipped.
"""

from __future__ import annotations

from cuvil_conformance_mutants.catalog import MUTANTS, controls
from cuvil_conformance_mutants.pack import Mutant, MutantPack

__all__ = ["MUTANTS", "Mutant", "MutantPack", "controls"]
