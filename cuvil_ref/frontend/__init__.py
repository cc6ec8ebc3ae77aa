"""The PyTorch frontend: ``torch_to_cuvilir(model, ...)`` captures a model as a Cuvil Module.

Two capture paths share one op table (``op_table.py``): ``capture="fx"`` (``torch.fx`` symbolic
tracing: call_module / call_function / call_method nodes) and ``capture="export"``
(``torch.export``: high-level ATen). Weights become constants named by their parameter path; every
node carries provenance (torch node, module path, the user's source line).

Inputs may be positional (``example_inputs``) and keyword (``example_kwargs``, e.g. an
``attention_mask``); ``module.metadata["input_names"]`` records which forward parameter each IR
input is, so the compiled module binds calls the way the model does. The output structure
(tensors in tuples, lists, dicts, namedtuples, dataclasses, ModelOutputs) is recorded as
JSON in ``module.metadata["output_structure"]`` (see ``structure.py``);
``output_structure(module)`` reads it back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError
from cuvil_ref.frontend import structure
from cuvil_ref.frontend.shared_weights import SharedWeights
from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ir.graph import Module, Value
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ir.verifier import verify

CAPTURES = ("fx", "export")

DynamicDims = Mapping[int, str] | Sequence[Mapping[int, str] | None] | None


def torch_to_cuvilir(
    model: Any,
    input_shape: Sequence[int] | Sequence[Sequence[int]] | None = None,
    example_inputs: Any = None,
    capture: str = "fx",
    dynamic_dims: DynamicDims = None,
    dynamic_batch: bool = False,
    dtype: Any = None,
    name: str | None = None,
    example_kwargs: Mapping[str, Any] | None = None,
    *,
    shared: SharedWeights | None = None,
) -> Module:
    """Capture ``model`` (an ``nn.Module`` in eval mode) as a verified Cuvil Module.

    Give either ``input_shape`` (one shape, or a list of shapes for several inputs; inputs are
    ``dtype``, default float32) or ``example_inputs`` (a tensor, a tuple of tensors/arrays, or a
    dict of keyword inputs), and optionally ``example_kwargs`` (keyword inputs by forward
    parameter name, e.g. ``{"attention_mask": mask}``). ``dynamic_dims={0: "batch"}`` makes those
    dims symbolic in every input (or pass a list with one dict per input, positional inputs
    first, then keyword inputs in the forward signature's order); ``dynamic_batch=True`` is
    ``{0: "batch"}``.

    The module's constants are copies of the weights, unless ``shared`` is given: then they
    view the weights' memory and ``shared`` records which tensors they view, so that the caller
    can detect a later in-place change (``shared_weights.py``; ``cuvil.torch.compile`` does so).
    """
    import torch

    from cuvil_ref.frontend.context import dtype_from_torch
    from cuvil_ref.frontend.errors import training_mode_error

    if not isinstance(model, torch.nn.Module):
        raise CaptureError(f"expected a torch.nn.Module, got {type(model).__name__}")
    if capture not in CAPTURES:
        raise CaptureError(f"capture={capture!r} is not one of {list(CAPTURES)}")
    training = [(p, type(m).__name__) for p, m in model.named_modules() if m.training]
    if training:
        raise training_mode_error(training)
    if isinstance(example_inputs, Mapping):
        if example_kwargs:
            raise CaptureError(
                "give keyword inputs either as example_inputs={...} or example_kwargs"
            )
        example_inputs, example_kwargs = None, example_inputs
        if not example_kwargs:
            raise CaptureError("example_inputs is an empty dict; give at least one input")
        positional: list[Any] = []
    else:
        positional = (
            []
            if example_kwargs and example_inputs is None and input_shape is None
            else _examples(input_shape, example_inputs, dtype)
        )
    _check_input_count(model, len(positional), example_kwargs or {})
    names, keyword = _input_names(model, len(positional), example_kwargs)
    examples = positional + [keyword[k] for k in keyword]
    dynamic = _dynamic(dynamic_dims, dynamic_batch, len(examples))
    types = []
    for i, (x, dyn) in enumerate(zip(examples, dynamic)):
        shape: list[int | str] = list(x.shape)
        for axis, sym in dyn.items():
            if not -len(shape) <= axis < len(shape):
                raise CaptureError(
                    f"dynamic_dims for input {i}: axis {axis} is out of range for shape "
                    f"{list(x.shape)}"
                )
            shape[axis] = sym
        types.append(TensorType(tuple(shape), dtype_from_torch(x.dtype)))
    if capture == "fx":
        from cuvil_ref.frontend.fx_capture import capture_fx

        cx, inputs, (leaves, spec) = capture_fx(model, types, names, shared)
    else:
        from cuvil_ref.frontend.export_capture import capture_export

        cx, inputs, (leaves, spec) = capture_export(
            model, positional, list(keyword.values()), types, dynamic, names, shared
        )
    outputs = [leaf for leaf in leaves if isinstance(leaf, Value)]
    recorded = structure.encode(spec, list(leaves), lambda v: isinstance(v, Value))
    graph = cx.builder.build(outputs)
    metadata = {
        "producer": "cuvil_ref.frontend",
        "capture": capture,
        "torch_version": torch.__version__,
        "output_structure": structure.dumps(recorded),
    }
    if names is not None:
        metadata["input_names"] = json.dumps(names)
    if cx.dim_ranges:
        metadata["dim_ranges"] = json.dumps(cx.dim_ranges, separators=(",", ":"))
    if cx.folded.get("nodes"):
        metadata["folded_at_capture"] = json.dumps(cx.folded, separators=(",", ":"))
    module = Module(graph, name=name or type(model).__name__, metadata=metadata)
    verify(module)
    return module


def jax_to_cuvilir(fn: Any, *example_args: Any, name: str | None = None) -> Module:
    """Capture a ``jax.numpy``/``lax`` function (see ``cuvil_ref.frontend.jax``)."""
    from cuvil_ref.frontend.jax import jax_to_cuvilir as capture

    return capture(fn, *example_args, name=name)


def onnx_to_cuvilir(
    path_or_model: Any,
    input_shapes: Any = None,
    name: str | None = None,
    constant_inputs: Mapping[str, Any] | None = None,
) -> Module:
    """Import an ONNX model (path, bytes or ``onnx.ModelProto``; see
    ``cuvil_ref.frontend.onnx``)."""
    from cuvil_ref.frontend.onnx import onnx_to_cuvilir as import_onnx

    return import_onnx(path_or_model, input_shapes, name, constant_inputs)


def output_structure(module: Module) -> Any:
    """The model's output structure as recorded (see ``structure.py``): a JSON-able tree whose
    ``{"kind": "tensor", "index": i}`` leaves are output indices."""
    return structure.loads(module.metadata.get("output_structure"), len(module.outputs))


def input_names(module: Module) -> list[str] | None:
    """The forward parameter each IR input binds to, or None (inputs are positional)."""
    text = module.metadata.get("input_names")
    if text is None:
        return None
    names = json.loads(text)
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise CaptureError(f"the module's input_names {text[:80]!r} is malformed")
    return names


def _input_names(
    model: Any, n_positional: int, kwargs: Mapping[str, Any] | None
) -> tuple[list[str] | None, dict[str, Any]]:
    """The forward parameter name of each input (positional first, then keyword inputs in the
    signature's order), or None when positional inputs do not map onto named parameters."""
    import inspect

    keyword = dict(kwargs or {})
    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    named = [
        p.name
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    takes_var_kw = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params)
    known = {p.name for p in params if p.kind != inspect.Parameter.VAR_POSITIONAL}
    for k in keyword:
        if k not in known and not takes_var_kw:
            raise CaptureError(
                f"example_kwargs names '{k}', which {type(model).__name__}.forward does not take "
                f"(its parameters: {', '.join(p.name for p in params) or 'none'})"
            )
    if n_positional > len(named):
        if keyword:
            raise CaptureError(
                "keyword inputs cannot follow positional inputs bound to *args; pass all inputs "
                "positionally"
            )
        return None, keyword
    names = named[:n_positional]
    for k in keyword:
        if k in names:
            raise CaptureError(f"input '{k}' is given both positionally and in example_kwargs")
    order = {p.name: i for i, p in enumerate(params)}
    keyword = dict(sorted(keyword.items(), key=lambda kv: order.get(kv[0], len(order))))
    for k, v in keyword.items():
        keyword[k] = _examples(None, (v,), None)[0]
    return names + list(keyword), keyword


def _check_input_count(model: Any, given: int, keywords: Mapping[str, Any]) -> None:
    """Refuse more or fewer example inputs than ``model.forward`` takes positionally (capture
    would otherwise drop the extra ones silently)."""
    import inspect

    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):  # no introspectable signature: nothing to check
        return
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p for p in params if p.kind in kinds]
    required = [
        p for p in positional if p.default is inspect.Parameter.empty and p.name not in keywords
    ]
    variadic = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    if len(required) <= given and (variadic or given <= len(positional)):
        return
    names = ", ".join(p.name for p in positional) + (", *args" if variadic else "")
    takes = (
        f"{len(required)}"
        if len(required) == len(positional)
        else (f"{len(required)} to {len(positional)}")
    )
    raise CaptureError(
        f"{type(model).__name__}.forward({names}) takes {takes} input(s), but {given} input "
        "shapes or example inputs were given (one per input: in the CLI, one --input-shape "
        "per input)"
    )


def _examples(input_shape: Any, example_inputs: Any, dtype: Any) -> list[Any]:
    import torch

    if (input_shape is None) == (example_inputs is None):
        raise CaptureError("give exactly one of input_shape=... or example_inputs=...")
    if example_inputs is not None:
        items = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
        out = []
        for x in items:
            if isinstance(x, np.ndarray):
                x = torch.from_numpy(x)
            if not isinstance(x, torch.Tensor):
                raise CaptureError(
                    f"example inputs must be tensors or numpy arrays, got {type(x).__name__}"
                )
            out.append(x)
        return out
    shapes = input_shape
    if all(isinstance(d, int) for d in shapes):
        shapes = [shapes]
    tdtype = dtype if dtype is not None else torch.float32
    if isinstance(tdtype, (str, DType)):
        tdtype = getattr(
            torch,
            {
                "f32": "float32",
                "f16": "float16",
                "bf16": "bfloat16",
                "i64": "int64",
                "i32": "int32",
            }[DType(tdtype).value],
        )
    gen = torch.Generator().manual_seed(0)
    return [
        torch.randn(*s, generator=gen).to(tdtype)
        if tdtype.is_floating_point
        else torch.zeros(*s, dtype=tdtype)
        for s in shapes
    ]


def _dynamic(dynamic_dims: DynamicDims, dynamic_batch: bool, n: int) -> list[dict[int, str]]:
    if dynamic_dims is None:
        return [{0: "batch"} if dynamic_batch else {} for _ in range(n)]
    if isinstance(dynamic_dims, Mapping):
        per = [dict(dynamic_dims) for _ in range(n)]
    else:
        per = [dict(d or {}) for d in dynamic_dims]
        if len(per) != n:
            raise CaptureError(f"dynamic_dims has {len(per)} entries for {n} inputs")
    for d in per:
        for axis, sym in d.items():
            if not isinstance(axis, int) or not isinstance(sym, str) or not sym.isidentifier():
                raise CaptureError(
                    "dynamic_dims entries map an axis (int) to a symbol name, "
                    f"got {axis!r}: {sym!r}"
                )
        if dynamic_batch:
            d.setdefault(0, "batch")
    return per


__all__ = [
    "CAPTURES",
    "input_names",
    "jax_to_cuvilir",
    "onnx_to_cuvilir",
    "output_structure",
    "torch_to_cuvilir",
]
