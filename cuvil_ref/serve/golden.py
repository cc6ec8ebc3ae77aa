"""Golden requests: a known input and its expected output, stored beside a model version.

A version folder may hold ``golden.json`` next to ``model.cuvilir``::

    REPO/mlp/2/model.cuvilir
    REPO/mlp/2/golden.json     {"inputs":  [{"name": "INPUT0", "datatype": "FP32",
                                              "shape": [1, 784], "data": [...]}],
                                "outputs": [{"name": "OUTPUT0", "datatype": "FP32",
                                              "shape": [1, 10], "data": [...]}],
                                "rtol": 1e-4, "atol": 1e-5}

The tensors are in the Open Inference Protocol's JSON form, under the served (protocol) names,
so the file reads like a request and its response. Before a new version gets traffic the server
runs the golden request on every instance and compares: integer and boolean outputs exactly,
float outputs within ``rtol``/``atol`` (``|got - want| <= atol + rtol * |want|``). The health
probes of a rollout run it again. JSON floats round-trip exactly (Python writes the shortest
repr), so a float32 expected output is stored without loss.

``write_golden`` records one from a request's inputs; the expected outputs come from the model
the build pipeline trusts (by default the reference interpreter on the served graph, the oracle
of every pack), not from the version under test.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cuvil_ref.errors import CuvilError
from cuvil_ref.serve.errors import ConfigError
from cuvil_ref.serve.tensors import DATATYPES, check_shape, from_json_data, to_json_data

GOLDEN = "golden.json"
DEFAULT_RTOL = 1e-4
DEFAULT_ATOL = 1e-5
_KEYS = ("inputs", "outputs", "rtol", "atol")


class GoldenMismatch(CuvilError):
    """The version's answer to its golden request differs from the stored expected output."""


@dataclass(frozen=True)
class Golden:
    """A golden request: inputs and expected outputs by protocol name, and the tolerance."""

    inputs: Mapping[str, np.ndarray]
    outputs: Mapping[str, np.ndarray]
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    path: str = GOLDEN

    def check(self, got: Mapping[str, np.ndarray], label: str) -> None:
        """Raise GoldenMismatch naming the first output that differs, and by how much."""
        for name, want in self.outputs.items():
            if name not in got:
                raise GoldenMismatch(f"{label} has no output '{name}' (it has {list(got)})")
            have = np.asarray(got[name])
            if have.shape != want.shape or have.dtype != want.dtype:
                raise GoldenMismatch(
                    f"{label}: output '{name}' is {have.dtype}{list(have.shape)}, the golden "
                    f"response is {want.dtype}{list(want.shape)}",
                )
            if want.dtype.kind in "fc":
                a, b = have.astype(np.float64), want.astype(np.float64)
                bad = ~(np.abs(a - b) <= self.atol + self.rtol * np.abs(b))
                bad &= ~(np.isnan(a) & np.isnan(b))
            else:
                bad = have != want
            if np.any(bad):
                where = tuple(int(i) for i in np.argwhere(bad)[0])
                raise GoldenMismatch(
                    f"{label} fails its golden request: output '{name}' differs in "
                    f"{int(bad.sum())} of {bad.size} elements (first at {list(where)}: got "
                    f"{have[where]!r}, expected {want[where]!r}; rtol {self.rtol:g}, atol "
                    f"{self.atol:g})",
                )


def _tensors(path: Path, items: Any, key: str) -> dict[str, np.ndarray]:
    if not isinstance(items, list) or not items:
        raise ConfigError(path, key, 'must be a non-empty list of {"name", "datatype", ...}')
    out: dict[str, np.ndarray] = {}
    for i, t in enumerate(items):
        where = f"{key}[{i}]"
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            raise ConfigError(path, where, "must be an object with a 'name'")
        if t.get("datatype") not in DATATYPES:
            raise ConfigError(path, f"{where}.datatype", f"must be one of {list(DATATYPES)}")
        try:
            shape = check_shape(t.get("shape"), t["name"])
            out[t["name"]] = from_json_data(t.get("data"), t["datatype"], shape, t["name"])
        except Exception as exc:  # InvalidRequest: the message names the tensor
            raise ConfigError(path, where, str(exc)) from None
    return out


def read_golden(version_dir: Path) -> Golden | None:
    """The golden request of a version folder, or None when it has none."""
    path = version_dir / GOLDEN
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(path, None, f"is not a readable JSON golden request: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(path, None, "must hold a JSON object with 'inputs' and 'outputs'")
    unknown = [k for k in data if k not in _KEYS]
    if unknown:
        raise ConfigError(path, unknown[0], f"unknown field; accepted fields: {', '.join(_KEYS)}")
    tol = {}
    for key, default in (("rtol", DEFAULT_RTOL), ("atol", DEFAULT_ATOL)):
        v = data.get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
            raise ConfigError(path, key, f"must be a number >= 0, got {v!r}")
        tol[key] = float(v)
    return Golden(
        _tensors(path, data.get("inputs"), "inputs"),
        _tensors(path, data.get("outputs"), "outputs"),
        tol["rtol"],
        tol["atol"],
        str(path),
    )


def _entry(name: str, array: np.ndarray) -> dict[str, Any]:
    a = np.asarray(array)
    datatype = next((k for k, d in DATATYPES.items() if d == a.dtype), None)
    if datatype is None:
        raise ConfigError(GOLDEN, name, f"dtype {a.dtype} has no protocol datatype")
    return {"name": name, "datatype": datatype, "shape": list(a.shape), "data": to_json_data(a)}


def write_golden(
    version_dir: str | Path,
    inputs: Mapping[str, np.ndarray],
    outputs: Mapping[str, np.ndarray],
    *,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
) -> Path:
    """Write ``golden.json`` into ``version_dir`` (written before the artifact, so a watching
    server never sees an artifact without its golden request)."""
    path = Path(version_dir) / GOLDEN
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "inputs": [_entry(n, a) for n, a in inputs.items()],
        "outputs": [_entry(n, a) for n, a in outputs.items()],
        "rtol": rtol,
        "atol": atol,
    }
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def record_golden(
    version_dir: str | Path,
    module: Any,
    config: Any,
    inputs: Any,
    *,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
) -> Path:
    """Record a golden request for ``module`` served under ``config``: ``inputs`` (an array, a
    tuple in input order, or a dict by protocol name) and the outputs the reference interpreter
    computes on the served graph (pre/post-processing included)."""
    from cuvil_ref.interpreter import interpret
    from cuvil_ref.serve.pipeline import wrap_module
    from cuvil_ref.serve.signature import Signature

    wrapped = wrap_module(module, config)
    sig = Signature(wrapped, config)
    if isinstance(inputs, Mapping):
        named = {k: np.asarray(v) for k, v in inputs.items()}
    else:
        seq = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
        named = {t.name: _numpy(a) for t, a in zip(sig.inputs, seq)}
    prepared = sig.prepare(named)
    outs = interpret(wrapped, list(prepared.arrays))
    expected = {}
    for t, arr in zip(sig.outputs, outs):
        if t.name in prepared.strip:
            dim, n = prepared.strip[t.name]
            arr = arr[(slice(None),) * dim + (slice(0, n),)]
        expected[t.name] = arr
    return write_golden(version_dir, named, expected, rtol=rtol, atol=atol)


def _numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)
