"""PyTorch's own OpInfo samples through ``cuvil.torch.compile``: never a wrong result, never a
non-Cuvil exception, on any sample of any inference-meaningful Core ATen op.

CI runs the first ``LIMIT`` samples per OpInfo and dtype (``CUVIL_OPINFO_LIMIT=0`` runs them all);
``python scripts/aten_coverage.py`` measures every sample and writes ``docs/aten-coverage.md``.
"""

from __future__ import annotations

import os

import pytest

from cuvil_ref.frontend.aten.coverage import inference_core_ops
from tests.frontend.opinfo.core_ops import opinfo_names
from tests.frontend.opinfo.harness import opinfo_db, run_opinfo

pytestmark = pytest.mark.slow  # minutes on 2 cores: `scripts/test.sh --quick` leaves it out

LIMIT = int(os.environ.get("CUVIL_OPINFO_LIMIT", "2")) or None
_DB = opinfo_db()


@pytest.mark.parametrize("core_op", inference_core_ops())
def test_no_wrong_result_and_no_foreign_exception(core_op: str) -> None:
    bad = []
    for name in opinfo_names(core_op):
        if name not in _DB:
            continue
        for dtype, out in run_opinfo(name, _DB[name], LIMIT):
            if out.status in ("wrong", "crash"):
                bad.append(f"{name} [{dtype}] {out.status}: {out.message}")
            if out.status == "refused":
                assert "aten" in out.message or "op" in out.message, out.message
    assert not bad, "\n".join(bad)
