"""``cuvil inspect``: meta, text IR, op histogram, memory plan, dot and Mermaid graphs."""

from __future__ import annotations

import json
from pathlib import Path

import cuvil_ref as cuvil
from cuvil_ref.cli.graph_render import to_dot, to_mermaid
from cuvil_ref.passes import plan_memory
from tests.cli.conftest import invoke


def test_tables(artifact: Path) -> None:
    result = invoke("inspect", str(artifact))
    assert result.exit_code == 0, result.output
    out = result.stdout
    module = cuvil.load(str(artifact))
    for op, count in module.graph.op_histogram().items():
        row = next(r for r in out.splitlines() if f"│ {op} " in r)
        assert f"│ {count} " in row
    signed_row = next(r for r in out.splitlines() if "│ signed " in r)
    assert "no" in signed_row
    assert "%x: f32[2,8]" in out
    assert "memory plan" in out


def test_text_ir_parses_back(artifact: Path) -> None:
    result = invoke("inspect", str(artifact), "--text")
    text = result.stdout[: result.stdout.index("\n}\n") + 3]
    assert text.startswith("module @Tiny")
    module = cuvil.load(str(artifact))
    assert cuvil.parse(text, constants=dict(module.graph.constants)) == module


def test_json(artifact: Path) -> None:
    data = json.loads(invoke("inspect", str(artifact), "--json").stdout)
    module = cuvil.load(str(artifact))
    assert data["ops"] == module.graph.op_histogram()
    assert data["meta"]["signed"] is False
    assert data["meta"]["target"]["target"] == "ref"
    assert data["summary"]["inputs"] == [{"name": "x", "type": "f32[2,8]"}]
    assert data["memory"] == json.loads(json.dumps(plan_memory(module.graph).report()))


def test_dot_and_mermaid_to_stdout(artifact: Path) -> None:
    module = cuvil.load(str(artifact))
    dot = invoke("inspect", str(artifact), "--dot", "-").stdout
    assert dot == to_dot(module.graph, module.name)
    mermaid = invoke("inspect", str(artifact), "--mermaid", "-").stdout
    assert mermaid == to_mermaid(module.graph)


def test_dot_and_mermaid_to_files(artifact: Path, tmp_path: Path) -> None:
    dot, mmd = tmp_path / "g.dot", tmp_path / "g.mmd"
    result = invoke("inspect", str(artifact), "--dot", str(dot), "--mermaid", str(mmd))
    assert result.exit_code == 0
    assert dot.read_text().startswith('digraph "Tiny" {')
    assert mmd.read_text().startswith("flowchart TD\n")


def test_graph_texts_have_one_box_per_node_and_every_edge() -> None:
    b = cuvil.GraphBuilder()
    x = b.input("x", cuvil.TensorType((2, 3), cuvil.DType.f32))
    y = b.op("relu", [x])
    z = b.op("add", [y, x])
    graph = b.build([z])
    dot = to_dot(graph, "g")
    assert dot.count("[shape=box") == 2
    edges = {line.strip() for line in dot.splitlines() if "->" in line}
    assert edges == {"in0 -> n0;", "n0 -> n1;", "in0 -> n1;", "n1 -> out0;"}
    mermaid = to_mermaid(graph)
    assert {line.strip() for line in mermaid.splitlines() if "-->" in line} == {
        "in0 --> n0",
        "n0 --> n1",
        "in0 --> n1",
        "n1 --> out0",
    }
    assert '"relu<br/>%' in mermaid
