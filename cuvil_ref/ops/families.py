"""Op families: the shared vocabulary of per-op knowledge, and named sets of ops.

Two things live here, both imported everywhere instead of spelled-out lists (tinygrad's
``GroupOp``); this module imports nothing from the registry at import time, so the registry and
the op modules may import it.

* **The family of each op and its tolerance class.** Every
  :class:`~cuvil_ref.ops.registry.OpDef` has a ``family`` (the shape of its signature: what a test
  generator or a graph fuzzer must build to call it; :data:`FAMILIES`) and a ``tolerance`` class
  (how close a pack's float result must be to the interpreter's; :data:`TOLERANCE_CLASSES`). Both
  default from the op's category and inputs (:func:`default_family`, :func:`default_tolerance`);
  ops whose rule differs say so in their declaration. Sets by family or tolerance are computed
  from the registry: ``families.ops_in("unary")``, ``families.ops_with_tolerance("exact")``.
* **Named groups** that passes, quantization and kernel packs share::

      if node.op in families.VIEWS: ...            # reshape-like: same bytes, new shape
      if families.is_pointwise(get_op(node.op)): ...

  ``tests/ops/test_families.py`` checks that every name is a registered op and that each set
  agrees with the declarations' categories.
"""

from __future__ import annotations

import re
from typing import Protocol

#: family -> what an op of the family looks like (the generators and the fuzzer key on these).
FAMILIES: dict[str, str] = {
    "unary": "one tensor in, one of the same shape out (elementwise math, activations, cast)",
    "binary": "two broadcasting tensors in (arithmetic, comparisons, logical ops)",
    "select": "where(condition, a, b): three broadcasting tensors",
    "divide": "binary division-like op: integer divisors must be nonzero (an error, as in torch)",
    "reduce": "reduction over `axes` with `keepdim` (sum, mean, amax...)",
    "reduce_var": "variance-like reduction over `axes` with `correction`",
    "reduce_arg": "index of the extreme along `axis`",
    "select_k": "the k largest along `axis`: values and their i64 indices (topk)",
    "scan": "running accumulation along one `axis` (cumsum)",
    "softmax": "normalization along one `axis` (softmax, log_softmax)",
    "layer_norm": "normalization over the trailing `normalized_shape` dims",
    "batch_norm": "per-channel normalization with running statistics",
    "group_norm": "normalization over groups of channels",
    "matmul": "batched matrix product with broadcasting",
    "linear": "x @ weight.T + bias",
    "conv2d": "2-D convolution, NCHW input, OIHW weight",
    "pool2d": "2-D window pooling (kernel, stride, padding, ceil_mode...)",
    "adaptive_pool2d": "2-D pooling to a fixed output size",
    "epilogue": "a producer (conv/linear/matmul) fused with bias, activation and residual",
    "program": "a fused chain of elementwise ops written as a program attribute",
    "quantize": "float <-> int8 boundary (quantize, dequantize)",
    "requantize": "int8 in, int8 out, rescaled with fixed-point multipliers",
    "qbinary": "two int8 tensors in, int8 out (qadd, qmul, qmatmul)",
    "qgemm": "int8 linear or convolution with int32 bias and per-channel rescale",
    "qpool": "int8 pooling",
    "shape": "data movement: reshape, permute, slice, pad, concat, split...",
    "index": "gather-like ops with an integer index input",
    "factory": "no tensor input: the output is made from the attributes alone (arange)",
    "misc": "anything else (the generator is given by the op's grid points alone)",
}

#: category -> default tolerance class.
CATEGORY_TOLERANCE: dict[str, str] = {
    "elementwise": "ulp:4",
    "activation": "ulp:4",
    "reduction": "reduction",
    "normalization": "reduction",
    "linalg": "reduction",
    "conv": "reduction",
    "pooling": "reduction",
    "fused": "reduction+ulp:8",
    "quantized": "exact",
    "shape": "exact",
    "indexing": "exact",
}

#: tolerance class -> what it means (docs/conformance.md explains the formulas).
TOLERANCE_CLASSES: dict[str, str] = {
    "exact": "bit-exact (floats: ±0 compare equal)",
    "ulp:N": "|got - want| <= N ulp(want) + N ulp(1) 2^-8",
    "reduction": "|got - want| <= 2 K eps max(1, |want|max) + 1 ulp(want), K = accumulated terms",
    "reduction+ulp:N": "the reduction bound plus N ulp(want) for a fused elementwise epilogue",
}

_TOLERANCE_RE = re.compile(r"^(exact|reduction|ulp:[1-9][0-9]*|reduction\+ulp:[1-9][0-9]*)$")

_CATEGORY_FAMILY = {
    "reduction": "reduce",
    "normalization": "layer_norm",
    "linalg": "matmul",
    "conv": "conv2d",
    "pooling": "pool2d",
    "fused": "epilogue",
    "shape": "shape",
    "indexing": "index",
}


def default_family(category: str, inputs: tuple[str, ...]) -> str:
    """The family an op gets when its declaration names none."""
    if category in ("elementwise", "activation"):
        if len(inputs) == 1 and not inputs[0].startswith("*"):
            return "unary"
        if len(inputs) == 2 and not any(n.startswith("*") or n.endswith("?") for n in inputs):
            return "binary"
        return "misc"
    if category == "quantized":
        return "misc"
    return _CATEGORY_FAMILY.get(category, "misc")


def default_tolerance(category: str) -> str:
    """The tolerance class an op gets when its declaration names none."""
    return CATEGORY_TOLERANCE.get(category, "exact")


def check_tolerance(text: str) -> str | None:
    """None when ``text`` is a valid tolerance class, else what is wrong with it."""
    if _TOLERANCE_RE.match(text):
        return None
    return f"tolerance {text!r} is not one of {', '.join(TOLERANCE_CLASSES)}"


def check_family(name: str) -> str | None:
    """None when ``name`` is a known family, else what is wrong with it."""
    if name in FAMILIES:
        return None
    return f"family {name!r} is not one of {', '.join(FAMILIES)}"


def ops_in(family: str) -> frozenset[str]:
    """Names of the registered ops of ``family``."""
    from cuvil_ref.ops import REGISTRY

    if family not in FAMILIES:
        raise KeyError(check_family(family))
    return frozenset(d.name for d in REGISTRY if d.family == family)


def ops_with_tolerance(tolerance: str) -> frozenset[str]:
    """Names of the registered ops whose tolerance class is ``tolerance``."""
    from cuvil_ref.ops import REGISTRY

    return frozenset(d.name for d in REGISTRY if d.tolerance == tolerance)


# --- named groups ----------------------------------------------------------------------------

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
