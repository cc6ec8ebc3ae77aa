"""Fused epilogues for GEMM/conv: float (bias, activation, residual) and int8 requantization.

Float activations are a table of C expressions over ``x``. The int8 requantization epilogue is
the pinned rescale of the quant spec, emitted as one C expression; ``REQUANT_C`` is the exact text
the tests evaluate in numpy int64 to check it against the spec.
"""

from __future__ import annotations

from dataclasses import dataclass

ACTIVATIONS: dict[str, str] = {
    "none": "(@)",
    "relu": "cuvil_max_nan((@), 0.0f)",
    "relu6": "cuvil_min_nan(cuvil_max_nan((@), 0.0f), 6.0f)",
    "gelu": "(0.5f * (@) * (1.0f + erff((@) * 0.70710678118654752f)))",
    "gelu_tanh": (
        "(0.5f * (@) * (1.0f + tanhf(0.7978845608028654f * ((@) + 0.044715f * (@) * (@) * (@)))))"
    ),
    "silu": "((@) / (1.0f + expf(-(@))))",
    "sigmoid": "(1.0f / (1.0f + expf(-(@))))",
    "hardswish": "((@) * fminf(fmaxf((@) + 3.0f, 0.0f), 6.0f) / 6.0f)",
    "tanh": "tanhf(@)",
}


@dataclass(frozen=True)
class Epilogue:
    """What a float GEMM/conv does to each fp32 accumulator before storing it.

    Order: ``acc + bias[channel]``, then ``activation``, then ``+ residual[out_index]`` (the
    residual is added after the activation, as in ``relu(conv(x) + b) + skip``; use
    ``residual_before_activation`` for ``relu(conv(x) + b + skip)``).
    """

    bias: bool = False
    activation: str = "none"
    residual: bool = False
    residual_before_activation: bool = False

    def __post_init__(self) -> None:
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"epilogue activation {self.activation!r} is unknown; use one of "
                f"{sorted(ACTIVATIONS)}"
            )

    def as_params(self) -> dict[str, object]:
        return {
            "bias": self.bias,
            "activation": self.activation,
            "residual": self.residual,
            "residual_before_activation": self.residual_before_activation,
        }


NO_EPILOGUE = Epilogue()


def activation_expr(name: str, x: str) -> str:
    """The C expression applying activation ``name`` to the C expression ``x``."""
    return ACTIVATIONS[name].replace("@", x)


def float_epilogue(ep: Epilogue, acc: str, channel: str, out_index: str, load_res: str) -> str:
    """C statements turning ``acc`` into the final fp32 value ``v``.

    ``load_res`` is a format string with ``{x}`` converting a residual element to float.
    """
    lines = [f"float v = {acc};"]
    if ep.bias:
        lines.append(f"v += {load_res.format(x=f'bias[{channel}]')};")
    residual = f"v += {load_res.format(x=f'residual[{out_index}]')};"
    if ep.residual and ep.residual_before_activation:
        lines.append(residual)
    if ep.activation != "none":
        lines.append(f"v = {activation_expr(ep.activation, 'v')};")
    if ep.residual and not ep.residual_before_activation:
        lines.append(residual)
    return " ".join(lines)


# The pinned rescale: (acc * M + (1 << (shift - 1))) >> shift in int64, arithmetic shift.
REQUANT_C = "(((long long)(acc) * (long long)(mult) + (1LL << ((shift) - 1))) >> (shift))"

# qadd with a shared shift and one rounding; da = a - a_zp, db = b - b_zp.
QADD_C = (
    "((((long long)(da) * (long long)(mult_a) + (long long)(db) * (long long)(mult_b)) "
    "+ (1LL << ((shift) - 1))) >> (shift))"
)

REQUANT_DEVICE_FN = r"""
__device__ __forceinline__ signed char cuvil_clamp_i8(long long r, int qmin, int qmax) {
  r = r < (long long)qmin ? (long long)qmin : r;
  r = r > (long long)qmax ? (long long)qmax : r;
  return (signed char)r;
}
// Quant spec requantization: clamp(out_zp + rescale(acc, M, shift), qmin, qmax), int64 math.
__device__ __forceinline__ signed char cuvil_requant(long long acc, int mult, int shift,
                                                     int out_zp, int qmin, int qmax) {
  return cuvil_clamp_i8((long long)out_zp + REQUANT_EXPR, qmin, qmax);
}
// Quant spec qadd: clamp(out_zp + ((da*M_a + db*M_b + (1 << (shift-1))) >> shift), qmin, qmax).
__device__ __forceinline__ signed char cuvil_qadd(int da, int db, int mult_a, int mult_b,
                                                  int shift, int out_zp, int qmin, int qmax) {
  return cuvil_clamp_i8((long long)out_zp + QADD_EXPR, qmin, qmax);
}
""".replace("REQUANT_EXPR", REQUANT_C).replace("QADD_EXPR", QADD_C)
