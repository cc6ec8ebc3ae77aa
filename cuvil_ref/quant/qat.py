"""Quantization-aware training: insert fake-quant modules, fine-tune, compile to exact int8.

:func:`prepare_qat` uses torch.ao's FX graph-mode QAT with a qconfig that matches Cuvil's int8
scheme (``docs/semantics.md`` §1): activations per-tensor affine over the full 8-bit range
(torch ``quint8`` [0, 255], which is our int8 [-128, 127] shifted by 128: the same reals),
weights per-output-channel symmetric int8 in [-127, 127]. The fake-quant modules
(``FusedMovingAvgObsFakeQuantize``) pass gradients straight through inside the range (the
straight-through estimator) and their moving-average observers update on every training step.
Conv + BatchNorm pairs are fused so that BN folds into the quantized weight, as at inference.

After fine-tuning, :func:`freeze_qat` stops the observers and BN statistics and puts the model in
eval mode; ``cuvil.torch.compile(model, quantize="int8")`` (or :func:`convert_qat`) then builds
exactly the integer model implied by the learned scales (:mod:`cuvil_ref.quant.qdq`).
"""

from __future__ import annotations

import warnings
from typing import Any

from cuvil_ref.errors import QuantizationError
from cuvil_ref.ir.graph import Module


def qat_qconfig(averaging_constant: float = 0.01) -> Any:
    """The torch.ao ``QConfig`` matching Cuvil's int8 scheme (see the module docstring)."""
    import torch
    from torch.ao.quantization import QConfig
    from torch.ao.quantization.fake_quantize import FusedMovingAvgObsFakeQuantize
    from torch.ao.quantization.observer import (
        MovingAverageMinMaxObserver,
        MovingAveragePerChannelMinMaxObserver,
    )

    activation = FusedMovingAvgObsFakeQuantize.with_args(
        observer=MovingAverageMinMaxObserver,
        averaging_constant=averaging_constant,
        quant_min=0,
        quant_max=255,
        dtype=torch.quint8,
        qscheme=torch.per_tensor_affine,
    )
    weight = FusedMovingAvgObsFakeQuantize.with_args(
        observer=MovingAveragePerChannelMinMaxObserver,
        averaging_constant=averaging_constant,
        quant_min=-127,
        quant_max=127,
        dtype=torch.qint8,
        qscheme=torch.per_channel_symmetric,
        ch_axis=0,
    )
    return QConfig(activation=activation, weight=weight)


def prepare_qat(model: Any, example_inputs: Any, *, averaging_constant: float = 0.01) -> Any:
    """A copy of ``model`` with fake-quant modules inserted, in training mode, ready to fine-tune.

    ``example_inputs`` is one input tensor or a tuple of them (used by torch.fx to trace).
    Returns a ``torch.fx.GraphModule``; train it as usual, then call :func:`freeze_qat`.
    """
    import copy

    import torch
    from torch.ao.quantization import QConfigMapping
    from torch.ao.quantization.quantize_fx import prepare_qat_fx

    if not isinstance(model, torch.nn.Module):
        raise QuantizationError(f"prepare_qat needs a torch.nn.Module, got {type(model).__name__}")
    examples = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    mapping = QConfigMapping().set_global(qat_qconfig(averaging_constant))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.ao.quantization is deprecated
        warnings.filterwarnings("ignore", message=".*reduce_range will be deprecated.*")
        try:
            return prepare_qat_fx(copy.deepcopy(model).train(), mapping, tuple(examples))
        except Exception as exc:
            raise QuantizationError(
                f"prepare_qat: torch.ao's FX QAT could not prepare {type(model).__name__}: "
                f"{type(exc).__name__}: {exc}; the model must be symbolically traceable"
            ) from exc


def freeze_qat(model: Any) -> Any:
    """Stop observers and BN statistic updates and switch to eval mode (in place; returns it).

    After this the fake-quant scales are fixed, so a torch forward and the compiled int8 model use
    the same parameters.
    """
    import torch
    from torch.ao.quantization import disable_observer

    model.apply(disable_observer)
    model.eval()  # before freezing BN: a frozen ConvBn no longer forwards train()/eval()
    model.apply(torch.ao.nn.intrinsic.qat.freeze_bn_stats)
    return model


def convert_qat(
    model: Any, example_inputs: Any, calibration_data: Any = None
) -> tuple[Module, dict[str, Any]]:
    """Capture a frozen QAT (or torch.ao-converted) model and lower it to integer ops.

    Returns ``(int8 module, report)``; ``calibration_data`` (optional) only feeds the report's
    SQNR figures. ``cuvil.torch.compile(model, quantize="int8")`` does the same inside the full
    pipeline.
    """
    from cuvil_ref.frontend import torch_to_cuvilir
    from cuvil_ref.quant.qdq import has_qdq, lower_qdq

    examples = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    module = torch_to_cuvilir(model, example_inputs=tuple(examples), capture="fx")
    if not has_qdq(module.graph):
        raise QuantizationError(
            f"convert_qat: {type(model).__name__} has no enabled fake-quant or quantized modules; "
            "prepare it with cuvil_ref.quant.prepare_qat (or torch.ao) first"
        )
    return lower_qdq(module, calibration_data)


__all__ = ["convert_qat", "freeze_qat", "prepare_qat", "qat_qconfig"]
