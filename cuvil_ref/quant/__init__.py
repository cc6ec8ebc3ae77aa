"""Integer-exact quantization: the arithmetic every kernel pack reproduces bit for bit.

See ``docs/semantics.md``; the implementation is :mod:`cuvil_ref.quant.arith`.
"""

from __future__ import annotations

from typing import Any

from cuvil_ref.quant.arith import (
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
    # These pull in the op registry (and torch for QAT), which itself imports this package's
    # arithmetic: load them on first use to keep the import graph acyclic and torch optional.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'cuvil_ref.quant' has no attribute {name!r}")
