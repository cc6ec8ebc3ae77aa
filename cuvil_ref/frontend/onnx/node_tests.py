"""Run ONNX's own backend node tests through the importer and the reference interpreter.

The onnx wheel up to 1.22.0 ships them under ``onnx/backend/test/data/node/<case>/``: a
``model.onnx`` and ``test_data_set_*/{input,output}_*.pb``. Each case belongs to one ONNX op
(the op of its single node; an ``_expanded`` case, the op's function body, belongs to the op it
expands). A case is imported with :func:`~cuvil_ref.frontend.onnx_to_cuvilir`, run with
:func:`~cuvil_ref.interpret` and compared with the expected outputs: exactly for integers and
bools, within ``RTOL``/``ATOL`` for floats (NaN where NaN is expected). Used by
``tests/frontend/onnx/test_node_tests.py`` and ``scripts/onnx_node_tests.py``.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuvil_ref.errors import CuvilError, UnsupportedOpError
from cuvil_ref.frontend.onnx.context import StaticInputError

#: Float comparison: |actual - expected| <= ATOL + RTOL * |expected| (ONNX's backend runner
#: uses rtol=1e-3; its atol of 1e-7 is below f32 rounding of values near 1, so 1e-5 here).
RTOL = 1e-3
ATOL = 1e-5
#: f16/bf16 outputs: their own rounding is about 1e-3 (f16) and 1e-2 (bf16).
HALF_TOL = {"float16": 1e-3 * 4, "bfloat16": 1e-2 * 2}


@dataclass(frozen=True)
class NodeCase:
    name: str
    path: str
    op: str  # the ONNX op type the case tests


@dataclass(frozen=True)
class CaseResult:
    name: str
    op: str
    status: str  # passed | failed | unsupported | error
    detail: str = ""
    frozen: tuple[str, ...] = ()  # inputs imported as constants (StaticInputError)


def node_test_root() -> str:
    """The node-test folder of the installed onnx wheel (1.22.0 or older)."""
    import onnx

    root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    if not os.path.isdir(root):
        raise CuvilError(
            f"onnx {onnx.__version__} ships no backend node tests (1.23 dropped them); "
            "pip install onnx==1.22.0"
        )
    return root


def discover(root: str | None = None) -> list[NodeCase]:
    """Every node-test case, with the op it belongs to."""
    import onnx

    root = root or node_test_root()
    names = sorted(
        d for d in os.listdir(root) if os.path.isfile(os.path.join(root, d, "model.onnx"))
    )
    models = {
        n: onnx.load(os.path.join(root, n, "model.onnx"), load_external_data=False) for n in names
    }
    single = {n: m.graph.node[0].op_type for n, m in models.items() if len(m.graph.node) == 1}
    cases = []
    for n in names:
        op = single.get(n)
        if op is None:
            for suffix in ("_expanded_ver18", "_expanded"):
                if n.endswith(suffix) and n[: -len(suffix)] in single:
                    op = single[n[: -len(suffix)]]
                    break
        if op is None:  # several nodes, no single-node sibling: the most frequent op type
            types = [node.op_type for node in models[n].graph.node]
            op = max(sorted(set(types)), key=types.count) if types else "?"
        cases.append(NodeCase(n, os.path.join(root, n), op))
    return cases


def _read_tensor(path: str) -> np.ndarray:
    import onnx
    from onnx import numpy_helper

    proto = onnx.TensorProto()
    with open(path, "rb") as f:
        proto.ParseFromString(f.read())
    return np.array(numpy_helper.to_array(proto))


def run_case(case: NodeCase) -> CaseResult:
    """Import, run and compare one case (every test data set of it)."""
    import onnx

    from cuvil_ref.interpreter import interpret

    model = onnx.load(os.path.join(case.path, "model.onnx"))
    for vi in list(model.graph.input) + list(model.graph.output):
        if not vi.type.HasField("tensor_type"):
            kind = vi.type.WhichOneof("value")
            return CaseResult(case.name, case.op, "unsupported", f"'{vi.name}' is a {kind}")
    inits = {i.name for i in model.graph.initializer}
    real = [vi.name for vi in model.graph.input if vi.name not in inits]
    frozen: dict[str, np.ndarray] = {}
    data_sets = sorted(glob.glob(os.path.join(case.path, "test_data_set_*")))
    for data in data_sets:
        try:
            # the files are by position: input_i.pb is the model's i-th (non-initializer) input
            given = {
                n: _read_tensor(os.path.join(data, f"input_{i}.pb"))
                for i, n in enumerate(real)
                if os.path.exists(os.path.join(data, f"input_{i}.pb"))
            }
            expected = [
                _read_tensor(p)
                for p in sorted(glob.glob(os.path.join(data, "output_*.pb")), key=_index)
            ]
        except Exception as exc:  # a tensor type numpy cannot hold (strings, float4...)
            return CaseResult(case.name, case.op, "unsupported", f"test data: {exc}")
        try:
            module = _import(model, given, frozen)
        except UnsupportedOpError as exc:
            return CaseResult(case.name, case.op, "unsupported", str(exc), tuple(frozen))
        except CuvilError as exc:
            return CaseResult(case.name, case.op, "error", f"import: {exc}", tuple(frozen))
        names = json.loads(module.metadata["input_names"])
        inputs = [given[n] for n in names]
        try:
            actual = interpret(module, inputs)
        except CuvilError as exc:
            return CaseResult(case.name, case.op, "error", f"run: {exc}")
        problem = compare(actual, expected)
        if problem:
            return CaseResult(
                case.name, case.op, "failed", f"{os.path.basename(data)}: {problem}", tuple(frozen)
            )
    return CaseResult(case.name, case.op, "passed", "", tuple(frozen))


def _import(model: Any, given: dict[str, np.ndarray], frozen: dict[str, np.ndarray]) -> Any:
    """Import ``model``; graph inputs that Cuvil needs at import time (or that such a value is
    computed from) are frozen to the test's values (``constant_inputs``), as the importer's
    StaticInputError names them."""
    from cuvil_ref.frontend.onnx import onnx_to_cuvilir

    for _ in range(len(given) + 1):
        try:
            return onnx_to_cuvilir(model, constant_inputs={k: given[k] for k in frozen})
        except StaticInputError as exc:
            new = [t for t in exc.tensors if t not in frozen and t in given]
            if not new:
                raise
            frozen.update({t: given[t] for t in new})
    raise UnsupportedOpError("too many inputs to freeze")


def _index(path: str) -> int:
    return int(os.path.basename(path).split("_")[1].split(".")[0])


def compare(actual: list[np.ndarray], expected: list[np.ndarray]) -> str:
    """'' when ``actual`` matches ``expected``, else what differs."""
    if len(actual) != len(expected):
        return f"{len(actual)} outputs, expected {len(expected)}"
    for i, (a, e) in enumerate(zip(actual, expected)):
        if a.dtype != e.dtype:
            return f"output {i}: dtype {a.dtype}, expected {e.dtype}"
        if a.shape != e.shape:
            return f"output {i}: shape {list(a.shape)}, expected {list(e.shape)}"
        if e.dtype.kind in "biu" or e.dtype == np.bool_:
            if not np.array_equal(a, e):
                bad = int(np.sum(a != e))
                return f"output {i}: {bad} of {e.size} elements differ (exact comparison)"
            continue
        af, ef = a.astype(np.float64), e.astype(np.float64)
        tol = HALF_TOL.get(str(e.dtype), RTOL)
        atol = ATOL if str(e.dtype) not in HALF_TOL else tol
        if not np.array_equal(np.isnan(af), np.isnan(ef)):
            return f"output {i}: NaN in different places"
        with np.errstate(invalid="ignore"):  # inf - inf where both are inf: equal, kept by ==
            ok = np.isnan(ef) | (af == ef) | (np.abs(af - ef) <= atol + tol * np.abs(ef))
        if not ok.all():
            err = float(np.nanmax(np.abs(af - ef)[~ok]))
            return f"output {i}: {int((~ok).sum())} of {e.size} elements off (max error {err:.3g})"
    return ""


def run_all(cases: Iterable[NodeCase]) -> list[CaseResult]:
    return [run_case(c) for c in cases]


__all__ = ["ATOL", "RTOL", "CaseResult", "NodeCase", "compare", "discover", "run_all", "run_case"]
