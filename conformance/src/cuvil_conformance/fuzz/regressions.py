"""Fuzz failures as regression cases: JSON data files (no pickle), replayed by the tests.

A file holds the failing module as IR text with every constant inline, the runtime inputs as
little-endian bytes in hex, the check that failed (``pipeline`` on a target, or ``torch``), and
what the fuzzer saw. ``conformance/tests/fuzz_regressions/`` keeps the ones found so far, each
with a ``note`` saying what was fixed; ``test_fuzz.py`` replays every one of them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from cuvil_conformance.fuzz.graphs import FuzzCase
from cuvil_ref.errors import CuvilError
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.parser import parse_module
from cuvil_ref.ir.printer import print_module

FORMAT = "cuvil-fuzz-regression/1"
REGRESSIONS = Path(__file__).resolve().parents[3] / "tests" / "fuzz_regressions"


class RegressionFormatError(CuvilError):
    """A regression file that is not what this module writes."""


def to_json(case: FuzzCase, mode: str, target: str, finding: str) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "mode": mode,
        "target": target,
        "integer": case.integer,
        "ops": case.describe(),
        "finding": finding,
        "note": "",
        "expect": "pass",
        "module": print_module(case.module, inline_limit=1 << 30),
        "inputs": [
            {
                "dtype": DType.from_numpy(a.dtype).value,
                "shape": list(a.shape),
                "data": np.ascontiguousarray(a).tobytes().hex(),
            }
            for a in case.inputs
        ],
    }


def save(case: FuzzCase, mode: str, target: str, finding: str, directory: str | Path) -> Path:
    """Write ``case`` under ``directory`` as ``<mode>-<target>-<hash>.json``; returns the path."""
    data = to_json(case, mode, target, finding)
    digest = hashlib.sha256(data["module"].encode()).hexdigest()[:12]
    path = Path(directory) / f"{mode}-{target}-{digest}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def load(path: str | Path) -> tuple[FuzzCase, dict[str, Any]]:
    """(case, metadata) from a regression file; malformed files raise RegressionFormatError.

    A file whose ``expect`` is ``refused`` holds a graph the verifier must reject (the finding
    was a graph accepted at build time that failed at run time): loading it raises the
    verifier's error.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            got = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise RegressionFormatError(f"{path}: format is {got!r}, not {FORMAT}")
        module = parse_module(data["module"], source=str(path))
        inputs = []
        for spec in data["inputs"]:
            dt = DType(spec["dtype"]).numpy
            raw = bytes.fromhex(spec["data"])
            inputs.append(np.frombuffer(raw, dtype=dt).reshape(spec["shape"]).copy())
    except (KeyError, TypeError, ValueError) as exc:
        raise RegressionFormatError(f"{path}: {type(exc).__name__}: {exc}") from None
    return FuzzCase(module, inputs, bool(data.get("integer"))), data


def all_regressions(directory: str | Path = REGRESSIONS) -> list[Path]:
    return sorted(Path(directory).glob("*.json"))
