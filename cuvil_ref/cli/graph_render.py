"""A graph as Graphviz dot or Mermaid text, for ``cuvil inspect --dot/--mermaid``.

Graph inputs and outputs are ellipses/rounded boxes, every node a box labelled with its op and
result type; an edge is a value flowing from its producer to a reader. Weights (constants) are not
drawn as nodes; the op box counts them, so a picture of ResNet stays readable.
"""

from __future__ import annotations

from cuvil_ref.ir.graph import Graph
from cuvil_ref.ir.printer import format_type


def _label(graph: Graph, index: int) -> list[str]:
    node = graph.nodes[index]
    outs = ", ".join(f"%{v.name}: {format_type(v.type)}" for v in node.outputs)
    weights = sum(1 for v in node.inputs if v.name in graph.constants)
    lines = [node.op, outs]
    if weights:
        lines.append(f"{weights} weight(s)")
    return lines


def _edges(graph: Graph) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """(value name -> producing graph element id, [(src id, dst id, value name)])."""
    source = {v.name: f"in{i}" for i, v in enumerate(graph.inputs)}
    edges: list[tuple[str, str, str]] = []
    for i, node in enumerate(graph.nodes):
        for v in node.inputs:
            if v.name in source:
                edges.append((source[v.name], f"n{i}", v.name))
        for v in node.outputs:
            source[v.name] = f"n{i}"
    for j, v in enumerate(graph.outputs):
        if v.name in source:
            edges.append((source[v.name], f"out{j}", v.name))
    return source, edges


def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(graph: Graph, name: str = "cuvil") -> str:
    """Graphviz ``digraph`` text (render with ``dot -Tsvg``)."""
    lines = [f"digraph {_dot_string(name)} {{", "  rankdir=TB;", '  node [fontname="monospace"];']
    for i, v in enumerate(graph.inputs):
        label = _dot_string(f"input %{v.name}\n{format_type(v.type)}")
        lines.append(f"  in{i} [shape=ellipse, label={label}];")
    for i in range(len(graph.nodes)):
        lines.append(f"  n{i} [shape=box, label={_dot_string(chr(10).join(_label(graph, i)))}];")
    for j in range(len(graph.outputs)):
        lines.append(f"  out{j} [shape=ellipse, label={_dot_string(f'output {j}')}];")
    _, edges = _edges(graph)
    lines.extend(f"  {a} -> {b};" for a, b, _ in edges)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _mermaid_string(text: str) -> str:
    escaped = text.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;")
    return '"' + escaped.replace(">", "#gt;").replace("\n", "<br/>") + '"'


def to_mermaid(graph: Graph) -> str:
    """Mermaid ``flowchart`` text (renders in GitHub Markdown inside a mermaid code block)."""
    lines = ["flowchart TD"]
    for i, v in enumerate(graph.inputs):
        lines.append(f"  in{i}([{_mermaid_string(f'input %{v.name}: {format_type(v.type)}')}])")
    for i in range(len(graph.nodes)):
        lines.append(f"  n{i}[{_mermaid_string(chr(10).join(_label(graph, i)))}]")
    for j in range(len(graph.outputs)):
        lines.append(f"  out{j}([{_mermaid_string(f'output {j}')}])")
    _, edges = _edges(graph)
    lines.extend(f"  {a} --> {b}" for a, b, _ in edges)
    return "\n".join(lines) + "\n"
