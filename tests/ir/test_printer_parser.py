"""The textual IR round-trips exactly: parse(print(m)) prints the same text and is bit-identical."""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Mapping
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cuvil_ref as cuvil
from cuvil_ref.errors import CuvilError, IRError, ParseError, VerificationError
from cuvil_ref.ir import DType, Graph, GraphBuilder, Module, Node, Provenance, QuantParams, Value
from cuvil_ref.ir.parser import parse_graph, parse_module, parse_type
from cuvil_ref.ir.printer import format_type, print_graph, print_module, resource_table
from cuvil_ref.ir.types import TensorType
from cuvil_ref.ops import REGISTRY, REQUIRED, OpDef
from tests.ir._regions import branch_graph, loop_graph

T = TensorType
F32, I64, I8, BOOL = DType.f32, DType.i64, DType.i8, DType.bool


# --- exact structural comparison ----------------------------------------------------------------


def canon(x: Any) -> Any:
    """A form in which equal means bit-identical (floats by bits, bool distinct from int)."""
    if isinstance(x, Module):
        return ("module", x.name, canon(x.metadata), canon(x.graph))
    if isinstance(x, Graph):
        consts = tuple(
            (k, str(a.dtype), a.shape, a.tobytes(), a.flags.writeable)
            for k, a in x.constants.items()
        )
        return ("graph", canon(x.inputs), consts, canon(x.nodes), canon(x.outputs))
    if isinstance(x, Node):
        return (
            "node",
            x.op,
            canon(x.inputs),
            canon(x.outputs),
            canon(x.attrs),
            x.provenance,
            canon(x.regions),
        )
    if isinstance(x, Value):
        return ("value", x.name, canon(x.type))
    if isinstance(x, TensorType):
        q = x.quant
        quant = None if q is None else (canon(q.scale), q.zero_point, q.axis)
        return ("type", x.shape, x.dtype, x.layout, quant)
    if isinstance(x, Mapping):
        return ("dict", tuple((k, canon(v)) for k, v in x.items()))
    if isinstance(x, tuple):
        return ("tuple", tuple(canon(v) for v in x))
    if isinstance(x, float):
        return ("float", struct.pack("<d", x))
    return (type(x).__name__, x)


def round_trip(m: Module, constants: Mapping[str, Any] | None = None, **kw: Any) -> Module:
    text = print_module(m, **kw)
    m2 = parse_module(text, constants=constants)
    assert print_module(m2, **kw) == text
    assert canon(m2) == canon(m)
    return m2


def meta_round_trip(value: Any) -> Any:
    m = Module(Graph((), (), ()), "m", {"v": value})
    return round_trip(m).metadata["v"]


# --- every registered op ------------------------------------------------------------------------

_M = 2**30  # fixed-point multiplier 1.0 with shift 30
_REQ = {"multiplier": (_M,), "shift": (30,), "out_scale": 0.5}

#: Example inputs/attrs for ops whose generic guess would not type-check.
EXAMPLES: dict[str, tuple[tuple[TensorType, ...], dict[str, Any]]] = {
    "where": ((T((2, 3), BOOL), T((2, 3)), T((1, 3))), {}),
    "fused_conv2d": ((T((1, 2, 5, 5)), T((3, 2, 3, 3)), T((3,))), {}),
    "fused_linear": ((T((2, 4)), T((3, 4)), T((3,))), {}),
    "fused_elementwise": ((T((2, 3)),), {"program": "mul(rhs=2.0, dtype='f32'); relu"}),
    "cast": ((T((2, 3)),), {"dtype": "f16"}),
    "conv2d": ((T((1, 2, 5, 5)), T((3, 2, 3, 3)), T((3,))), {"stride": (2, 2)}),
    "embedding": ((T((10, 4)), T((2, 3), I64)), {}),
    "gather": ((T((3, 4)), T((3, 2), I64)), {"axis": 1}),
    "index_select": ((T((3, 4)), T((2,), I64)), {"axis": 1}),
    "linear": ((T((2, 4)), T((3, 4)), T((3,))), {}),
    "matmul": ((T((2, 3)), T((3, 4))), {}),
    "batch_norm": ((T((1, 3, 2, 2)), T((3,)), T((3,)), T((3,)), T((3,))), {}),
    "group_norm": ((T((1, 4, 2, 2)), T((4,)), T((4,))), {"num_groups": 2}),
    "layer_norm": ((T((2, 3, 4)), T((4,)), T((4,))), {"normalized_shape": (4,)}),
    "rms_norm": ((T((2, 4)), T((4,))), {"normalized_shape": (4,)}),
    "adaptive_avg_pool2d": ((T((1, 2, 4, 4)),), {"output_size": (2, 2)}),
    "adaptive_max_pool2d": ((T((1, 2, 4, 4)),), {"output_size": (2, 2)}),
    "avg_pool2d": ((T((1, 2, 4, 4)),), {"kernel": (2, 2)}),
    "max_pool2d": ((T((1, 2, 4, 4)),), {"kernel": (2, 2), "stride": (2, 2)}),
    "concat": ((T((2, 3)), T((4, 3))), {"axis": 0}),
    "expand": ((T((1, 3)),), {"shape": (2, 3)}),
    "pad": ((T((2, 3)),), {"pads": (1, 1)}),
    "permute": ((T((2, 3, 4)),), {"perm": (2, 0, 1)}),
    "reshape": ((T((2, 3)),), {"shape": (3, 2)}),
    "slice": ((T((4, 3)),), {"axis": 0, "start": 1, "end": 3}),
    "split": ((T((4, 3)),), {"axis": 0, "sizes": (1, 3)}),
    "squeeze": ((T((1, 3)),), {"axes": (0,)}),
    "transpose": ((T((2, 3)),), {"dim0": 0, "dim1": 1}),
    "unsqueeze": ((T((2, 3)),), {"axis": 0}),
    "qadd": ((T((2, 3), I8), T((1, 3), I8)), {**_REQ, "multiplier": (_M, _M)}),
    "qconcat": (
        (T((2, 3), I8), T((1, 3), I8)),
        {**_REQ, "multiplier": (_M, _M), "shift": (30, 30), "x_zp": (0, 1)},
    ),
    # an average pool's multiplier table covers every window size (here up to 2x2)
    "qadaptive_avg_pool2d": (
        (T((1, 2, 4, 4), I8),),
        {"output_size": (2, 2), "multiplier": (_M,) * 4, "shift": (30,) * 4, "out_scale": 0.5},
    ),
    "qconv2d": ((T((1, 2, 5, 5), I8), T((3, 2, 3, 3), I8), T((3,), DType.i32)), _REQ),
    "qlinear": ((T((2, 4), I8), T((3, 4), I8), T((3,), DType.i32)), _REQ),
    "qmatmul": ((T((2, 3), I8), T((3, 4), I8)), _REQ),
    "conv3d": ((T((1, 2, 3, 4, 4)), T((3, 2, 2, 2, 2)), T((3,))), {}),
    "conv_transpose": (
        (T((1, 2, 4, 4)), T((2, 3, 3, 3))),
        {"stride": (2, 2), "padding": (1, 1), "output_padding": (1, 1), "dilation": (1, 1)},
    ),
    "max_pool3d": ((T((1, 2, 4, 4, 4)),), {"kernel": (2, 2, 2)}),
    "avg_pool3d": ((T((1, 2, 4, 4, 4)),), {"kernel": (2, 2, 2)}),
    "max_pool_with_indices": ((T((1, 2, 4, 4)),), {"kernel": (2, 2)}),
    "adaptive_avg_pool3d": ((T((1, 2, 4, 4, 4)),), {"output_size": (2, 1, 3)}),
    "upsample_bilinear2d": ((T((1, 2, 4, 4)),), {"size": (8, 6)}),
    "grid_sample": ((T((1, 2, 4, 4)), T((1, 3, 3, 2))), {"mode": "bicubic"}),
    "col2im": ((T((1, 8, 9)),), {"output_size": (4, 4), "kernel": (2, 2)}),
    "index": ((T((4, 3)), T((2,), I64)), {"axes": (0,)}),
    "index_put": ((T((4, 3)), T((3,)), T((2,), I64)), {"axes": (0,), "accumulate": True}),
    "masked_scatter": ((T((4, 3)), T((4, 3), BOOL), T((12,))), {}),
    "scatter": ((T((4, 3)), T((2, 3), I64), T((2, 3))), {"axis": 0, "reduce": "sum"}),
    "slice_scatter": ((T((4, 3)), T((2, 3))), {"axis": 0, "start": 1, "end": 3}),
    "embedding_bag": ((T((10, 4)), T((5,), I64), T((2,), I64)), {"mode": "sum"}),
    "qsoftmax": ((T((2, 3), I8),), {"table": (*range(255), 2**15)}),
    "qlut": ((T((2, 3), I8),), {"table": tuple(range(-128, 128)), "out_scale": 0.5}),
    "qlayer_norm": (
        (T((2, 3), I8),),
        {
            "multiplier": (_M,) * 3,
            "shift": (30,) * 3,
            "sign": (1, -1, 0),
            "beta_q": (0, 1, -1),
            "out_scale": 0.5,
        },
    ),  # fmt: skip
}

#: Control-flow ops (they hold regions): a graph builder per op, static or symbolic.
REGION_EXAMPLES = {"if": branch_graph, "while": loop_graph}

_SHAPES = [(2, 3), (1, 2, 4, 4), (2, 3, 4), (6,)]
_GUESSES: dict[str, list[Any]] = {
    "int": [1, 0, -1],
    "float": [0.5],
    "bool": [False],
    "str": ["none"],
    "ints": [(1,), (0,), (1, 1), (2, 2)],
    "floats": [(0.5,)],
    "dims": [(-1,), (6,), (3, 2)],
    "dtype": ["f16"],
}


def _candidates(d: OpDef) -> list[tuple[tuple[TensorType, ...], dict[str, Any]]]:
    """The table entry first, then generic guesses: same-shape inputs, required attrs guessed."""
    out = [EXAMPLES[d.name]] if d.name in EXAMPLES else []
    dtype = next(t for t in (F32, DType.i8, *DType) if t in d.dtypes)
    lo, hi = d.input_arity()
    count = max(lo, 2) if hi is None else lo
    required = [a for a in d.attrs if a.default is REQUIRED]
    for shape in _SHAPES:
        for k in range(4):
            attrs = {}
            for a in required:
                choices = list(a.choices) if a.choices else _GUESSES[a.kind.rstrip("?")]
                attrs[a.name] = choices[k % len(choices)]
            out.append((tuple(T(shape, dtype) for _ in range(count)), attrs))
    return out


def build_op_module(d: OpDef, symbolic: bool = False) -> tuple[Module, dict[str, np.ndarray]]:
    """x (a graph input) -> op(x, consts...) -> outputs; raises if no candidate type-checks."""
    errors = []
    for types, attrs in _candidates(d):
        if symbolic:
            types = (types[0].with_shape(("n", *types[0].shape[1:])), *types[1:])
        b = GraphBuilder()
        rng = np.random.default_rng(0)
        x = b.input("x", types[0])
        args = [x]
        for i, t in enumerate(types[1:]):
            data = rng.standard_normal(t.shape) if t.dtype.is_float else np.zeros(t.shape)
            args.append(b.constant(f"{d.name}.arg{i + 1}", data.astype(t.dtype.numpy)))
        prov = Provenance(f"{d.name}_1", f"layer1.{d.name}", "model.py:7")
        try:
            outs = b.op_multi(d.name, args, attrs, name=f"layer1.0.{d.name}", provenance=prov)
        except CuvilError as exc:
            errors.append(f"{[str(t) for t in types]} {attrs}: {exc}")
            continue
        graph = b.build(outs)
        return Module(graph, f"test_{d.name}", {"op": d.name}), dict(graph.constants)
    raise AssertionError(
        f"no example type-checks for op '{d.name}'; add one to EXAMPLES:\n" + "\n".join(errors)
    )


@pytest.mark.parametrize("op", sorted(set(REGISTRY.names()) | set(EXAMPLES)))
def test_every_registered_op_round_trips(op: str) -> None:
    assert op in REGISTRY, f"EXAMPLES names op '{op}', which is not registered"
    d = REGISTRY.get(op)
    if d.regions:
        assert op in REGION_EXAMPLES, f"add a graph holding op '{op}' to REGION_EXAMPLES"
        for symbolic in (False, True):
            module = Module(REGION_EXAMPLES[op](symbolic), f"test_{op}", {"op": op})
            assert round_trip(module, resource_table(module)) == module
            assert f" = {op}(%" in print_module(module)
        return
    if d.input_arity() == (0, 0):  # a factory: no operands, a (possibly symbolic) size attr
        b = GraphBuilder()
        b.input("n_holder", T(("n", 2)))
        out = b.op(op, [], {"size": ("n",)})
        module = Module(b.build([out]), f"test_{op}", {"op": op})
        text = print_module(module)
        assert f" = {op}() {{size = (n)" in text or f" = {op}() {{" in text, text
        assert round_trip(module, {}) == module
        return
    module, consts = build_op_module(d)
    m2 = round_trip(module, consts)
    assert m2 == module
    assert f" = {op}(%x" in print_module(module)
    try:
        sym_module, sym_consts = build_op_module(d, symbolic=True)
    except AssertionError:
        return  # the op needs a static leading dim; the static round trip above covers it
    assert re.search(r"\[n[,\]]", print_module(sym_module))
    round_trip(sym_module, sym_consts)


def test_multi_output_node_prints_all_results() -> None:
    module, consts = build_op_module(REGISTRY.get("split"))
    text = print_module(module)
    assert re.search(r"%\S+, %\S+ : f32\[1,3\], f32\[3,3\] = split\(%x\)", text), text
    round_trip(module, consts)


# --- attributes and metadata --------------------------------------------------------------------

EDGE_FLOATS = [
    0.0, -0.0, 1.0, -1.5, 0.1, 1e16, 1e-05, 5e-324, 1.7976931348623157e308,
    math.inf, -math.inf, math.nan, struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000123))[0],
    struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0],
]  # fmt: skip


@pytest.mark.parametrize("x", EDGE_FLOATS, ids=[str(i) for i in range(len(EDGE_FLOATS))])
def test_edge_floats_round_trip_bit_exactly(x: float) -> None:
    y = meta_round_trip(x)
    assert isinstance(y, float) and struct.pack("<d", y) == struct.pack("<d", x)


def test_float_forms_are_readable() -> None:
    text = print_module(Module(Graph((), (), ()), "m", {"a": -0.0, "b": math.nan, "c": -math.inf}))
    assert "a = -0.0, b = nan, c = -inf" in text
    payload = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000123))[0]
    assert "nan(0x7ff8000000000123)" in print_module(Module(Graph((), (), ()), "m", {"p": payload}))


@pytest.mark.parametrize(
    "value",
    [0, -7, 2**70, True, False, None, "", "plain", 'quote " and \\ backslash', "tab\tnl\nret\r",
     "\x01\x7f ctrl", "卷积 ünïcode", "\ud800 lone surrogate", (), (5,), (1, 2, 3),
     ("batch", 784), ((1, 2), (), ("a",)), (1, 2.0, "x", None, True)],
)  # fmt: skip
def test_attribute_values_round_trip(value: Any) -> None:
    assert canon(meta_round_trip(value)) == canon(value)


def test_nested_metadata_and_odd_keys_round_trip() -> None:
    meta = {"producer": "cuvil-ref 0.1.0", "nested": {"a": {"b": (1, 2)}, "c": 0.5},
            "odd key/with space": 1, "1starts_with_digit": "x"}  # fmt: skip
    m2 = round_trip(Module(Graph((), (), ()), "my model", meta))
    assert m2.name == "my model" and m2.metadata == meta
    text = print_module(m2)
    assert text.startswith('module @"my model" attributes {producer = "cuvil-ref 0.1.0"')
    assert '"odd key/with space" = 1' in text


def test_node_attributes_of_every_kind_round_trip_without_verification() -> None:
    x = Value("x", T((2,)))
    attrs = {"i": -3, "f": -0.0, "b": True, "s": "a\"b", "t": (), "d": ("batch", 1), "n": None,
             "fs": (math.inf, 0.1)}  # fmt: skip
    node = Node("add", (x, x), (Value("y", T((2,))),), attrs)
    m = Module(Graph((x,), (node,), (node.output,)), "m")
    text = print_module(m)
    m2 = parse_module(text, verify=False)
    assert print_module(m2) == text and canon(m2) == canon(m)
    with pytest.raises(VerificationError, match=r"<text>:3: '%y = add\(%x, %x\)'.*no attribute"):
        parse_module(text)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.one_of(st.floats(allow_nan=True), st.text(), st.integers()))
def test_any_float_string_or_int_round_trips(value: Any) -> None:
    assert canon(meta_round_trip(value)) == canon(value)


# --- types, names, provenance -------------------------------------------------------------------

TYPES = [
    T((), F32), T((0, 3), DType.f16), T(("batch", 3, "h", "w"), DType.bf16),
    T((1, 4, 4, 3), F32, "NHWC"), T((4,), DType.i8, None, QuantParams.per_tensor(0.1, -3)),
    T((2, 3), DType.u8, "NCHWc8", QuantParams((0.5, 1e-05), (0, 255), 0)),
    T((2,), DType.i8, None, QuantParams((1.0, 2.5), (1, 2), -1)), T((1,), BOOL), T((3,), I64),
]  # fmt: skip


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_types_round_trip(t: TensorType) -> None:
    assert parse_type(format_type(t)) == t
    x = Value("x", t)
    m2 = round_trip(Module(Graph((x,), (), (x,)), "m"))
    assert m2.graph.inputs[0].type == t


def test_type_text_forms() -> None:
    assert format_type(T(("batch", 784))) == "f32[batch,784]"
    assert format_type(T((), DType.bf16)) == "bf16[]"
    q = T((1, 2, 2, 3), DType.i8, "NHWC", QuantParams.per_tensor(0.5, 3))
    assert format_type(q) == "i8[1,2,2,3]q<0.5:3>@NHWC"
    per_axis = T((2,), DType.i8, None, QuantParams((0.5, 0.25), (0, 1), 0))
    assert format_type(per_axis) == "i8[2]q<axis=0;0.5,0.25:0,1>"


def test_dotted_and_quoted_value_names_round_trip() -> None:
    x = Value("x", T((2,)))
    odd = Value("layer1/conv 0", T((2,)))
    n1 = Node("relu", (x,), (Value("layer1.0.conv1", T((2,))),))
    n2 = Node("neg", (n1.output,), (odd,))
    text = print_module(round_trip(Module(Graph((x,), (n1, n2), (odd,)), "m")))
    assert "%layer1.0.conv1 : f32[2] = relu(%x)" in text
    assert '%"layer1/conv 0" : f32[2] = neg(%layer1.0.conv1)' in text


@pytest.mark.parametrize(
    "prov, shown",
    [(Provenance("fc1", "fc1", "model.py:12"), 'loc("model.py:12", module="fc1", node="fc1")'),
     (Provenance(module_path="enc.0"), 'loc(module="enc.0")'),
     (Provenance(source='a "b".py:3 in f'), 'loc("a \\"b\\".py:3 in f")'),
     (Provenance(), "loc()"), (None, "")],
)  # fmt: skip
def test_provenance_round_trips(prov: Provenance | None, shown: str) -> None:
    x = Value("x", T((2,)))
    n = Node("relu", (x,), (Value("y", T((2,))),), {}, prov)
    m = Module(Graph((x,), (n,), (n.output,)), "m")
    text = print_module(m)
    assert f"= relu(%x){' ' + shown if shown else ''}\n" in text
    assert round_trip(m).graph.nodes[0].provenance == prov


# --- constants ----------------------------------------------------------------------------------

_F = [0.1, -0.0, math.inf, -math.inf, math.nan, 1.0, 3.0e38, 1e-45, 65504.0, -2.5]


def _floats(dtype: Any) -> np.ndarray:
    with np.errstate(over="ignore"):  # 3e38 overflows f16 to inf: fine, inf is a case too
        return np.array(_F, np.float64).astype(dtype)


@pytest.mark.parametrize(
    "array",
    [_floats(np.float32), _floats(np.float16), _floats(ml_dtypes.bfloat16),
     np.array([-128, 0, 127], np.int8), np.array([0, 255], np.uint8),
     np.array([-(2**31), 2**31 - 1], np.int32), np.array([-(2**63), 2**63 - 1], np.int64),
     np.array([[True, False], [False, True]]), np.float32(0.5), np.zeros((0, 3), np.float32),
     np.arange(16, dtype=np.float32).reshape(2, 2, 4) / 7],
    ids=lambda a: f"{np.asarray(a).dtype}{list(np.shape(a))}",
)  # fmt: skip
def test_small_constants_inline_bit_exactly(array: np.ndarray) -> None:
    b = GraphBuilder()
    c = b.constant("c", array)
    text = print_module(round_trip(Module(b.build([c]), "m")))
    assert "dense<" in text and "dense_resource" not in text and "dense<0x" not in text


def test_constant_text_is_readable() -> None:
    b = GraphBuilder()
    b.constant("half", np.float32(0.5))
    b.constant("v", np.array([1.5, -0.0, np.nan], np.float16))
    b.constant("flags", np.array([True, False]))
    text = print_module(Module(b.build([]), "m"))
    assert "const %half : f32[] = dense<0.5>" in text
    assert "const %v : f16[3] = dense<[1.5, -0.0, nan]>" in text
    assert "const %flags : bool[2] = dense<[true, false]>" in text


def test_nan_payload_constant_falls_back_to_exact_hex() -> None:
    bits = np.array([0x7FC00001, 0xFFC00000, 0x3F800000], np.uint32)
    b = GraphBuilder()
    c = b.constant("odd_nans", bits.view(np.float32))
    m = Module(b.build([c]), "m")
    assert "dense<0x" in print_module(m)
    round_trip(m)


def _large_module() -> tuple[Module, np.ndarray]:
    b = GraphBuilder()
    w = np.arange(17 * 3, dtype=np.float32).reshape(17, 3) / 3
    x = b.input("x", T(("batch", 3)))
    wv = b.constant("fc1.weight", w)
    y = b.op("matmul", [x, b.op("transpose", [wv], {"dim0": 0, "dim1": 1})])
    return Module(b.build([y]), "m"), w


def test_large_constants_print_by_reference_with_sha256() -> None:
    m, w = _large_module()
    text = print_module(m)
    assert re.search(r"= dense_resource<fc1\.weight>  // sha256:[0-9a-f]{64}\n", text)
    round_trip(m, {"fc1.weight": w.copy()})
    round_trip(m, inline_limit=10**6)  # everything inline: no constants needed


def test_missing_reference_constant_is_named() -> None:
    text = print_module(_large_module()[0])
    with pytest.raises(ParseError, match=r"<text>:2:\d+: constant 'fc1\.weight' is stored by ref"):
        parse_module(text)


def test_reference_constant_with_other_bytes_is_rejected() -> None:
    m, w = _large_module()
    changed = w.copy()
    changed[0, 0] += 1
    with pytest.raises(ParseError, match="sha256"):
        parse_module(print_module(m), constants={"fc1.weight": changed})
    with pytest.raises(
        ParseError, match=r"declared f32\[17,3\] but the given array is f64\[17,3\]"
    ):
        parse_module(print_module(m), constants={"fc1.weight": w.astype(np.float64)})


# --- parse errors -------------------------------------------------------------------------------

GOOD = """module @m {
  func @main(%x : f32[2]) -> (f32[2]) {
    %y : f32[2] = relu(%x)
    return %y
  }
}
"""


@pytest.mark.parametrize(
    "old, new, where, expected",
    [("%x : f32[2])", "%x f32[2])", "2:17", "expected ':'"),
     ("f32[2]) -> (", "f31[2]) -> (", "2:19", "unknown dtype 'f31'"),
     ("relu(%x)", "relu(%z)", "3:24", "%z is used before it is defined"),
     ("%y : f32[2] =", "%x : f32[2] =", "3:5", "%x is defined twice"),
     ("relu(%x)", "rellu(%x)", "3:19", "unknown op 'rellu'; did you mean 'relu'"),
     ("relu(%x)", 'relu(%x) {a = "x}', "3:33", "unterminated string"),
     ("return %y", "return %y, %x", "4:5", "returns 2 values but the signature declares 1"),
     ("module @m {", "modul @m {", "1:1", "expected 'module'"),
     ("relu(%x)", "relu(%x) {a = 1 b = 2}", "3:35", "expected ','"),
     ("relu(%x)", "relu(%x) {a = 1, a = 2}", "3:36", "attribute 'a' is given twice")],
)  # fmt: skip
def test_parse_errors_give_line_column_and_expectation(
    old: str, new: str, where: str, expected: str
) -> None:
    assert old in GOOD
    with pytest.raises(ParseError) as info:
        parse_module(GOOD.replace(old, new, 1))
    message = str(info.value)
    assert message.startswith(f"<text>:{where}: "), message
    assert expected in message
    assert "^" in message.splitlines()[-1]


def test_bad_constant_bodies_are_parse_errors() -> None:
    head = "module @m {\n  const %c : i8[2] = "
    tail = "\n  func @main() -> () {\n    return\n  }\n}\n"
    for body, expected in [("dense<[1]>", "needs 2 values, got 1"),
                           ("dense<[1, 300]>", "constant %c"),
                           ("dense<[1.5, 2]>", "expected a i8 element"),
                           ("dense<0x01>", "needs 2 bytes"),
                           ("dense<[1, 2]> junk", "expected 'const' or 'func'")]:  # fmt: skip
        with pytest.raises(ParseError, match=re.escape(expected)):
            parse_module(head + body + tail)


def test_verifier_runs_after_parsing_and_names_the_line() -> None:
    bad = GOOD.replace("%y : f32[2] = relu", "%y : f32[3] = relu").replace(
        "-> (f32[2])", "-> (f32[3])"
    )
    with pytest.raises(VerificationError, match=r"<text>:3: '%y = relu\(%x\)'.*infers f32\[2\]"):
        parse_module(bad)
    assert isinstance(VerificationError("x"), IRError)


def test_comments_and_whitespace_are_ignored() -> None:
    text = GOOD.replace("relu(%x)", "relu(  %x )   // a comment").replace("{\n", "{ // c\n", 1)
    assert print_module(parse_module(text)) == GOOD


# --- entry points -------------------------------------------------------------------------------


def test_str_and_cuvil_parse_and_graph_form() -> None:
    m, w = _large_module()
    assert str(m) == print_module(m)
    assert cuvil.parse(str(m), constants={"fc1.weight": w}) == m
    text = print_graph(m.graph)
    assert text.startswith("const %fc1.weight") and "module" not in text
    assert parse_graph(text, constants={"fc1.weight": w}) == m.graph
