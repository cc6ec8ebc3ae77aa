"""Calibration: run the reference interpreter over batches and observe every float activation.

:func:`calibrate` returns ``{value name: (float32 scale, zero point)}`` for every float graph input
and node output, chosen by one observer per value (``docs/semantics.md`` §9). Batches are checked
first: each must match the graph's inputs and hold only finite floats, so a NaN in the data is
reported with its batch and input instead of surfacing deep inside an observer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import QuantizationError
from cuvil_ref.interpreter import check_input, run_node
from cuvil_ref.ir.graph import Graph
from cuvil_ref.quant.observers import (
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MSEObserver,
    Observer,
    PercentileObserver,
)

#: Observer names accepted by ``quantize_module(observer=...)``.
OBSERVERS: dict[str, type[Observer]] = {
    "minmax": MinMaxObserver,
    "moving_average": MovingAverageMinMaxObserver,
    "percentile": PercentileObserver,
    "mse": MSEObserver,
}

Batch = tuple[np.ndarray, ...]
QParams = dict[str, tuple[np.float32, int]]


def make_observer(kind: str, **options: Any) -> Observer:
    """A fresh asymmetric activation observer called ``kind`` (see :data:`OBSERVERS`)."""
    try:
        cls = OBSERVERS[kind]
    except KeyError:
        raise QuantizationError(
            f"unknown observer {kind!r}; choose one of {', '.join(OBSERVERS)}"
        ) from None
    try:
        return cls(**options)
    except TypeError as exc:
        raise QuantizationError(
            f"observer {kind!r} does not take options {options}: {exc}"
        ) from exc


def _to_numpy(item: Any) -> np.ndarray:
    if hasattr(item, "detach"):  # a torch tensor; torch is not imported here
        item = item.detach().cpu().numpy()
    return np.asarray(item)


def _is_tensor(item: Any) -> bool:
    return isinstance(item, np.ndarray) or hasattr(item, "detach")


def _one_batch(graph: Graph, data: Any) -> bool:
    """Whether ``data`` itself is one batch (a tuple of tensors, one per graph input)."""
    if _is_tensor(data):
        return True
    if not isinstance(data, (tuple, list)) or len(data) != len(graph.inputs):
        return False
    return all(
        _is_tensor(x) and np.ndim(x) == v.type.rank for x, v in zip(data, graph.inputs, strict=True)
    )


def normalize_batches(graph: Graph, data: Any) -> list[Batch]:
    """Calibration data as a list of input tuples, cast to the graph's float input dtypes.

    ``data`` is an iterable of batches, each a tuple/list (one array per graph input) or a single
    array/tensor (one-input graphs); a single array/tensor, or a tuple of one tensor per input,
    is one batch. Raises :class:`QuantizationError` on empty data, wrong arity or NaN/inf.
    """
    items = [data] if _one_batch(graph, data) else list(data)
    if not items:
        raise QuantizationError("calibration_data is empty; pass at least one batch of inputs")
    batches: list[Batch] = []
    for index, item in enumerate(items):
        arrays = [_to_numpy(x) for x in (item if isinstance(item, (tuple, list)) else (item,))]
        if len(arrays) != len(graph.inputs):
            raise QuantizationError(
                f"calibration batch {index} has {len(arrays)} arrays but the graph takes "
                f"{len(graph.inputs)} inputs ({', '.join(f'%{v.name}' for v in graph.inputs)})"
            )
        for k, (arr, v) in enumerate(zip(arrays, graph.inputs, strict=True)):
            if v.type.dtype.is_float and np.issubdtype(arr.dtype, np.floating):
                arr = arr.astype(v.type.dtype.numpy, copy=False)
                if not np.all(np.isfinite(arr)):
                    bad = "NaN" if np.isnan(arr).any() else "inf"
                    raise QuantizationError(
                        f"calibration batch {index}, input %{v.name} contains {bad}; "
                        "calibration needs finite, representative inputs"
                    )
            arrays[k] = arr
        batches.append(tuple(arrays))
    return batches


def walk(
    graph: Graph, inputs: Sequence[np.ndarray], visit: Callable[[str, np.ndarray], None]
) -> list[np.ndarray]:
    """Interpret ``graph``, calling ``visit(name, array)`` on every input and node output."""
    bindings: dict[str, int] = {}
    env: dict[str, Any] = dict(graph.constants)
    for value, array in zip(graph.inputs, inputs, strict=True):
        env[value.name] = check_input(value.name, value.type, array, bindings)
        visit(value.name, env[value.name])
    for node in graph.nodes:
        results = run_node(node, [env[v.name] for v in node.inputs], bindings)
        for v, r in zip(node.outputs, results, strict=True):
            env[v.name] = r
            visit(v.name, r)
    return [np.asarray(env[v.name]) for v in graph.outputs]


def record(graph: Graph, inputs: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Every input and node output of one run, by value name."""
    values: dict[str, np.ndarray] = {}
    walk(graph, inputs, lambda name, array: values.__setitem__(name, np.asarray(array)))
    return values


def calibrate(
    graph: Graph,
    batches: Iterable[Batch],
    observer: str = "minmax",
    *,
    lenient: bool = False,
    **options: Any,
) -> QParams:
    """``(scale, zero_point)`` of every float input and node output, over all ``batches``.

    A value whose data an observer refuses (NaN or inf) raises, unless ``lenient``: then it gets
    no range and stays float (used for regions, whose inputs are the model's own values, e.g. an
    ``inf`` a loop starts its convergence test from)."""
    observers: dict[str, Observer] = {}
    refused: set[str] = set()
    float_names = {v.name for v in graph.inputs if v.type.dtype.is_float}
    float_names |= {v.name for n in graph.nodes for v in n.outputs if v.type.dtype.is_float}

    def visit(name: str, array: np.ndarray) -> None:
        if name not in float_names or name in refused:
            return
        obs = observers.get(name)
        if obs is None:
            obs = observers[name] = make_observer(observer, **options)
        try:
            obs.update(array)
        except QuantizationError as exc:
            if not lenient:
                raise QuantizationError(f"calibrating %{name}: {exc}") from exc
            refused.add(name)

    for batch in batches:
        walk(graph, batch, visit)
    qparams: QParams = {}
    for name, obs in observers.items():
        if name in refused:
            continue
        try:
            qparams[name] = obs.qparams()
        except QuantizationError:
            continue  # only empty tensors were seen: such a value stays in float
    return qparams


def sqnr_db(reference: np.ndarray, test: np.ndarray) -> float:
    """Signal-to-quantization-noise ratio ``10 log10(sum(ref^2) / sum((ref - test)^2))`` in dB.

    ``inf`` when the two are equal; ``-inf`` when the reference is all zeros but the test is not.
    """
    ref = np.asarray(reference, dtype=np.float64)
    noise = float(np.sum((ref - np.asarray(test, dtype=np.float64)) ** 2))
    return power_ratio_db(float(np.sum(ref * ref)), noise)


def power_ratio_db(signal: float, noise: float) -> float:
    """``10 log10(signal / noise)``, ``inf`` without noise, ``-inf`` without signal."""
    if noise == 0.0:
        return math.inf
    if signal == 0.0:
        return -math.inf
    return 10.0 * math.log10(signal / noise)
