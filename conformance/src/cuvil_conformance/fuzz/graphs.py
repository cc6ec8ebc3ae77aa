"""Hypothesis strategies for random well-typed graphs of registry ops.

A graph is a chain: one runtime input, then up to ``max_ops`` steps, each appending one op of a
family that accepts the current value (its dtype in the op's ``dtypes``, its rank fitting the
family). The op, its attributes (``attrs.draw_attrs``, from the declaration) and its extra
inputs (weights, biases, a broadcasting operand: constants shaped by the family) are drawn; the
op's own inference validates the result and a rejected draw is skipped. Steps favour chains the
optimizer fuses: a GEMM or conv followed by a bias add, an activation and a residual add, and runs
of pointwise ops. Integer chains start with ``quantize`` and run the int8 ops, whose fixed-point
multipliers come from random float ratios exactly as the quantizer derives them.

Everything random is drawn from hypothesis (array contents from a drawn seed), so failures
shrink to short chains of small tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import hypothesis.strategies as st
import numpy as np

from cuvil_conformance.cases import InputSpec
from cuvil_conformance.fuzz.attrs import Draw, draw_attrs
from cuvil_conformance.generators.points import rescale_attrs
from cuvil_ref.errors import CuvilError
from cuvil_ref.ir import DType, GraphBuilder, TensorType
from cuvil_ref.ir.graph import Module, Value
from cuvil_ref.ops import REGISTRY, OpDef, families
from cuvil_ref.ops.fused import ACTIVATIONS

VALUE_KINDS = ("normal", "normal", "unit", "small", "edge", "positive")


@dataclass
class FuzzCase:
    """A generated module, its runtime inputs, and whether it is an int8 chain."""

    module: Module
    inputs: list[np.ndarray]
    integer: bool = False

    def describe(self) -> str:
        return " -> ".join(n.op for n in self.module.graph.nodes) or "(no op)"


@dataclass
class Chain:
    """Builder state: the graph so far, a numpy generator for constants, earlier values."""

    b: GraphBuilder
    rng: np.random.Generator
    values: list[Value] = field(default_factory=list)
    # put abs() before an op whose float domain is positive (log, sqrt): in torch mode a sign
    # flip of a tiny intermediate (gelu(-6) is -6e-9 here, -0.0 in torch) is not a finding
    guard_domains: bool = False

    def const(self, shape: tuple[int, ...], dtype: str = "f32", kind: str = "normal") -> Value:
        arr = InputSpec(tuple(shape), dtype, kind).generate(self.rng)
        return self.b.constant(self.b.fresh("c"), arr)

    def try_op(self, op: str, inputs: list[Value], attrs: dict[str, Any]) -> Value | None:
        try:
            outs = self.b.op_multi(op, inputs, attrs)
        except CuvilError:
            return None  # the declaration rejects this draw: skip the step
        self.values.extend(outs)
        return outs[0]


def _ops(family: str, dtype: DType, exclude: frozenset[str] = frozenset()) -> list[OpDef]:
    return [
        REGISTRY.get(n)
        for n in sorted(families.ops_in(family) - exclude)
        if dtype in REGISTRY.get(n).dtypes
    ]


# --- float steps, by family ----------------------------------------------------------------------

Step = Callable[[Draw, Chain, Value], Value | None]


def _plain(draw: Draw, ch: Chain, x: Value, opdef: OpDef) -> Value | None:
    return ch.try_op(opdef.name, [x], draw_attrs(draw, opdef, x.type))


def _family_step(family: str, extra: Callable[..., list[Value]] | None = None) -> Step:
    def step(draw: Draw, ch: Chain, x: Value) -> Value | None:
        candidates = _ops(family, x.type.dtype)
        if not candidates:
            return None
        opdef = draw(st.sampled_from(candidates))
        if ch.guard_domains and opdef.conformance.domain == "positive" and x.type.dtype.is_float:
            x = ch.try_op("abs", [x], {}) or x
        attrs = draw_attrs(draw, opdef, x.type)
        inputs = [x, *(extra(draw, ch, x, opdef, attrs) if extra else [])]
        return ch.try_op(opdef.name, inputs, attrs)

    return step


def _broadcast_operand(draw: Draw, ch: Chain, x: Value, opdef: OpDef, attrs: Any) -> list[Value]:
    shape = tuple(int(d) for d in x.type.shape)
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return [x]  # x op x
    dtype = x.type.dtype.value
    kind = opdef.conformance.domain if opdef.conformance.domain != "any" else "normal"
    target = {1: shape, 2: shape[-1:], 3: ()}[choice]
    return [ch.const(target, dtype, kind)]


def _norm_params(draw: Draw, ch: Chain, x: Value, opdef: OpDef, attrs: Any) -> list[Value]:
    dtype = x.type.dtype.value
    shape = tuple(int(d) for d in x.type.shape)
    if opdef.family == "batch_norm":
        c = (shape[1],) if len(shape) > 1 else (1,)
        return [ch.const(c, dtype), ch.const(c, dtype, "positive"), ch.const(c, dtype)]
    param = tuple(attrs.get("normalized_shape", ())) or (shape[1:2] if len(shape) > 1 else ())
    n = draw(st.integers(0, len([i for i in opdef.inputs if i.endswith("?")])))
    return [ch.const(param, dtype) for _ in range(n)]


def _gemm_weights(draw: Draw, ch: Chain, x: Value, opdef: OpDef, attrs: Any) -> list[Value]:
    shape = tuple(int(d) for d in x.type.shape)
    dtype = x.type.dtype.value
    out = draw(st.integers(1, 6))
    if opdef.family == "matmul":
        return [ch.const((shape[-1], out) if len(shape) > 0 else (1,), dtype)]
    if opdef.family == "linear":
        ws = [ch.const((out, shape[-1]), dtype)]
        return ws + ([ch.const((out,), dtype)] if draw(st.booleans()) else [])
    # conv2d: the kernel size is the weight's shape, not an attribute
    groups = attrs.get("groups", 1)
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    w = ch.const((groups * out, shape[1] // groups, kh, kw), dtype)
    return [w] + ([ch.const((groups * out,), dtype)] if draw(st.booleans()) else [])


def _epilogue_step(draw: Draw, ch: Chain, x: Value) -> Value | None:
    """A producer, then (each optional) a bias add, a fusable activation, a residual add."""
    rank = x.type.rank
    family = draw(st.sampled_from(["linear", "matmul"] + (["conv2d"] if rank == 4 else [])))
    y = _family_step(family, _gemm_weights)(draw, ch, x)
    if y is None:
        return None
    shape = tuple(int(d) for d in y.type.shape)
    if draw(st.booleans()) and shape:
        c = shape[1] if family == "conv2d" else shape[-1]
        bias_shape = (c, 1, 1) if family == "conv2d" else (c,)
        y = ch.try_op("add", [y, ch.const(bias_shape, y.type.dtype.value)], {}) or y
    activations = sorted({spec[0] for spec in ACTIVATIONS.values() if spec})
    if draw(st.booleans()):
        act = REGISTRY.get(draw(st.sampled_from(activations)))
        y = _plain(draw, ch, y, act) or y
    if draw(st.booleans()):
        same = [v for v in ch.values if v.type == y.type and v is not y]
        other = draw(st.sampled_from(same)) if same else ch.const(shape, y.type.dtype.value)
        y = ch.try_op("add", [y, other], {}) or y
    return y


def _pointwise_run(draw: Draw, ch: Chain, x: Value) -> Value | None:
    """Two to four pointwise ops in a row (a fused_elementwise candidate)."""
    y: Value | None = x
    for _ in range(draw(st.integers(2, 4))):
        step = draw(st.sampled_from([_UNARY, _BINARY]))
        y = step(draw, ch, y) or y
    return y


_UNARY = _family_step("unary")
_BINARY = _family_step("binary", _broadcast_operand)
FLOAT_STEPS: list[tuple[Step, int, int]] = [  # (step, weight, minimum rank)
    (_UNARY, 4, 0),
    (_BINARY, 4, 0),
    (_pointwise_run, 2, 0),
    (_epilogue_step, 3, 1),
    (_family_step("shape"), 3, 0),
    (_family_step("reduce"), 1, 1),
    (_family_step("reduce_var"), 1, 1),
    (_family_step("reduce_arg"), 1, 1),
    (_family_step("softmax"), 1, 1),
    (_family_step("layer_norm", _norm_params), 1, 1),
    (_family_step("batch_norm", _norm_params), 1, 2),
    (_family_step("group_norm", _norm_params), 1, 3),
    (_family_step("pool2d"), 2, 4),
    (_family_step("adaptive_pool2d"), 1, 4),
]


@st.composite
def float_chains(
    draw: Draw,
    max_ops: int = 5,
    dtypes: tuple[str, ...] = ("f32", "f16"),
    guard_domains: bool = False,
    kinds: tuple[str, ...] = VALUE_KINDS,
) -> FuzzCase:
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    dtype = draw(st.sampled_from(dtypes))
    ch = Chain(GraphBuilder(), np.random.default_rng(draw(st.integers(0, 2**16))))
    ch.guard_domains = guard_domains
    x = ch.b.input("x", TensorType(shape, DType(dtype)))
    ch.values.append(x)
    kind = draw(st.sampled_from(kinds))
    arr = InputSpec(shape, dtype, kind).generate(np.random.default_rng(draw(st.integers(0, 99))))
    cur = x
    for _ in range(draw(st.integers(1, max_ops))):
        fits = [(s, w) for s, w, r in FLOAT_STEPS if cur.type.rank >= r]
        step = draw(st.sampled_from([s for s, w in fits for _ in range(w)]))
        cur = step(draw, ch, cur) or cur
    outputs = [cur] if cur is not x else [ch.try_op("neg", [x], {}) or x]
    return FuzzCase(Module(ch.b.build(outputs), "fuzz"), [arr])


# --- int8 chains ---------------------------------------------------------------------------------


def _ratio_hints(draw: Draw, opdef: OpDef, x: TensorType, attrs: dict[str, Any]) -> dict:
    """The rescale attributes, with the hint convention the op's own grid points use."""
    kinds = [k for p in opdef.conformance.grid for k in p.hints]
    ratio = st.floats(0.002, 2.0, allow_nan=False)
    if "shared_ratios" in kinds:
        return rescale_attrs({"shared_ratios": (draw(ratio), draw(ratio))})
    if "pool_ratio" in kinds:
        # the largest window: the kernel (padding counted) or, adaptive, the whole input
        window = int(np.prod(attrs["kernel"])) if "kernel" in attrs else int(np.prod(x.shape[-2:]))
        return rescale_attrs({"pool_ratio": draw(ratio), "pool_max": max(window, 1)})
    if "ratios" in kinds:
        return {}  # per channel: filled once the output channel count is known
    return rescale_attrs({"ratio": draw(ratio)})


def _quant_attrs(draw: Draw, opdef: OpDef, x: TensorType) -> dict[str, Any]:
    attrs = draw_attrs(draw, opdef, x)
    zp = st.integers(-20, 20)
    for name in ("x_zp", "a_zp", "b_zp", "out_zp"):
        if name in attrs and not isinstance(attrs[name], tuple):
            attrs[name] = draw(zp)
    if "qmin" in attrs:
        lo, hi = draw(st.integers(-128, 0)), draw(st.integers(0, 127))
        attrs["qmin"], attrs["qmax"] = lo, hi
        attrs["qmin"] = min(attrs["qmin"], attrs.get("out_zp", 0))
    if "out_scale" in attrs:
        attrs["out_scale"] = draw(st.sampled_from([0.02, 0.05, 0.1, 0.5]))
    attrs.update(_ratio_hints(draw, opdef, x, attrs))
    return attrs


def _int8_step(draw: Draw, ch: Chain, x: Value) -> Value | None:
    shape = tuple(int(d) for d in x.type.shape)
    fams = ["requantize", "qbinary", "qpool", "qgemm", "shape"]
    family = draw(st.sampled_from(fams))
    candidates = _ops(family, DType.i8, frozenset({"quantize", "dequantize"}))
    if not candidates:
        return None
    opdef = draw(st.sampled_from(candidates))
    attrs = (
        _quant_attrs(draw, opdef, x.type)
        if opdef.category == "quantized"
        else draw_attrs(draw, opdef, x.type)
    )
    inputs = [x]
    if opdef.inputs[0].startswith("*"):  # variadic (qconcat): x with itself
        inputs.append(x)
        attrs["x_zp"] = (draw(st.integers(-20, 20)),) * 2
        attrs.update(rescale_attrs({"ratios": (draw(st.floats(0.1, 2)), draw(st.floats(0.1, 2)))}))
    elif opdef.family == "qbinary" and opdef.inputs[1] == "b" and "b_zp" in attrs:
        if draw(st.booleans()) and len(shape) >= 1:  # a matmul-shaped or elementwise partner
            inputs.append(ch.const((shape[-1], draw(st.integers(1, 5))), "i8", "full"))
        else:
            inputs.append(x if draw(st.booleans()) else ch.const(shape, "i8", "full"))
    elif opdef.family == "qgemm":
        out = draw(st.integers(1, 6))
        groups = attrs.get("groups", 1)
        if "groups" in attrs and len(shape) == 4:
            w = (groups * out, shape[1] // groups, draw(st.integers(1, 3)), draw(st.integers(1, 3)))
        else:
            w = (out, shape[-1] if shape else 1)
        inputs += [ch.const(w, "i8", "full"), ch.const((w[0],), "i32", "normal")]
        ratios = tuple(draw(st.floats(1e-4, 0.05)) for _ in range(w[0]))
        attrs.update(rescale_attrs({"ratios": ratios}))
    return ch.try_op(opdef.name, inputs, attrs)


@st.composite
def int8_chains(draw: Draw, max_ops: int = 4) -> FuzzCase:
    rank = draw(st.sampled_from([2, 4]))
    shape = (1, draw(st.integers(1, 4)), draw(st.integers(2, 7)), draw(st.integers(2, 7)))[:rank]
    if rank == 2:
        shape = (draw(st.integers(1, 3)), draw(st.integers(1, 16)))
    ch = Chain(GraphBuilder(), np.random.default_rng(draw(st.integers(0, 2**16))))
    x = ch.b.input("x", TensorType(shape, DType.f32))
    arr = InputSpec(shape, "f32", draw(st.sampled_from(VALUE_KINDS))).generate(
        np.random.default_rng(draw(st.integers(0, 99)))
    )
    scale = draw(st.sampled_from([0.02, 0.05, 0.1]))
    q = ch.try_op("quantize", [x], {"scale": (scale,), "zero_point": (draw(st.integers(-10, 10)),)})
    assert q is not None
    cur = q
    for _ in range(draw(st.integers(1, max_ops))):
        cur = _int8_step(draw, ch, cur) or cur
    out = cur
    if draw(st.booleans()) and cur.type.dtype == DType.i8:
        out = ch.try_op("dequantize", [cur], {"scale": (0.05,), "zero_point": (0,)}) or cur
    module = Module(ch.b.build([out]), "fuzz", {"quantization": "int8"})
    return FuzzCase(module, [arr], integer=True)
