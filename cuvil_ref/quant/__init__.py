"""Quantization: PTQ (calibrate and rewrite into integer ops), QAT, torch.ao import, fp16/bf16
and mixed precision.

The integer arithmetic those ops compute lives with the ops, in :mod:`cuvil_ref.ops.qarith`
(``docs/semantics.md``); it is re-exported here for convenience.
"""

from __future__ import annotations

from typing import Any

from cuvil_ref.ops.qarith import (
    QuantArithError,
    check_accumulator_bound,
    choose_qparams,
    dequantize,
    qadd_int,
    qmul_int,
    quantize,
    quantize_multiplier,
    quantize_multipliers,
    relu_bounds,
    requantize_output,
    rescale,
    shared_shift_multipliers,
)

__all__ = [
    "QuantArithError",
    "check_accumulator_bound",
    "choose_qparams",
    "convert_qat",
    "dequantize",
    "freeze_qat",
    "prepare_qat",
    "qat_qconfig",
    "qadd_int",
    "qmul_int",
    "quantize",
    "quantize_multiplier",
    "quantize_module",
    "quantize_multipliers",
    "relu_bounds",
    "requantize_output",
    "rescale",
    "shared_shift_multipliers",
]


_LAZY = {
    "quantize_module": "cuvil_ref.quant.api",
    "prepare_qat": "cuvil_ref.quant.qat",
    "freeze_qat": "cuvil_ref.quant.qat",
    "convert_qat": "cuvil_ref.quant.qat",
    "qat_qconfig": "cuvil_ref.quant.qat",
}


def __getattr__(name: str) -> Any:
    # These pull in the op registry and the passes (and torch for QAT): load them on first use
    # so that importing the arithmetic stays light and torch optional.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'cuvil_ref.quant' has no attribute {name!r}")
