"""The differential graph fuzzer: ``cuvil-conformance fuzz --target T --seconds N --seed S``.

``graphs`` draws random well-typed graphs of registry ops from the op declarations (hypothesis
strategies), ``check`` compares the compiled pipeline at every opt_level with the interpreter at
opt_level 0 (or the interpreter with PyTorch eager), ``campaign`` runs a time-bounded campaign
and ``regressions`` saves shrunk failures as replayable JSON cases.
"""

from __future__ import annotations

from cuvil_conformance.fuzz.campaign import FuzzReport, run_fuzz
from cuvil_conformance.fuzz.check import Finding, check_pipeline, check_torch

__all__ = ["Finding", "FuzzReport", "check_pipeline", "check_torch", "run_fuzz"]
