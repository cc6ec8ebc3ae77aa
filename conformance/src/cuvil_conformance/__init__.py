"""cuvil-conformance: checks any kernel pack against the Cuvil reference interpreter.

``run_suite(target)`` generates cases from the op registry, runs them through the target's pack
and judges them under the tolerance policy (``tolerance``): integer and quantized results
bit-exact, float results within per-op bounds. Unsupported is never counted as passed.
"""

from __future__ import annotations

from cuvil_conformance.cases import Case, InputSpec, make_case
from cuvil_conformance.generators import generate_cases
from cuvil_conformance.runner import CaseResult, SuiteReport, run_case, run_suite

__version__ = "0.1.0"

__all__ = [
    "Case",
    "CaseResult",
    "InputSpec",
    "SuiteReport",
    "generate_cases",
    "make_case",
    "run_case",
    "run_suite",
]
