"""Regions in the IR: building, verifying (signatures, scoping), text round trips, interpreting."""

from __future__ import annotations

import re

import numpy as np
import pytest

import cuvil_ref as cuvil
from cuvil_ref.errors import InterpretError, IRError, ParseError, ShapeError, VerificationError
from cuvil_ref.interpreter import interpret
from cuvil_ref.ir import DType, Graph, GraphBuilder, Module, Node, TensorType, Value, verify
from cuvil_ref.ir.parser import parse_module
from cuvil_ref.ir.printer import MAX_REGION_DEPTH, print_module, resource_table
from tests.ir import _regions as R
from tests.ir.test_printer_parser import canon

X = TensorType((2, 3))
BOOL = TensorType((), DType.bool)


def _round_trip(m: Module, **kw: object) -> Module:
    text = print_module(m, **kw)  # type: ignore[arg-type]
    m2 = parse_module(text, constants=resource_table(m))
    assert print_module(m2, **kw) == text  # type: ignore[arg-type]
    assert canon(m2) == canon(m)
    return m2


# --- building ---------------------------------------------------------------------------------


def test_region_builders_share_the_name_pool() -> None:
    b = GraphBuilder()
    x = b.input("x", X)
    then = b.region([X], ["x"])  # the hint is taken by the outer input: the region gets x_1
    assert then.inputs[0].name != "x"
    y = then.op("relu", [then.inputs[0]])
    other = b.build_region(lambda r, v: r.op("neg", [v]), [X])
    (out,) = b.cond(b.input("p", BOOL), then.build([y]), other, [x])
    g = b.build([out])
    names = [v.name for v in g.inputs] + [v.name for n in g.walk() for v in n.outputs]
    names += [v.name for n in g.nodes for r in n.regions for v in r.inputs]
    assert len(names) == len(set(names))
    assert [n.op for n in g.walk()] == ["if", "relu", "neg"]


def test_text_shows_regions_under_their_node() -> None:
    text = print_module(R.module(R.branch_graph()), inline_limit=4)
    assert re.search(
        r"  %branch : f32\[2,3\] = if\(%positive, %x\)\n"
        r"      region @then\(%xt : f32\[2,3\]\) -> \(f32\[2,3\]\) \{\n"
        r"        const %w : f32\[3,3\] = dense_resource<w>  // sha256:[0-9a-f]{64}\n",
        text,
    ), text
    assert "      region @else(%xe : f32[2,3]) -> (f32[2,3]) {\n" in text, text
    assert "        const %two : f32[] = dense<2.0>\n" in text


@pytest.mark.parametrize("make", [R.branch_graph, R.loop_graph, R.nested_graph])
@pytest.mark.parametrize("symbolic", [False, True])
def test_control_flow_round_trips_exactly(make, symbolic: bool) -> None:  # noqa: ANN001
    m = R.module(make(symbolic))
    _round_trip(m)
    _round_trip(m, inline_limit=0)


def test_regions_round_trip_through_cuvilir(tmp_path) -> None:  # noqa: ANN001
    for make in (R.branch_graph, R.loop_graph, R.nested_graph):
        m = R.module(make())
        path = tmp_path / f"{make.__name__}.cuvilir"
        m.save(str(path))
        loaded = cuvil.load(str(path))
        assert canon(loaded) == canon(m)
        x = np.abs(np.random.default_rng(0).standard_normal((2, 3))).astype(np.float32) + 0.5
        for got, want in zip(interpret(loaded, [x]), interpret(m, [x]), strict=True):
            assert np.array_equal(got, want)


def test_same_name_in_two_scopes_gets_two_resource_keys(tmp_path) -> None:  # noqa: ANN001
    """Regions built independently may reuse a name for other bytes; each keeps its weights."""

    def region(value: float) -> Graph:
        r = GraphBuilder()
        v = r.input("v", X)
        return r.build([r.op("mul", [v, r.constant("w", np.full((2, 3), value, np.float32))])])

    b = GraphBuilder()
    x = b.input("x", X)
    b.constant("w", np.ones((2, 3), np.float32))  # the outer graph's own %w
    (y,) = b.cond(b.input("p", BOOL), region(2.0), region(3.0), [x])
    m = Module(b.build([y]), "keys")
    table = resource_table(m)
    assert list(table) == ["w", "w#2", "w#3"]
    assert [float(a.flat[0]) for a in table.values()] == [1.0, 2.0, 3.0]
    assert 'dense_resource<"w#2">' in print_module(m, inline_limit=0)
    _round_trip(m, inline_limit=0)
    m.save(str(tmp_path / "keys.cuvilir"))
    loaded = cuvil.load(str(tmp_path / "keys.cuvilir"))
    args = [np.ones((2, 3), np.float32), np.array(False)]
    assert interpret(loaded, args)[0][0, 0] == 3.0


# --- verifier: signatures and scoping --------------------------------------------------------


def _if_node(then: Graph, other: Graph, operands: tuple[Value, ...]) -> Node:
    p = Value("p", BOOL)
    return Node("if", (p, *operands), (Value("y", then.outputs[0].type),), {}, None, (then, other))


def _identity(t: TensorType) -> Graph:
    v = Value("a", t)
    return Graph((v,), (), (v,))


def test_verifier_refuses_branches_of_different_types() -> None:
    x = Value("x", X)
    node = _if_node(_identity(X), _identity(TensorType((3, 2))), (x,))
    with pytest.raises(VerificationError, match=r"region @else takes \(f32\[3,2\]\) but the "):
        verify(Graph((Value("p", BOOL), x), (node,), node.outputs))
    other = Graph((Value("a", X),), (), (Value("c", TensorType((), DType.f32)),),
                  {"c": np.float32(1)})  # fmt: skip
    node = _if_node(_identity(X), other, (x,))
    with pytest.raises(VerificationError, match=r"@then returns \(f32\[2,3\]\) but @else returns"):
        verify(Graph((Value("p", BOOL), x), (node,), node.outputs))


def test_verifier_wants_a_bool_scalar_predicate() -> None:
    b = GraphBuilder()
    x = b.input("x", X)
    with pytest.raises(ShapeError, match="the predicate is f32"):
        b.cond(b.op("sum", [x]), _identity(X), _identity(X), [x])


def test_while_carried_values_keep_their_types() -> None:
    b = GraphBuilder()
    x = b.input("x", X)
    cond = b.build_region(
        lambda r, v: r.op("gt", [r.op("sum", [v]), r.constant("z", np.float32(0))]), [X]
    )  # noqa: E501
    body = b.build_region(lambda r, v: r.op("sum", [v], {"axes": (0,)}), [X])
    with pytest.raises(ShapeError, match=r"@body returns \(f32\[3\]\) but the carried values are"):
        b.while_loop(cond, body, [x])
    not_bool = b.build_region(lambda r, v: r.op("sum", [v]), [X])
    with pytest.raises(ShapeError, match=r"@cond returns \(f32\[\]\); it must return one bool"):
        b.while_loop(not_bool, _identity(X), [x])
    with pytest.raises(ShapeError, match="num_carried = 0"):
        b.op_multi("while", [x], {"num_carried": 0}, regions=(cond, _identity(X)))


def test_a_region_reads_outer_values_only_through_operands() -> None:
    x, p = Value("x", X), Value("p", BOOL)
    a = Value("a", X)
    leaky = Graph((a,), (Node("add", (a, x), (Value("s", X),)),), (Value("s", X),))
    node = _if_node(leaky, _identity(X), (x,))
    with pytest.raises(VerificationError) as info:
        verify(Graph((p, x), (node,), node.outputs))
    message = str(info.value)
    assert "input %x belongs to an enclosing graph" in message
    assert (
        "pass it as an operand" in message and "(in region @then of '%y = if(%p, %x)')" in message
    )


def test_region_count_and_regions_on_plain_ops_are_refused() -> None:
    x = Value("x", X)
    relu = Node("relu", (x,), (Value("y", X),), {}, None, (_identity(X),))
    with pytest.raises(VerificationError, match="holds 1 regions but op 'relu' has 0"):
        verify(Graph((x,), (relu,), relu.outputs))
    lonely = Node("if", (Value("p", BOOL), x), (Value("y", X),), {}, None, (_identity(X),))
    with pytest.raises(VerificationError, match="holds 1 regions but op 'if' has 2"):
        verify(Graph((Value("p", BOOL), x), (lonely,), lonely.outputs))


def test_an_error_inside_a_region_names_the_region_path() -> None:
    x, p, a = Value("x", X), Value("p", BOOL), Value("a", X)
    leaky = Graph((a,), (Node("neg", (x,), (Value("s", X),)),), (Value("s", X),))
    inner = Node("if", (p, a), (Value("z", X),), {}, None, (leaky, _identity(X)))
    body = Graph((p, a), (inner,), inner.outputs)  # the outer region reads %p: it is a parameter
    outer = Node("if", (p, p, x), (Value("y", X),), {}, None, (body, Graph((p, a), (), (a,))))
    with pytest.raises(VerificationError) as info:
        verify(Graph((p, x), (outer,), outer.outputs))
    message = str(info.value)
    assert message.startswith("'%s = neg(%x)': input %x belongs to an enclosing graph")
    assert message.index("(in region @then of '%z") < message.index("(in region @then of '%y")


# --- parser: scopes and region syntax ----------------------------------------------------------

_TEXT = """module @m {{
  func @main(%p : bool[], %x : f32[2]) -> (f32[2]) {{
    %y : f32[2] = if(%p, %x)
      region @then(%a : f32[2]) -> (f32[2]) {{
        {then}
      }}
      region @else(%b : f32[2]) -> (f32[2]) {{
        return %b
      }}
    return %y
  }}
}}
"""


def test_parser_reads_the_region_syntax() -> None:
    m = parse_module(_TEXT.format(then="%r : f32[2] = relu(%a)\n        return %r"))
    (node,) = m.graph.nodes
    assert [len(r.nodes) for r in node.regions] == [1, 0]
    assert interpret(m, [np.array(True), np.array([-1.0, 2.0], np.float32)])[0].tolist() == [0, 2]


def test_parser_refuses_outer_values_in_a_region() -> None:
    with pytest.raises(ParseError, match=r"<text>:5:\d+: %x is defined outside this region"):
        parse_module(_TEXT.format(then="%r : f32[2] = relu(%x)\n        return %r"))


def test_parser_scopes_names_per_region() -> None:
    """A region may reuse a name of the enclosing graph: it is a new value there."""
    text = _TEXT.format(then="%x : f32[2] = relu(%a)\n        return %x")
    m = parse_module(text)
    assert print_module(m) == text


def test_parser_wants_the_op_region_names_in_order() -> None:
    text = _TEXT.format(then="return %a").replace("@else", "@otherwise")
    with pytest.raises(ParseError, match=r"takes region @then region @else \(in this order\), got "
                       r"region @then region @otherwise"):  # fmt: skip
        parse_module(text)
    missing = "\n".join(ln for ln in _TEXT.format(then="return %a").splitlines()[:6]) + (
        "\n    return %y\n  }\n}\n"
    )
    with pytest.raises(ParseError, match="got region @then"):
        parse_module(missing)


def test_verifier_errors_in_regions_report_their_line() -> None:
    text = _TEXT.format(then="%r : f32[3] = relu(%a)\n        return %a")
    with pytest.raises(VerificationError, match=r"<text>:5: '%r = relu\(%a\)': output %r is typed"):
        parse_module(text)


def _nest(depth: int) -> Graph:
    """A region (q: bool[], a: f32[2,3]) -> a holding ``depth`` levels of ifs."""
    q, a = Value("q", BOOL), Value("a", X)
    if depth == 0:
        return Graph((q, a), (), (a,))
    node = Node("if", (q, q, a), (Value("y", X),), {}, None, (_nest(depth - 1), _nest(0)))
    return Graph((q, a), (node,), node.outputs)


def test_region_nesting_is_bounded_in_text() -> None:
    ok = Module(_nest(MAX_REGION_DEPTH))
    verify(ok)
    _round_trip(ok)
    with pytest.raises(IRError, match=f"regions nest more than {MAX_REGION_DEPTH} levels deep"):
        print_module(Module(_nest(MAX_REGION_DEPTH + 1)))
    opening = "".join(
        f"%y{k} : f32[2] = if(%p{k}, %p{k}, %a{k})\n"
        f"region @then(%p{k + 1} : bool[], %a{k + 1} : f32[2]) -> (f32[2]) {{\n"
        for k in range(MAX_REGION_DEPTH + 1)
    )
    text = f"module @m {{ func @main(%p0 : bool[], %a0 : f32[2]) -> (f32[2]) {{ {opening}"
    with pytest.raises(ParseError, match=f"regions nest more than {MAX_REGION_DEPTH} levels deep"):
        parse_module(text)


# --- interpreter ------------------------------------------------------------------------------


def test_interpreter_takes_each_path() -> None:
    rng = np.random.default_rng(1)
    x = np.abs(rng.standard_normal((2, 3))).astype(np.float32) + 0.1
    for arg in (x, -x):
        assert np.array_equal(interpret(R.branch_graph(), [arg])[0], R.branch_reference(arg))
        assert np.array_equal(
            interpret(R.nested_graph(), [arg * 4])[0], R.nested_reference(arg * 4)
        )
    y, steps = interpret(R.loop_graph(), [x])
    want, want_steps = R.loop_reference(x)
    assert np.array_equal(y, want) and int(steps) == want_steps < 8  # it exited early
    y, steps = interpret(R.loop_graph(tol=-1.0, max_steps=3), [x])
    assert int(steps) == 3  # the step limit ended it
    assert np.array_equal(interpret(R.loop_graph(max_steps=0), [x])[0], x)  # never entered


def test_symbols_bind_inside_regions() -> None:
    x = np.abs(np.random.default_rng(2).standard_normal((5, 3))).astype(np.float32) + 0.1
    y, _ = interpret(R.loop_graph(symbolic=True), [x])
    assert np.array_equal(y, R.loop_reference(x)[0])


def test_an_error_in_a_region_names_both_nodes() -> None:
    g = R.branch_graph()
    node = g.nodes[-1]
    broken = node.regions[0].replace(constants={"w": np.zeros((4, 3), np.float32)})
    g2 = g.replace(nodes=[*g.nodes[:-1], node.with_regions([broken, node.regions[1]])])
    with pytest.raises(InterpretError, match=r"while executing '%branch = if.*while executing "
                       r"'%matmul = matmul"):  # fmt: skip
        interpret(g2, [np.ones((2, 3), np.float32)])
