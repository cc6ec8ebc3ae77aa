"""Pre- and post-processing compiled into the served graph as IR ops.

The brief's ResNet-50 pipeline "preprocess -> compile -> execute -> postprocess" runs as one
graph: the config's steps become ordinary IR nodes around the model's graph, so they are
compiled, partitioned and executed like the rest (no Python between the steps)::

    "preprocess":  [{"op": "normalize", "mean": [0.485, 0.456, 0.406],
                     "std": [0.229, 0.224, 0.225], "scale": 0.00392156862745098,
                     "channel_dim": 1, "input_datatype": "UINT8"}]
    "postprocess": [{"op": "softmax"}, {"op": "topk", "k": 5}]

``normalize``: y = (cast(x, f32) * scale - mean) / std, mean and std broadcast along
``channel_dim``; the served input takes ``input_datatype`` (default the model's). ``softmax``
applies along ``axis`` (default -1) to the first output; ``topk`` (the ``topk`` IR op) replaces
it with two outputs, the values and their int64 indices, largest first, ties to the lower index
(name them with the config's ``outputs``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from cuvil_ref.errors import CuvilError
from cuvil_ref.ir.builder import GraphBuilder
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Graph, Module, Value
from cuvil_ref.serve.config import ModelConfig
from cuvil_ref.serve.errors import ConfigError

PREPROCESS_OPS = ("normalize",)
POSTPROCESS_OPS = ("softmax", "topk")

_NORMALIZE_KEYS = ("op", "input", "mean", "std", "scale", "channel_dim", "input_datatype")


def wrap_module(module: Module, config: ModelConfig) -> Module:
    """``module`` with the config's pre/post-processing steps as nodes (itself when none)."""
    if not config.preprocess and not config.postprocess:
        return module
    g = module.graph
    taken = (
        {v.name for v in g.inputs} | set(g.constants) | {v.name for n in g.nodes for v in n.outputs}
    )
    b = _Builder(taken)
    replaced: dict[str, Value] = {}
    inputs: list[Value] = []
    for v in g.inputs:
        steps = [
            (i, s)
            for i, s in enumerate(config.preprocess)
            if s.get("input", g.inputs[0].name if len(g.inputs) == 1 else None) == v.name
        ]
        if not steps:
            inputs.append(b.b.add_input(v))
            continue
        raw, out = _preprocess(b, v, steps, config)
        inputs.append(raw)
        replaced[v.name] = out
    unused = [
        s.get("input")
        for s in config.preprocess
        if s.get("input") not in {v.name for v in g.inputs}
    ]
    if config.preprocess and len(g.inputs) > 1 and unused:
        raise ConfigError(
            config.path or config.name,
            "preprocess",
            f"names input {unused[0]!r}; the model's inputs are {[v.name for v in g.inputs]}",
        )
    for name, arr in g.constants.items():
        b.b.add_constant(name, arr)
    for node in g.nodes:
        ins = tuple(replaced.get(v.name, v) for v in node.inputs)
        b.b.add_node(node if ins == node.inputs else _with_inputs(node, ins))
    outputs = [replaced.get(v.name, v) for v in g.outputs]
    outputs = _postprocess(b, outputs, config)
    graph = Graph(tuple(inputs), tuple(b.b.nodes), tuple(outputs), b.b._constants)
    from cuvil_ref.ir.verifier import verify

    wrapped = module.with_graph(graph)
    try:
        verify(wrapped)
    except CuvilError as exc:
        raise ConfigError(config.path or config.name, "preprocess/postprocess", str(exc)) from exc
    return wrapped


class _Builder:
    """A GraphBuilder whose fresh names avoid every name of the wrapped graph."""

    def __init__(self, taken: set[str]) -> None:
        self.b = GraphBuilder()
        self.taken = taken

    def name(self, hint: str) -> str:
        base, i = hint, 0
        while hint in self.taken:
            i += 1
            hint = f"{base}_{i}"
        self.taken.add(hint)
        return hint

    def op(self, op: str, inputs: list[Value], attrs: Mapping[str, Any], hint: str) -> Value:
        return self.b.op(op, inputs, attrs, name=self.name(hint))

    def op_multi(
        self, op: str, inputs: list[Value], attrs: Mapping[str, Any], hint: str
    ) -> tuple[Value, ...]:
        return self.b.op_multi(op, inputs, attrs, name=self.name(hint))

    def constant(self, hint: str, array: np.ndarray) -> Value:
        return self.b.constant(self.name(hint), array)


def _with_inputs(node: Any, inputs: tuple[Value, ...]) -> Any:
    from dataclasses import replace

    return replace(node, inputs=inputs)


def _preprocess(
    b: _Builder, v: Value, steps: list[tuple[int, Mapping[str, Any]]], config: ModelConfig
) -> tuple[Value, Value]:
    from cuvil_ref.serve.tensors import DATATYPES

    path = config.path or config.name
    rank = v.type.rank
    raw: Value | None = None
    x: Value | None = None
    for i, s in steps:
        field = f"preprocess[{i}]"
        bad = [k for k in s if k not in _NORMALIZE_KEYS]
        if bad:
            raise ConfigError(path, f"{field}.{bad[0]}", f"unknown; accepted: {_NORMALIZE_KEYS}")
        dt = s.get("input_datatype")
        if raw is None:
            dtype = v.type.dtype
            if dt is not None:
                if dt not in DATATYPES:
                    raise ConfigError(path, f"{field}.input_datatype", f"one of {list(DATATYPES)}")
                dtype = DType.from_numpy(DATATYPES[dt])
            raw = b.b.input(b.name(f"{v.name}_raw"), v.type.with_dtype(dtype).with_quant(None))
            x = raw
        assert x is not None
        if x.type.dtype != DType.f32:
            x = b.op("cast", [x], {"dtype": "f32"}, f"{v.name}_f32")
        cdim = s.get("channel_dim", 1 if rank >= 2 else 0)
        if not isinstance(cdim, int) or isinstance(cdim, bool) or not 0 <= cdim < rank:
            raise ConfigError(path, f"{field}.channel_dim", f"an integer in [0, {rank})")
        scale = s.get("scale", 1.0)
        stats = {}
        for key, default in (("mean", 0.0), ("std", 1.0)):
            try:
                arr = np.asarray(s.get(key, default), dtype=np.float32).reshape(-1)
            except (TypeError, ValueError):
                raise ConfigError(path, f"{field}.{key}", "a number or a list of numbers") from None
            c = v.type.shape[cdim]
            if arr.size not in (1, c if isinstance(c, int) else arr.size):
                raise ConfigError(path, f"{field}.{key}", f"1 or {c} values (dim {cdim})")
            if key == "std" and np.any(arr == 0):
                raise ConfigError(path, f"{field}.std", "values must be non-zero")
            stats[key] = arr.reshape((-1,) + (1,) * (rank - 1 - cdim))
        if not isinstance(scale, (int, float)) or isinstance(scale, bool):
            raise ConfigError(path, f"{field}.scale", "a number")
        if scale != 1.0:
            x = b.op("mul", [x, b.constant("pre_scale", np.float32(scale))], {}, "pre_scaled")
        x = b.op("sub", [x, b.constant("pre_mean", stats["mean"])], {}, "pre_centered")
        x = b.op("div", [x, b.constant("pre_std", stats["std"])], {}, "pre_normalized")
    assert raw is not None and x is not None
    if x.type.dtype != v.type.dtype:
        x = b.op("cast", [x], {"dtype": v.type.dtype.value}, f"{v.name}_in")
    return raw, x


def _postprocess(b: _Builder, outputs: list[Value], config: ModelConfig) -> list[Value]:
    path = config.path or config.name
    for i, s in enumerate(config.postprocess):
        field = f"postprocess[{i}]"
        head = outputs[0]
        axis = s.get("axis", -1)
        if not isinstance(axis, int) or isinstance(axis, bool):
            raise ConfigError(path, f"{field}.axis", "an integer axis")
        if s["op"] == "softmax":
            outputs[0] = b.op("softmax", [head], {"axis": axis}, f"{head.name}_softmax")
            continue
        k = s.get("k")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ConfigError(path, f"{field}.k", "a positive integer (how many classes)")
        size = head.type.shape[axis] if -head.type.rank <= axis < head.type.rank else None
        if isinstance(size, int) and k > size:
            raise ConfigError(path, f"{field}.k", f"at most {size} (dim {axis} of {head.name})")
        values, indices = b.op_multi("topk", [head], {"k": k, "axis": axis}, f"{head.name}_topk")
        outputs[0:1] = [values, indices]
    return outputs
