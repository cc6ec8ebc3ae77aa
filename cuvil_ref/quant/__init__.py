"""Integer-exact quantization: the arithmetic every kernel pack reproduces bit for bit.

See ``docs/semantics.md``; the implementation is :mod:`cuvil_ref.quant.arith`.
"""

from __future__ import annotations

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
    "dequantize",
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


def __getattr__(name: str) -> object:
    # quantize_module pulls in the op registry, which itself imports this package's arithmetic:
    # load it on first use to keep the import graph acyclic.
    if name == "quantize_module":
        from cuvil_ref.quant.api import quantize_module

        return quantize_module
    raise AttributeError(f"module 'cuvil_ref.quant' has no attribute {name!r}")
