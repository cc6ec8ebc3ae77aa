"""Op families: named sets of op names that passes, quantization and kernel packs share.

Code that treats a group of ops alike imports the group from here instead of spelling the names
out (tinygrad's ``GroupOp``)::

    from cuvil_ref.ops import families
    if node.op in families.VIEWS: ...            # reshape-like: same bytes, new shape
    if families.is_pointwise(get_op(node.op)): ...

The sets are plain names, so this module imports nothing from the registry (the registry and
the op modules may import it); ``tests/ops/test_families.py`` checks that every name is a
registered op and that each set agrees with the declarations' categories.
"""

from __future__ import annotations

from typing import Protocol

#: Categories whose ops are pointwise: output element i depends on input element i only (after
#: broadcasting), so they fuse into chains and may write in place over a dying input.
POINTWISE_CATEGORIES: frozenset[str] = frozenset({"elementwise", "activation"})

#: Unary float math with one formula each (no attributes).
UNARY_MATH: frozenset[str] = frozenset({"neg", "abs", "exp", "log", "sqrt", "rsqrt", "erf"})
#: Binary float arithmetic with numpy broadcasting.
ARITHMETIC: frozenset[str] = frozenset({"add", "sub", "mul", "div", "pow", "maximum", "minimum"})
#: Binary arithmetic where ``a op b == b op a``.
COMMUTATIVE: frozenset[str] = frozenset({"add", "mul", "maximum", "minimum"})
#: Comparisons (bool result).
COMPARISONS: frozenset[str] = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})
#: Activations that are a clamp of their input (exact in every dtype).
CLAMPS: frozenset[str] = frozenset({"relu", "relu6", "clamp", "hardtanh"})
#: Clamps with fixed bounds: they fold into an int8 op's output range (qmin, qmax).
RELUS: frozenset[str] = frozenset({"relu", "relu6"})
#: Smooth activations without attributes (gelu has one: ``approximate``).
SMOOTH_ACTIVATIONS: frozenset[str] = frozenset({"sigmoid", "tanh", "silu", "hardswish"})
#: Activations that are neither a clamp nor piecewise linear: no int8 output range or rescale
#: expresses them, so the quantizer gives each a 256-entry table (``qlut``).
NONLINEAR_ACTIVATIONS: frozenset[str] = SMOOTH_ACTIVATIONS | frozenset(
    {"gelu", "hardsigmoid", "softplus", "elu", "mish"}
)

#: Reshape-like ops: the output is the input's bytes under a new shape (no data moves), so a
#: memory plan gives the output the input's buffer and an int8 tensor keeps its parameters.
VIEWS: frozenset[str] = frozenset({"reshape", "flatten", "squeeze", "unsqueeze"})
#: Axis permutations.
PERMUTES: frozenset[str] = frozenset({"permute", "transpose"})
#: One-input data movement where every output element is a copy of one input element (no fill
#: value, no second tensor): an int8 tensor keeps its scale and zero point through them.
REARRANGEMENTS: frozenset[str] = PERMUTES | frozenset({"expand", "slice", "split"})
#: Ops that move data without arithmetic (bit-exact in every dtype).
DATA_MOVEMENT: frozenset[str] = VIEWS | REARRANGEMENTS | frozenset({"concat", "pad"})
#: Gather-like ops with an integer index input.
INDEXING: frozenset[str] = frozenset({"index_select", "gather", "embedding"})

#: GEMM-like float ops and their fused (bias, activation, residual epilogue) forms.
GEMMS: frozenset[str] = frozenset({"linear", "matmul"})
CONVS: frozenset[str] = frozenset({"conv2d"})
FUSED_PRODUCERS: frozenset[str] = frozenset({"fused_conv2d", "fused_linear", "fused_matmul"})
#: Ops that sum many products (their accumulator is wider than their storage: f32 for floats).
ACCUMULATING: frozenset[str] = GEMMS | CONVS | FUSED_PRODUCERS
#: Ops with a ``[N, K]`` weight (``y = x @ W.T``), float, fused and int8.
LINEARS: frozenset[str] = frozenset({"linear", "fused_linear", "qlinear"})

#: Float 2-D pools (NCHW) and their adaptive forms.
POOLS: frozenset[str] = frozenset({"max_pool2d", "avg_pool2d"})
ADAPTIVE_POOLS: frozenset[str] = frozenset({"adaptive_avg_pool2d", "adaptive_max_pool2d"})
#: Float pools with a channels-last twin ``<op>_nhwc`` (``cuvil_ref.ops.fused``) that the layout
#: pass may choose.
NHWC_POOLS: frozenset[str] = POOLS | frozenset({"adaptive_avg_pool2d"})

#: Control flow: ops that hold regions (``Node.regions``) and run them (``ops/control_flow.py``).
CONTROL_FLOW: frozenset[str] = frozenset({"if", "while"})

#: Reductions over ``axes`` and the index-of-extreme reductions over one ``axis``.
REDUCTIONS: frozenset[str] = frozenset({"sum", "mean", "amax", "amin", "prod"})
ARG_REDUCTIONS: frozenset[str] = frozenset({"argmax", "argmin"})
SOFTMAXES: frozenset[str] = frozenset({"softmax", "log_softmax"})

#: The float <-> int8 boundary.
QUANT_BOUNDARY: frozenset[str] = frozenset({"quantize", "dequantize"})
#: Integer elementwise ops (int8 in, int8 out, fixed-point rescale).
QUANT_ELEMENTWISE: frozenset[str] = frozenset({"requantize", "qadd", "qmul"})
#: Integer accumulating ops (int32 accumulation, per-channel or per-tensor rescale).
QUANT_GEMMS: frozenset[str] = frozenset({"qlinear", "qmatmul", "qconv2d"})
QUANT_POOLS: frozenset[str] = frozenset({"qmax_pool2d", "qavg_pool2d", "qadaptive_avg_pool2d"})
#: Every op that computes on int8 values with the pinned integer arithmetic.
QUANTIZED: frozenset[str] = QUANT_ELEMENTWISE | QUANT_GEMMS | QUANT_POOLS | frozenset({"qconcat"})


class _HasCategory(Protocol):
    @property
    def category(self) -> str: ...


def is_pointwise(opdef: _HasCategory) -> bool:
    """Whether ``opdef`` (an :class:`~cuvil_ref.ops.registry.OpDef`) is pointwise."""
    return opdef.category in POINTWISE_CATEGORIES
