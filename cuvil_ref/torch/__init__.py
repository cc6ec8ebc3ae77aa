"""``cuvil.torch.compile``: capture a PyTorch model, then compile it for a target.

Capture (torch.fx or torch.export, see ``cuvil_ref.frontend``) produces the IR; everything after
that — quantization, the pass pipeline, memory planning, partitioning and lowering through the
target's kernel pack, the compile cache — is ``cuvil_ref.lowering.compiler.compile_module``.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from cuvil_ref.errors import CaptureError, CuvilError, InputError, TorchExportError
from cuvil_ref.frontend.shared_weights import SharedWeights
from cuvil_ref.gc_pause import without_gc
from cuvil_ref.ir.graph import Module
from cuvil_ref.torch.compiled import CompiledModule

CAPTURE_MODES = ("auto", "fx", "export")


def _signature(model: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(model.forward)
    except (TypeError, ValueError, AttributeError):
        return None


def _capture(
    model: Any,
    examples: tuple[Any, ...],
    kwargs: dict[str, Any],
    capture: str,
    dynamic_dims: Any,
    dynamic_batch: bool,
) -> tuple[Module, str, SharedWeights]:
    """The captured module, the capture path that produced it, and the model's tensors whose
    memory the module's constants view (no weight is copied: see ``shared_weights.py``)."""
    from cuvil_ref.frontend import torch_to_cuvilir

    def run(mode: str) -> tuple[Module, str, SharedWeights]:
        shared = SharedWeights()
        module = torch_to_cuvilir(
            model,
            example_inputs=examples if examples or not kwargs else None,
            example_kwargs=kwargs or None,
            capture=mode,
            dynamic_dims=dynamic_dims,
            dynamic_batch=dynamic_batch,
            shared=shared,
        )
        return module, mode, shared

    if capture != "auto":
        return run(capture)
    try:
        return run("export")
    except TorchExportError as export_error:
        # torch.export could not trace the model (data-dependent Python, say): torch.fx may.
        # A model that exported but holds an op Cuvil refuses keeps that error: fx would only
        # trace the same op, or worse, bake a call such as torch.rand(3) into a constant.
        try:
            return run("fx")
        except CaptureError as fx_error:
            raise CaptureError(
                f"capture='auto' failed with both paths.\n  export: {export_error}\n  fx: "
                f"{fx_error}"
            ) from export_error


class _LazyCompiled(CompiledModule):
    """Compiles on the first call, using that call's inputs as the example inputs."""

    def __init__(
        self,
        build: Callable[[tuple[Any, ...], dict[str, Any]], CompiledModule],
        signature: inspect.Signature | None,
    ) -> None:
        self._build = build
        self._lazy_signature = signature
        self._compiled: CompiledModule | None = None

    def _ensure(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CompiledModule:
        if self._compiled is None:
            tensors = {k: v for k, v in kwargs.items() if v is not None}
            self._compiled = self._build(args, tensors)
        return self._compiled

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._ensure(args, kwargs)(*args, **kwargs)

    def _done(self, what: str) -> CompiledModule:
        if self._compiled is None:
            raise InputError(
                f"'{what}' is not available before the first call: compile with "
                "example_inputs=(x,) to compile eagerly"
            )
        return self._compiled

    @property
    def module(self) -> Module:
        return self._done("module").module

    def report(self) -> dict[str, Any]:
        return self._done("report").report()

    def save(self, path: str, **kwargs: Any) -> None:
        self._done("save").save(path, **kwargs)


def _to_numpy_batch(batch: Any) -> tuple[np.ndarray, ...]:
    items = batch if isinstance(batch, (tuple, list)) else (batch,)
    out = []
    for item in items:
        if hasattr(item, "detach"):
            item = item.detach().cpu().numpy()
        out.append(np.asarray(item))
    return tuple(out)


@without_gc  # see cuvil_ref/gc_pause.py: a full collection cost a quarter of a compile
def compile(
    model: Any,
    target: Any = "ref",
    quantize: str | None = None,
    enable_fusion: bool = True,
    example_inputs: Any = None,
    calibration_data: Any = None,
    opt_level: int = 2,
    enable_layout_opt: bool = True,
    options: dict[str, Any] | None = None,
    dynamic_dims: Any = None,
    dynamic_batch: bool = False,
    capture: str = "auto",
    fallback: str = "allow",
    cache: bool | None = None,
    quant_options: dict[str, Any] | None = None,
    example_kwargs: dict[str, Any] | None = None,
) -> CompiledModule:
    """Compile ``model`` for ``target``; the result is called like the model.

    ``target``: a name (``"ref"``, ``"npu-v3"``, ``"cuda"``...), a dict or a JSON spec file
    (``{"target": "nvidia/nvrtc", "arch": "cuda", "features": [...]}``); ``options`` are the
    target's options (validated by its pack). ``quantize``: None, "int8", "fp16", "bf16" or
    "mixed"; int8 calibrates on ``calibration_data`` (an iterable of input tuples or single
    tensors; default: the example inputs, with a warning). ``opt_level`` 0..3 (see
    ``cuvil_ref.passes.pipeline``). ``dynamic_dims={0: "batch"}`` (per input) or
    ``dynamic_batch=True`` make sizes symbolic. ``capture="auto"`` uses torch.export (Core ATen
    plus Cuvil's preserved ops, a closed vocabulary), and torch.fx only where torch.export cannot
    trace the model. ``fallback="error"``
    forbids running unsupported nodes on ``ref``.
    ``cache``: use the on-disk compile cache (default on; ``CUVIL_CACHE=0`` turns it off).
    ``quant_options``: passed to the quantizer (``observer="percentile"``, ``per_channel``,
    ``min_sqnr_db`` for "mixed"...; see ``cuvil_ref.quant.quantize_module``).
    ``example_kwargs``: keyword inputs by forward parameter name (``{"attention_mask": m}``);
    ``example_inputs`` may also be such a dict. The compiled module is then called like the
    model (``cm(ids, attention_mask=m)``) and returns the model's own output structure
    (``ModelOutput``, namedtuple, dataclass, nested containers).
    Without ``example_inputs`` the model is captured on its first call.
    """
    from cuvil_ref.lowering.compiler import QUANTIZE_MODES, compile_module, merge_options
    from cuvil_ref.plugin.host import get_host

    spec = get_host().resolve(merge_options(target, options))  # fail early on a bad target
    if quantize not in QUANTIZE_MODES:
        raise CuvilError(f"quantize={quantize!r} is not one of {list(QUANTIZE_MODES)}")
    if capture not in CAPTURE_MODES:
        raise CaptureError(f"capture={capture!r} is not one of {list(CAPTURE_MODES)}")
    if not isinstance(opt_level, int) or not 0 <= opt_level <= 3:
        raise CuvilError(f"opt_level must be 0, 1, 2 or 3, got {opt_level!r}")
    if fallback not in ("allow", "error"):
        raise CuvilError(f"fallback={fallback!r} is not one of ['allow', 'error']")
    signature = _signature(model)

    @without_gc  # also when the model is captured on its first call
    def build(examples: tuple[Any, ...], kwargs: dict[str, Any]) -> CompiledModule:
        module, mode, shared = _capture(
            model, examples, kwargs, capture, dynamic_dims, dynamic_batch
        )
        calib = None
        if quantize in ("int8", "mixed"):
            if calibration_data is None:
                warnings.warn(
                    f"quantize={quantize!r} without calibration_data: calibrating on the example "
                    "inputs only; accuracy needs representative data (pass calibration_data=[...])",
                    UserWarning,
                    stacklevel=3,
                )
                calib = [_to_numpy_batch((*examples, *kwargs.values()))]
            else:
                calib = [_to_numpy_batch(b) for b in calibration_data]
        program = compile_module(
            module,
            spec,
            quantize=quantize,
            opt_level=opt_level,
            enable_fusion=enable_fusion,
            enable_layout_opt=enable_layout_opt,
            calibration_data=calib,
            fallback=fallback,
            cache=cache,
            quant_options=quant_options,
        )
        return CompiledModule(
            program, capture=mode, signature=signature, options=options, weights=shared
        )

    if isinstance(example_inputs, dict):
        if example_kwargs:
            raise InputError("give keyword inputs either as example_inputs={...} or example_kwargs")
        example_inputs, example_kwargs = (), example_inputs
    if example_inputs is None and not example_kwargs:
        return _LazyCompiled(build, signature)
    examples: Any = () if example_inputs is None else example_inputs
    if not isinstance(examples, (tuple, list)):
        examples = (examples,)
    return build(tuple(examples), dict(example_kwargs or {}))


__all__ = ["CompiledModule", "compile"]
