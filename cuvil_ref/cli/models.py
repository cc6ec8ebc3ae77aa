"""What a MODEL argument names, and how the CLI turns it into an IR module.

MODEL is one of

* ``zoo:NAME`` — a model of ``cuvil_ref.zoo`` (its default input shape comes with it);
* ``path/to/file.py:factory`` — the file is imported from its path and ``factory()`` must return
  an ``nn.Module`` (it is put in eval mode);
* ``model.pt2`` — a ``torch.export`` program (``torch.export.save``); its example inputs give the
  default shapes and it is captured through torch.export;
* ``model.onnx`` — an ONNX model, imported by ``cuvil_ref.frontend.onnx_to_cuvilir``
  (``--input-shape`` fixes sizes the model leaves symbolic, one per input in order).

torch is imported only here and only when a model is loaded, so ``cuvil targets`` stays fast.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuvil_ref.errors import CaptureError, CuvilError
from cuvil_ref.ir.graph import Module

ARTIFACT_SUFFIX = ".cuvilir"


@dataclass(frozen=True)
class LoadedModel:
    """A torch model ready for capture, with its default example shapes and capture path."""

    model: Any
    label: str
    default_shapes: tuple[tuple[int, ...], ...] = ()
    default_capture: str = "fx"
    example_inputs: tuple[Any, ...] | None = None
    onnx_path: str | None = None  # set for an ONNX model (``model`` is then None)


def is_artifact(path: str) -> bool:
    """True for a ``.cuvilir`` file (by suffix, or by magic for files named otherwise)."""
    if path.endswith(ARTIFACT_SUFFIX):
        return True
    p = Path(path)
    if p.is_file() and not path.endswith((".py", ".pt2")) and ":" not in p.name:
        with open(p, "rb") as f:
            return f.read(8) == b"CUVILIR\0"
    return False


def load_model(spec: str) -> LoadedModel:
    """Resolve MODEL (``zoo:NAME``, ``file.py:factory`` or ``file.pt2``) to a torch model."""
    if spec.startswith("zoo:"):
        return _from_zoo(spec[4:])
    if spec.endswith(".pt2"):
        return _from_pt2(spec)
    if spec.endswith(".onnx"):
        if not Path(spec).is_file():
            raise CuvilError(f"ONNX model file {spec!r} does not exist")
        return LoadedModel(None, spec, default_capture="onnx", onnx_path=spec)
    path, sep, factory = spec.rpartition(":")
    if sep and path.endswith(".py") and factory.isidentifier():
        return _from_factory(path, factory)
    if spec.endswith(".py"):
        raise CuvilError(
            f"MODEL {spec!r} names a Python file but no factory; write {spec}:FACTORY where "
            "FACTORY() returns the nn.Module"
        )
    raise CuvilError(
        f"cannot tell what MODEL {spec!r} is; give zoo:NAME, path/file.py:factory, a "
        "torch.export .pt2 file or an .onnx file"
    )


def _from_zoo(name: str) -> LoadedModel:
    from cuvil_ref import zoo

    model, shape = zoo.get_model(name)
    captures = zoo.entry(name).captures
    return LoadedModel(model, f"zoo:{name}", (tuple(shape),), captures[0])


def _from_factory(path: str, factory: str) -> LoadedModel:
    import torch

    file = Path(path)
    if not file.is_file():
        raise CuvilError(f"model file {path!r} does not exist")
    name = f"_cuvil_cli_model_{abs(hash(str(file.resolve())))}"
    module_spec = importlib.util.spec_from_file_location(name, file)
    if module_spec is None or module_spec.loader is None:
        raise CuvilError(f"cannot import {path!r} as a Python module")
    mod = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = mod  # dataclasses and pickling helpers look the module up by name
    try:
        module_spec.loader.exec_module(mod)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise CuvilError(
            f"importing {path!r} failed: {type(exc).__name__}: {exc} (use --debug for the "
            "traceback)"
        ) from exc
    fn = getattr(mod, factory, None)
    if not callable(fn):
        found = sorted(k for k, v in vars(mod).items() if callable(v) and not k.startswith("_"))
        raise CuvilError(
            f"{path!r} has no callable {factory!r}; callables defined there: "
            f"{', '.join(found) or 'none'}"
        )
    try:
        model = fn()
    except Exception as exc:
        raise CuvilError(
            f"{path}:{factory}() failed: {type(exc).__name__}: {exc} (use --debug for the "
            "traceback)"
        ) from exc
    if not isinstance(model, torch.nn.Module):
        raise CuvilError(
            f"{path}:{factory}() returned {type(model).__name__}; it must return a torch.nn.Module"
        )
    return LoadedModel(model.eval(), f"{path}:{factory}")


def _from_pt2(path: str) -> LoadedModel:
    import torch

    if not Path(path).is_file():
        raise CuvilError(f"exported program {path!r} does not exist")
    try:
        program = torch.export.load(path)
    except Exception as exc:
        raise CuvilError(
            f"{path!r} is not a torch.export program: {type(exc).__name__}: {exc}"
        ) from exc
    model = program.module()
    # An exported graph is fixed at export time; its modules only carry a stale training flag
    # (and refuse .eval()), so clear the flag directly.
    for sub in model.modules():
        sub.training = False
    examples: tuple[Any, ...] | None = None
    shapes: tuple[tuple[int, ...], ...] = ()
    if program.example_inputs is not None:
        args, _ = program.example_inputs
        examples = tuple(args)
        shapes = tuple(tuple(int(d) for d in x.shape) for x in examples)
    return LoadedModel(model, path, shapes, "export", examples)


def capture(
    loaded: LoadedModel,
    input_shapes: Sequence[tuple[int, ...]],
    capture_mode: str | None = None,
    dynamic_batch: bool = False,
) -> Module:
    """Capture ``loaded`` with the user's shapes (or its defaults) as a verified IR module."""
    from cuvil_ref.frontend import torch_to_cuvilir

    mode = capture_mode or loaded.default_capture
    shapes = [tuple(s) for s in input_shapes]
    if loaded.onnx_path is not None:
        from cuvil_ref.frontend.onnx import onnx_to_cuvilir

        if dynamic_batch:
            raise CaptureError("--dynamic-batch: an ONNX model's symbolic dims stay symbolic")
        return onnx_to_cuvilir(loaded.onnx_path, input_shapes=shapes or None)
    if not shapes and loaded.example_inputs is not None:
        return torch_to_cuvilir(
            loaded.model,
            example_inputs=loaded.example_inputs,
            capture=mode,
            dynamic_batch=dynamic_batch,
        )
    if not shapes:
        shapes = list(loaded.default_shapes)
    if not shapes:
        raise CaptureError(
            f"{loaded.label}: give the input shape with --input-shape (e.g. --input-shape "
            "1,3,224,224; repeat it for each input)"
        )
    return torch_to_cuvilir(
        loaded.model,
        input_shape=shapes if len(shapes) > 1 else shapes[0],
        capture=mode,
        dynamic_batch=dynamic_batch,
    )


def example_arrays(module: Module, seed: int = 0, bindings: dict[str, int] | None = None) -> list:
    """Random inputs matching ``module``'s input types (symbolic dims -> ``bindings`` or 1)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for v in module.inputs:
        shape = tuple((bindings or {}).get(d, 1) if isinstance(d, str) else d for d in v.type.shape)
        dtype = v.type.dtype.numpy
        if v.type.dtype.is_float:
            out.append(rng.standard_normal(shape).astype(dtype))
        elif v.type.dtype.value == "bool":
            out.append(rng.integers(0, 2, shape).astype(dtype))
        else:
            out.append(rng.integers(0, 4, shape).astype(dtype))
    return out
