"""The op -> kernel-template table the code-generating packs share (cuda, hip; a CPU pack may too).

A :class:`Template` names the kernel family that implements an op and the formula (or mode)
inside it: ``relu`` is the ``unary`` kernel with formula ``relu``, ``maximum`` the ``binary``
kernel with ``max``, ``amax`` the ``reduce`` kernel with ``max``, ``qavg_pool2d`` the
``qpool2d`` kernel in mode ``avg``. A pack implements template *families*: it gives an
:class:`Emitter` per family (its lowering function, check, accepted dtypes, and the formulas its
kernel library has), and :func:`lowerings` turns those into its lowering table. Two packs that
implement a family therefore claim the same ops under the same formulas, and an op added here
reaches every pack whose kernels have its formula.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cuvil_ref.ir.dtypes import DType
from cuvil_ref.ops import families
from cuvil_ref.plugin.kit.lowering import Check, Lowering, no_check


@dataclass(frozen=True)
class Template:
    """Kernel family and formula (or mode) that implement one op."""

    family: str
    formula: str = ""


def _same(family: str, ops: frozenset[str]) -> dict[str, Template]:
    return {op: Template(family, op) for op in ops}


#: Binary arithmetic ops whose kernel formula has a shorter name.
_BINARY_FORMULA = {"maximum": "max", "minimum": "min"}

TEMPLATES: dict[str, Template] = {
    # pointwise float kernels (float32 arithmetic whatever the storage dtype)
    **_same("unary", families.UNARY_MATH | families.SMOOTH_ACTIVATIONS | families.RELUS),
    "gelu": Template("unary", "gelu"),  # approximate='tanh' is formula gelu_tanh
    "clamp": Template("clamp", "clamp"),
    "hardtanh": Template("clamp", "clamp"),
    **{op: Template("binary", _BINARY_FORMULA.get(op, op)) for op in families.ARITHMETIC},
    "where": Template("select", "where"),
    "fused_elementwise": Template("chain"),
    # GEMM-like, with the fused epilogue (bias, activation, residual)
    "linear": Template("gemm", "linear"),
    "fused_linear": Template("gemm", "linear"),
    "matmul": Template("gemm", "matmul"),
    "fused_matmul": Template("gemm", "matmul"),
    "conv2d": Template("conv2d"),
    "fused_conv2d": Template("conv2d"),
    # rows and reductions
    "batch_norm": Template("batch_norm"),
    "layer_norm": Template("layer_norm"),
    **_same("softmax", families.SOFTMAXES),
    "sum": Template("reduce", "sum"),
    "mean": Template("reduce", "mean"),
    "amax": Template("reduce", "max"),
    "amin": Template("reduce", "min"),
    **_same("reduce", families.ARG_REDUCTIONS),
    # float pools (NCHW)
    "max_pool2d": Template("pool2d", "max"),
    "avg_pool2d": Template("pool2d", "avg"),
    "adaptive_avg_pool2d": Template("pool2d", "adaptive_avg"),
    "adaptive_max_pool2d": Template("pool2d", "adaptive_max"),
    # data movement
    **{op: Template("view") for op in families.VIEWS},
    **_same("movement", families.DATA_MOVEMENT - families.VIEWS),
    **_same("gather", families.INDEXING),
    # integer kernels (docs/semantics.md)
    "quantize": Template("quantize"),
    "dequantize": Template("dequantize"),
    "requantize": Template("requantize"),
    "qadd": Template("qbinary", "qadd"),
    "qmul": Template("qbinary", "qmul"),
    "qconcat": Template("qconcat"),
    "qlinear": Template("qgemm", "linear"),
    "qmatmul": Template("qgemm", "matmul"),
    "qconv2d": Template("qconv2d"),
    "qmax_pool2d": Template("qpool2d", "max"),
    "qavg_pool2d": Template("qpool2d", "avg"),
    "qadaptive_avg_pool2d": Template("qpool2d", "adaptive_avg"),
}


def formula(op: str) -> str:
    """The formula (or mode) of ``op``'s kernel template."""
    return TEMPLATES[op].formula


@dataclass(frozen=True)
class Emitter:
    """A pack's implementation of one template family.

    ``formulas``: the family's formulas the pack's kernels have (None: every one);
    ``lower``, ``dtypes`` and ``check`` become the :class:`Lowering` of each op it covers.
    """

    lower: Callable[..., Any]
    dtypes: frozenset[DType] | None = None
    check: Check = field(default=no_check)
    formulas: frozenset[str] | None = None


def lowerings(emitters: Mapping[str, Emitter]) -> dict[str, Lowering]:
    """A pack's lowering table: every op whose template family the pack implements with the
    op's formula."""
    table: dict[str, Lowering] = {}
    for op, template in TEMPLATES.items():
        emitter = emitters.get(template.family)
        if emitter is None:
            continue
        if emitter.formulas is not None and template.formula not in emitter.formulas:
            continue
        table[op] = Lowering(emitter.lower, emitter.dtypes, emitter.check)
    return table
